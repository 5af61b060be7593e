package analysis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/analysis"
	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/live"
	"github.com/aftermath-forensics/aftermath/sources/live/livetest"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// TestFailedSecondPassIsInTheReport: a crawler walks for 50 minutes, growing,
// before it bursts, and the per-client-family counts fail, so the pushdown
// reads only the burst and its margin and the crawler's start is estimated:
// the analysis asks for a second pass over the counted walk. Loki fails that
// pull. The pass pulls no minute, but bundle.yaml records its failure, and
// the report analyze --config writes (analysis.SecondPasses, then Finish)
// must warn that those minutes stay counted. Returning the analysis made
// before the pass, as when a pass pulls nothing because nothing was asked,
// loses the warning: the data quality comes from bundle.yaml as it was.
func TestFailedSecondPassIsInTheReport(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 10, 3, 10, 0, 0, 0, time.UTC)
	to := from.Add(4 * time.Hour)
	rnd := rand.New(rand.NewPCG(26, 2))
	lk := lokitest.New(t)
	lk.SetMaxQuerySeries(2)
	var failing atomic.Bool
	lk.SetBefore(func(w http.ResponseWriter, r *http.Request, _ int) bool {
		// The family counts always fail (a sum refused for its series is
		// split by its grouping's values, so the series limit alone would
		// not stop them); every log pull fails once the fetch is done.
		if strings.Contains(r.URL.Query().Get("query"), "sum by (aftermath_family") ||
			failing.Load() && r.URL.Path == "/loki/api/v1/query_range" {
			http.Error(w, "rpc error: code = Internal", http.StatusInternalServerError)
			return true
		}
		return false
	})
	stream := livetest.AccessStream()
	push := func(ts time.Time, ip, ua, lang, uri string, status int, dur float64) {
		lk.Push(stream, ts, livetest.CaddyLine(ts, ip, ua, lang, uri, status, dur, 20000))
	}
	crawler := livetest.WalkingCrawler{Walk: from.Add(90 * time.Minute), Burst: from.Add(140 * time.Minute), End: from.Add(160 * time.Minute)}
	for m := from.Add(-time.Hour); m.Before(to); m = m.Add(time.Minute) {
		livetest.Readers(m, rnd.Int64N, push)
		crawler.Push(m, rnd.Int64N, push)
	}
	doc := fmt.Sprintf("timezone: UTC\nbaseline: 1h\npushdown_after: 3h\npushdown:\n  max_share: 1\nsite:\n  workers: 16\n  client_timeout_s: 30\nloki:\n  addr: %s\n  selector: '{job=\"caddy\"}'\n  retries: -1\n", lk.URL())
	cfg, err := live.Parse("aftermath.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "bundle")
	if _, _, err := live.Fetch(context.Background(), cfg, from, to, out, nil); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	d, err := analysis.SecondPasses(context.Background(), cfg, out, evidence.FromBundle, true)
	if err != nil {
		t.Fatal(err)
	}
	if d == nil {
		t.Fatal("SecondPasses returned no analysis of a pushed-down bundle")
	}
	b, err := bundle.Open(out)
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	// One pass, failed: the one after it would ask for the same minutes.
	if pd := b.Manifest.Pushdown; pd == nil || len(pd.SecondPasses) != 1 || pd.SecondPasses[0].Failed == "" || pd.SecondPasses[0].Minutes == 0 {
		d.Close()
		t.Fatalf("bundle.yaml's pushdown: %+v, want one failed second pass over counted minutes", pd)
	}
	a, err := d.Finish(context.Background(), evidence.FromBundle(b), analysis.Options{Langs: []string{report.LangEN}})
	if err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, n := range a.Report.DataQuality {
		warned = warned || n.Severity == sources.SeverityWarning && strings.HasPrefix(n.Message, "pushdown's second pass 1 failed")
	}
	if !warned {
		t.Errorf("data_quality does not say the second pass failed: %+v", a.Report.DataQuality)
	}
	// The crawler's start stays what the first pull could tell: estimated.
	crawlerEstimated := false
	for _, f := range a.Report.Findings {
		if f.Kind == detect.KindCrawlerBurst {
			for _, e := range f.Estimated {
				crawlerEstimated = crawlerEstimated || len(e.Figures) > 0
			}
		}
	}
	if !crawlerEstimated {
		t.Errorf("the crawler's figures are not marked estimated after the failed pass: %+v", a.Report.Findings)
	}
}
