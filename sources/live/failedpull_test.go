package live

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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
