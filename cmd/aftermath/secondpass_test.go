package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources/live"
	"github.com/aftermath-forensics/aftermath/sources/live/livetest"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// TestSecondPassPullsWhereTheCrawlerBegan: a crawler walks slowly for 50
// minutes and then bursts. Loki refuses the per-family counts (three client
// families against max_query_series 2, with Loki's own error), so only the
// burst and its margin are pulled and the crawler seems to start at the
// margin's edge, its start marked estimated. The second passes pull the
// counted half-hours before that start, twice (the bound), and the crawler's
// start, its requests and the failed requests then equal a full pull's; the
// report still marks the figures estimated (its lines were not all read), in
// report.json and next to the finding in the postmortem.
func TestSecondPassPullsWhereTheCrawlerBegan(t *testing.T) {
	for _, k := range []string{"LOKI_ADDR", "LOKI_USERNAME", "LOKI_PASSWORD", "LOKI_BEARER_TOKEN", "LOKI_BEARER_TOKEN_FILE"} {
		t.Setenv(k, "")
	}
	from := time.Date(2026, 10, 3, 10, 0, 0, 0, time.UTC)
	to := from.Add(4 * time.Hour)
	walkFrom, burstFrom, burstTo := from.Add(90*time.Minute), from.Add(140*time.Minute), from.Add(160*time.Minute)
	lk := lokitest.New(t)
	lk.SetMaxQuerySeries(2)
	stream := map[string]string{"job": "caddy"}
	seed := uint64(11)
	rnd := func(n int64) int64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int64(seed>>33) % n
	}
	const crawler = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"
	readers := []struct{ ua, lang string }{
		{"Mozilla/5.0 (X11; Linux x86_64; rv:131.0) Gecko/20100101 Firefox/131.0", "en-US,en;q=0.8"},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36", "ko-KR,ko;q=0.9"},
	}
	for m := from.Add(-time.Hour); m.Before(to); m = m.Add(time.Minute) {
		for k := range 30 {
			ts := m.Add(time.Duration(rnd(int64(time.Minute))))
			r := readers[k%2]
			lk.Push(stream, ts, livetest.CaddyLine(ts, fmt.Sprintf("203.0.%d.%d", rnd(64), rnd(256)), r.ua, r.lang,
				fmt.Sprintf("/wiki/Article_%d", rnd(500)), 200, 0.05+float64(rnd(50))/1000, 20000))
		}
		n := 0
		switch {
		case !m.Before(burstFrom) && m.Before(burstTo):
			n = 400
		case !m.Before(walkFrom) && m.Before(burstFrom):
			n = 10
		}
		for range n {
			ts := m.Add(time.Duration(rnd(int64(time.Minute))))
			status, dur := 200, 2.0+float64(rnd(8000))/1000
			if n > 10 && rnd(10) < 4 {
				status, dur = 503, 0.0002
			}
			lk.Push(stream, ts, livetest.CaddyLine(ts, fmt.Sprintf("%d.%d.%d.%d", 36+rnd(80), rnd(256), rnd(256), 1+rnd(254)), crawler, "zh-CN,zh;q=0.9",
				fmt.Sprintf("/index.php?title=Page_%d&action=history", rnd(100000)), status, dur, 30000))
		}
	}
	config := filepath.Join(t.TempDir(), "aftermath.yaml")
	write := func(pushdownAfter string) {
		doc := fmt.Sprintf("timezone: UTC\nbaseline: 1h\npushdown_after: %s\nsite:\n  workers: 16\n  client_timeout_s: 30\nloki:\n  addr: %s\n  selector: '{job=\"caddy\"}'\n  retries: -1\n", pushdownAfter, lk.URL())
		if err := os.WriteFile(config, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := func(t *testing.T) *report.Report {
		var stderr bytes.Buffer
		in, cleanup, err := liveInputs(context.Background(), config, 0, from.Format(time.RFC3339), to.Format(time.RFC3339), "", &stderr)
		if err != nil {
			t.Fatal(err)
		}
		defer cleanup()
		a, err := analyzeInputs(context.Background(), *in)
		if err != nil {
			t.Fatal(err)
		}
		return a.report
	}
	crawlerOf := func(t *testing.T, r *report.Report) *detect.Finding {
		for i := range r.Findings {
			if r.Findings[i].Kind == detect.KindCrawlerBurst {
				return &r.Findings[i]
			}
		}
		t.Fatalf("no crawler_burst finding: %v", r.Findings)
		return nil
	}

	write("48h")
	full := run(t)
	write("3h")
	pushed := run(t)
	fc, pc := crawlerOf(t, full), crawlerOf(t, pushed)
	// The crawl is said to start where its rise runs into the incident
	// (TriggerLead before the onset), inside the walk: before the margin
	// that the first pass pulled.
	if !fc.Start.Before(burstFrom.Add(-live.DefaultPushdownMargin)) || fc.Start.Before(walkFrom) {
		t.Errorf("full pull: crawler starts %s, want within its walk before %s", fc.Start, burstFrom.Add(-live.DefaultPushdownMargin))
	}
	if !pc.Start.Equal(fc.Start) {
		t.Errorf("crawler start: pushdown %s, full pull %s", pc.Start, fc.Start)
	}
	// Its requests are a lower bound (the start of the walk stays counted),
	// within 5% of the full pull's.
	fr, pr := detect.FactsOf[detect.CrawlerBurstFacts](fc), detect.FactsOf[detect.CrawlerBurstFacts](pc)
	if pr.Requests > fr.Requests || float64(pr.Requests) < 0.95*float64(fr.Requests) {
		t.Errorf("crawler requests: pushdown %d, full pull %d", pr.Requests, fr.Requests)
	}
	if pushed.Impact.FailedRequests != full.Impact.FailedRequests || pushed.Impact.Requests != full.Impact.Requests {
		t.Errorf("impact: pushdown %d failed of %d, full pull %d of %d", pushed.Impact.FailedRequests, pushed.Impact.Requests, full.Impact.FailedRequests, full.Impact.Requests)
	}
	pd := pushed.Evidence.Pushdown
	if pd == nil || len(pd.SecondPasses) == 0 || len(pd.SecondPasses) > live.MaxSecondPasses || pd.SecondPassMaxPasses != live.MaxSecondPasses {
		t.Fatalf("evidence.pushdown: %+v, want 1 to %d second passes", pd, live.MaxSecondPasses)
	}
	for i, p := range pd.SecondPasses {
		if p.Failed != "" || p.Minutes == 0 || p.Minutes > pd.SecondPassMaxMinutes || p.Lines == 0 {
			t.Errorf("second pass %d: %+v", i+1, p)
		}
	}
	t.Logf("pushdown: %d of %d bytes in %d requests; second passes %+v", pd.PulledBytes, pd.FullBytes, pd.Requests, pd.SecondPasses)
	// Its lines were read only where something stood out: the figures stay
	// marked, in report.json and beside the finding in the postmortem.
	if !slices.ContainsFunc(pc.Estimated, func(e detect.Estimate) bool {
		return e.Reason == detect.EstimateNotRead && slices.Contains(e.Figures, "distinct_ips") && slices.Contains(e.Figures, "start")
	}) {
		t.Errorf("the crawler's figures are not marked estimated: %+v", pc.Estimated)
	}
	if len(fc.Estimated) != 0 {
		t.Errorf("the full pull marks figures estimated: %+v", fc.Estimated)
	}
	for lang, word := range map[string]string{"en": "estimated: start, distinct", "ko": "추정치: start, distinct"} {
		md, err := report.Render(pushed, "md", lang)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(md), word) {
			t.Errorf("the %s postmortem does not mark the estimated figures (%q)", lang, word)
		}
	}
}
