package rules

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// recordingCase is an input for Propose, and whether a recording can replace
// the streaming replays for it.
type recordingCase struct {
	name       string
	in         Input
	recordable bool
	// shows is a text the proposal must hold: the case does what it is for.
	shows string
	// spill is in with its requests in a spill, when the case has one
	// already (analyze's, from ingest.Load); else the test makes one.
	spill *Input
}

// scenarioInput is the input of a Propose test's scenario.
func scenarioInput(t *testing.T, sc scenario) Input {
	t.Helper()
	in, _ := sc.input(t)
	return in
}

// crawlyWindow is the day of twoCrawlersInput and trailingInput: traffic
// from base, the window [from, to), a burst from onset to end; and their
// crawler (a tool walker sending no client hints) and its tools.
func crawlyWindow() (base, from, to, onset, end time.Time, crawly reader, tools []string) {
	base = time.Date(2026, 10, 2, 22, 0, 0, 0, time.UTC)
	from, to = base.Add(2*time.Hour), base.Add(3*time.Hour)
	onset, end = from.Add(10*time.Minute), from.Add(40*time.Minute)
	crawly = reader{ua: "Mozilla/5.0 (compatible; Crawly/1.0)"}
	tools = []string{"/index.php?title=%s&action=history", "/wiki/Special:WhatLinksHere/%s"}
	return base, from, to, onset, end, crawly, tools
}

// twoCrawlersInput has two crawlers: the first cannot be limited without
// refusing ordinary readers (its zone is resized, then dropped), the second
// can. Dropping the first zone moves the second to index 0: the recording's
// match bits must follow.
func twoCrawlersInput(t *testing.T) Input {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 12))
	base, from, to, onset, end, crawly, tools := crawlyWindow()
	firefox := reader{ua: uaFirefox, lang: "de-DE"}
	hits := ordinaryTraffic(rng, base, to, 60, siteTools)
	hits = append(hits, crawlerTraffic(rng, onset, end, 40, crawly, tools, false)...)
	hits = append(hits, crawlerTraffic(rng, base, from, 30, crawly, tools, false)...)
	hits = append(hits, crawlerTraffic(rng, onset, end, 300, firefox, []string{"/index.php?title=%s&action=info", "/wiki/Special:Log/%s"}, true)...)
	first := crawlerFinding(t, crawly, onset, end)
	second := crawlerFinding(t, firefox, onset, end)
	second.ID = "crawler_burst-2"
	return Input{Findings: []detect.Finding{first, second}, Access: []string{writeLog(t, t.TempDir(), hits)}, Site: siteFacts, From: from, To: to}
}

// trailingInput is a log that goes on for two hours after the window, the
// crawler's tools in it again: a recording from a spill stops reading
// before them (engine.spillFilter), and must record what one from the logs
// records.
func trailingInput(t *testing.T) Input {
	t.Helper()
	rng := rand.New(rand.NewPCG(13, 14))
	base, from, to, onset, end, crawly, tools := crawlyWindow()
	hits := ordinaryTraffic(rng, base, to.Add(2*time.Hour), 60, siteTools)
	hits = append(hits, crawlerTraffic(rng, onset, end, 60, crawly, tools, false)...)
	hits = append(hits, crawlerTraffic(rng, to.Add(30*time.Minute), to.Add(90*time.Minute), 60, crawly, tools, false)...)
	return Input{Findings: []detect.Finding{crawlerFinding(t, crawly, onset, end)}, Access: []string{writeLog(t, t.TempDir(), hits)},
		Site: siteFacts, From: from, To: to}
}

// lateInput is a log whose lines are far out of arrival order (two files
// concatenated the wrong way round): the streaming replays replay the
// crawler late, and a recording must not be used.
func lateInput(t *testing.T) Input {
	t.Helper()
	in := scenarioInput(t, scenario{name: "late", crawler: reader{ua: uaFirefox, lang: "de-DE"}, perMin: 100, spread: true,
		tools: []string{"/index.php?title=%s&action=history"}})
	data, err := os.ReadFile(in.Access[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	half := len(lines) / 2
	swapped := strings.Join(append(lines[half:], lines[:half]...), "")
	path := filepath.Join(t.TempDir(), "swapped.log")
	if err := os.WriteFile(path, []byte(swapped), 0o644); err != nil {
		t.Fatal(err)
	}
	in.Access = []string{path}
	return in
}

// recordFor runs Propose's steps up to the recording pass, as propose does;
// between (nil for nothing) runs after the profile pass.
func recordFor(t *testing.T, in Input, between func()) (*recordedArrivals, *sources.QualityNote, *profile) {
	t.Helper()
	ctx := context.Background()
	refs, _ := crawlerRefs(in.Findings)
	prof, err := readProfile(ctx, &in, refs)
	if err != nil {
		t.Fatal(err)
	}
	if between != nil {
		between()
	}
	bFrom, bTo, _, ok := baselineRange(&in, prof, refs, func(sources.Severity, prose.Text) {})
	if !ok {
		t.Fatal("no baseline")
	}
	zones, _ := generate(prof.crawlers, prof.site)
	for i := range zones {
		zones[i].Window, zones[i].Events = time.Minute, 1
	}
	_, m := adaptedZoneMatchers(t, zones, in.Site.LoggedInCookie)
	e := &engine{in: &in, refs: refs, matchers: m}
	rec, note, err := e.record(ctx, prof, zones, candidateWindows[sizingWindow(bTo.Sub(bFrom))], bFrom, bTo, maxRecordedArrivals)
	if err != nil {
		t.Fatal(err)
	}
	return rec, note, prof
}

// TestRecordedReplayEqualsStreaming: the replays from a recording and the
// streaming replays (forced by a recording cap of zero) propose the same
// rules, backtests and notes, but the note on the cap; resizing, a dropped
// zone and a per-client zone included.
func TestRecordedReplayEqualsStreaming(t *testing.T) {
	cases := []recordingCase{
		{"resized: the crawler in the baseline", scenarioInput(t, scenario{name: "resized", crawler: reader{ua: "Mozilla/5.0 (compatible; Crawly/1.0)"},
			perMin: 200, spread: true, baselinePerMin: 3, tools: []string{"/index.php?title=%s&action=history", "/wiki/Special:WhatLinksHere/%s"}}),
			true, "so the zone was resized to", nil},
		{"per client", scenarioInput(t, scenario{name: "per client", crawler: reader{ua: uaChrome, lang: "zh-CN"}, perMin: 120,
			tools: []string{"/wiki/Special:WhatLinksHere/%s", "/index.php?title=Special:CiteThisPage/%s"}}), true, "key {client_ip}", nil},
		{"a zone dropped", twoCrawlersInput(t), true, "crawler_burst-1: zone tools_no_hints_logged_out rejected", nil},
		{"lines far out of order", lateInput(t), false, "replayed late", nil},
		{"traffic after the window", trailingInput(t), true, `"crawler_requests": 1800,`, nil},
	}
	if !testing.Short() {
		dir := filepath.Join(t.TempDir(), "b")
		if _, err := simulate.Run(context.Background(), simulate.Options{Scenario: "crawler-backlog", Seed: 2, BaselineHours: 2, Out: dir, StoredGzip: true}); err != nil {
			t.Fatal(err)
		}
		spill := inputForBundle(t, dir)
		in := spill
		in.Requests = nil // from the logs first; analyze's spill is compared below
		cases = append(cases, recordingCase{"simulated crawler-backlog", in, true, "window 10m", &spill})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recorded, err := Propose(context.Background(), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			checkReplays(t, "from the logs", recorded, tc.recordable)
			saved := maxRecordedArrivals
			maxRecordedArrivals = 0
			streamed, err := Propose(context.Background(), tc.in)
			maxRecordedArrivals = saved
			if err != nil {
				t.Fatal(err)
			}
			// The same, reading the requests from a spill as analyze does:
			// recorded exactly when the logs are.
			var spill Input
			if tc.spill != nil {
				spill = *tc.spill
			} else {
				spill = spilled(t, tc.in)
			}
			for _, c := range []struct {
				limit int
				want  *Proposal
			}{{saved, recorded}, {0, streamed}} {
				maxRecordedArrivals = c.limit
				p, err := Propose(context.Background(), spill)
				maxRecordedArrivals = saved
				if err != nil {
					t.Fatal(err)
				}
				if c.limit == saved {
					checkReplays(t, "from the spill", p, tc.recordable)
				}
				got, _ := json.MarshalIndent(p, "", " ")
				want, _ := json.MarshalIndent(c.want, "", " ")
				if string(got) != string(want) {
					t.Errorf("recording cap %d: the proposal from the spill differs from the one from the logs:\n%s\nfrom the logs:\n%s", c.limit, got, want)
				}
			}
			capNote := slices.IndexFunc(streamed.DataQuality, func(n sources.QualityNote) bool {
				return strings.Contains(n.Message, "too many to hold in memory")
			})
			if tc.recordable != (capNote >= 0) {
				t.Errorf("cap note at %d, want one exactly when a recording was made: %v", capNote, streamed.DataQuality)
			}
			if capNote >= 0 {
				streamed.DataQuality = slices.Delete(streamed.DataQuality, capNote, capNote+1)
				if len(streamed.DataQuality) == 0 {
					streamed.DataQuality = nil
				}
			}
			if len(recorded.Rules) == 0 {
				t.Fatalf("no rule: %v", recorded.DataQuality)
			}
			got, _ := json.MarshalIndent(recorded, "", " ")
			want, _ := json.MarshalIndent(streamed, "", " ")
			if string(got) != string(want) {
				t.Errorf("the replay from the recording differs from the streaming one:\n%s\nstreamed:\n%s", got, want)
			}
			if !strings.Contains(string(got), tc.shows) {
				t.Errorf("the proposal does not show %q:\n%s", tc.shows, got)
			}
		})
	}
}

// checkReplays fails t unless p's replays came from a recording of some
// arrivals with no note exactly when recordable, and else streamed with no
// note (the profile found arrivals possibly late); from says which input.
func checkReplays(t *testing.T, from string, p *Proposal, recordable bool) {
	t.Helper()
	r := p.replays
	if recordable && (!r.recorded || r.note != nil || r.arrivals == 0) {
		t.Fatalf("%s: no recording (note %v, %d arrivals possibly late)", from, r.note, r.possiblyLate)
	}
	if !recordable && (r.recorded || r.note != nil) {
		t.Fatalf("%s: a recording (note %v) of a log streaming replays would replay late", from, r.note)
	}
}

// TestRecordingSpillFilter: the recording pass takes from the spill the
// records it could record, and stops at the first whose log time puts every
// later arrival past the replayed ranges: not at the first logged past them,
// which may have arrived inside (a slow request), nor at a health check,
// which the profile's lateness check does not cover. It passes over unread
// the records that arrived before the ranges, by arrival, not log time: a
// negative duration puts one logged before the range inside it.
func TestRecordingSpillFilter(t *testing.T) {
	lo := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	hi := lo.Add(time.Hour)
	maxDuration := 30 * time.Second
	keep := func(at int64) bool { return at >= lo.UnixNano() && at < hi.UnixNano() }
	in := &Input{Site: sources.Site{HealthURI: "/healthz.php"}}
	zone := Zone{Targets: []Target{{Paths: []string{"/wiki/Special:WhatLinksHere/*"}}}}
	e := &engine{in: in, matchers: &zoneMatchers{filter: newLineFilter([]Zone{zone})}}
	filter := e.spillFilter(keep, lo.UnixNano(), hi.UnixNano(), int64(maxDuration))
	if !filter.From.Equal(lo) {
		t.Errorf("the filter passes over the records that arrived before %v, want %v", filter.From, lo)
	}
	tool, page := "/wiki/Special:WhatLinksHere/Foo", "/wiki/Foo"
	stopFrom := hi.Add(maxDuration + reorderMargin)
	for _, c := range []struct {
		name     string
		logged   time.Time
		duration float64
		path     string
		want     accesslog.SpillVerdict
	}{
		{"a tool in the range", lo.Add(time.Minute), 0.1, tool, accesslog.SpillKeep},
		{"a page no zone matches", lo.Add(time.Minute), 0.1, page, accesslog.SpillSkip},
		{"a tool before the range", lo.Add(-time.Minute), 0.1, tool, accesslog.SpillSkip},
		{"a tool logged before the range, arrived in it (a negative duration)", lo.Add(-time.Second), -2, tool, accesslog.SpillKeep},
		{"a tool logged past the range, arrived in it", hi.Add(20 * time.Second), 25, tool, accesslog.SpillKeep},
		{"a tool logged and arrived past the range", hi.Add(time.Minute), 0.1, tool, accesslog.SpillSkip},
		{"the last record a later one could arrive before", stopFrom.Add(-time.Nanosecond), 0.1, page, accesslog.SpillSkip},
		{"a health check far past the range", stopFrom.Add(time.Hour), 0.01, "/healthz.php", accesslog.SpillSkip},
		{"the first record none after can arrive before", stopFrom, 0.1, page, accesslog.SpillStop},
	} {
		h := accesslog.SpillHead{Time: c.logged.UnixNano(), Duration: c.duration, Path: []byte(c.path)}
		if got := filter.Head(&h); got != c.want {
			t.Errorf("%s: verdict %d, want %d", c.name, got, c.want)
		}
	}
}

// spilled is in with its requests kept in a spill, as analyze keeps them.
func spilled(t *testing.T, in Input) Input {
	t.Helper()
	s, err := accesslog.NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := accesslog.Read(context.Background(), in.Access, accesslog.Options{LoggedInCookie: in.Site.LoggedInCookie}, nil, s.Write); err != nil {
		t.Fatal(err)
	}
	in.Requests = s
	return in
}

// TestRecordNoticesChangedLogs: a log that grows between the profile pass and
// the recording pass is not recorded, and the notes say why.
func TestRecordNoticesChangedLogs(t *testing.T) {
	in := scenarioInput(t, scenario{name: "changed", crawler: reader{ua: uaFirefox, lang: "de-DE"}, perMin: 100, spread: true,
		tools: []string{"/index.php?title=%s&action=history"}})
	// The log is read again with a copy of its first lines at its end.
	rec, note, _ := recordFor(t, in, func() {
		data, err := os.ReadFile(in.Access[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(in.Access[0], append(data, data[:len(data)/10+strings.IndexByte(string(data[len(data)/10:]), '\n')+1]...), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if rec != nil || note == nil || !strings.Contains(note.Message, "changed between the profile pass and the recording pass") {
		t.Errorf("recording %v, note %v", rec != nil, note)
	}
}
