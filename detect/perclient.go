package detect

import (
	"net/netip"
	"slices"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// Whether a per-client limit would catch an actor, decided once, here: the
// crawler finding's Spread fact says it (and its prose), and the rules write
// a per-client zone or one bucket for all the actor's clients from that fact
// alone. A per-client limit must let every ordinary client through, so it
// sits above the busiest ordinary address with headroom (LimitAbove); it
// catches what the actor's addresses sent beyond that. An actor whose
// addresses each send a handful is spread even when the handful is above
// some fixed count: what matters is whether ordinary clients send as much.

// The margin of a limit over the busiest ordinary client: events =
// max(LimitHeadroom x peak, peak + LimitSlack). The peak is one baseline's
// worst window; a busier ordinary day must still fit, and a class that was
// never seen still admits a handful of readers. The rules size their zones
// with it.
const (
	LimitHeadroom = 2
	LimitSlack    = 10
)

// LimitAbove is the limit that leaves a client who sent peak requests in a
// window (and a busier day's) alone.
func LimitAbove(peak int) int {
	return max(LimitHeadroom*peak, peak+LimitSlack)
}

// LimitFloor is the least limit that still leaves a client who sent peak
// requests in a window LimitHeadroom times that (a client never seen, peak
// 0, is taken as one request): LimitAbove without the slack. The slack is
// for readers the baseline never showed; an actor whose own addresses each
// send far more than any ordinary one spends it, and a rule that must stop
// that actor may give it up, down to here and no lower.
func LimitFloor(peak int) int {
	return LimitHeadroom * max(peak, 1)
}

// perClientWindow is the window the per-client judgement counts requests
// in.
const perClientWindow = 10 * time.Minute

// MinLimitCaught is the share of an actor's requests a limit must refuse to
// be said to catch it: a limit per client that refuses less leaves the actor
// spread for a rule (one bucket for all its clients), and the rules drop a
// zone that refuses less of its crawler in the backtest, as not worth the
// collateral and the operator's attention.
const MinLimitCaught = 0.5

// perClientCaught is the share of the actor's requests, counted in each of
// its addresses' busiest perClientWindow, above LimitAbove(the busiest
// ordinary logged-out address's busiest perClientWindow in the window), and
// that ordinary peak. Ordinary addresses are every logged-out fingerprint's
// that are not the actor's.
func perClientCaught(t *Traffic, actor map[netip.Addr]*AddressBehaviour) (caught float64, ordinaryPeak int) {
	for _, c := range t.Clusters() {
		if c.Key.LoggedIn == sources.LoggedInYes {
			continue
		}
		for ip, ab := range c.IPs {
			if _, ok := actor[ip]; ok {
				continue
			}
			ordinaryPeak = max(ordinaryPeak, ab.busiest(perClientWindow))
		}
	}
	limit := LimitAbove(ordinaryPeak)
	sent, over := 0, 0
	for _, ab := range actor {
		n := ab.busiest(perClientWindow)
		sent += n
		over += max(0, n-limit)
	}
	if sent == 0 {
		return 0, ordinaryPeak
	}
	return float64(over) / float64(sent), ordinaryPeak
}

// busiest is the most requests the address sent within any span of w
// (whole minutes, as its arrivals are kept).
func (b *AddressBehaviour) busiest(w time.Duration) int {
	runs := b.arrivals
	if !slices.IsSortedFunc(runs, func(x, y minuteRun) int { return int(x.minute) - int(y.minute) }) {
		runs = slices.Clone(runs)
		slices.SortFunc(runs, func(x, y minuteRun) int { return int(x.minute) - int(y.minute) })
	}
	span := int32(w / time.Minute)
	best, sum, lo := 0, 0, 0
	for hi := range runs {
		sum += int(runs[hi].n)
		for runs[hi].minute-runs[lo].minute >= span {
			sum -= int(runs[lo].n)
			lo++
		}
		best = max(best, sum)
	}
	return best
}
