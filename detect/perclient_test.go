package detect

import (
	"net/netip"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// TestPerClientCaught: whether a limit per client would catch an actor
// depends on what ordinary clients send, not on a fixed count per address.
// Proxy addresses sending six requests each within a minute look
// concentrated by a "more than three per address" rule, yet a shopper
// browsing 26 pages in ten minutes sets the limit above them: spread. The
// same shopper next to four addresses sending 2,000 or 400 each within
// minutes: caught (a limit of 54 in ten minutes refuses 97% or 86% of them).
func TestPerClientCaught(t *testing.T) {
	t0 := time.Date(2026, 11, 12, 14, 50, 0, 0, time.UTC)
	send := func(b *AddressBehaviour, n int, every time.Duration, from time.Time) {
		for i := range n {
			b.Observe(from.Add(time.Duration(i)*every).UnixNano(), false, false)
		}
	}
	for _, tc := range []struct {
		name          string
		addrs, each   int
		wantSpread    bool
		wantOrdinary  int
		wantCaughtMin float64
	}{
		{"thousands of proxies, six each", 2000, 6, true, 27, 0},
		{"four addresses, two thousand each in minutes", 4, 2000, false, 27, 0.95},
		{"four addresses, four hundred each", 4, 400, false, 27, 0.85},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTraffic(sources.Site{}, t0.Add(-time.Hour), t0.Add(time.Hour))
			shopper := &Cluster{Key: request.ClusterKey{UA: "Firefox", LoggedIn: sources.LoggedInNo}, Requests: 40,
				IPs: map[netip.Addr]*AddressBehaviour{netip.MustParseAddr("203.0.113.7"): {}}}
			// 40 pages over 15 minutes: 27 in its busiest ten minutes of the clock.
			send(shopper.IPs[netip.MustParseAddr("203.0.113.7")], 40, 23*time.Second, t0)
			tr.clusters[shopper.Key] = shopper
			actor := map[netip.Addr]*AddressBehaviour{}
			for i := range tc.addrs {
				b := &AddressBehaviour{}
				send(b, tc.each, 100*time.Millisecond, t0.Add(time.Duration(i)*time.Second))
				actor[netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)})] = b
			}
			caught, ordinary := perClientCaught(tr, actor)
			if ordinary != tc.wantOrdinary {
				t.Errorf("busiest ordinary client: %d in ten minutes, want %d", ordinary, tc.wantOrdinary)
			}
			if spread := caught < MinLimitCaught; spread != tc.wantSpread || caught < tc.wantCaughtMin {
				t.Errorf("caught %.3f (spread %v), want spread %v", caught, spread, tc.wantSpread)
			}
		})
	}
}
