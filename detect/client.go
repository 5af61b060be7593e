package detect

import (
	"net/netip"

	"github.com/aftermath-forensics/aftermath/detect/request"
)

// clientCount counts the clients among addrs (ClientOf), and whether any
// was IPv6 (counted per /64).
func clientCount(addrs []netip.Addr) (clients int, v6 bool) {
	seen := make(map[netip.Prefix]struct{}, len(addrs))
	for _, a := range addrs {
		v6 = v6 || !(a.Is4() || a.Is4In6())
		seen[request.ClientOf(a)] = struct{}{}
	}
	return len(seen), v6
}

// Clients counts the cluster's clients in the window (ClientOf), counted
// when asked, as DistinctPrefixes is.
func (c *Cluster) Clients() int {
	addrs := make([]netip.Addr, 0, len(c.IPs))
	for ip := range c.IPs {
		addrs = append(addrs, ip)
	}
	n, _ := clientCount(addrs)
	return n
}
