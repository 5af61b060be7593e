package rules

import (
	"context"
	"fmt"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
)

// What a rule is for, measured by its backtest over the window: it refuses
// at least actorGoal of its crawler's requests and less than collateralGoal
// of the other logged-out requests.
const (
	actorGoal      = 0.95
	collateralGoal = 0.005
)

// tighten lowers the events of each zone that refused less than actorGoal of
// its crawler in the window (win) when a smaller size reaches the goal. A
// zone is sized max(LimitHeadroom x peak, peak + LimitSlack) (LimitAbove):
// the slack is for ordinary clients the baseline never showed, and an actor
// whose addresses each send more than any ordinary one but only a little
// more than the slack gets it too. A crawler steady from a dozen addresses
// before it multiplied its rate then passes at the slack's pace on every
// address, more than a twentieth of what it sent. Such a zone may give the
// slack up, down to detect.LimitFloor(peak) (twice the busiest ordinary
// client) and no lower: it takes the largest size there that refuses
// actorGoal of its crawler in the window while refusing less than
// collateralGoal of the other logged-out requests in the window and no more
// ordinary requests in the baseline than resize tolerates. A zone whose
// floor does not reach the goal keeps its size: the slack is given up only
// for the goal. A zone resize grew is left alone (ordinary clients needed
// the room). peaks are the sizing's; it reports whether any zone changed.
func (e *engine) tighten(ctx context.Context, zones []Zone, peaks []int, win, base *replay, bFrom, bTo time.Time) (bool, error) {
	lo := make([]int, len(zones)) // largest size known to reach the goal (0: none)
	hi := make([]int, len(zones)) // smallest size known to miss it
	from := make([]int, len(zones))
	allowed := make([]int, len(zones))
	loggedIn := make([]int, len(zones)) // logged-in requests refused in the window at the zone's size
	tried := false
	for i := range zones {
		z := &zones[i]
		from[i] = z.Events
		allowed[i] = tolerableRefused(base.zone[i])
		bt := win.zone[i].window()
		loggedIn[i] = bt.LoggedInRefused
		floor := detect.LimitFloor(peaks[i])
		if z.resized.String() != "" || bt.CrawlerRequests == 0 || bt.CrawlerRefusedShare >= actorGoal || floor >= z.Events {
			continue
		}
		hi[i], z.Events, tried = z.Events, floor, true
	}
	if !tried {
		return false, nil
	}
	check := func() error {
		w, b, _, err := e.backtest(ctx, zones, bFrom, bTo)
		if err != nil {
			return fmt.Errorf("rules: tightening: %w", err)
		}
		for i := range zones {
			if hi[i] == 0 || zones[i].Events == lo[i] {
				continue
			}
			if meetsGoal(w.zone[i], b.zone[i], loggedIn[i], allowed[i]) {
				lo[i] = zones[i].Events
			} else {
				hi[i] = zones[i].Events
			}
		}
		return nil
	}
	if err := check(); err != nil {
		return false, err
	}
	for {
		narrowing := false
		for i := range zones {
			switch {
			case hi[i] == 0:
			case lo[i] == 0: // the floor misses too: keep the size
				zones[i].Events, hi[i] = from[i], 0
			case hi[i]-lo[i] > 1:
				zones[i].Events = (lo[i] + hi[i]) / 2
				narrowing = true
			default:
				zones[i].Events = lo[i]
			}
		}
		if !narrowing {
			break
		}
		if err := check(); err != nil {
			return false, err
		}
	}
	changed := false
	for i := range zones {
		if hi[i] == 0 {
			continue
		}
		zones[i].Events = lo[i]
		zones[i].tightened = Messages.Say("rules.tightened", struct{ Events, Refused, Size, Floor, Goal, Collateral string }{
			fmtInt(from[i]), pct(win.zone[i].window().CrawlerRefusedShare), fmtInt(lo[i]), fmtInt(detect.LimitFloor(peaks[i])),
			pct(actorGoal), pct(collateralGoal)})
		changed = true
	}
	return changed, nil
}

// meetsGoal says whether a zone's window replay (w) refused actorGoal of its
// crawler, less than collateralGoal of the other logged-out requests and no
// more than loggedIn logged-in requests (what it refused at its first size),
// and its baseline replay (b) no more than allowed ordinary requests.
func meetsGoal(w, b *tally, loggedIn, allowed int) bool {
	bt := w.bt
	if bt.CrawlerRequests == 0 || crawlerMissed(bt) {
		return false
	}
	if bt.LoggedInRefused > loggedIn || othersMissed(bt) {
		return false
	}
	return ordinaryRefused(b) <= allowed
}

// spareOthers grows each zone that refused actorGoal of its crawler in the
// window (win) but collateralGoal or more of the other logged-out requests
// there. A bucket the crawler keeps full refuses every ordinary request that
// lands in it meanwhile; a larger one lets more of them through, and more of
// the crawler too. The zone takes the smallest size that meets both goals
// (meetsGoal: the baseline's tolerance and the logged-in requests refused at
// its size included), doubling from its size and then bisecting, when one
// exists before the crawler's share falls under actorGoal; otherwise it
// keeps its size, and the rule says that the goal for the others is missed
// (othersMissed) with the numbers. It reports whether any zone changed.
func (e *engine) spareOthers(ctx context.Context, zones []Zone, win, base *replay, bFrom, bTo time.Time) (bool, error) {
	lo := make([]int, len(zones))   // largest size known to refuse too many others (0: zone not searched)
	hi := make([]int, len(zones))   // smallest size known to meet both goals (0: none yet)
	dead := make([]int, len(zones)) // smallest size known to miss the crawler's goal (0: none yet)
	from := make([]int, len(zones))
	allowed := make([]int, len(zones))
	loggedIn := make([]int, len(zones))
	first := make([]Backtest, len(zones))
	searching := false
	for i := range zones {
		bt := win.zone[i].window()
		from[i], allowed[i], loggedIn[i], first[i] = zones[i].Events, tolerableRefused(base.zone[i]), bt.LoggedInRefused, bt
		if bt.CrawlerRequests == 0 || bt.CrawlerRefusedShare < actorGoal || !othersMissed(bt) {
			continue
		}
		lo[i], searching = zones[i].Events, true
	}
	if !searching {
		return false, nil
	}
	// next sets each searched zone's next size to try; false when none is left.
	next := func() bool {
		any := false
		for i := range zones {
			switch {
			case lo[i] == 0:
				continue
			case hi[i] == 0 && dead[i] == 0:
				zones[i].Events = lo[i] * 2
			case hi[i] == 0 && dead[i]-lo[i] > 1:
				zones[i].Events = (lo[i] + dead[i]) / 2
			case hi[i] > 0 && hi[i]-lo[i] > 1:
				zones[i].Events = (lo[i] + hi[i]) / 2
			default:
				zones[i].Events = lo[i] // settled: hi[i] or nothing
				if hi[i] > 0 {
					zones[i].Events = hi[i]
				}
				continue
			}
			any = true
		}
		return any
	}
	doublings := 0
	for next() {
		w, b, _, err := e.backtest(ctx, zones, bFrom, bTo)
		if err != nil {
			return false, fmt.Errorf("rules: sparing other clients: %w", err)
		}
		for i := range zones {
			if lo[i] == 0 || zones[i].Events == lo[i] || zones[i].Events == hi[i] {
				continue
			}
			bt := w.zone[i].window()
			switch {
			case meetsGoal(w.zone[i], b.zone[i], loggedIn[i], allowed[i]):
				hi[i] = zones[i].Events
			case hi[i] == 0 && bt.CrawlerRefusedShare < actorGoal:
				dead[i] = zones[i].Events
			default:
				lo[i] = zones[i].Events
			}
		}
		// Doubling stops after maxResizes steps, as resize's does: a
		// zone that still refuses too many others at 2^maxResizes times
		// its size is left at it.
		doubling := false
		for i := range zones {
			if lo[i] > 0 && hi[i] == 0 && dead[i] == 0 {
				doubling = true
			}
		}
		if doubling {
			if doublings++; doublings == maxResizes {
				for i := range zones {
					if lo[i] > 0 && hi[i] == 0 && dead[i] == 0 {
						dead[i] = lo[i] + 1 // give up: next() settles it
					}
				}
			}
		}
	}
	changed := false
	for i := range zones {
		if lo[i] == 0 {
			continue
		}
		if hi[i] == 0 {
			zones[i].Events = from[i]
			continue
		}
		zones[i].Events = hi[i]
		zones[i].spared = Messages.Say("rules.spared", struct{ Events, Refused, Others, Size, Goal, Collateral string }{
			fmtInt(from[i]), pct(first[i].CrawlerRefusedShare), pct(first[i].OtherLoggedOutRefusedShare), fmtInt(hi[i]),
			pct(actorGoal), pct(collateralGoal)})
		changed = true
	}
	return changed, nil
}

// othersMissed says whether a window's backtest refused collateralGoal or
// more of the other logged-out requests (meetsGoal's test of them).
func othersMissed(bt Backtest) bool {
	return float64(bt.OtherLoggedOutRefused) >= collateralGoal*float64(max(bt.OtherLoggedOutRequests, 1))
}

// markOthersGoal marks a backtest that missed the goal for the other
// logged-out requests (othersMissed), with the goal, and says whether it did.
func markOthersGoal(bt *Backtest) bool {
	if !othersMissed(*bt) {
		return false
	}
	bt.OtherLoggedOutGoalMissed, bt.OtherLoggedOutGoal = true, collateralGoal
	return true
}

// crawlerMissed says whether a window's backtest refused less than actorGoal
// of its crawler's requests (meetsGoal's test of them). A backtest with no
// crawler request has nothing to miss.
func crawlerMissed(bt Backtest) bool {
	return bt.CrawlerRequests > 0 && float64(bt.CrawlerRefused) < actorGoal*float64(bt.CrawlerRequests)
}

// markCrawlerGoal marks a backtest that missed the goal for the crawler
// (crawlerMissed), with the goal, and says whether it did.
func markCrawlerGoal(bt *Backtest) bool {
	if !crawlerMissed(*bt) {
		return false
	}
	bt.CrawlerGoalMissed, bt.CrawlerGoal = true, actorGoal
	return true
}
