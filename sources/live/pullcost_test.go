package live

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/live/livetest"
	"github.com/aftermath-forensics/aftermath/sources/loki"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// TestCostModelPullsWholeWhatMostlyStandsOut: on the small incident a
// pushdown's minutes (the burst with its margins, the baseline's sample)
// hold most of the bytes, and a pushdown makes Loki read the range again for
// every query over it: measured before the cost model, it pulled 77% of the
// full pull's bytes (5.44 of 7.08 MB) and had Loki read 81.7 MB, 11.5x
// those bytes. The cost model pulls it whole instead and says so with both
// estimates; under pushdown.max_share 1 the same window is pushed down with
// the estimate in its section.
//
// The model runs on the cheapest counts (every line per minute, no parser,
// and the index's bytes per line), before any query parses a line: a full
// pull chosen there runs no | json in Loki, and Loki reads the range twice
// (the count and the pull, which the count checks), not four times (the
// counts per family, a bytes_over_time pass, the pull and its own count;
// a metric query reads the lines of its first step too: 1% is allowed).
func TestCostModelPullsWholeWhatMostlyStandsOut(t *testing.T) {
	var mu sync.Mutex
	var parsed []string
	m, notes, err := fetchSmall(t, func(cfg *Config, lk lokiFake) {
		cfg.PushdownAfter = D(0)
		lk.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
			if q := r.URL.Query().Get("query"); strings.Contains(q, "| json") || strings.Contains(q, "bytes_over_time(") {
				mu.Lock()
				parsed = append(parsed, q)
				mu.Unlock()
			}
			return false
		})
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed) > 0 {
		t.Errorf("the full pull was chosen after %d queries that parse lines or measure bytes in a pass: %.200q", len(parsed), parsed)
	}
	if fp := m.FullPull; fp != nil && (fp.LokiBytesProcessed > 2*fp.FullBytes+fp.FullBytes/100 || fp.Estimate == nil || fp.Estimate.Basis != bundle.EstimateFromLineCounts) {
		t.Errorf("full pull: Loki read %d bytes for a range of %d, estimate %+v: want the range read twice at most, chosen on the line counts", fp.LokiBytesProcessed, fp.FullBytes, fp.Estimate)
	}
	if m.Pushdown != nil {
		t.Fatalf("pushed down (%+v): the minutes that stand out hold most of the bytes", m.Pushdown.Estimate)
	}
	var pulled, counted bool
	for _, q := range m.Queries {
		if q.Source != loki.Source {
			continue
		}
		if q.File == MinuteCountsFile {
			counted = true
		}
		if q.File == AccessFile && q.Lines > 0 && !strings.Contains(q.Query, familyLabel) && !strings.Contains(q.Note, "pushdown") {
			pulled = true
		}
	}
	if !pulled || counted {
		t.Errorf("want the access log pulled whole and no minute-counts.csv: pulled %v, counts file %v", pulled, counted)
	}
	// bundle.yaml (and so report.json's evidence.pushdown) states the
	// choice with both estimates, and what the full pull cost.
	if fp := m.FullPull; fp == nil || fp.Estimate == nil || fp.Estimate.Chosen != bundle.ChosenFull || fp.Estimate.PushdownBytes <= 0 ||
		fp.Estimate.FullBytes != fp.FullBytes || fp.PulledBytes != fp.FullBytes || fp.Requests == 0 {
		t.Errorf("full_pull section %+v: want the full pull chosen with both estimates, pulling the bytes Loki measured", fp)
	}
	if !noteWith(notes, loki.Source, sources.SeverityInfo, "pulled whole: cost model (bytes from "+bundle.BytesFromIndex+"): a full pull would pull") ||
		!noteWith(notes, loki.Source, sources.SeverityInfo, "chosen: "+bundle.ChosenFull) {
		t.Errorf("no note states both estimates and the choice: %v", notes)
	}

	share := 1.0
	m, _, err = fetchSmall(t, func(cfg *Config, _ lokiFake) { cfg.PushdownAfter, cfg.Pushdown.MaxShare = D(0), &share }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Pushdown == nil || m.Pushdown.Estimate == nil || m.FullPull != nil {
		t.Fatal("max_share 1: want a pushdown with its estimate, and no full_pull section")
	}
	e := m.Pushdown.Estimate
	// Chosen once the counts per family and status were in, with what the
	// line counts alone said (a lower bound) beside it.
	if e.Basis != bundle.EstimateFromFamilies || e.LineCountsPushdownBytes <= 0 || e.LineCountsPushdownBytes > e.PushdownBytes {
		t.Errorf("estimate %+v: want it made with the families, the line counts' lower bound beside it", e)
	}
	if e.Chosen != bundle.ChosenPushdown || e.FullBytes != m.Pushdown.FullBytes || e.PushdownBytes*2 < e.FullBytes || e.PushdownLokiBytes <= e.FullLokiBytes {
		t.Errorf("estimate %+v (full bytes measured %d): want the pushdown chosen, its minutes over half the bytes, and Loki reading more for it", e, m.Pushdown.FullBytes)
	}
}

// pushDownAlways pushes every window down whatever the cost model says
// (pushdown_after 0s, max_share 1): for tests of the pushdown's own
// workings on the small incident, whose flagged minutes hold most bytes.
func pushDownAlways(cfg *Config) {
	one := 1.0
	cfg.PushdownAfter, cfg.Pushdown.MaxShare = D(0), &one
}

// TestCostModelCountsFailedLinesWithoutAParser: a window whose volume never
// stands out but whose failed lines do, for more than half its minutes, is
// pulled whole, chosen on counts made with no parser: every line's and the
// failed lines' (failedLineFilter), each a line filter at most. Before, the
// line counts alone said a pushdown (the baseline's sample, 7.7% of the
// bytes), and only the count per family and status, a | json pass over the
// range, found the failed minutes that made it a full pull.
func TestCostModelCountsFailedLinesWithoutAParser(t *testing.T) {
	clearEnv(t)
	lk := lokitest.New(t)
	from := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	for m := range 390 {
		base := from.Add(time.Duration(m) * time.Minute)
		for i := range 12 {
			ts := base.Add(time.Duration(i) * 5 * time.Second)
			status, dur := 200, 0.05
			if m >= 200 && i%2 == 0 {
				status = 502 // a failed status
			}
			if m >= 200 && i == 1 {
				dur = 12.5 // late: above the clients' 10 s
			}
			lk.Push(accessStream, ts, livetest.CaddyLine(ts, fmt.Sprintf("198.51.100.%d", i), "Mozilla/5.0 Chrome/121.0 Safari/537.36", "ko", "/", status, dur, 900))
		}
	}
	var mu sync.Mutex
	var parsed []string
	lk.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
		if q := r.URL.Query().Get("query"); strings.Contains(q, "| json") {
			mu.Lock()
			parsed = append(parsed, q)
			mu.Unlock()
		}
		return false
	})
	cfg := &Config{
		Baseline:      D(3 * time.Hour),
		Site:          sources.Site{Workers: 16, ClientTimeoutS: 10},
		Loki:          &Loki{Addr: lk.URL(), Selector: `{job="caddy"}`, Retries: -1},
		PushdownAfter: D(0),
	}
	m, _, err := Fetch(context.Background(), cfg, from.Add(3*time.Hour), from.Add(390*time.Minute), filepath.Join(t.TempDir(), "bundle"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed) > 0 {
		t.Errorf("%d queries parsed lines before the choice: %.200q", len(parsed), parsed)
	}
	fp := m.FullPull
	if fp == nil || fp.Estimate == nil || fp.Estimate.Chosen != bundle.ChosenFull || fp.Estimate.Basis != bundle.EstimateFromLineCounts {
		t.Fatalf("want the full pull chosen on the line counts: full pull %+v, pushdown %+v", fp, m.Pushdown)
	}
	// The failed minutes (190 of the 390), the 10 minutes' margin before
	// them and the baseline's sample (30).
	if share := float64(fp.Estimate.PushdownBytes) / float64(fp.Estimate.FullBytes); math.Abs(share-230.0/390) > 0.005 {
		t.Errorf("the pushdown's estimate is %.3f of the full pull's bytes, want %.3f", share, 230.0/390)
	}
}
