package request

import (
	"net/netip"
	"testing"
)

func TestClientOf(t *testing.T) {
	for _, tt := range []struct{ addr, want string }{
		{"192.0.2.7", "192.0.2.7/32"},
		{"::ffff:192.0.2.7", "192.0.2.7/32"},
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"},
	} {
		if got := ClientOf(netip.MustParseAddr(tt.addr)); got.String() != tt.want {
			t.Errorf("ClientOf(%s) = %s, want %s", tt.addr, got, tt.want)
		}
	}
}
