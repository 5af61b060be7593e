package request

import "net/netip"

// A client is what one host can be seen as in an access log: an IPv4
// address, or an IPv6 /64. A host on IPv6 is given a /64 (RFC 7421: the
// subnet every SLAAC interface lives in) and chooses the low 64 bits
// itself: privacy extensions (RFC 8981) rotate them by the hour, and a
// script can draw a new one per request. Counted per address, one host
// rotating inside its /64 is thousands of "clients"; counted per /64 it
// is one, as an IPv4 address behind one NAT is one.
//
// A /64 may hold more than one host (a shared hosting subnet); counting
// it as one then undercounts, which is why the crawler facts state
// both the addresses and the clients and name the unit.

// ClientOf is the client an address counts as: the address itself for
// IPv4 (an IPv4-mapped IPv6 address is IPv4), its /64 for IPv6.
func ClientOf(a netip.Addr) netip.Prefix {
	if a.Is4() || a.Is4In6() {
		a = a.Unmap()
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(ClientIPv6Bits)
	return p
}

// ClientIPv6Bits is the IPv6 prefix a client is (ClientOf).
const ClientIPv6Bits = 64
