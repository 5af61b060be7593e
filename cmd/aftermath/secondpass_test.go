package main

import (
	"fmt"
	"net/http"
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

// pushdownFake serves 5 hours (a 4 h window after 1 h of baseline) of
// readers from a fake Loki, plus what traffic adds per minute, and returns a
// function that analyzes the window live with pushdown_after set as given
// (the report, and how many times the detectors ran).
// A seriesLimit above 0 is Loki's max_query_series, and the per-family
// counts then fail.
func pushdownFake(t *testing.T, rnd func(int64) int64, from time.Time, traffic func(m time.Time, push livetest.Push), seriesLimit int) func(t *testing.T, pushdownAfter string) (r *report.Report, detectorRuns int) {
	t.Helper()
	to := from.Add(4 * time.Hour)
	lk := lokitest.New(t)
	lk.SetMaxQuerySeries(seriesLimit)
	if seriesLimit > 0 {
		// The per-family counts fail: the client splits a sum refused
		// for its series by the values of its grouping, so the limit
		// alone no longer takes them away.
		lk.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
			if strings.Contains(r.URL.Query().Get("query"), "sum by (aftermath_family") {
				http.Error(w, "rpc error: code = Internal", http.StatusInternalServerError)
				return true
			}
			return false
		})
	}
	stream := map[string]string{"job": "caddy"}
	push := func(ts time.Time, ip, ua, lang, uri string, status int, dur float64) {
		lk.Push(stream, ts, livetest.CaddyLine(ts, ip, ua, lang, uri, status, dur, 20000))
	}
	for m := from.Add(-time.Hour); m.Before(to); m = m.Add(time.Minute) {
		livetest.Readers(m, rnd, push)
		traffic(m, push)
	}
	config := filepath.Join(t.TempDir(), "aftermath.yaml")
	return func(t *testing.T, pushdownAfter string) (*report.Report, int) {
		t.Helper()
		doc := fmt.Sprintf("timezone: UTC\nbaseline: 1h\npushdown_after: %s\npushdown:\n  max_share: 1\nsite:\n  workers: 16\n  client_timeout_s: 30\nloki:\n  addr: %s\n  selector: '{job=\"caddy\"}'\n  retries: -1\n", pushdownAfter, lk.URL())
		if err := os.WriteFile(config, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		a, runs := analyzeLive(t, config, from, to)
		return a.Report, runs
	}
}

// newTestRand is a small deterministic generator for a fake's traffic, one
// per test so that tests running in parallel each draw the same numbers:
// rnd(n) is in [0, n). Each test keeps the seed it had when the tests shared
// one generator in file order, so the traffic is what it was.
func newTestRand(seed uint64) func(n int64) int64 {
	return func(n int64) int64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int64(seed>>33) % n
	}
}

// TestSecondPassPullsWhereTheCrawlerBegan: a crawler walks slowly, growing,
// for 50 minutes and then bursts. The per-family counts fail (pushdownFake), so only the
// burst and its margin are pulled and the crawler seems to start at the
// margin's edge, its start marked estimated. A second pass pulls the counted
// half-hour before that start, and the crawler's start and the failed
// requests then equal a full pull's, its requests within 5%; the
// report still marks the figures estimated (its lines were not all read), in
// report.json and next to the finding in the postmortem.
func TestSecondPassPullsWhereTheCrawlerBegan(t *testing.T) {
	t.Parallel()
	rnd := newTestRand(14045277035093745557)
	from := time.Date(2026, 10, 3, 10, 0, 0, 0, time.UTC)
	walkFrom, burstFrom, burstTo := from.Add(90*time.Minute), from.Add(140*time.Minute), from.Add(160*time.Minute)
	walker := livetest.WalkingCrawler{Walk: walkFrom, Burst: burstFrom, End: burstTo}
	run := pushdownFake(t, rnd, from, func(m time.Time, push livetest.Push) {
		walker.Push(m, rnd, push)
	}, 2)
	crawlerOf := func(t *testing.T, r *report.Report) *detect.Finding {
		for i := range r.Findings {
			if r.Findings[i].Kind == detect.KindCrawlerBurst {
				return &r.Findings[i]
			}
		}
		t.Fatalf("no crawler_burst finding: %v", r.Findings)
		return nil
	}

	// The detectors run once per state of the bundle: once for the full
	// pull, and under pushdown once before the passes and once after each
	// pass that pulled minutes; the analysis of the last state is the
	// report's (before, a pass that pulled nothing was followed by one more
	// run on the same bundle).
	full, fullRuns := run(t, "48h")
	pushed, detectorRuns := run(t, "3h")
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
	if pd.BaselineSampleBlocks != live.DefaultBaselineSampleBlocks || pd.BaselineSampleBlockMinutes != int(live.DefaultBaselineSampleBlock/time.Minute) {
		t.Errorf("evidence.pushdown: baseline sample of %d blocks of %d minutes, want the defaults", pd.BaselineSampleBlocks, pd.BaselineSampleBlockMinutes)
	}
	for i, p := range pd.SecondPasses {
		if p.Failed != "" || p.Minutes == 0 || p.Minutes > pd.SecondPassMaxMinutes || p.Lines == 0 {
			t.Errorf("second pass %d: %+v", i+1, p)
		}
	}
	if fullRuns != 1 || detectorRuns != 1+len(pd.SecondPasses) {
		t.Errorf("detector runs: %d for the full pull, %d for the pushdown with %d second passes; want 1 and %d", fullRuns, detectorRuns, len(pd.SecondPasses), 1+len(pd.SecondPasses))
	}
	t.Logf("detector runs: full pull %d, pushdown %d (%d second passes)", fullRuns, detectorRuns, len(pd.SecondPasses))
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

// Loki counts a failed line when it was logged; the detectors place it when
// its request arrived, its duration earlier. Here a wedge answers every
// request 10 to 20 minutes late (longer than the 10-minute margin around the
// flagged minutes): the minutes in which the failing requests arrived are
// flagged only through the margin, and the wait outlasts it; yet the failing
// stretch equals a full pull's, because every failed line is logged in a
// minute that stood out and so is read, and a line read is placed by its
// arrival whatever minute that was (this holds without the second pass).
func TestPushdownFailingStretchByArrival(t *testing.T) {
	t.Parallel()
	rnd := newTestRand(2171394571019968905)
	from := time.Date(2026, 10, 3, 10, 0, 0, 0, time.UTC)
	wedgeFrom, wedgeTo := from.Add(120*time.Minute), from.Add(140*time.Minute)
	const client = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15"
	run := pushdownFake(t, rnd, from, func(m time.Time, push livetest.Push) {
		if m.Before(wedgeFrom) || !m.Before(wedgeTo) {
			return
		}
		// 200 requests arrive each minute of the wedge; each is logged when
		// PHP answers it, 10 to 20 minutes later.
		for range 200 {
			arrived := m.Add(time.Duration(rnd(int64(time.Minute))))
			wait := 600 + float64(rnd(600))
			push(arrived.Add(time.Duration(wait*float64(time.Second))), fmt.Sprintf("198.18.%d.%d", rnd(256), rnd(256)), client, "fr-FR,fr;q=0.9",
				fmt.Sprintf("/wiki/Article_%d", rnd(500)), 200, wait)
		}
	}, 500)
	full, _ := run(t, "48h")
	pushed, _ := run(t, "3h")
	if full.Impact.FailedRequests < 3000 || !full.Impact.Start.Equal(wedgeFrom) {
		t.Fatalf("full pull: %d failed from %s, want the wedge's 4,000 from %s", full.Impact.FailedRequests, full.Impact.Start, wedgeFrom)
	}
	if !pushed.Impact.Start.Equal(full.Impact.Start) || !pushed.Impact.End.Equal(full.Impact.End) || pushed.Impact.FailedRequests != full.Impact.FailedRequests {
		t.Errorf("failing stretch: pushdown %s to %s (%d failed), full pull %s to %s (%d failed)",
			pushed.Impact.Start, pushed.Impact.End, pushed.Impact.FailedRequests, full.Impact.Start, full.Impact.End, full.Impact.FailedRequests)
	}
	if pd := pushed.Evidence.Pushdown; pd != nil {
		t.Logf("pushdown: %d of %d bytes in %d requests; second passes %+v", pd.PulledBytes, pd.FullBytes, pd.Requests, pd.SecondPasses)
	} else {
		t.Errorf("no pushdown")
	}
}
