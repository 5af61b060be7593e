package detect

import (
	"fmt"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestIncidentIsConcentratedFailures: five failures are an incident when a
// php-fpm restart refused them within seconds of one minute, and not when a
// slowdown answered five readers late, one or two a minute over three
// minutes of 150 arrivals each: each of those minutes is within what chance
// gives a baseline that failed nobody. The obvious rule, "more than five
// failures", gets both wrong: it drops the blip, and a sixth late answer
// would make the slowdown's trickle an outage.
func TestIncidentIsConcentratedFailures(t *testing.T) {
	from, to := t0, t0.Add(4*time.Hour)
	site := sources.Site{ClientTimeoutS: 10}
	tr := NewTraffic(site, from, to)
	feed(tr, readers, from.Add(-3*time.Hour), 7*time.Hour, 7*60*150) // 150 a minute throughout
	blip := from.Add(time.Hour)
	feed(tr, down, blip.Add(20*time.Second), 5*time.Second, 5)
	slow := from.Add(2 * time.Hour)
	for i, n := range []int{1, 2, 2, 1} { // late answers (12 s, the clients waited 10)
		wedged(tr, slow.Add(time.Duration(i)*time.Minute+10*time.Second), 30*time.Second, n, 12)
	}
	in := FindIncidents(&Evidence{From: from, To: to, Site: site, Traffic: tr, Loc: time.UTC})
	if len(in.List) != 1 {
		t.Fatalf("%d incidents %+v, want the restart blip alone", len(in.List), in.List)
	}
	if b := in.List[0]; b.Failed != 5 || !b.Start.Equal(blip) || !b.End.Equal(blip.Add(time.Minute)) {
		t.Errorf("incident %+v, want the 5 refusals of %v", b, blip)
	}
}

// TestStretchesAreTheTruths: the simulator's truth lists a failing stretch
// exactly where the analysis finds an incident (both use
// failure.Stretches): a slow dependency whose four or five 504s came one to
// three a minute has none on either side, and its slowdown is still named
// the trigger from the window's first minutes; a long window's restart blip
// and outage are two on both sides.
func TestStretchesAreTheTruths(t *testing.T) {
	t.Parallel()
	for _, o := range []simulate.Options{
		{Scenario: "slow-dependency-short-window", Seed: 3},
		{Scenario: "slow-dependency-short-window", Seed: 4},
		{Scenario: "long-window-blip", Seed: 1},
	} {
		t.Run(fmt.Sprintf("%s-%d", o.Scenario, o.Seed), func(t *testing.T) {
			res, truth := simulateBundle(t, o)
			// The bounds, not the counts: the truth places a request at its
			// exact arrival, the analysis at its log time less its duration.
			var got, want []string
			for _, inc := range res.Incidents.List {
				got = append(got, inc.Start.Format(time.RFC3339)+"/"+inc.End.Format(time.RFC3339))
			}
			for _, s := range truth.FailingStretches {
				want = append(want, s.From+"/"+s.To)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("incidents %v, truth's failing stretches %+v", got, truth.FailingStretches)
			}
			if truth.Trigger == nil || Kind(truth.Trigger.Kind) != KindServiceTimeRegression {
				return
			}
			if f := first(res.Findings, KindServiceTimeRegression); f == nil || f.Role != RoleTrigger {
				t.Errorf("service_time_regression %+v: want it found as the trigger", f)
			}
		})
	}
}
