package live

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/ingest"
	"github.com/aftermath-forensics/aftermath/sources/live/livetest"
	"github.com/aftermath-forensics/aftermath/sources/loki"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// simulatedCrawl is the reference crawl (livetest.Crawl), simulated once
// per test binary and removed by TestMain.
type simulatedCrawl struct {
	livetest.Crawl
	// offline is the analysis of the simulated bundle itself (what a
	// full pull must match), made once for every test that compares.
	offlineOnce sync.Once
	offline     analysis
}

// offlineAnalysis is analyze of the simulated bundle, made once: the
// tests only read it.
func (s *simulatedCrawl) offlineAnalysis(t *testing.T) analysis {
	t.Helper()
	b := s.Open(t)
	s.offlineOnce.Do(func() { s.offline = analyze(t, b.Dir) })
	if s.offline.report == nil {
		t.Fatal("the simulated bundle's analysis failed in another test")
	}
	return s.offline
}

// The simulated incident the end-to-end tests serve from fakes: three hours
// of ordinary traffic before its 90-minute window.
var simulatedIncident = &simulatedCrawl{Crawl: livetest.Crawl{BaselineHours: 3}}

// TestMain unsets the environment a Config reads (liveEnv) for the whole
// binary, so that the fetch tests, which read none of it, can run in
// parallel (t.Setenv forbids it), and removes the simulated bundles.
//
// Shared fixtures, made once per test binary (use them rather than
// simulating again; they must not be written to):
//   - simulated(t): the reference crawl with 3 h of baseline
//     (simulatedIncident), and servedIncident(t): the same pushed into a
//     fresh fake Loki and Prometheus with a Config that reads them;
//   - sharedIncident(t): servedIncident's fakes made once, for tests that
//     only read them (set no limit, hook or stats);
//   - smallIncident(t): 2 h of synthetic traffic in a fresh fake Loki.
func TestMain(m *testing.M) {
	for _, k := range liveEnv {
		os.Unsetenv(k)
	}
	code := m.Run()
	for i := len(binaryCleanups) - 1; i >= 0; i-- {
		binaryCleanups[i]()
	}
	if binaryFailed.Load() && code == 0 {
		code = 1
	}
	simulatedIncident.Remove()
	os.Exit(code)
}

func simulated(t testing.TB) (string, *bundle.Bundle) {
	t.Helper()
	b := simulatedIncident.Open(t)
	return b.Dir, b
}

var (
	accessStream = livetest.AccessStream()
	caddyStream  = map[string]string{"job": "caddy-log", "host": "wiki"}
	fpmStream    = map[string]string{"job": "php-fpm", "host": "wiki"}
)

// servedIncident starts a fake Loki and a fake Prometheus holding the
// simulated incident and returns a configuration that reads both.
func servedIncident(t testing.TB) (*Config, *bundle.Bundle, *lokitest.Loki, *livetest.Prometheus) {
	t.Helper()
	dir, b := simulated(t)
	lk := lokitest.New(t)
	lk.PushFile(t, accessStream, filepath.Join(dir, "access", "access.log.gz"), livetest.CaddyTime)
	lk.PushFile(t, caddyStream, filepath.Join(dir, "logs", "caddy.log.gz"), livetest.CaddyTime)
	lk.PushFile(t, fpmStream, filepath.Join(dir, "logs", "php-fpm.log"), livetest.FPMTime)
	pr := livetest.NewPrometheus(t, b.Metrics...)
	cfg := &Config{
		Timezone: b.Manifest.Timezone,
		Site:     b.Manifest.Site,
		// The fake answers a count over the 4.5 hours in one request: on a
		// busy machine (load 20 on two cores) that outlasted the default
		// 1-minute request timeout, and tests failed on that.
		Loki: &Loki{Addr: lk.URL(), Selector: `{job="caddy"}`, Retries: -1, Timeout: D(10 * time.Minute), Logs: []LokiLog{
			{Name: "caddy", Selector: `{job="caddy-log"}`},
			{Name: "php-fpm", Selector: `{job="php-fpm"}`},
		}},
		Prometheus: &Prometheus{URL: pr.URL(), Retries: -1},
		Changes:    Changes{ConfigRepo: b.ConfigRepos[0], Files: b.ChangeLogs},
	}
	return cfg, b, lk, pr
}

// sharedServed is servedIncident made once per test binary for the tests
// that only read the fakes (no limit, hook or stats of their own): pushing
// the 4.5 hours into a fake costs seconds each time.
var sharedServed struct {
	once sync.Once
	cfg  *Config
	b    *bundle.Bundle
	lk   *lokitest.Loki
	err  string
}

// sharedIncident is servedIncident's configuration and bundle and its fake
// Loki, shared by every caller: the configuration is the caller's own copy
// (its Loki and Prometheus sections too), the fakes must only be read.
func sharedIncident(t *testing.T) (*Config, *bundle.Bundle, *lokitest.Loki) {
	t.Helper()
	sharedServed.once.Do(func() {
		tb := &binaryTB{TB: t}
		defer func() {
			if !tb.done {
				sharedServed.err = "serving the simulated incident failed in another test"
			}
		}()
		sharedServed.cfg, sharedServed.b, sharedServed.lk, _ = servedIncident(tb)
		tb.done = true
	})
	if sharedServed.err != "" {
		t.Fatal(sharedServed.err)
	}
	c := *sharedServed.cfg
	lk, pr := *c.Loki, *c.Prometheus
	lk.Logs = slices.Clone(lk.Logs)
	c.Loki, c.Prometheus = &lk, &pr
	return &c, sharedServed.b, sharedServed.lk
}

// binaryTB is the testing.TB of a fixture that outlives the test that made
// it: its cleanups run after every test (TestMain), and what its fakes
// report later (a fake's Errorf) goes to stderr and fails the binary, as the
// test that made it may have ended.
type binaryTB struct {
	testing.TB
	done bool // construction finished
}

var (
	binaryCleanups []func()
	binaryFailed   atomic.Bool
)

func (b *binaryTB) Cleanup(f func()) { binaryCleanups = append(binaryCleanups, f) }

func (b *binaryTB) Errorf(format string, args ...any) {
	binaryFailed.Store(true)
	fmt.Fprintf(os.Stderr, "shared fixture: "+format+"\n", args...)
}

func (b *binaryTB) Error(args ...any) {
	binaryFailed.Store(true)
	fmt.Fprintln(os.Stderr, append([]any{"shared fixture:"}, args...)...)
}

// Fatal and Fatalf are the test's while it makes the fixture; later they
// fail the binary and end the goroutine of whichever test called the fake.
func (b *binaryTB) Fatal(args ...any) {
	if !b.done {
		b.TB.Helper()
		b.TB.Fatal(args...)
	}
	b.Error(args...)
	runtime.Goexit()
}

func (b *binaryTB) Fatalf(format string, args ...any) {
	if !b.done {
		b.TB.Helper()
		b.TB.Fatalf(format, args...)
	}
	b.Errorf(format, args...)
	runtime.Goexit()
}

// analysis is what the detectors make of a bundle.
type analysis struct {
	findings []detect.Finding
	quality  []sources.QualityNote
	requests int64
	// report is report.json, decoded.
	report map[string]any
	// postmortem is postmortem.md in English.
	postmortem string
}

// analyze loads and detects the bundle at dir and builds its report.
func analyze(t *testing.T, dir string) analysis {
	t.Helper()
	b, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := time.LoadLocation(b.Manifest.Timezone)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := ingest.Load(ctx, evidence.FromBundle(b), loc, detect.NewAggregate)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ev := detect.EvidenceOf(l)
	res, err := detect.Run(ctx, ev, detect.Detectors())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := report.Build(ctx, l, res, b.Manifest.Timezone)
	if err != nil {
		t.Fatal(err)
	}
	js, err := report.Render(rep, "json", "en")
	if err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(js, &decoded); err != nil {
		t.Fatal(err)
	}
	md, err := report.Render(rep, report.FormatMarkdown, "en")
	if err != nil {
		t.Fatal(err)
	}
	return analysis{findings: res.Findings, quality: append(l.DataQuality, res.DataQuality...), requests: l.Access.Requests, report: decoded, postmortem: string(md)}
}

// differences lists the paths where two decoded JSON documents differ.
func differences(path string, a, b any) []string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return []string{path}
		}
		var out []string
		for k := range x {
			if _, ok := y[k]; !ok {
				out = append(out, path+"."+k+" (only in the first)")
			}
		}
		for k, v := range y {
			if w, ok := x[k]; ok {
				out = append(out, differences(path+"."+k, w, v)...)
			} else {
				out = append(out, path+"."+k+" (only in the second)")
			}
		}
		sort.Strings(out)
		return out
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return []string{fmt.Sprintf("%s (length %d and %v)", path, len(x), len(y))}
		}
		var out []string
		for i := range x {
			out = append(out, differences(fmt.Sprintf("%s[%d]", path, i), x[i], y[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(a, b) {
		return []string{fmt.Sprintf("%s: %v and %v", path, a, b)}
	}
	return nil
}

// findingKey is what must agree between two analyses of the same incident.
func findingKey(f detect.Finding) string {
	return fmt.Sprintf("%s %s..%s", f.Kind, f.Start.UTC().Format("15:04:05"), f.End.UTC().Format("15:04:05"))
}

func keys(a analysis) []string {
	var out []string
	for _, f := range a.findings {
		out = append(out, findingKey(f))
	}
	sort.Strings(out)
	return out
}

// phases collects the last progress report of each phase.
type phases struct{ livetest.Phases[Progress] }

func (p *phases) report(pr Progress) { p.Keep(pr.Source+" "+pr.Phase, pr) }

func (p *phases) log(t *testing.T, title string) {
	t.Helper()
	t.Logf("%s:", title)
	p.Each(func(k string, pr Progress) {
		t.Logf("  %-24s %5d requests %11d response bytes %11d line bytes %8d %s", k, pr.Requests, pr.WireBytes, pr.Bytes, pr.Count, pr.Unit)
	})
}

// TestFetchMatchesOfflineBundle fetches the simulated incident from the fakes
// (a 90-minute window: pulled in full) and checks that the detectors find in
// the fetched bundle exactly what they find in the simulator's own bundle.
func TestFetchMatchesOfflineBundle(t *testing.T) {
	t.Parallel()
	cfg, sim, lk := sharedIncident(t)
	out := filepath.Join(t.TempDir(), "bundle")
	var ph phases
	m, notes, err := Fetch(context.Background(), cfg, sim.Manifest.Window.From, sim.Manifest.Window.To, out, ph.report)
	if err != nil {
		t.Fatal(err)
	}
	if p := sources.Problems(notes); len(p) > 0 {
		t.Fatalf("notes: %v", p)
	}
	if m.Baseline == nil || !m.Baseline.From.Equal(sim.Manifest.Baseline.From) {
		t.Errorf("baseline %+v, want the 3h before the window", m.Baseline)
	}
	b, err := bundle.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Access) != 1 || len(b.Metrics) != 1 || len(b.Logs) != 2 || len(b.ChangeLogs) != 1 || len(b.ConfigRepos) != 1 {
		t.Errorf("bundle files: %+v", b)
	}
	for _, q := range b.Manifest.Queries {
		if !q.Complete {
			t.Errorf("incomplete record %+v", q)
		}
	}
	wantLines, _ := lk.Bytes(`{job="caddy"}`, sim.Manifest.Baseline.From, sim.Manifest.Window.To)
	if q := b.Manifest.Queries[0]; q.Source != "loki" || q.File != AccessFile || q.Lines != wantLines || !strings.Contains(q.Note, "requests") {
		t.Errorf("access record %+v, want %d lines", q, wantLines)
	}

	if mn := ManifestNotes(b.Manifest); len(mn) != 0 {
		t.Errorf("a complete fetch gives notes: %v", mn)
	}
	got, want := analyze(t, out), simulatedIncident.offlineAnalysis(t)
	if got.requests != want.requests {
		t.Errorf("fetched bundle has %d requests, the simulator's %d", got.requests, want.requests)
	}
	if g, w := keys(got), keys(want); strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("findings differ:\nfetched:\n  %s\noffline:\n  %s", strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
	for i := range min(len(got.findings), len(want.findings)) {
		g, w := got.findings[i], want.findings[i]
		if fmt.Sprint(g.Facts) != fmt.Sprint(w.Facts) {
			t.Errorf("%s facts differ:\nfetched %v\noffline %v", g.ID, g.Facts, w.Facts)
		}
	}
	ph.log(t, fmt.Sprintf("window %s, pulled in full (baseline 3h + window)", sim.Manifest.Window.To.Sub(sim.Manifest.Window.From)))
}

// TestFetchPushdownFindsTheIncident pushes the same window down (pushdown
// after 30m): raw lines only for the baseline and the minutes that stand
// out. The findings must still be there, and cheaper.
func TestFetchPushdownFindsTheIncident(t *testing.T) {
	t.Parallel()
	cfg, sim, lk := sharedIncident(t)
	cfg.PushdownAfter = D(30 * time.Minute)
	// Its flagged minutes hold 56% of the bytes, so the cost model would
	// pull it whole (TestCostModelPullsWholeWhatMostlyStandsOut): this test
	// is of the pushdown's findings.
	one := 1.0
	cfg.Pushdown.MaxShare = &one
	out := filepath.Join(t.TempDir(), "bundle")
	from, to := sim.Manifest.Window.From, sim.Manifest.Window.To
	var ph phases
	_, notes, err := Fetch(context.Background(), cfg, from, to, out, ph.report)
	if err != nil {
		t.Fatal(err)
	}
	if p := sources.Problems(notes); len(p) > 0 {
		t.Fatalf("notes: %v", p)
	}
	var pushNote string
	for _, n := range notes {
		if strings.HasPrefix(n.Message, "pushdown:") {
			pushNote = n.Message
		}
	}
	if pushNote == "" {
		t.Fatalf("no pushdown note in %v", notes)
	}
	minutes, err := ReadMinuteCounts(filepath.Join(out, MinuteCountsFile))
	if err != nil {
		t.Fatal(err)
	}
	pm, am, pl, al := PulledShare(minutes, from, to)
	_, fullBytes := lk.Bytes(`{job="caddy"}`, from, to)
	wantLines, _ := lk.Bytes(`{job="caddy"}`, from, to)
	if al != wantLines {
		t.Errorf("minute counts total %d lines, Loki holds %d", al, wantLines)
	}
	if pm == am || pm == 0 {
		t.Errorf("pulled %d of %d minutes", pm, am)
	}
	b, _ := bundle.Open(out)
	var raw bundle.Query
	for _, q := range b.Manifest.Queries {
		if q.File == AccessFile {
			raw = q
		}
	}
	_, baselineBytes := lk.Bytes(`{job="caddy"}`, from.Add(-DefaultBaseline), from)
	if raw.Bytes-baselineBytes >= fullBytes || !raw.Complete {
		t.Errorf("pulled %d bytes for the window, a full pull %d", raw.Bytes-baselineBytes, fullBytes)
	}
	t.Logf("%s", pushNote)
	if mn := ManifestNotes(b.Manifest); len(mn) != 1 || mn[0].Severity != sources.SeverityInfo || !strings.HasPrefix(mn[0].Message, fmt.Sprintf("raw lines were pulled for %d of the window's %d minutes", pm, am)) {
		t.Errorf("bundle.yaml's notes: %v", mn)
	}

	full := simulatedIncident.offlineAnalysis(t)
	got := analyze(t, out)
	// The crawl, the saturation and the starved health check must be found
	// where a full pull finds them.
	wantKinds := map[detect.Kind]detect.Finding{}
	for _, f := range full.findings {
		wantKinds[f.Kind] = f
	}
	gotKinds := map[detect.Kind]detect.Finding{}
	for _, f := range got.findings {
		gotKinds[f.Kind] = f
	}
	for _, kind := range []detect.Kind{detect.KindCrawlerBurst, detect.KindWorkerSaturation, detect.KindHealthcheckStarved, detect.KindUpstreamErrors} {
		w, ok := wantKinds[kind]
		if !ok {
			t.Fatalf("the full pull has no %s", kind)
		}
		g, ok := gotKinds[kind]
		if !ok {
			t.Errorf("pushdown lost %s", kind)
			continue
		}
		if findingKey(g) != findingKey(w) {
			t.Errorf("%s: pushdown %s, full pull %s", kind, findingKey(g), findingKey(w))
		}
	}
	t.Logf("findings, pushdown:  %v", keys(got))
	t.Logf("findings, full pull: %v", keys(full))
	ph.log(t, fmt.Sprintf("window %s pushed down: %d of %d minutes, %d of %d lines pulled", to.Sub(from), pm, am, pl, al))
}

// day is the synthetic day of the 24-hour tests (UTC).
var day = time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)

// synthetic fills a fake Loki with [from, to) of Caddy access-log lines:
// ordinary readers at 15 to 45 lines a minute following the time of day,
// and a crawler at 600 a minute (40% answered 503) in [burstFrom, burstTo).
// It also writes php-fpm gauges every 15 s as OpenMetrics and returns the
// file.
func synthetic(t *testing.T, lk *lokitest.Loki, from, to, burstFrom, burstTo time.Time) string {
	t.Helper()
	seed := uint64(7)
	rnd := func(n int64) int64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int64(seed>>33) % n
	}
	const reader = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36"
	const crawler = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"
	for m := from; m.Before(to); m = m.Add(time.Minute) {
		hour := float64(m.Hour()) + float64(m.Minute())/60
		per := 30 + int(15*math.Sin((hour-9)/24*2*math.Pi))
		for k := 0; k < per; k++ {
			ts := m.Add(time.Duration(rnd(int64(time.Minute))))
			ip := fmt.Sprintf("203.0.%d.%d", rnd(64), rnd(256))
			lk.Push(accessStream, ts, livetest.CaddyLine(ts, ip, reader, "ko-KR,ko;q=0.9", fmt.Sprintf("/wiki/Article_%d", rnd(500)), 200, 0.05+float64(rnd(100))/1000, 20000+int(rnd(5000))))
		}
		if !m.Before(burstFrom) && m.Before(burstTo) {
			for k := 0; k < 600; k++ {
				ts := m.Add(time.Duration(rnd(int64(time.Minute))))
				ip := fmt.Sprintf("%d.%d.%d.%d", 36+rnd(80), rnd(256), rnd(256), 1+rnd(254))
				status, dur := 200, 2.0+float64(rnd(8000))/1000
				if rnd(10) < 4 {
					status, dur = 503, 0.0002
				}
				lk.Push(accessStream, ts, livetest.CaddyLine(ts, ip, crawler, "zh-CN,zh;q=0.9", fmt.Sprintf("/index.php?title=Page_%d&action=history", rnd(100000)), status, dur, 30000))
			}
		}
	}
	om := filepath.Join(t.TempDir(), "pool.om")
	fh, err := os.Create(om)
	if err != nil {
		t.Fatal(err)
	}
	w := metrics.NewWriter(fh)
	pool := map[string]string{"pool": "www"}
	for ts := from; ts.Before(to); ts = ts.Add(15 * time.Second) {
		active, queue := 3.0+float64(rnd(4)), 0.0
		if !ts.Before(burstFrom) && ts.Before(burstTo) {
			active, queue = 16, 200+float64(rnd(100))
		}
		w.Sample("phpfpm_active_processes", pool, ts, active)
		w.Sample("phpfpm_total_processes", pool, ts, 16)
		w.Sample("phpfpm_listen_queue", pool, ts, queue)
		w.Sample("phpfpm_listen_queue_length", pool, ts, 511)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	return om
}

// TestFetch24hPullsOnlyFlaggedMinutes: a 24-hour window is pushed down; the
// crawl's minutes are flagged and pulled, the rest of the day only counted,
// and the report equals the one from a full raw pull of the same day. The
// closing log lines are the per-phase costs of a 1 h and a 24 h window.
func TestFetch24hPullsOnlyFlaggedMinutes(t *testing.T) {
	t.Parallel()
	lk := lokitest.New(t)
	burstFrom, burstTo := day.Add(14*time.Hour), day.Add(14*time.Hour+20*time.Minute)
	om := synthetic(t, lk, day.Add(-DefaultBaseline), day.Add(24*time.Hour), burstFrom, burstTo)
	pr := livetest.NewPrometheus(t, om)
	cfg := &Config{
		Timezone:   "Asia/Seoul",
		Site:       sources.Site{Workers: 16, ClientTimeoutS: 10},
		Loki:       &Loki{Addr: lk.URL(), Selector: `{job="caddy"}`, Retries: -1},
		Prometheus: &Prometheus{URL: pr.URL(), Retries: -1},
	}
	reports := map[bool]analysis{} // 24h, by pushdown
	for _, w := range []struct {
		name     string
		from, to time.Time
		pushdown bool
	}{
		{"1h", day.Add(13*time.Hour + 40*time.Minute), day.Add(14*time.Hour + 40*time.Minute), false},
		{"24h", day, day.Add(24 * time.Hour), true},
		{"24h pulled in full, for comparison", day, day.Add(24 * time.Hour), false},
	} {
		t.Run(w.name, func(t *testing.T) {
			cfg.PushdownAfter = nil
			if !w.pushdown {
				cfg.PushdownAfter = D(48 * time.Hour)
			}
			lk.ResetStats()
			out := filepath.Join(t.TempDir(), "bundle")
			var ph phases
			promBefore := pr.Written()
			_, notes, err := Fetch(context.Background(), cfg, w.from, w.to, out, ph.report)
			if err != nil {
				t.Fatal(err)
			}
			if p := sources.Problems(notes); len(p) > 0 {
				t.Fatalf("notes: %v", p)
			}
			b, err := bundle.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			var raw bundle.Query
			for _, q := range b.Manifest.Queries {
				if q.File == AccessFile {
					raw = q
				}
			}
			start := w.from.Add(-DefaultBaseline)
			fullLines, fullBytes := lk.Bytes(`{job="caddy"}`, start, w.to)
			_, baseBytes := lk.Bytes(`{job="caddy"}`, start, w.from)
			_, burstBytes := lk.Bytes(`{job="caddy"}`, burstFrom, burstTo)
			if !w.pushdown {
				if raw.Lines != fullLines || raw.Bytes != fullBytes || !raw.Complete {
					t.Errorf("full pull: %d lines %d bytes (complete %v), want %d lines %d bytes", raw.Lines, raw.Bytes, raw.Complete, fullLines, fullBytes)
				}
			} else {
				minutes, err := ReadMinuteCounts(filepath.Join(out, MinuteCountsFile))
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range minutes {
					inBurst := !m.T.Before(burstFrom) && m.T.Before(burstTo)
					if inBurst && (m.Reason != ReasonVolume && m.Reason != ReasonBoth) {
						t.Errorf("burst minute %s: reason %q", m.T.Format("15:04"), m.Reason)
					}
					if m.Pulled != (m.Reason != "") {
						t.Errorf("minute %s pulled %v reason %q", m.T.Format("15:04"), m.Pulled, m.Reason)
					}
				}
				pm, am, _, _ := PulledShare(minutes, w.from, w.to)
				if pm > 60 {
					t.Errorf("pulled %d of %d minutes of the window", pm, am)
				}
				// The raw bytes: the burst, plus its margins, a small share of
				// the rest of the day and the baseline's sample (a sixth of it).
				pulled := raw.Bytes
				for _, q := range b.Manifest.Queries {
					if q.File == FamiliesFile {
						pulled += q.Bytes
					}
				}
				quietBytes := fullBytes - baseBytes - burstBytes
				if pulled < burstBytes || pulled-burstBytes > quietBytes/20+baseBytes/5 || !raw.Complete {
					t.Errorf("raw bytes pulled %d: want the burst's %d and at most 5%% of the other %d and a fifth of the baseline's %d", pulled, burstBytes, quietBytes, baseBytes)
				}
			}
			a := analyze(t, out)
			if w.to.Sub(w.from) == 24*time.Hour {
				reports[w.pushdown] = a
			}
			t.Logf("findings: %v", keys(a))
			ph.log(t, fmt.Sprintf("window %s (baseline 3h; pushed down: %v); full raw pull would be %d lines, %d bytes", w.name, w.pushdown, fullLines, fullBytes))
			t.Logf("  %-24s %5s          %11d response bytes (fake's count)", "prometheus", "", pr.Written()-promBefore)
		})
	}

	// The report of the pushed-down day equals the full pull's, but for what
	// says how much was read (the evidence block's counters and files, the
	// clusters seen in the lines read, what the pushdown pulled), the note
	// that says so, and the marks of the figures that rest on the lines read
	// (findings[].estimated: the usual service time and route costs from the
	// baseline's sample), which the full pull has none of.
	pushed, full := reports[true], reports[false]
	if pushed.report == nil || full.report == nil {
		t.Fatal("a 24h subtest failed")
	}
	var said bool
	for _, n := range pushed.quality {
		said = said || strings.Contains(n.Message, bundle.MinuteStatusFile)
	}
	if !said {
		t.Errorf("no data_quality note names %s: %v", bundle.MinuteStatusFile, pushed.quality)
	}
	if _, ok := pushed.report["evidence"].(map[string]any)["pushdown"].(map[string]any); !ok {
		t.Errorf("the pushed-down report's evidence has no pushdown section")
	}
	for _, f := range full.report["findings"].([]any) {
		if e, ok := f.(map[string]any)["estimated"]; ok {
			t.Errorf("the full pull marks figures estimated: %v", e)
		}
	}
	for _, r := range []map[string]any{pushed.report, full.report} {
		for _, f := range r["findings"].([]any) {
			delete(f.(map[string]any), "estimated")
		}
		delete(r, "data_quality")
		ev := r["evidence"].(map[string]any)
		for _, k := range []string{"lines", "requests", "bytes", "clusters", "access_files", "pushdown"} {
			delete(ev, k)
		}
		// Which files the lines came from differs by construction (one
		// pulled file, or the minutes, the sample and the families): the
		// provenance, not the story.
		for _, c := range r["coverage"].([]any) {
			delete(c.(map[string]any), "inputs")
		}
	}
	if diff := differences("report", full.report, pushed.report); len(diff) > 0 {
		t.Errorf("the pushed-down report differs from the full pull's (full, pushed down):\n%s", strings.Join(diff, "\n"))
	}
	impact := full.report["impact"].(map[string]any)
	if impact["requests"].(float64) < 50000 || len(full.report["findings"].([]any)) == 0 {
		t.Errorf("the full pull's report is not the day's: impact %v", impact)
	}
}

// smallIncident serves 2 hours (1h window, 1h baseline) of synthetic traffic.
func smallIncident(t *testing.T) (*Config, *lokitest.Loki, *livetest.Prometheus, time.Time, time.Time) {
	t.Helper()
	lk := lokitest.New(t)
	from, to := day.Add(13*time.Hour+30*time.Minute), day.Add(14*time.Hour+30*time.Minute)
	om := synthetic(t, lk, from.Add(-time.Hour), to, day.Add(14*time.Hour), day.Add(14*time.Hour+10*time.Minute))
	pr := livetest.NewPrometheus(t, om)
	cfg := &Config{
		Baseline:   D(time.Hour),
		Site:       sources.Site{Workers: 16, ClientTimeoutS: 10},
		Loki:       &Loki{Addr: lk.URL(), Selector: `{job="caddy"}`, Retries: -1},
		Prometheus: &Prometheus{URL: pr.URL(), Retries: -1, Selectors: []string{"phpfpm_active_processes", "phpfpm_listen_queue"}},
	}
	return cfg, lk, pr, from, to
}

// TestFetchIncomplete: what fails is reported (never as complete), and what
// was fetched is kept in a bundle that still opens and analyzes.
func TestFetchIncomplete(t *testing.T) {
	errorAfter := day.Add(14 * time.Hour)
	tests := []struct {
		name  string
		setup func(t *testing.T, cfg *Config, lk *lokitest.Loki, pr *livetest.Prometheus) (cancelOn func(Progress) bool)
		// want: source -> the severity a note of it must have.
		want       map[string]sources.Severity
		incomplete []string // sources with an incomplete record
		canceled   bool
		lines      bool // the access log still holds lines
		// partial: the access log's pull failed over part of the window, so
		// the report's totals are partial and its coverage says so.
		partial bool
	}{
		{
			name: "a Loki sub-range fails",
			setup: func(t *testing.T, cfg *Config, lk *lokitest.Loki, pr *livetest.Prometheus) func(Progress) bool {
				lk.SetBefore(failWhere(func(r *http.Request) bool {
					q := r.URL.Query()
					start, _ := strconv.ParseInt(q.Get("start"), 10, 64)
					return r.URL.Path == "/loki/api/v1/query_range" && q.Get("limit") != "" && start >= errorAfter.UnixNano()
				}, http.StatusBadGateway, "too many outstanding requests"))
				return nil
			},
			want:       map[string]sources.Severity{"loki": sources.SeverityError},
			incomplete: []string{"loki"},
			lines:      true,
			partial:    true,
		},
		{
			name: "Loki unreachable",
			setup: func(t *testing.T, cfg *Config, lk *lokitest.Loki, pr *livetest.Prometheus) func(Progress) bool {
				cfg.Loki.Addr = closedURL(t)
				return nil
			},
			want:       map[string]sources.Severity{"loki": sources.SeverityError},
			incomplete: []string{"loki"},
			partial:    true,
		},
		{
			name: "Loki per-minute counts fail under pushdown",
			setup: func(t *testing.T, cfg *Config, lk *lokitest.Loki, pr *livetest.Prometheus) func(Progress) bool {
				pushDownAlways(cfg)
				lk.SetBefore(failWhere(func(r *http.Request) bool {
					return strings.Contains(r.URL.Query().Get("query"), "[1m]")
				}, http.StatusInternalServerError, "rpc error: code = Internal"))
				return nil
			},
			want:       map[string]sources.Severity{"loki": sources.SeverityError},
			incomplete: []string{"loki"},
			partial:    true,
		},
		{
			name: "Loki per-minute status counts fail under pushdown",
			setup: func(t *testing.T, cfg *Config, lk *lokitest.Loki, pr *livetest.Prometheus) func(Progress) bool {
				pushDownAlways(cfg)
				lk.SetBefore(failWhere(func(r *http.Request) bool {
					return strings.Contains(r.URL.Query().Get("query"), "unwrap")
				}, http.StatusTooManyRequests, "max concurrent tail requests limit exceeded"))
				return nil
			},
			want:       map[string]sources.Severity{"loki": sources.SeverityError},
			incomplete: []string{"loki"},
			lines:      true,
			// the statuses of the minutes not pulled are unknown
			partial: true,
		},
		{
			name: "a Prometheus selector fails",
			setup: func(t *testing.T, cfg *Config, lk *lokitest.Loki, pr *livetest.Prometheus) func(Progress) bool {
				pr.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
					r.ParseForm()
					if strings.HasPrefix(r.Form.Get("query"), "phpfpm_listen_queue") {
						w.WriteHeader(http.StatusServiceUnavailable)
						return true
					}
					return false
				})
				return nil
			},
			want:       map[string]sources.Severity{"prometheus": sources.SeverityError},
			incomplete: []string{"prometheus"},
			lines:      true,
		},
		{
			name: "Prometheus answers with warnings",
			setup: func(t *testing.T, cfg *Config, lk *lokitest.Loki, pr *livetest.Prometheus) func(Progress) bool {
				pr.SetWarnings("partial response: store eu-1 unreachable")
				return nil
			},
			want:       map[string]sources.Severity{"prometheus": sources.SeverityWarning},
			incomplete: []string{"prometheus"},
			lines:      true,
		},
		{
			name: "CloudWatch unreachable",
			setup: func(t *testing.T, cfg *Config, lk *lokitest.Loki, pr *livetest.Prometheus) func(Progress) bool {
				t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
				t.Setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
				t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
				t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
				t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
				cfg.CloudWatch = &CloudWatch{Region: "ap-northeast-2", Endpoint: closedURL(t), InstanceIDs: []string{"i-0abc"}, MaxAttempts: 1}
				return nil
			},
			want:       map[string]sources.Severity{"cloudwatch": sources.SeverityError},
			incomplete: []string{"cloudwatch"},
			lines:      true,
		},
		{
			name: "interrupted (Ctrl-C) during the access log",
			setup: func(t *testing.T, cfg *Config, lk *lokitest.Loki, pr *livetest.Prometheus) func(Progress) bool {
				cfg.Loki.Parallel = 1
				return func(p Progress) bool { return p.Source == "loki" && p.Done >= 1 }
			},
			want:       map[string]sources.Severity{"loki": sources.SeverityError, "prometheus": sources.SeverityError},
			incomplete: []string{"loki", "prometheus"},
			canceled:   true,
			lines:      true,
			partial:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, lk, pr, from, to := smallIncident(t)
			cancelOn := tt.setup(t, cfg, lk, pr)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			progress := func(p Progress) {
				if cancelOn != nil && cancelOn(p) {
					cancel()
				}
			}
			out := filepath.Join(t.TempDir(), "bundle")
			m, notes, err := Fetch(ctx, cfg, from, to, out, progress)
			if tt.canceled != errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v", err)
			}
			if !tt.canceled && err != nil {
				t.Fatal(err)
			}
			for source, sev := range tt.want {
				found := false
				for _, n := range notes {
					found = found || (n.Source == source && n.Severity == sev)
				}
				if !found {
					t.Errorf("no %s note from %s in %v", sev, source, notes)
				}
			}
			b, oerr := bundle.Open(out)
			if oerr != nil {
				t.Fatal(oerr)
			}
			if len(b.Manifest.Queries) != len(m.Queries) {
				t.Errorf("bundle.yaml has %d records, Fetch returned %d", len(b.Manifest.Queries), len(m.Queries))
			}
			for _, source := range tt.incomplete {
				found := false
				for _, q := range b.Manifest.Queries {
					found = found || (q.Source == source && !q.Complete)
				}
				if !found {
					t.Errorf("no incomplete %s record in %+v", source, b.Manifest.Queries)
				}
			}
			// An analysis of the bundle alone says the same.
			for source, sev := range tt.want {
				found := false
				for _, n := range ManifestNotes(b.Manifest) {
					found = found || (n.Source == source && n.Severity == sev)
				}
				if !found && sev != sources.SeverityInfo {
					t.Errorf("bundle.yaml gives no %s note from %s: %v", sev, source, ManifestNotes(b.Manifest))
				}
			}
			var lines int64
			for _, q := range b.Manifest.Queries {
				if q.File == AccessFile {
					lines += q.Lines
				}
			}
			if tt.lines != (lines > 0) {
				t.Errorf("access log lines kept: %d", lines)
			}
			a := analyze(t, out)
			if got := partialTotals(a.report); got != tt.partial {
				t.Errorf("report.json's access coverage says the totals are partial: %v, want %v (%v)", got, tt.partial, a.report["coverage"])
			}
			for _, n := range sources.Problems(notes) {
				t.Logf("%s %s: %s", n.Source, n.Severity, n.Message)
			}
		})
	}
}

// partialTotals reports whether report.json's access coverage is incomplete
// because a fetch of the access log failed (what the report's first lines
// then say).
func partialTotals(report map[string]any) bool {
	cov, _ := report["coverage"].([]any)
	for _, c := range cov {
		c, _ := c.(map[string]any)
		if c["source"] != "access" || (c["state"] != sources.CoverageIncomplete && c["state"] != sources.CoverageNone) {
			continue
		}
		truncated, _ := c["truncated"].([]any)
		for _, f := range truncated {
			if s, _ := f.(string); strings.Contains(s, "its fetch failed: the totals count only what was fetched") {
				return true
			}
		}
	}
	return false
}

// failWhere is a fake's hook that answers code with msg, as a proxy in front
// of it would, to every request fails picks.
func failWhere(fails func(r *http.Request) bool, code int, msg string) func(w http.ResponseWriter, r *http.Request, n int) bool {
	return func(w http.ResponseWriter, r *http.Request, _ int) bool {
		if !fails(r) {
			return false
		}
		http.Error(w, msg, code)
		return true
	}
}

// closedURL is an http URL where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// TestFetchKeepsCredentialsOut: credentials reach the servers, and appear
// nowhere else: not in the bundle's files, the notes or the progress
// reports, even when a proxy echoes them in an error.
func TestFetchKeepsCredentialsOut(t *testing.T) {
	cfg, lk, pr, from, to := smallIncident(t)
	const user, pass, token = "aftermath-reader", "pw-Lk93-do-not-leak", "tok-Pr71-do-not-leak"
	t.Setenv(loki.EnvUsername, user)
	t.Setenv(loki.EnvPassword, pass)
	tokFile := filepath.Join(t.TempDir(), "prom-token")
	os.WriteFile(tokFile, []byte(token+"\n"), 0o600)
	cfg.Prometheus.BearerTokenFile = tokFile
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	// A proxy that echoes the Authorization header into its error page.
	lk.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n%7 == 3 {
			http.Error(w, "upstream error for "+r.Header.Get("Authorization"), http.StatusInternalServerError)
			return true
		}
		return false
	})
	pr.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n == 2 {
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, `{"status":"error","errorType":"server_error","error":"proxy: %s"}`, r.Header.Get("Authorization"))
			return true
		}
		return false
	})
	var reports []string
	out := filepath.Join(t.TempDir(), "bundle")
	_, notes, err := Fetch(context.Background(), cfg, from, to, out, func(p Progress) { reports = append(reports, fmt.Sprintf("%+v", p)) })
	if err != nil {
		t.Fatal(err)
	}
	if len(sources.Problems(notes)) == 0 {
		t.Fatal("the echoing proxy caused no note: the test does not test anything")
	}
	if h := lk.Headers(); len(h) == 0 || h[0].Get("Authorization") != "Basic "+basic {
		t.Errorf("Loki was not sent basic auth")
	}
	if h := pr.Headers(); len(h) == 0 || h[0].Get("Authorization") != "Bearer "+token {
		t.Errorf("Prometheus was not sent the bearer token")
	}
	var texts []string
	for _, n := range notes {
		texts = append(texts, n.Message)
	}
	texts = append(texts, reports...)
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			texts = append(texts, string(b))
			if strings.HasSuffix(p, ".gz") {
				texts = append(texts, gunzip(t, p))
			}
		}
		return nil
	})
	for _, s := range texts {
		for _, secret := range []string{pass, token, basic} {
			if strings.Contains(s, secret) {
				t.Errorf("a credential leaked: %.200s", s)
			}
		}
	}
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	b, err := io.ReadAll(testenv.OpenGzip(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
