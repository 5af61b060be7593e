package detect

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestServiceTimeAndPinningScenarios runs the simulator's incident shapes
// where the obvious answer is wrong: a slow database behind office-hours
// clients (the clients rose, PHP's time is what changed), idle connections
// pinning workers (the workers are "busy", nothing is slow), a crawl that
// lengthens every answer by its queue (PHP's own time barely moved), and a
// legitimate crowd (nothing regressed).
func TestServiceTimeAndPinningScenarios(t *testing.T) {
	tests := []struct {
		scenario string
		want     Kind   // the kind that must be found, as the trigger
		mustNot  []Kind // kinds that must not be found
	}{
		{"slow-database", KindServiceTimeRegression, []Kind{KindIdlePinning}},
		{"slow-database-office", KindServiceTimeRegression, []Kind{KindIdlePinning}},
		{"idle-pinning", KindIdlePinning, []Kind{KindServiceTimeRegression}},
		{"crawler-backlog", "", []Kind{KindServiceTimeRegression, KindIdlePinning}},
		{"flash-crowd", "", []Kind{KindServiceTimeRegression, KindIdlePinning}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			res, truth := simulateBundle(t, simulate.Options{Scenario: tt.scenario, Seed: 1})
			for _, k := range tt.mustNot {
				if f := first(res.Findings, k); f != nil {
					t.Errorf("%s found: %s", k, f.Summary)
				}
			}
			if tt.want == "" {
				return
			}
			f := first(res.Findings, tt.want)
			if f == nil {
				t.Fatalf("no %s; checks %+v", tt.want, res.Checks)
			}
			if f.Role != RoleTrigger {
				t.Errorf("%s role %q, want trigger", tt.want, f.Role)
			}
			if truth.Trigger == nil || Kind(truth.Trigger.Kind) != tt.want {
				t.Fatalf("truth trigger %+v, want %s", truth.Trigger, tt.want)
			}
			onset := mustTime(t, truth.Trigger.Onset)
			if d := f.Start.Sub(onset); d.Abs() > 2*time.Minute {
				t.Errorf("%s starts %s, truth onset %s", tt.want, f.Start, onset)
			}
			switch tt.want {
			case KindServiceTimeRegression:
				b, d := FactMap(f.Facts)["service_median_before_s"], FactMap(f.Facts)["service_median_during_s"]
				if b <= 0 || d < 10*b {
					t.Errorf("median service time %v -> %v: the slow database multiplies it by far more than 10", b, d)
				}
				if FactMap(f.Facts)["cpu_during_pct"] >= idleCPUPct || !strings.Contains(f.Summary, "waiting") {
					t.Errorf("the database stall leaves CPU idle: %s", f.Summary)
				}
				if r := FactMap(f.Facts)["arrivals_per_min_during"] / FactMap(f.Facts)["arrivals_per_min_before"]; r > arrivalsFlat {
					t.Errorf("arrivals rose %.1fx in a scenario whose arrivals stay flat", r)
				}
			case KindIdlePinning:
				// The seed's signature, over the incident only: the
				// scenario's CPU outside the stall is irrelevant.
				if FactMap(f.Facts)["cpu_avg_pct"] >= idleCPUPct || FactMap(f.Facts)["active_avg"] < busyShare*16 {
					t.Errorf("pinning facts %v: want idle CPU and every worker active", f.Facts)
				}
				if FactMap(f.Facts)["php_answers_per_min"] >= collapseShare*FactMap(f.Facts)["php_answers_per_min_before"] {
					t.Errorf("completions %v a minute against %v usually: not a collapse", FactMap(f.Facts)["php_answers_per_min"], FactMap(f.Facts)["php_answers_per_min_before"])
				}
			}
		})
	}
}

// TestServiceTimeNeedsABaseline: with no data before the incident, there is
// no usual time per request to compare with, and the detector says it could
// not judge instead of comparing the incident with itself.
func TestServiceTimeNeedsABaseline(t *testing.T) {
	ev := &Evidence{From: t0, To: t0.Add(time.Hour), Loc: time.UTC, Site: sources.Site{Workers: 16, ClientTimeoutS: 10}}
	ev.Traffic = NewTraffic(ev.Site, ev.From, ev.To)
	slow := shape{ua: firefox, ips: fewIPs, status: 200, origin: sources.OriginUpstream, dur: 6, paths: []string{"/w/A"}}
	feed(ev.Traffic, slow, t0, 20*time.Minute, 400)
	failed := shape{ua: firefox, ips: fewIPs, status: 504, origin: sources.OriginProxy, dur: 10, paths: []string{"/w/A"}}
	feed(ev.Traffic, failed, t0, 20*time.Minute, 400)
	fs, check, err := serviceTimeDetector{}.Detect(context.Background(), ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 0 || check.Outcome != OutcomeCouldNotRun || !strings.Contains(check.Reason, "could not judge") {
		t.Fatalf("findings %+v, check %+v: want could not judge", fs, check)
	}
}

// TestPinningJudgesTheIncidentOnly: CPU was busy for hours before the stall
// (the day's work); during the stall it idled. Averaged from the first queue
// of the day to the last, CPU would read busy and hide the pinning.
func TestPinningJudgesTheIncidentOnly(t *testing.T) {
	from := t0.Add(-time.Hour)
	p := &Pool{
		// A busy morning queue (workers working, CPU high), then the stall.
		Queue: grid(from, 2*time.Hour, func(o time.Duration) float64 {
			return during(10*time.Minute, 30*time.Minute, 20, 0)(o) + during(60*time.Minute, 100*time.Minute, 64, 0)(o)
		}),
		Active: grid(from, 2*time.Hour, func(o time.Duration) float64 {
			return max(during(10*time.Minute, 30*time.Minute, 16, 2)(o), during(60*time.Minute, 100*time.Minute, 16, 2)(o))
		}),
		CPU:   grid(from, 2*time.Hour, during(60*time.Minute, 100*time.Minute, 3, 96)),
		Total: grid(from, 2*time.Hour, constant(16)),
	}
	_, fs := pinnedStall(t, p, from, t0)
	if cpu := FactMap(fs[0].Facts)["cpu_avg_pct"]; cpu > 10 {
		t.Errorf("cpu_avg_pct = %v: averaged outside the incident", cpu)
	}
	if _, ok := FactMap(fs[0].Facts)["timeout_s"]; ok {
		t.Errorf("no answer piled at a timeout, yet timeout_s = %v", FactMap(fs[0].Facts)["timeout_s"])
	}
}

// TestPinningOnAQuietSite: a small site keeps one worker busy and PHP
// answers 12 a minute. Pinned, all 16 workers are held and PHP still answers
// 4 a minute (a third of usual: no collapse by the count alone), yet each
// busy worker finishes a fiftieth of what a busy worker usually does: the
// workers are held, not working. Sixteen busy workers answering 100 a minute
// (8 times the usual count, half of what 16 busy workers usually finish) are
// no stall.
func TestPinningOnAQuietSite(t *testing.T) {
	for _, tt := range []struct {
		name     string
		answered int // PHP answers over the 40 minutes
		want     bool
	}{
		{"every worker held", 160, true},
		{"every worker working", 4000, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			from := t0.Add(-time.Hour)
			p := &Pool{
				Queue:  grid(from, 2*time.Hour, during(60*time.Minute, 100*time.Minute, 30, 0)),
				Active: grid(from, 2*time.Hour, during(60*time.Minute, 100*time.Minute, 16, 1)),
				CPU:    grid(from, 2*time.Hour, constant(3)),
				Total:  grid(from, 2*time.Hour, constant(16)),
			}
			ev := poolEvidence(p)
			ev.Site.ClientTimeoutS = 10
			ev.Traffic = NewTraffic(ev.Site, ev.From, ev.To)
			normal := shape{ua: firefox, ips: fewIPs, status: 200, origin: sources.OriginUpstream, dur: 0.2, paths: []string{"/w/A"}}
			feed(ev.Traffic, normal, from, time.Hour, 720) // 12 a minute
			feed(ev.Traffic, normal, t0, 40*time.Minute, tt.answered)
			refused := shape{ua: firefox, ips: fewIPs, status: 503, origin: sources.OriginProxy, dur: 0.001, paths: []string{"/w/A"}}
			feed(ev.Traffic, refused, t0.Add(time.Second), 40*time.Minute, 400)
			fs, check, err := pinningDetector{}.Detect(context.Background(), ev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if (len(fs) == 1) != tt.want {
				t.Fatalf("idle_pinning found %v, want %v: %+v", len(fs) == 1, tt.want, check)
			}
			if !tt.want && !strings.Contains(check.Reason, "workers busy") {
				t.Errorf("reason %q", check.Reason)
			}
		})
	}
}

// pinnedStall is p's evidence with an hour of ordinary answers from from and,
// for 40 minutes from t0, a stall where PHP answers a handful and the proxy
// refuses the rest; it fails unless idle_pinning finds exactly one finding.
func pinnedStall(t *testing.T, p *Pool, from, t0 time.Time) (*Evidence, []Finding) {
	t.Helper()
	ev := poolEvidence(p)
	ev.Site.ClientTimeoutS = 10
	ev.Traffic = NewTraffic(ev.Site, ev.From, ev.To)
	normal := shape{ua: firefox, ips: fewIPs, status: 200, origin: sources.OriginUpstream, dur: 0.2, paths: []string{"/w/A"}}
	feed(ev.Traffic, normal, from, time.Hour, 3000)
	// During the stall PHP answers a handful; the proxy refuses the rest.
	feed(ev.Traffic, normal, t0, 40*time.Minute, 20)
	refused := shape{ua: firefox, ips: fewIPs, status: 503, origin: sources.OriginProxy, dur: 0.001, paths: []string{"/w/A"}}
	feed(ev.Traffic, refused, t0, 40*time.Minute, 1500)
	fs, check, err := pinningDetector{}.Detect(context.Background(), ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 {
		t.Fatalf("no idle_pinning: %+v", check)
	}
	return ev, fs
}

// TestServiceTimeInWindowBaseline: a recording that starts three minutes
// before every PHP page turns twenty times slower for five minutes, with too
// few failures to make an incident. The first three minutes of the window
// are the baseline and the slowdown is named from its first minute; the same
// slowdown under a doubling of arrivals is the load's story, not PHP's.
func TestServiceTimeInWindowBaseline(t *testing.T) {
	for _, tt := range []struct {
		name   string
		surge  int // extra arrivals a minute during the slowdown
		wantOK bool
	}{
		{"arrivals flat", 0, true},
		{"arrivals doubled", 60, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev := &Evidence{From: t0, To: t0.Add(15 * time.Minute), Loc: time.UTC, Site: sources.Site{Workers: 16, ClientTimeoutS: 10}}
			ev.Traffic = NewTraffic(ev.Site, ev.From, ev.To)
			feed(ev.Traffic, readerPage(0.1), t0.Add(time.Second), 3*time.Minute, 180)
			feed(ev.Traffic, readerPage(2), t0.Add(3*time.Minute+time.Second), 5*time.Minute, 300+5*tt.surge)
			feed(ev.Traffic, readerPage(0.1), t0.Add(8*time.Minute+time.Second), 7*time.Minute, 420)
			failed := shape{ua: firefox, ips: fewIPs, status: 504, origin: sources.OriginProxy, dur: 10, paths: []string{"/w/A"}}
			feed(ev.Traffic, failed, t0.Add(5*time.Minute), time.Minute, 4)
			fs, check, err := serviceTimeDetector{}.Detect(context.Background(), ev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.wantOK {
				if len(fs) != 0 || !strings.Contains(check.Reason, "arrivals rose") {
					t.Fatalf("findings %+v, check %+v: want the load's story", fs, check)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("no finding: %+v", check)
			}
			f := fs[0]
			if !f.Start.Equal(t0.Add(3*time.Minute)) || !f.End.Equal(t0.Add(8*time.Minute)) {
				t.Errorf("slowdown %s to %s, want %s to %s", f.Start, f.End, t0.Add(3*time.Minute), t0.Add(8*time.Minute))
			}
			facts := FactMap(f.Facts)
			if facts["baseline_window_minutes"] != 3 || facts["service_median_before_s"] > 0.11 || facts["service_median_during_s"] < 1.9 {
				t.Errorf("facts %v: want the first 3 minutes as baseline, 0.1 s -> 2 s", facts)
			}
			if !strings.Contains(f.Summary, "first 3 min of the window") || !strings.Contains(f.Summary, "4 of ") {
				t.Errorf("summary %q: want the in-window baseline and the few failures stated", f.Summary)
			}
		})
	}
}

// TestServiceTimeColdStartBaseline: a recording that starts with no
// sessions in progress answers its first visitors cold, slower than the
// site's steady state for a reason that is not the incident. Read as the
// usual, those first minutes hide a slowdown that follows: in the
// simulator's slow-dependency-short-window seed 7 their 24 answers have a
// median near 0.5 s against a steady 0.1 s, and the slowdown (0.8 to 1.3 s)
// is not three times 0.5 s. The window's calmest stretch is then the usual,
// and the finding says which minutes and how many answers it is. The cold
// minutes alone, with nothing slow after them, are no regression.
func TestServiceTimeColdStartBaseline(t *testing.T) {
	t.Run("simulated seed 7", func(t *testing.T) {
		res, truth := simulateBundle(t, simulate.Options{Scenario: "slow-dependency-short-window", Seed: 7})
		onset, err := time.Parse(time.RFC3339, truth.Phases.Onset)
		if err != nil {
			t.Fatal(err)
		}
		f := first(res.Findings, KindServiceTimeRegression)
		if f == nil || f.Role != RoleTrigger {
			t.Fatalf("service_time_regression %+v: want the slowdown found as the trigger", f)
		}
		if d := f.Start.Sub(onset); d < -2*time.Minute || d > 2*time.Minute {
			t.Errorf("slowdown from %s, truth's onset %s", f.Start, onset)
		}
		facts := FactMap(f.Facts)
		if facts["service_median_before_s"] > 0.2 || facts["baseline_window_minutes"] != 3 {
			t.Errorf("facts %v: want the calmest 3 minutes (about 0.1 s) as the usual", facts)
		}
		// The obvious baseline, the first minutes, is stated and slow.
		if !strings.Contains(f.Summary, "calmest 3 min") || !strings.Contains(f.Summary, "24 answers") {
			t.Errorf("summary %q: want the calmest stretch and the slow first minutes stated", f.Summary)
		}
	})
	for _, tt := range []struct {
		name     string
		slowdown bool
	}{
		{"cold start, then a slowdown", true},
		{"cold start alone", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev := &Evidence{From: t0, To: t0.Add(15 * time.Minute), Loc: time.UTC, Site: sources.Site{Workers: 16, ClientTimeoutS: 10}}
			ev.Traffic = NewTraffic(ev.Site, ev.From, ev.To)
			feed(ev.Traffic, readerPage(0.5), t0.Add(time.Second), 3*time.Minute, 24) // few and cold
			slow := 0.1
			if tt.slowdown {
				slow = 1.0 // twice the cold minutes, ten times the steady state
			}
			feed(ev.Traffic, readerPage(slow), t0.Add(3*time.Minute+time.Second), 5*time.Minute, 70)
			feed(ev.Traffic, readerPage(0.1), t0.Add(8*time.Minute+time.Second), 7*time.Minute, 120)
			fs, check, err := serviceTimeDetector{}.Detect(context.Background(), ev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.slowdown {
				if len(fs) != 0 {
					t.Fatalf("findings %+v: the cold first minutes are not a regression", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("no finding: %+v", check)
			}
			f := fs[0]
			if !f.Start.Equal(t0.Add(3*time.Minute)) || !f.End.Equal(t0.Add(8*time.Minute)) {
				t.Errorf("slowdown %s to %s, want %s to %s", f.Start, f.End, t0.Add(3*time.Minute), t0.Add(8*time.Minute))
			}
			if facts := FactMap(f.Facts); facts["service_median_before_s"] > 0.11 || facts["service_median_during_s"] < 0.9 {
				t.Errorf("facts %v: want 0.1 s -> 1 s against the calmest stretch", facts)
			}
			if !strings.Contains(f.Summary, "calmest 3 min (17:08 to 17:11") || !strings.Contains(f.Summary, "24 answers, median 0.5") {
				t.Errorf("summary %q: want the calmest stretch and the cold minutes stated", f.Summary)
			}
		})
	}
}

// TestServiceTimeStrayFailureIsNotTheFailing: one page answered after its
// reader left opens the failing stretch five minutes before readers fail
// in numbers (an edge minute). Two minutes after it a load triples the
// arrivals and every page turns twenty times slower. Read from the stray
// answer, arrivals were flat "when clients began to be failed" and rose
// after, so the obvious answer is a slowdown with reloads as its effect.
// Clients began to be failed at the first clear minute, after the load
// rose: the load's story, no service_time_regression.
func TestServiceTimeStrayFailureIsNotTheFailing(t *testing.T) {
	from, to := t0, t0.Add(4*time.Hour)
	stray := t0.Add(3 * time.Hour)
	ev := &Evidence{From: from, To: to, Loc: time.UTC, Site: sources.Site{Workers: 16, ClientTimeoutS: 10}}
	ev.Traffic = NewTraffic(ev.Site, from.Add(-3*time.Hour), to)
	load := stray.Add(2 * time.Minute)
	feed(ev.Traffic, readerPage(0.1), from.Add(-3*time.Hour), load.Sub(from.Add(-3*time.Hour)), int(load.Sub(from.Add(-3*time.Hour)).Minutes())*20)
	wedged(ev.Traffic, stray, time.Second, 1, 30)
	feed(ev.Traffic, readerPage(2), load, 40*time.Minute, 40*60) // three times the arrivals, each twenty times slower
	failed := shape{ua: firefox, ips: fewIPs, status: 504, origin: sources.OriginProxy, dur: 10, paths: []string{"/w/A"}}
	feed(ev.Traffic, failed, stray.Add(5*time.Minute), 20*time.Minute, 20*20)
	if inc := ev.incidents().WorstIncident(); inc == nil || !inc.Start.Equal(stray) {
		t.Fatalf("incident %+v: want a stretch from the stray failure at %s", inc, stray)
	}
	wantLoadsStory(t, ev, "arrivals rose before readers failed in numbers")
}

// TestServiceTimeLoadFailingAtOnceIsTheLoad: a load that tripled the
// arrivals from the start of the window analysed and failed clients four
// seconds later (the 256 MB bench log's crawl). Its onset's arrivals are
// never read over the minute before it (the usual, which reads as flat);
// four seconds are too few to read, so the first minute stands: the
// slowdown is the load's story, not a regression whose reloads came later.
func TestServiceTimeLoadFailingAtOnceIsTheLoad(t *testing.T) {
	from, to := t0, t0.Add(4*time.Hour)
	load := t0.Add(3 * time.Hour)
	// The window analysed starts where the load did.
	ev := &Evidence{From: load, To: to, Loc: time.UTC, Site: sources.Site{Workers: 16, ClientTimeoutS: 10}}
	ev.Traffic = NewTraffic(ev.Site, from.Add(-3*time.Hour), to)
	before := load.Sub(from.Add(-3 * time.Hour))
	feed(ev.Traffic, readerPage(0.1), from.Add(-3*time.Hour), before, int(before.Minutes())*20)
	// Three times the arrivals from the minute's start (logged 2 s after
	// they arrived), each twenty times slower; the first 504 is told 4 s in.
	feed(ev.Traffic, readerPage(2), load.Add(2*time.Second), 40*time.Minute, 40*60)
	failed := shape{ua: firefox, ips: fewIPs, status: 504, origin: sources.OriginProxy, dur: 10, paths: []string{"/w/A"}}
	feed(ev.Traffic, failed, load.Add(4*time.Second), 20*time.Minute, 20*20)
	wantLoadsStory(t, ev, "arrivals rose at the onset, before the first failure")
}

// readerPage is an ordinary reader's page that PHP answers in dur seconds.
func readerPage(dur float64) shape {
	return shape{ua: firefox, ips: fewIPs, status: 200, origin: sources.OriginUpstream, dur: dur, paths: []string{"/w/A", "/w/B"}}
}

// wantLoadsStory runs service_time_regression over ev and wants no finding
// and the "arrivals rose" reason: the load slowed PHP (why says how).
func wantLoadsStory(t *testing.T, ev *Evidence, why string) {
	t.Helper()
	fs, check, err := serviceTimeDetector{}.Detect(context.Background(), ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 0 || !strings.Contains(check.Reason, "arrivals rose") {
		for _, f := range fs {
			t.Logf("%s: %s", f.Kind, f.Summary)
		}
		t.Errorf("%d findings, check %q: want the load's story (%s)", len(fs), check.Reason, why)
	}
}
