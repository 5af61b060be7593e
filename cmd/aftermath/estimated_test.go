package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources/live/livetest"
)

// TestPushdownMarksSampledFigures: a crawler walks the site at 10 requests a
// minute from the baseline on and bursts for 20 minutes, failing and
// abandoning requests; the per-family counts fail (pushdownFake), so its lines are read only where something
// stood out. The figures that rest on the baseline's sample or on the
// minutes read are marked beside their finding: upstream_errors' usual
// goodput, client_abandoned_work's worker time (PHP's usual service time
// is known from lines read only) and the crawler's route costs. A full pull
// marks nothing.
//
// Both pulls count every request the burst failed, 503 or late.
//
// The obvious usual goodput is wrong here: the baseline minutes only
// counted hold the crawler's walk in their answers, which cannot be taken
// out of them, so the median over all baseline minutes is 5 a minute above
// the full pull's (35 against 30). From the sample it is within 3.
func TestPushdownMarksSampledFigures(t *testing.T) {
	t.Parallel()
	rnd := newTestRand(11)
	from := time.Date(2026, 10, 3, 10, 0, 0, 0, time.UTC)
	burstFrom, burstTo := from.Add(140*time.Minute), from.Add(160*time.Minute)
	const crawler = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"
	var served503, servedLate int // what the burst failed: answered 503, or after the clients' timeout
	run := pushdownFake(t, rnd, from, func(m time.Time, push livetest.Push) {
		burst := !m.Before(burstFrom) && m.Before(burstTo)
		n := 10
		if burst {
			n = 400
		}
		for range n {
			ts := m.Add(time.Duration(rnd(int64(time.Minute))))
			status, dur := 200, 0.2+float64(rnd(100))/1000
			if burst {
				switch r := rnd(10); {
				case r < 3:
					status, dur = 503, 0.0002
					served503++
				case r < 4:
					// Answered after the clients' 30 s timeout: abandoned.
					dur = 35 + float64(rnd(10))
					servedLate++
				default:
					dur = 2 + float64(rnd(8000))/1000
				}
			}
			push(ts, fmt.Sprintf("%d.%d.%d.%d", 36+rnd(80), rnd(256), rnd(256), 1+rnd(254)), crawler, "zh-CN,zh;q=0.9",
				fmt.Sprintf("/index.php?title=Page_%d&action=history", rnd(100000)), status, dur)
		}
	}, 2)
	findingOf := func(t *testing.T, r *report.Report, kind detect.Kind) *detect.Finding {
		for i := range r.Findings {
			if r.Findings[i].Kind == kind {
				return &r.Findings[i]
			}
		}
		t.Fatalf("no %s finding: %v", kind, r.Findings)
		return nil
	}
	marked := func(f *detect.Finding, figure, reason string) bool {
		return slices.ContainsFunc(f.Estimated, func(e detect.Estimate) bool {
			return e.Reason == reason && slices.Contains(e.Figures, figure)
		})
	}

	full, _ := run(t, "48h")
	for _, f := range full.Findings {
		if len(f.Estimated) != 0 {
			t.Errorf("full pull: %s marks figures estimated: %+v", f.Kind, f.Estimated)
		}
	}
	pushed, _ := run(t, "3h")
	if pushed.Evidence.Pushdown == nil {
		t.Fatal("no pushdown")
	}
	// Both pulls count exactly what the burst failed: every 503 the fake
	// served, and the answers that came too late; a report whose failures
	// are only the late ones has lost the 503s.
	for name, r := range map[string]*report.Report{"full pull": full, "pushdown": pushed} {
		ue := detect.FactsOf[detect.UpstreamErrorsFacts](findingOf(t, r, detect.KindUpstreamErrors))
		if served503 == 0 || r.Impact.StatusCounts["503"] != served503 || ue.FailedTotal != served503+servedLate || ue.LateSuccess != servedLate {
			t.Errorf("%s: %d 503s logged, upstream_errors %d failed of which %d late; the fake served %d 503s and %d late answers",
				name, r.Impact.StatusCounts["503"], ue.FailedTotal, ue.LateSuccess, served503, servedLate)
		}
	}
	errs := findingOf(t, pushed, detect.KindUpstreamErrors)
	if !marked(errs, "goodput_usual_per_min", detect.EstimateBaselineSample) {
		t.Errorf("upstream_errors: usual goodput not marked from the baseline's sample: %+v", errs.Estimated)
	}
	fu := detect.FactsOf[detect.UpstreamErrorsFacts](findingOf(t, full, detect.KindUpstreamErrors)).GoodputUsualPerMin
	pu := detect.FactsOf[detect.UpstreamErrorsFacts](errs).GoodputUsualPerMin
	if !fu.OK || !pu.OK || math.Abs(pu.V-fu.V) > 3 {
		t.Errorf("usual goodput: pushdown %v, full pull %v, want within 3 a minute", pu, fu)
	}
	if a := findingOf(t, pushed, detect.KindClientAbandonedWork); !marked(a, "worker_seconds", detect.EstimateBaselineSample) {
		t.Errorf("client_abandoned_work: worker time not marked from the baseline's sample: %+v", a.Estimated)
	}
	c := findingOf(t, pushed, detect.KindCrawlerBurst)
	// Its routes were walked in the baseline too: their costs rest on its sample.
	if !marked(c, "routes", detect.EstimateBaselineSample) || !marked(c, "uncacheable_share", detect.EstimateBaselineSample) {
		t.Errorf("crawler_burst: route costs not marked as measured over the baseline's sample: %+v", c.Estimated)
	}
	// Markdown escapes the underscores.
	for lang, word := range map[string]string{"en": `goodput\_usual\_per\_min (from the baseline's sampled minutes)`, "ko": `goodput\_usual\_per\_min (기준 기간 중 표본으로 읽은 분에서 추정)`} {
		md, err := report.Render(pushed, "md", lang)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(md), word) {
			t.Errorf("the %s postmortem does not mark the usual goodput (%q)", lang, word)
		}
	}
}
