package detect

import (
	"encoding/binary"
	"iter"
	"maps"
	"net/netip"
	"slices"

	"github.com/aftermath-forensics/aftermath/detect/request"
)

// networks counts a set of addresses as hosts and as networks: the clients
// among them (request.ClientOf) and the networks a per-prefix limit would
// group them into (request.Prefix), by family.
type networks struct {
	// v4 and v6 count the addresses of each family (an IPv4-mapped IPv6
	// address is IPv4).
	v4, v6  int
	clients int
	// prefixes4 and prefixes6 count the IPv4 and IPv6 networks.
	prefixes4, prefixes6 int
}

// prefixes counts the networks of both families.
func (n networks) prefixes() int { return n.prefixes4 + n.prefixes6 }

// networksOf counts the n distinct addresses of addrs (a map's keys) as
// hosts and networks. They are counted in a sorted slice of one number an
// address (IPv4's 32 bits, IPv6's upper 64), which a crawler's thousands of
// addresses fill in eight bytes each where a set of prefixes takes some
// forty: sorted, the addresses of one client and of one network are next to
// each other, since both are prefixes of the address, and each is counted
// where it differs from the one before. An IPv6 client or network is a /64
// or wider (request.ClientIPv6Bits, Prefix), so the upper half names it.
// The access log's addresses are valid (its parser refuses a line without
// one); the zero Addr would count as IPv6's "::".
func networksOf(addrs iter.Seq[netip.Addr], n int) networks {
	// The key holds an IPv6 address's upper 64 bits: a client prefix any
	// longer would not fit in it, and this constant would not compile.
	const _ uint = 64 - request.ClientIPv6Bits
	// IPv4 addresses fill keys from its start, IPv6 ones from its end.
	keys := make([]uint64, n)
	var out networks
	for a := range addrs {
		if a.Is4() || a.Is4In6() {
			b := a.Unmap().As4()
			keys[out.v4] = uint64(binary.BigEndian.Uint32(b[:]))
			out.v4++
		} else {
			b := a.As16()
			out.v6++
			keys[n-out.v6] = binary.BigEndian.Uint64(b[:8])
		}
	}
	v4, v6 := keys[:out.v4], keys[n-out.v6:]
	slices.Sort(v4)
	slices.Sort(v6)
	var clients4, clients6 int
	clients4, out.prefixes4 = distinctNetworks(v4, func(k uint64) netip.Addr {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(k))
		return netip.AddrFrom4(b)
	})
	clients6, out.prefixes6 = distinctNetworks(v6, func(k uint64) netip.Addr {
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], k)
		return netip.AddrFrom16(b)
	})
	out.clients = clients4 + clients6
	return out
}

// distinctNetworks counts the distinct clients and networks of the sorted
// keys of one family, addr making each key an address again.
func distinctNetworks(keys []uint64, addr func(uint64) netip.Addr) (clients, prefixes int) {
	var client, prefix netip.Prefix
	for i, k := range keys {
		if i > 0 && k == keys[i-1] {
			continue
		}
		a := addr(k)
		if c := request.ClientOf(a); clients == 0 || c != client {
			client = c
			clients++
		}
		if p := request.Prefix(a); prefixes == 0 || p != prefix {
			prefix = p
			prefixes++
		}
	}
	return clients, prefixes
}

// networks counts the cluster's addresses in the window as hosts and
// networks.
func (c *Cluster) networks() networks {
	return networksOf(maps.Keys(c.IPs), len(c.IPs))
}

// Clients counts the cluster's clients in the window (ClientOf), counted
// when asked, as DistinctPrefixes is.
func (c *Cluster) Clients() int {
	return c.networks().clients
}
