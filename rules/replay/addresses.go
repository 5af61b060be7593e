package replay

import (
	"net/netip"
)

// loopbackSources maps each recorded client address to a source address of
// its own in 127.0.0.0/8, which Linux routes to the loopback interface as a
// whole, so a socket can bind any of them. Per-address keys ({client_ip}) see
// as many clients as the incident had, and per-prefix keys as many prefixes:
// clients that shared a /24 (IPv4) or /64 (IPv6) share a 127.a.b.0/24, and
// keep their last octet inside it. 127.0.0.0/24 is left to the target.
type loopbackSources struct {
	prefixes map[netip.Prefix]int
	addrs    map[netip.Addr]netip.Addr
	used     map[netip.Addr]struct{}
	// Merged counts recorded clients that had to share a source address with
	// another one: more than 65,280 prefixes, or two hosts of one prefix with
	// the same last octet once 0 and 255 (network and broadcast) are moved.
	Merged int
}

// maxLoopbackPrefixes is how many /24s 127.1.0.0 to 127.255.255.0 hold.
const maxLoopbackPrefixes = 255 * 256

func newLoopbackSources() *loopbackSources {
	return &loopbackSources{prefixes: map[netip.Prefix]int{}, addrs: map[netip.Addr]netip.Addr{}, used: map[netip.Addr]struct{}{}}
}

// source returns the loopback address recorded client a sends from.
func (l *loopbackSources) source(a netip.Addr) netip.Addr {
	if s, ok := l.addrs[a]; ok {
		return s
	}
	var pfx netip.Prefix
	var host byte
	if a.Is4() {
		pfx = netip.PrefixFrom(a, 24).Masked()
		host = a.As4()[3]
	} else {
		pfx = netip.PrefixFrom(a, 64).Masked()
		host = a.As16()[15]
	}
	n, ok := l.prefixes[pfx]
	if !ok {
		n = len(l.prefixes)
		l.prefixes[pfx] = n
	}
	n %= maxLoopbackPrefixes
	switch host {
	case 0:
		host = 1
	case 255:
		host = 254
	}
	s := netip.AddrFrom4([4]byte{127, byte(1 + n/256), byte(n % 256), host})
	if _, dup := l.used[s]; dup {
		l.Merged++
	}
	l.used[s] = struct{}{}
	l.addrs[a] = s
	return s
}

// distinct is how many distinct source addresses were handed out.
func (l *loopbackSources) distinct() int { return len(l.used) }
