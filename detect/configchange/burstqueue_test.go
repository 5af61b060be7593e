package configchange

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
)

// burstLoad is a crowd's requests for PHP second by second: Poisson
// arrivals at a usual rate, with one burst of burstPerS for burstS seconds
// after leadS seconds, and tailS seconds of the usual after it.
func burstLoad(seed int64, usualPerS, burstPerS float64, leadS, burstS, tailS int) []int {
	rng := rand.New(rand.NewSource(seed))
	poisson := func(mean float64) int { // Knuth: the means here are small
		l, k, p := math.Exp(-mean), 0, 1.0
		for {
			p *= rng.Float64()
			if p <= l {
				return k
			}
			k++
		}
	}
	var out []int
	for i := 0; i < leadS+burstS+tailS; i++ {
		rate := usualPerS
		if i >= leadS && i < leadS+burstS {
			rate = burstPerS
		}
		out = append(out, poisson(rate))
	}
	return out
}

// busiestSpanPerS is what peakPHPDemand reads: the busiest demandSpan's
// requests a second.
func busiestSpanPerS(perSecond []int) float64 {
	span := int(demandSpan / time.Second)
	best := 0
	for i := 0; i+span <= len(perSecond); i++ {
		n := 0
		for _, c := range perSecond[i : i+span] {
			n += c
		}
		best = max(best, n)
	}
	return float64(best) / float64(span)
}

// TestPoolCutJudgedOnTheBurstsQueue: whether the old pool would have held a
// burst is whether the queue the burst builds under it drains within the
// clients' timeout, second by second; not whether five minutes' average fit
// (a short burst vanishes in it), and not whether its busiest second did (a
// spike the old pool's queue absorbs in seconds). The recording's pool: 8
// workers cut to 3, 0.6 s a request, clients that give up after 10 s, a usual
// 2 requests a second. Each case holds over several seeds.
func TestPoolCutJudgedOnTheBurstsQueue(t *testing.T) {
	const S, timeout = 0.6, 10.0
	cut := sources.Change{Time: ccAt(2, 23, 0), Source: "git", Ref: "abcdef0123456789abcdef0123456789abcdef01",
		File: "www.conf", Key: "pm.max_children", Old: "8", New: "3"}
	tests := []struct {
		name              string
		burstPerS         float64
		burstS            int
		linked, oldHeld   bool
		oldWaits, newWait string // "within" or "past" the clients' timeout
	}{
		// 9 a second need 5.4 workers: 8 hold them, 3 do not; 45 s of it
		// average to under 3.6 a second (2.2 workers) over five minutes.
		{name: "a short burst the new pool's queue cannot drain", burstPerS: 9, burstS: 45,
			linked: true, oldHeld: true, oldWaits: "within", newWait: "past"},
		// 18 a second for 10 s outruns even 8 workers (13 a second): its
		// busiest second needs 11 workers, but 8 drain its queue in seconds.
		{name: "a spike past the old pool's rate that its queue drains", burstPerS: 18, burstS: 10,
			linked: true, oldHeld: true, oldWaits: "within", newWait: "past"},
		// 25 a second for a minute: five minutes average to 3.6 workers,
		// within the old 8, but 8 workers' queue grows to some 50 s.
		{name: "a burst that would have overrun the old pool's queue too", burstPerS: 25, burstS: 60,
			linked: true, oldHeld: false, oldWaits: "past", newWait: "past"},
		// 7 a second for 6 s need 4.2 workers, more than 3, but 3 drain the
		// queue of a few seconds long before the clients give up.
		{name: "a burst so short the new pool's queue drains: the cut played no part", burstPerS: 7, burstS: 6,
			linked: false, oldHeld: true, oldWaits: "within", newWait: "within"},
	}
	for _, tt := range tests {
		for seed := int64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%s/seed %d", tt.name, seed), func(t *testing.T) {
				load := burstLoad(seed, 2, tt.burstPerS, 240, tt.burstS, 240)
				from := ccOnset.Add(-240 * time.Second)
				q := QueueFacts{Workers: 3, ServiceTimeS: S, ClientTimeoutS: timeout, Onset: ccOnset, Loc: ccKST,
					PeakPHPPerS: busiestSpanPerS(load), PeakAt: ccOnset, UsualPHPPerS: 2,
					PHPArrivals: load, ArrivalsFrom: from, ArrivalsUntil: from.Add(time.Duration(len(load)) * time.Second)}
				got, _ := RankChanges([]sources.Change{cut}, ccFindings(detect.KindWorkerSaturation, detect.KindUpstreamErrors), q)
				if len(got) != 1 {
					t.Fatalf("%d findings, want the cut's", len(got))
				}
				f := got[0]
				cf := detect.FactsOf[ConfigChangeFacts](&f)
				if cf.WorkersNeeded.V > 8 {
					t.Fatalf("five minutes average to %v busy workers: the case means a burst within the old pool on average", cf.WorkersNeeded.V)
				}
				if !cf.OldPoolLongestWaitS.OK || !cf.NewPoolLongestWaitS.OK || cf.ClientTimeoutS.V != timeout {
					t.Fatalf("waits %v / %v against %v: the queue was not run\n%s", cf.OldPoolLongestWaitS, cf.NewPoolLongestWaitS, cf.ClientTimeoutS, f.Summary)
				}
				side := func(w float64) string {
					if w > timeout {
						return "past"
					}
					return "within"
				}
				if side(cf.OldPoolLongestWaitS.V) != tt.oldWaits || side(cf.NewPoolLongestWaitS.V) != tt.newWait {
					t.Errorf("longest waits %v s with 8, %v s with 3: want %s and %s the %v s timeout",
						cf.OldPoolLongestWaitS.V, cf.NewPoolLongestWaitS.V, tt.oldWaits, tt.newWait, timeout)
				}
				if cf.Linked != tt.linked || cf.OldPoolHeld.V != tt.oldHeld || (f.Role == detect.RoleRuledOut) == tt.linked {
					t.Errorf("role %s, linked %v, old pool held %v: want linked %v, held %v\n%s",
						f.Role, cf.Linked, cf.OldPoolHeld.V, tt.linked, tt.oldHeld, f.Summary)
				}
			})
		}
	}
}

// TestPoolCutJudgedOnTheBacklog: a full listen queue refuses what comes
// next, so a pool whose queue overflows php-fpm's backlog did not hold the
// load however short its wait (a full queue's). The short burst that 3
// workers drain within the clients' timeout (the cut played no part, above)
// overflows a backlog of 4: the cut let it fail, and the summary says so
// with the connections refused, never a wait within the timeout alone.
// With the backlog unknown the queue runs unbounded, as before: no
// refusals stated, the cut played no part.
func TestPoolCutJudgedOnTheBacklog(t *testing.T) {
	const S, timeout, backlog = 0.6, 10.0, 4
	cut := sources.Change{Time: ccAt(2, 23, 0), Source: "git", Ref: "abcdef0123456789abcdef0123456789abcdef01",
		File: "www.conf", Key: "pm.max_children", Old: "8", New: "3"}
	for seed := int64(1); seed <= 4; seed++ {
		for _, known := range []bool{true, false} {
			t.Run(fmt.Sprintf("seed %d/backlog known %v", seed, known), func(t *testing.T) {
				load := burstLoad(seed, 2, 7, 240, 6, 240)
				from := ccOnset.Add(-240 * time.Second)
				q := QueueFacts{Workers: 3, ServiceTimeS: S, ClientTimeoutS: timeout, Onset: ccOnset, Loc: ccKST,
					PeakPHPPerS: busiestSpanPerS(load), PeakAt: ccOnset, UsualPHPPerS: 2,
					PHPArrivals: load, ArrivalsFrom: from, ArrivalsUntil: from.Add(time.Duration(len(load)) * time.Second)}
				if known {
					q.Backlog = backlog
				}
				got, _ := RankChanges([]sources.Change{cut}, ccFindings(detect.KindWorkerSaturation, detect.KindUpstreamErrors), q)
				if len(got) != 1 {
					t.Fatalf("%d findings, want the cut's", len(got))
				}
				f := got[0]
				cf := detect.FactsOf[ConfigChangeFacts](&f)
				if !known {
					if cf.QueueBacklog.OK || cf.NewPoolRefused.OK || cf.Linked || strings.Contains(f.Summary, "backlog") {
						t.Errorf("backlog unknown: stated %v, refused %v, linked %v; want the unbounded queue's verdict, the cut played no part\n%s",
							cf.QueueBacklog, cf.NewPoolRefused, cf.Linked, f.Summary)
					}
					return
				}
				if cf.QueueBacklog.V != backlog || cf.NewPoolRefused.V <= 0 || !cf.OldPoolRefused.OK || cf.OldPoolRefused.V != 0 {
					t.Fatalf("backlog %v, refused %v with 8 and %v with 3: want %d, none with 8, some with 3\n%s",
						cf.QueueBacklog, cf.OldPoolRefused, cf.NewPoolRefused, backlog, f.Summary)
				}
				if full := detect.QueueWait(backlog, S, 3); cf.NewPoolLongestWaitS.V > detect.Round(full, 1) {
					t.Errorf("new pool's longest wait %v s, past a full %d-connection queue's %v s", cf.NewPoolLongestWaitS.V, backlog, full)
				}
				said := fmt.Sprintf("with 3 its queue would have overflowed the %d-connection backlog, refusing %d connection", backlog, cf.NewPoolRefused.V)
				if !cf.Linked || !cf.OldPoolHeld.V || f.Role == detect.RoleRuledOut || !strings.Contains(f.Summary, said) {
					t.Errorf("role %s, linked %v, old pool held %v: want the enabler, saying %q\n%s", f.Role, cf.Linked, cf.OldPoolHeld.V, said, f.Summary)
				}
			})
		}
	}
}

// TestPoolCutJudgedWithTheBacklogItHad: a commit that cut the pool and
// raised listen.backlog in one edit is judged against the configuration
// before it, all of it: the old 8 workers ran with the old 32-connection
// backlog, which a burst of 25 a second for 10 s overflows (the old pool's
// queue would wait within the clients' timeout only because the new
// backlog of 4,096 lets it grow). The obvious run, the old size against the
// incident's backlog, says the old pool held. When another, earlier commit
// raised the backlog, the cut alone is judged: its old size runs against
// the backlog in force, and held.
func TestPoolCutJudgedWithTheBacklogItHad(t *testing.T) {
	const S, timeout, applied = 0.6, 10.0, 4096
	ref := "abcdef0123456789abcdef0123456789abcdef01"
	cut := sources.Change{Time: ccAt(2, 23, 0), Source: "git", Ref: ref, File: "www.conf", Key: "pm.max_children", Old: "8", New: "3"}
	for _, sameCommit := range []bool{true, false} {
		for seed := int64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("same commit %v/seed %d", sameCommit, seed), func(t *testing.T) {
				raise := sources.Change{Time: cut.Time, Source: "git", Ref: ref, File: "www.conf", Key: "listen.backlog", Old: "32", New: "4096"}
				if !sameCommit {
					raise.Time, raise.Ref = ccAt(1, 9, 0), "0123456789abcdef0123456789abcdef01234567"
				}
				load := burstLoad(seed, 2, 25, 240, 10, 240)
				from := ccOnset.Add(-240 * time.Second)
				q := QueueFacts{Workers: 3, ServiceTimeS: S, ClientTimeoutS: timeout, Backlog: applied, Onset: ccOnset, Loc: ccKST,
					PeakPHPPerS: busiestSpanPerS(load), PeakAt: ccOnset, UsualPHPPerS: 2,
					PHPArrivals: load, ArrivalsFrom: from, ArrivalsUntil: from.Add(time.Duration(len(load)) * time.Second)}
				got, _ := RankChanges([]sources.Change{raise, cut}, ccFindings(detect.KindWorkerSaturation, detect.KindUpstreamErrors), q)
				var f *detect.Finding
				for i := range got {
					if c := got[i].Change; c != nil && c.Key == cut.Key {
						f = &got[i]
					}
				}
				if f == nil {
					t.Fatalf("no finding of the cut among %d", len(got))
				}
				cf := detect.FactsOf[ConfigChangeFacts](f)
				if cf.QueueBacklog.V != applied || !cf.OldPoolLongestWaitS.OK || cf.OldPoolLongestWaitS.V > timeout {
					t.Fatalf("backlog %v, old pool's longest wait %v: the case means a queue the old pool drains within %v s when it may grow\n%s",
						cf.QueueBacklog, cf.OldPoolLongestWaitS, timeout, f.Summary)
				}
				if !sameCommit {
					if cf.OldPoolBacklog.OK || cf.OldPoolRefused.V != 0 || !cf.OldPoolHeld.V || strings.Contains(f.Summary, "before the same commit") {
						t.Errorf("backlog raised by another commit: old pool against %v refused %v, held %v; want the backlog in force, none refused, held\n%s",
							cf.OldPoolBacklog, cf.OldPoolRefused, cf.OldPoolHeld, f.Summary)
					}
					return
				}
				said := "8 workers against the 32-connection backlog of before the same commit, 3 against its 4,096"
				if cf.OldPoolBacklog.V != 32 || cf.OldPoolRefused.V <= 0 || cf.OldPoolHeld.V || !strings.Contains(f.Summary, said) {
					t.Errorf("same commit: old pool against %v refused %v, held %v; want the old 32, some refused, not held, saying %q\n%s",
						cf.OldPoolBacklog, cf.OldPoolRefused, cf.OldPoolHeld, said, f.Summary)
				}
			})
		}
	}
}

// TestBacklogBeforeTheCommit: which backlog the old pool had, read from the
// changes beside the cut.
func TestBacklogBeforeTheCommit(t *testing.T) {
	at := ccAt(2, 23, 0)
	cut := sources.Change{Time: at, Ref: "r1", Key: "pm.max_children", Old: "8", New: "3"}
	backlog := func(ref string, when time.Time, old, nw string) sources.Change {
		return sources.Change{Time: when, Ref: ref, Key: "listen.backlog", Old: old, New: nw}
	}
	tests := []struct {
		name    string
		cut     sources.Change
		others  []sources.Change
		applied int
		want    int
	}{
		{"the same commit", cut, []sources.Change{backlog("r1", at, "511", "4096")}, 4096, 511},
		{"another commit", cut, []sources.Change{backlog("r0", at.Add(-time.Hour), "511", "4096")}, 4096, 0},
		{"no backlog change", cut, nil, 4096, 0},
		{"added by the commit: php-fpm's default before", cut, []sources.Change{backlog("r1", at, "", "4096")}, 4096, 511},
		{"the kernel's maximum asked before: not a count", cut, []sources.Change{backlog("r1", at, "-1", "4096")}, 4096, 0},
		// The new 65535 was applied as 4096: somaxconn capped it, and the
		// old 8192 with it.
		{"capped by the kernel", cut, []sources.Change{backlog("r1", at, "8192", "65535")}, 4096, 4096},
		{"records without a ref, at the same moment", sources.Change{Time: at, Key: "pm.max_children", Old: "8", New: "3"},
			[]sources.Change{backlog("", at, "128", "4096")}, 4096, 128},
		{"records without a ref, a minute apart", sources.Change{Time: at, Key: "pm.max_children", Old: "8", New: "3"},
			[]sources.Change{backlog("", at.Add(time.Minute), "128", "4096")}, 4096, 0},
		{"the backlog's own change", backlog("r1", at, "511", "4096"), []sources.Change{backlog("r1", at, "511", "4096")}, 4096, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := backlogBefore(tt.cut, append([]sources.Change{tt.cut}, tt.others...), tt.applied); got != tt.want {
				t.Errorf("backlog before: %d, want %d", got, tt.want)
			}
		})
	}
}
