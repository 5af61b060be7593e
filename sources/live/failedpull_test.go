package live

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/loki"
)

// When the raw pull of a pushdown fails after the counts succeeded, the
// counts stand in for the minutes it could not read: the report's requests,
// failed requests and failing stretch are those of the pushdown that
// succeeded, the access file keeps no partial minute, minute-counts.csv
// says which minutes failed, and nothing claims that totals cover the
// whole window. Before, the failed requests of the minutes that stood out
// (the incident's own) were simply missing.
func TestFailedRawPullFallsBackOnCounts(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, fail func(r *http.Request) bool) (analysis, *bundle.Manifest, []sources.QualityNote, string) {
		t.Helper()
		cfg, lk, _, from, to := smallIncident(t)
		pushDownAlways(cfg)
		if fail != nil {
			lk.SetBefore(failWhere(fail, http.StatusBadGateway, "too many outstanding requests"))
		}
		dir := filepath.Join(t.TempDir(), "bundle")
		m, notes, err := Fetch(context.Background(), cfg, from, to, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		return analyze(t, dir), m, notes, dir
	}
	ok, _, _, _ := run(t, nil)
	impactOf := func(a analysis) (failed float64, start, end string) {
		im, _ := a.report["impact"].(map[string]any)
		failed, _ = im["failed_requests"].(float64)
		start, _ = im["start"].(string)
		end, _ = im["end"].(string)
		return
	}
	wantFailed, wantStart, wantEnd := impactOf(ok)
	if wantFailed == 0 {
		t.Fatalf("the incident has no failed request: the test tests nothing")
	}
	failingFrom := day.Add(14 * time.Hour)
	for name, fail := range map[string]func(r *http.Request) bool{
		"every raw page fails": func(r *http.Request) bool {
			return r.URL.Path == "/loki/api/v1/query_range" && r.URL.Query().Get("limit") != ""
		},
		"the raw pages from the incident on fail": func(r *http.Request) bool {
			q := r.URL.Query()
			start, _ := strconv.ParseInt(q.Get("start"), 10, 64)
			return r.URL.Path == "/loki/api/v1/query_range" && q.Get("limit") != "" && start >= failingFrom.UnixNano()
		},
	} {
		t.Run(name, func(t *testing.T) {
			a, m, notes, dir := run(t, fail)
			failed, start, end := impactOf(a)
			if failed != wantFailed || start != wantStart || end != wantEnd {
				t.Errorf("failed requests %v from %s to %s, want %v from %s to %s (the pull that succeeded)", failed, start, end, wantFailed, wantStart, wantEnd)
			}
			if got, want := minuteRequests(a), minuteRequests(ok); got != want {
				t.Errorf("%v requests in evidence.minutes, want %v", got, want)
			}
			if !noteWith(notes, loki.Source, sources.SeverityError, "Loki's per-minute counts stand in for them") {
				t.Errorf("no note says the counts stand in for the failed minutes: %v", notes)
			}
			for _, n := range a.quality {
				if strings.Contains(n.Message, "totals cover the whole window") {
					t.Errorf("a failed pull, yet: %s", n.Message)
				}
			}
			if r := recordOf(m, AccessFile); r == nil || !r.Failed {
				t.Errorf("access record %+v: a failed pull must stay failed", r)
			}
			minutes, err := ReadMinuteCounts(filepath.Join(dir, MinuteCountsFile))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, mi := range minutes {
				if mi.Reason == ReasonPullFailed {
					n++
					if mi.Pulled {
						t.Errorf("%s: failed yet marked pulled", mi.T)
					}
				}
			}
			if n == 0 {
				t.Errorf("no minute of %s is marked %q", MinuteCountsFile, ReasonPullFailed)
			}
		})
	}
}

// minuteRequests sums report.json's evidence.minutes[].requests.
func minuteRequests(a analysis) float64 {
	ev, _ := a.report["evidence"].(map[string]any)
	ms, _ := ev["minutes"].([]any)
	var n float64
	for _, m := range ms {
		v, _ := m.(map[string]any)["requests"].(float64)
		n += v
	}
	return n
}

// When the raw lines of the failing stretch were to be read but their pull
// failed, the cause cannot be judged from requests there: the checks that
// read addresses, routes and fingerprints say so instead of "nothing rose",
// report.json's data_quality warns, and the postmortem's summary says it
// where the cause would be told. What still comes out of the minutes that
// did come through is marked estimated. Minutes counted because they did
// not stand out are no such gap, nor are failed pulls outside the failing
// stretch. Before, crawler_burst simply said no fingerprint rose.
func TestFailedRawPullSaysTheCauseWasNotJudged(t *testing.T) {
	t.Parallel()
	rawPageFrom := func(from, to time.Time) func(r *http.Request) bool {
		return func(r *http.Request) bool {
			q := r.URL.Query()
			start, _ := strconv.ParseInt(q.Get("start"), 10, 64)
			return r.URL.Path == "/loki/api/v1/query_range" && q.Get("limit") != "" && start >= from.UnixNano() && start < to.UnixNano()
		}
	}
	never, always := day, day.Add(48*time.Hour)
	for _, tc := range []struct {
		name string
		fail func(r *http.Request) bool
		// unjudged: crawler_burst could not judge; estimated: the
		// crawler was found from fewer lines and says so.
		unjudged, estimated bool
		// splitBy cuts the raw pulls into sub-ranges this long, so that a
		// failed page fails its own sub-range only.
		splitBy time.Duration
	}{
		{name: "every raw page fails", fail: rawPageFrom(never, always), unjudged: true},
		{name: "the raw pages from the crawl's sixth minute on fail", fail: rawPageFrom(day.Add(14*time.Hour+5*time.Minute), always), estimated: true, splitBy: 5 * time.Minute},
		// The obvious answer (minutes only counted, so the cause is
		// unknown) is wrong here: they were counted because they did
		// not stand out, or their failed pull lies before the stretch.
		{name: "ordinary pushdown"},
		{name: "only the baseline's raw pages fail", fail: rawPageFrom(never, day.Add(13*time.Hour+30*time.Minute))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, lk, _, from, to := smallIncident(t)
			pushDownAlways(cfg)
			if tc.splitBy > 0 {
				cfg.Loki.SplitBy = D(tc.splitBy)
			}
			if tc.fail != nil {
				lk.SetBefore(failWhere(tc.fail, http.StatusBadGateway, "too many outstanding requests"))
			}
			dir := filepath.Join(t.TempDir(), "bundle")
			if _, _, err := Fetch(context.Background(), cfg, from, to, dir, nil); err != nil {
				t.Fatal(err)
			}
			a := analyze(t, dir)
			var crawlerCheck map[string]any
			for _, c := range a.report["checks"].([]any) {
				if c := c.(map[string]any); c["name"] == string(detect.KindCrawlerBurst) {
					crawlerCheck = c
				}
			}
			var warned string
			for _, n := range a.report["data_quality"].([]any) {
				n := n.(map[string]any)
				if msg := n["message"].(string); strings.Contains(msg, "the cause could not be judged") {
					warned = n["severity"].(string) + ": " + msg
				}
			}
			summary := section(a.postmortem, "## Summary")
			said := strings.Contains(summary, "could not be judged") || strings.Contains(summary, "could not be pulled")
			crawler := detect.First(a.findings, detect.KindCrawlerBurst)
			// Its counts of addresses are estimated (for whichever reason
			// comes first), and the failed pull marks what else it read.
			var pullFailedEstimate, ipsEstimated bool
			if crawler != nil {
				for _, e := range crawler.Estimated {
					pullFailedEstimate = pullFailedEstimate || e.Reason == detect.EstimatePullFailed
					ipsEstimated = ipsEstimated || slices.Contains(e.Figures, "distinct_ips")
				}
			}
			switch {
			case tc.unjudged:
				if crawlerCheck["outcome"] != string(detect.OutcomeCouldNotRun) || !strings.Contains(crawlerCheck["reason"].(string), "cannot judge") {
					t.Errorf("crawler_burst's check %v: want could_not_run, cannot judge", crawlerCheck)
				}
				if !strings.HasPrefix(warned, "warning: ") || !strings.Contains(warned, "crawler_burst") {
					t.Errorf("data_quality: want a warning that crawler_burst could not judge the cause, got %q", warned)
				}
				if !strings.Contains(summary, "could not be judged") {
					t.Errorf("the summary does not say the cause could not be judged:\n%s", summary)
				}
			case tc.estimated:
				if !pullFailedEstimate || !ipsEstimated {
					t.Fatalf("crawler %+v: want it found, its distinct_ips estimated and a %s estimate", crawler, detect.EstimatePullFailed)
				}
				if warned == "" || !said {
					t.Errorf("the failed minutes of the stretch are not said: data_quality %q, summary:\n%s", warned, summary)
				}
			default:
				if crawler == nil {
					t.Fatalf("no crawler found: the test tests nothing")
				}
				if warned != "" || said || pullFailedEstimate || crawlerCheck["outcome"] != string(detect.OutcomeFound) {
					t.Errorf("minutes deliberately not pulled, or a failed pull outside the failing stretch, yet: check %v, data_quality %q, summary %q, estimated %+v",
						crawlerCheck, warned, summary, crawler.Estimated)
				}
			}
		})
	}
}

// section is the Markdown section of md that starts at heading, up to the
// next heading of any level.
func section(md, heading string) string {
	_, rest, _ := strings.Cut(md, heading+"\n")
	if i := strings.Index(rest, "\n#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}
