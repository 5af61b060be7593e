package live

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/live/livetest"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// The simulated crawler day: the reference crawl with 24 hours of ordinary
// traffic before its window. The crawler walks the tools slowly (about 84
// requests a minute, among 30 to 170 of everyone's) from 20:00 KST and
// bursts at 02:15; a fetch of the 22.5 hours up to 03:30 (and the 3 h
// baseline before them) is pushed down under the default settings.
var (
	dayOnce sync.Once
	dayDir  string
	dayErr  error
)

func simulatedDay(t *testing.T) *bundle.Bundle {
	t.Helper()
	dayOnce.Do(func() {
		if dayDir, dayErr = os.MkdirTemp("", "aftermath-live-day-"); dayErr != nil {
			return
		}
		_, dayErr = simulate.Run(context.Background(), simulate.Options{Scenario: "crawler-backlog", Seed: 1, BaselineHours: 24, Out: filepath.Join(dayDir, "b")})
	})
	if dayErr != nil {
		t.Fatal(dayErr)
	}
	b, err := bundle.Open(filepath.Join(dayDir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dayStory is what must not change between a pushdown and a full pull.
type dayStory struct {
	crawlerStart     time.Time
	crawlerAddresses float64
	failed           float64
	backtestCrawler  float64
}

func storyOf(t *testing.T, a analysis) dayStory {
	t.Helper()
	var s dayStory
	var id string
	for _, f := range a.report["findings"].([]any) {
		f := f.(map[string]any)
		if f["kind"] == "crawler_burst" && id == "" {
			id = f["id"].(string)
			s.crawlerStart, _ = time.Parse(time.RFC3339, f["start"].(string))
			s.crawlerAddresses = f["facts"].(map[string]any)["distinct_ips"].(float64)
		}
	}
	if id == "" {
		t.Fatalf("no crawler_burst finding")
	}
	s.failed = a.report["impact"].(map[string]any)["failed_requests"].(float64)
	for _, r := range a.report["rules"].([]any) {
		r := r.(map[string]any)
		if r["finding"] == id {
			s.backtestCrawler = r["backtest"].(map[string]any)["crawler_requests"].(float64)
		}
	}
	return s
}

// TestPushdownKeepsTheCrawlerDay is issue #18's acceptance: on the simulated
// crawler day, a pushed-down fetch and a full pull tell the same story (the
// crawler's addresses within 5%, its start within 10 minutes, the failed
// requests equal, the rule's backtest within 5%) and the pushdown pulls less
// than half the bytes. Flagging minutes on volume alone fails it: the
// crawler's slow walk never stands out among everyone's lines, so its
// addresses before the burst (more than half of them) were never pulled.
func TestPushdownKeepsTheCrawlerDay(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates and serves 25.5 hours of traffic")
	}
	clearEnv(t)
	sim := simulatedDay(t)
	lk := lokitest.New(t)
	lk.PushFile(t, accessStream, filepath.Join(sim.Dir, "access", "access.log.gz"), livetest.CaddyTime)
	pr := livetest.NewPrometheus(t, sim.Metrics...)
	to := sim.Manifest.Window.To
	from := to.Add(-22*time.Hour - 30*time.Minute)
	cfg := &Config{
		Timezone:   sim.Manifest.Timezone,
		Site:       sim.Manifest.Site,
		Loki:       &Loki{Addr: lk.URL(), Selector: `{job="caddy"}`, Retries: -1},
		Prometheus: &Prometheus{URL: pr.URL(), Retries: -1},
	}
	type run struct {
		story      dayStory
		bytes      int64 // raw line bytes pulled
		requests   int64 // HTTP requests to Loki
		wire       int64 // response bytes from Loki
		familyFile bool
	}
	fetch := func(t *testing.T, pushdown bool) run {
		cfg.PushdownAfter = nil // the default, 3h: a 22.5 h window is pushed down
		if !pushdown {
			cfg.PushdownAfter = D(48 * time.Hour)
		}
		out := filepath.Join(t.TempDir(), "bundle")
		var ph phases
		_, notes, err := Fetch(context.Background(), cfg, from, to, out, ph.report)
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
		var r run
		for _, q := range b.Manifest.Queries {
			if q.Source == "loki" && (q.File == AccessFile || q.File == FamiliesFile) {
				r.bytes += q.Bytes
				r.familyFile = r.familyFile || q.File == FamiliesFile
			}
		}
		for _, k := range ph.order {
			if p := ph.last[k]; p.Source == "loki" {
				r.requests += p.Requests
				r.wire += p.WireBytes
			}
		}
		r.story = storyOf(t, analyze(t, out))
		ph.log(t, "phases")
		return r
	}
	full := fetch(t, false)
	pushed := fetch(t, true)
	t.Logf("full pull: %+v", full)
	t.Logf("pushdown:  %+v", pushed)
	within := func(what string, got, want, tol float64) {
		if math.Abs(got-want) > tol*want {
			t.Errorf("%s: pushdown %.0f, full pull %.0f (more than %.0f%% apart)", what, got, want, 100*tol)
		}
	}
	within("crawler addresses", pushed.story.crawlerAddresses, full.story.crawlerAddresses, 0.05)
	within("backtest crawler requests", pushed.story.backtestCrawler, full.story.backtestCrawler, 0.05)
	if d := pushed.story.crawlerStart.Sub(full.story.crawlerStart); d.Abs() > 10*time.Minute {
		t.Errorf("crawler start: pushdown %s, full pull %s", pushed.story.crawlerStart, full.story.crawlerStart)
	}
	if pushed.story.failed != full.story.failed {
		t.Errorf("failed requests: pushdown %.0f, full pull %.0f", pushed.story.failed, full.story.failed)
	}
	if !pushed.familyFile {
		t.Errorf("the pushdown pulled no client family across the window")
	}
	if 2*pushed.bytes >= full.bytes {
		t.Errorf("pushdown pulled %d bytes, the full pull %d: not less than half", pushed.bytes, full.bytes)
	}
}
