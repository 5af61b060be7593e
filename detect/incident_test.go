package detect

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

var (
	readers = shape{ua: firefox, lang: "ko-kr", ips: fewIPs, status: 200, origin: sources.OriginUpstream, dur: 0.2, paths: []string{"/w/A"}}
	down    = shape{ua: firefox, lang: "ko-kr", ips: fewIPs, status: 503, origin: sources.OriginProxy, dur: 0.001, paths: []string{"/w/A"}}
)

// wedged adds n successes spread over [at, at+d) that each waited wait
// seconds: logged wait seconds after their readers asked.
func wedged(tr *Traffic, at time.Time, d time.Duration, n int, wait float64) {
	for i := 0; i < n; i++ {
		arrive := at.Add(time.Duration(i) * d / time.Duration(n))
		tr.Observe(&sources.Request{Time: arrive.Add(time.Duration(wait * float64(time.Second))), ClientIP: netip.MustParseAddr(fewIPs(i)),
			Method: "GET", Path: "/w/A", Status: 200, Duration: wait, UserAgent: firefox, Lang: "ko-kr", Origin: sources.OriginUpstream, TLS: true, SecChUa: true})
	}
}

// A long window with a 9-failure restart blip and, 2.5 hours later, an
// outage: two incidents, not one stretch from the blip to the outage's end;
// the report leads with the outage, and the baseline is the hours before it
// (after the blip), not the window.
func TestIncidentBlipAndOutageStaySeparate(t *testing.T) {
	from, to := t0, t0.Add(15*time.Hour)
	tr := NewTraffic(sources.Site{ClientTimeoutS: 10}, from, to)
	feed(tr, readers, from.Add(-3*time.Hour), 18*time.Hour, 18*60*20) // 20 a minute throughout
	blip := from.Add(2 * time.Hour)
	feed(tr, down, blip.Add(10*time.Second), 30*time.Second, 9)
	outage := blip.Add(150 * time.Minute)
	feed(tr, down, outage.Add(time.Second), 20*time.Minute-time.Second, 20*200) // arrivals inside [outage, outage+20m)
	ev := &Evidence{From: from, To: to, Traffic: tr, Loc: time.UTC}
	in := FindIncidents(ev)
	if len(in.List) != 2 {
		t.Fatalf("%d incidents %+v, want the blip and the outage apart", len(in.List), in.List)
	}
	w := in.WorstIncident()
	if !w.Start.Equal(outage) || !w.End.Equal(outage.Add(20*time.Minute)) || !w.Onset.Equal(outage) {
		t.Errorf("worst incident %v-%v (onset %v), want the outage %v-%v", w.Start, w.End, w.Onset, outage, outage.Add(20*time.Minute))
	}
	if in.List[0].Failed != 9 || !in.List[0].Start.Equal(blip) {
		t.Errorf("first incident %+v, want the 9-failure blip at %v", in.List[0], blip)
	}
	b := in.Baseline
	if b.Source != BaselineBeforeOnset || !b.To.Equal(outage) || b.From.Before(in.List[0].End) {
		t.Errorf("baseline %+v: want the time between the blip and the outage's onset", b)
	}
	// upstream_errors reports the worst stretch, not blip-to-outage.
	fs, check, err := errorsDetector{}.Detect(context.Background(), ev, nil)
	if err != nil || len(fs) != 1 {
		t.Fatalf("errors: %v %+v", err, check)
	}
	if !fs[0].Start.Equal(outage) {
		t.Errorf("upstream_errors from %v, want %v", fs[0].Start, outage)
	}
}

// The silent wedge: no 5xx at all, and no client timeout given. Successes
// logged minutes after their readers asked are the outage; they are placed
// where the readers asked (arrival), counted late against an estimate made
// from the baseline's tail, and data_quality says it is an estimate.
func TestIncidentSilentWedgeWithoutClientTimeout(t *testing.T) {
	tr := NewTraffic(sources.Site{}, t0, t0.Add(time.Hour))
	feed(tr, readers, t0.Add(-time.Hour), 2*time.Hour, 2400)
	wedgeAt := t0.Add(20 * time.Minute)
	wedged(tr, wedgeAt, 20*time.Minute, 1200, 120) // answered two minutes late
	ev := &Evidence{From: t0, To: t0.Add(time.Hour), Traffic: tr, Loc: time.UTC}
	in := FindIncidents(ev)
	w := in.WorstIncident()
	if w == nil {
		t.Fatal("no incident in a silent wedge")
	}
	if !w.Start.Equal(wedgeAt) {
		t.Errorf("failing stretch starts %v, want %v where the readers asked (they were logged two minutes later)", w.Start, wedgeAt)
	}
	if w.Late < 1100 || w.Refused != 0 {
		t.Errorf("late %d refused %d, want about 1,200 late and no refusal", w.Late, w.Refused)
	}
	if in.LateSource != LateFromBaselineTail || in.LateAfterS < minLateS || in.LateAfterS > 60 {
		t.Errorf("late after %v s from %s: want an estimate from the baseline's tail", in.LateAfterS, in.LateSource)
	}
	if !notesHave(in.Notes, "estimat") && !notesHave(in.Notes, "counted as late") {
		t.Errorf("notes %+v do not say the timeout was estimated", in.Notes)
	}
	// The access log's counts agree: the late answers are no goodput.
	late := 0
	for _, m := range tr.Minutes() {
		late += m.Late
	}
	if late < 1100 {
		t.Errorf("minutes count %d late answers, want about 1,200", late)
	}
	fs, _, _ := abandonedDetector{}.Detect(context.Background(), ev, nil)
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "estimated") {
		t.Errorf("client_abandoned_work %+v: it must run with the estimated timeout and say so", fs)
	}
}

// No quiet time before the window: the data starts inside the incident. The
// obvious baseline (the whole data span) is the incident itself; there must
// be none, a note saying so, and no "usual" number anywhere.
func TestIncidentNoQuietTimeBeforeWindow(t *testing.T) {
	tr := NewTraffic(sources.Site{ClientTimeoutS: 10}, t0, t0.Add(time.Hour))
	feed(tr, readers, t0, time.Hour, 1200)
	feed(tr, down, t0, 40*time.Minute, 4000)
	crawler := shape{ua: chrome121, lang: "zh-cn", loggedIn: sources.LoggedInNo, ips: spreadIPs, status: 200, origin: sources.OriginUpstream, dur: 2,
		paths: []string{"/w/index.php?title=X&action=edit", "/w/Special:WhatLinksHere/X"}}
	feed(tr, crawler, t0, 40*time.Minute, 6000)
	ev := &Evidence{From: t0, To: t0.Add(time.Hour), Traffic: tr, Loc: time.UTC}
	res, err := Run(context.Background(), ev, Detectors())
	if err != nil {
		t.Fatal(err)
	}
	if res.Incidents.Baseline.Usable() || !notesHave(res.DataQuality, "no baseline was available") {
		t.Errorf("baseline %+v, notes %+v: want none, said in data_quality", res.Incidents.Baseline, res.DataQuality)
	}
	e := first(res.Findings, KindUpstreamErrors)
	if e == nil {
		t.Fatalf("no upstream_errors: %+v", res.Checks)
	}
	if _, ok := FactMap(e.Facts)["usual_failed_per_min"]; ok || strings.Contains(e.Summary, "usually") {
		t.Errorf("a usual rate stated with no baseline: %v %q", e.Facts, e.Summary)
	}
	c := first(res.Findings, KindCrawlerBurst)
	if c == nil {
		t.Fatalf("the crawler carried most of PHP's time but was not found: %+v", res.Checks)
	}
	if _, ok := FactMap(c.Facts)["baseline_per_10m"]; ok || !strings.Contains(c.Summary, "no baseline") {
		t.Errorf("crawler compared with a baseline that does not exist: %v %q", c.Facts, c.Summary)
	}
}

// A given baseline that reaches into the incident is cut at its onset.
func TestIncidentGivenBaselineCutAtOnset(t *testing.T) {
	tr := NewTraffic(sources.Site{ClientTimeoutS: 10}, t0, t0.Add(time.Hour))
	feed(tr, readers, t0.Add(-time.Hour), 2*time.Hour, 2400)
	outage := t0.Add(-10 * time.Minute)
	feed(tr, down, outage.Add(time.Second), 40*time.Minute, 4000)
	ev := &Evidence{From: t0.Add(-20 * time.Minute), To: t0.Add(time.Hour), BaselineFrom: t0.Add(-time.Hour), BaselineTo: t0,
		Traffic: tr, Loc: time.UTC}
	in := FindIncidents(ev)
	if b := in.Baseline; b.Source != BaselineGiven || !b.To.Equal(outage) {
		t.Errorf("baseline %+v, want the given one ending at the onset %v", b, outage)
	}
}

// The goodput the report states is the ordinary clients': a crawler served
// at full speed while readers were refused is not goodput.
func TestGoodputLeavesTheCrawlerOut(t *testing.T) {
	tr := NewTraffic(sources.Site{ClientTimeoutS: 10}, t0, t0.Add(time.Hour))
	feed(tr, readers, t0.Add(-time.Hour), time.Hour+20*time.Minute, 1600) // 20 a minute, then they are refused
	feed(tr, down, t0.Add(20*time.Minute), 20*time.Minute, 400)
	crawler := shape{ua: chrome121, lang: "zh-cn", loggedIn: sources.LoggedInNo, ips: spreadIPs, status: 200, origin: sources.OriginUpstream, dur: 0.3,
		paths: []string{"/w/index.php?title=X&action=edit"}}
	feed(tr, crawler, t0.Add(-time.Hour), time.Hour, 60)
	feed(tr, crawler, t0.Add(15*time.Minute), 30*time.Minute, 6000) // 200 a minute of its own 200s
	ev := &Evidence{From: t0, To: t0.Add(time.Hour), Traffic: tr, Loc: time.UTC}
	prior, _, _ := crawlerDetector{}.Detect(context.Background(), ev, nil)
	if len(prior) != 1 {
		t.Fatalf("crawler not found")
	}
	fs, _, _ := errorsDetector{}.Detect(context.Background(), ev, prior)
	if len(fs) != 1 {
		t.Fatal("no upstream_errors")
	}
	if got := FactMap(fs[0].Facts)["goodput_min_per_min"]; got != 0 {
		t.Errorf("goodput_min_per_min = %v: the crawler's own 200s counted as goodput (readers got none)", got)
	}
	if got := FactMap(fs[0].Facts)["goodput_usual_per_min"]; got < 19 || got > 21 {
		t.Errorf("goodput_usual_per_min = %v, want the readers' 20", got)
	}
}

// On a bundle without metrics, no configuration change is blamed by the
// backlog arithmetic that needs the listen queue: the wedge's 511 -> 4096
// raise is a candidate the analysis could not judge, not an enabler.
func TestNoMetricsNoBacklogBlame(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulation in -short mode")
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	if _, err := simulate.Run(context.Background(), simulate.Options{Scenario: "crawler-backlog-wedge", Seed: 1, BaselineHours: 0.5, Out: dir}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "metrics")); err != nil {
		t.Fatal(err)
	}
	res := runBundle(t, dir)
	for _, f := range res.Findings {
		if f.Kind != KindConfigChange || f.Change == nil || f.Change.Key != "listen.backlog" || f.Change.New != "4096" {
			continue
		}
		if f.Role == RoleEnabler || f.Role == RoleTrigger || f.Confidence > 0.4 {
			t.Errorf("listen.backlog -> 4096 is %s %.2f without the queue series: %s", f.Role, f.Confidence, f.Summary)
		}
		if !strings.Contains(f.Summary, "could not judge") {
			t.Errorf("summary does not say it could not judge: %s", f.Summary)
		}
		return
	}
	t.Fatalf("the backlog change was not reviewed at all; checks %+v", res.Checks)
}

func notesHave(ns []sources.QualityNote, s string) bool {
	for _, n := range ns {
		if strings.Contains(n.Message, s) {
			return true
		}
	}
	return false
}

// The failing stretch's milestones are the stretch's own, as logged: a
// sharper but shorter burst hours earlier is another incident and not the
// peak upstream_errors states (the window's busiest minute is the wrong
// answer), and answers logged two minutes after their readers asked put the
// first logged failure two minutes into the stretch, not at its start.
func TestLoggedMilestonesAreTheStretchs(t *testing.T) {
	from, to := t0, t0.Add(6*time.Hour)
	tr := NewTraffic(sources.Site{ClientTimeoutS: 10}, from, to)
	feed(tr, readers, from.Add(-3*time.Hour), 9*time.Hour, 9*60*20)
	burst := from.Add(time.Hour)
	feed(tr, down, burst.Add(time.Second), 50*time.Second, 300) // 300 in one minute, 300 in all
	outage := from.Add(4 * time.Hour)
	wedged(tr, outage, 20*time.Minute, 20*150, 125) // 150 a minute, logged 125 s after they arrived
	ev := &Evidence{From: from, To: to, Traffic: tr, Loc: time.UTC}
	fs, check, err := errorsDetector{}.Detect(context.Background(), ev, nil)
	if err != nil || len(fs) != 1 {
		t.Fatalf("errors: %v %+v", err, check)
	}
	f := fs[0]
	if !f.Start.Equal(outage) || f.Logged == nil {
		t.Fatalf("upstream_errors %v-%v logged %+v: want the outage from %v", f.Start, f.End, f.Logged, outage)
	}
	ms := *f.Logged
	if want := outage.Add(2 * time.Minute); !ms.First.Equal(want) {
		t.Errorf("first logged failure %v, want %v (two minutes after the stretch's first arrivals)", ms.First, want)
	}
	if ms.Worst.Before(outage) || !ms.Worst.Before(f.End) || ms.WorstFailed > 160 || ms.WorstFailed < 140 {
		t.Errorf("worst logged minute %v with %d failed: want one of the outage's, about 150 (not the burst's 300 at %v)", ms.Worst, ms.WorstFailed, burst)
	}
	if peak := FactsOf[UpstreamErrorsFacts](&f).PeakFailedPerMin; peak != ms.WorstFailed || !strings.Contains(f.Summary, "peaked at "+fmtInt(ms.WorstFailed)) {
		t.Errorf("peak fact %v, summary %q: want the worst logged minute's %d", peak, f.Summary, ms.WorstFailed)
	}
	if !ms.Last.Before(f.End) || ms.Last.Before(ms.Worst) {
		t.Errorf("last logged failure %v, want within the stretch, after the worst %v", ms.Last, ms.Worst)
	}
}
