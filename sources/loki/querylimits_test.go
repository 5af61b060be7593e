package loki

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// The fake refuses as Loki does: HTTP 400 with Loki's own text, the query
// length in Go's notation and the limit in Prometheus' (pkg/util/validation
// ErrQueryTooLong).
func TestFakeRefusesLongRangeWithLokisText(t *testing.T) {
	f := lokitest.New(t)
	f.SetMaxQueryLength(12 * time.Hour)
	p := url.Values{"match[]": {`{job="caddy"}`}, "start": {strconv.FormatInt(t0.UnixNano(), 10)}, "end": {strconv.FormatInt(t0.Add(25*time.Hour+30*time.Minute).UnixNano(), 10)}}
	resp, err := http.Get(f.URL() + "/loki/api/v1/series?" + p.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	want := "the query time range exceeds the limit (query length: 25h30m0s, limit: 12h)"
	if resp.StatusCode != 400 || strings.TrimSpace(string(body)) != want {
		t.Fatalf("got %d %q, want 400 %q", resp.StatusCode, body, want)
	}
}

// A 25 h window against a Loki whose max_query_length is 12h: /series, the
// per-minute counts and the raw pull all succeed, split to the limit Loki
// named, and nothing is lost.
func TestLongWindowFollowsMaxQueryLength(t *testing.T) {
	f := lokitest.New(t)
	f.SetMaxQueryLength(12 * time.Hour)
	window := 25 * time.Hour
	loadRuns(f, window)
	n := 0 // the fake drops duplicate pushes, so count what it holds
	f.Each(`{job="caddy"}`, t0, t0.Add(window), func(string, lokitest.Entry) { n++ })
	c, _ := newTestClient(t, f.URL(), nil)
	ctx := context.Background()

	mc, err := c.MinuteCounts(ctx, `{job="caddy"}`, t0, t0.Add(window))
	if err != nil {
		t.Fatalf("MinuteCounts over 25h: %v", err)
	}
	var counted int64
	for _, v := range mc.Totals() {
		counted += v
	}
	if counted != int64(n) {
		t.Errorf("MinuteCounts counted %d lines, %d were pushed", counted, n)
	}
	learned := strings.Join(c.LimitsLearned(), "\n")
	if !strings.Contains(learned, "at most 12h") || !strings.Contains(learned, "query length: 25h0m0s, limit: 12h") {
		t.Errorf("limits learned: %q", learned)
	}

	col := newCollector(t)
	res, err := c.Pull(ctx, `{job="caddy"}`, "", t0, t0.Add(window), col.sink)
	if err != nil {
		t.Fatalf("Pull over 25h: %v", err)
	}
	if !res.Complete() {
		t.Fatalf("pull incomplete: %v", res.Notes)
	}
	diffMultiset(t, expected(f, `{job="caddy"}`, t0, t0.Add(window)), col.got)

	mv, err := c.MinuteValues(ctx, `sum by (host) (count_over_time({job="caddy"}`+MinuteRange+"))", t0, t0.Add(window))
	if err != nil {
		t.Fatalf("MinuteValues over 25h: %v", err)
	}
	var summed float64
	for _, s := range mv.Series {
		for _, v := range s.Values {
			summed += v
		}
	}
	if int(summed) != n {
		t.Errorf("MinuteValues summed %v lines, %d were pushed", summed, n)
	}
}

// Streams that come and go (one per hour, as pods are replaced) exceed
// max_query_series over the whole window but not per hour: the metric query
// is split by hour and every stream's counts arrive. When the streams all
// live at once, splitting cannot help and Loki's refusal is the error.
func TestSeriesLimitSplitsMetricQuery(t *testing.T) {
	t.Run("streams churn", func(t *testing.T) {
		f := lokitest.New(t)
		f.SetMaxQuerySeries(3)
		for h := 0; h < 6; h++ {
			for m := 0; m < 60; m += 5 {
				f.Push(map[string]string{"job": "caddy", "pod": fmt.Sprint("p", h)}, t0.Add(time.Duration(h)*time.Hour+time.Duration(m)*time.Minute+time.Second), "GET /")
			}
		}
		c, _ := newTestClient(t, f.URL(), nil)
		mv, err := c.MinuteValues(context.Background(), `sum by (pod) (count_over_time({job="caddy"}[1m]))`, t0, t0.Add(6*time.Hour))
		if err != nil {
			t.Fatalf("MinuteValues: %v", err)
		}
		if len(mv.Series) != 6 {
			t.Fatalf("%d series, want 6", len(mv.Series))
		}
		for _, s := range mv.Series {
			var sum float64
			for _, v := range s.Values {
				sum += v
			}
			if sum != 12 {
				t.Errorf("%s: %v lines, want 12", s.Labels, sum)
			}
		}
		if l := strings.Join(c.LimitsLearned(), "\n"); !strings.Contains(l, "maximum number of series (3) reached") {
			t.Errorf("limits learned: %q", l)
		}
	})
	t.Run("streams all live", func(t *testing.T) {
		// A sum by pod is split by the pods' values; a count per stream
		// cannot be narrowed, and Loki's refusal is the error.
		f := lokitest.New(t)
		f.SetMaxQuerySeries(3)
		for p := 0; p < 5; p++ {
			f.Push(map[string]string{"job": "caddy", "pod": fmt.Sprint("p", p)}, t0.Add(time.Second), "GET /")
		}
		c, _ := newTestClient(t, f.URL(), nil)
		mv, err := c.MinuteValues(context.Background(), `sum by (pod) (count_over_time({job="caddy"}[1m]))`, t0, t0.Add(6*time.Hour))
		if err != nil || len(mv.Series) != 5 {
			t.Fatalf("sum by pod: %d series, err %v; want 5", len(mv.Series), err)
		}
		q := `count_over_time({job="caddy"}[1m])`
		_, err = c.MinuteValues(context.Background(), q, t0, t0.Add(6*time.Hour))
		if err == nil || !strings.Contains(err.Error(), "maximum number of series (3) reached for a single query") || !strings.Contains(err.Error(), "count_over_time") {
			t.Fatalf("err = %v, want Loki's series limit naming the query", err)
		}
	})
}

// A sum by labels that Loki computes from the lines (a day's families of
// clients: all there all day, so no split in time helps) is split by the
// values of its grouping under max_query_series, down to parts of one
// value; the answer is the unlimited one, series for series and minute
// for minute, with values Loki's label filters must keep apart: the
// empty value, a value that is another's prefix, non-ASCII runes and
// regular-expression metacharacters. Before, Loki's refusal was the error.
func TestSeriesLimitSplitsByGroupingValues(t *testing.T) {
	f := lokitest.New(t)
	fams := []string{"", "a", "ab", "abc", "b/en", "b/ko", "chrome/ko", "chrome/k", "z.*", "[x]", "한국", "éa", "\\", "a|b"}
	statuses := []string{"200", "404", "500"}
	n := 0
	for m := 0; m < 30; m++ {
		for i, fam := range fams {
			if (m+i)%3 == 0 {
				continue
			}
			line := fmt.Sprintf(`{"fam":%q,"status":%s}`, fam, statuses[(m*i)%3])
			f.Push(map[string]string{"job": "caddy"}, t0.Add(time.Duration(m)*time.Minute+time.Duration(i)*time.Second), line)
			n++
		}
	}
	for _, q := range []string{
		`sum by (fam) (count_over_time({job="caddy"} | json fam="fam" [1m]))`,
		`sum(count_over_time({job="caddy"} | json fam="fam", status="status" [1m])) by (fam, status)`,
	} {
		free, _ := newTestClient(t, f.URL(), nil)
		want, err := free.MinuteValues(context.Background(), q, t0, t0.Add(30*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		// Under max_query_length too, the parts learned in the first
		// stretch are asked in the next ones.
		f.SetMaxQuerySeries(3)
		f.SetMaxQueryLength(10 * time.Minute)
		c, _ := newTestClient(t, f.URL(), nil)
		got, err := c.MinuteValues(context.Background(), q, t0, t0.Add(30*time.Minute))
		// A caller with a cheaper way to ask gets the refusal instead.
		if _, werr := c.MinuteValuesWhole(context.Background(), q, t0, t0.Add(30*time.Minute)); !IsSeriesLimit(werr) {
			t.Errorf("MinuteValuesWhole: %v, want Loki's series limit", werr)
		}
		f.SetMaxQuerySeries(0)
		f.SetMaxQueryLength(0)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if len(want.Series) < 10 || len(got.Series) != len(want.Series) {
			t.Fatalf("%s: %d series under the limit, %d without", q, len(got.Series), len(want.Series))
		}
		var sum float64
		for i := range want.Series {
			if got.Series[i].Labels != want.Series[i].Labels || !slices.Equal(got.Series[i].Values, want.Series[i].Values) {
				t.Errorf("%s: series %s under the limit, %s without, or their minutes differ", q, got.Series[i].Labels, want.Series[i].Labels)
			}
			for _, v := range got.Series[i].Values {
				sum += v
			}
		}
		if int(sum) != n {
			t.Errorf("%s: %v lines counted, %d pushed", q, sum, n)
		}
		if l := strings.Join(c.LimitsLearned(), "\n"); !strings.Contains(l, "split by the values of label fam") || !strings.Contains(l, "maximum number of series (3)") {
			t.Errorf("limits learned: %q", l)
		}
	}
}

// A dead Loki is retried once per client, not once per request: the first
// request spends the retries, later ones try once and say why; the first
// success brings the retries back (a Loki restarting mid-fetch is bridged).
func TestDeadLokiRetriedOncePerSource(t *testing.T) {
	f := lokitest.New(t)
	loadRuns(f, 3*time.Hour)
	var dead atomic.Bool
	dead.Store(true)
	var requests atomic.Int64
	f.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
		requests.Add(1)
		if dead.Load() {
			f.Fail(w, http.StatusServiceUnavailable, "connection refused by upstream")
			return true
		}
		return false
	})
	c, sl := newTestClient(t, f.URL(), nil) // 3 retries
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		_, err := c.Pull(ctx, `{job="caddy"}`, "", t0, t0.Add(3*time.Hour), func(Entry) error { return nil })
		if err == nil {
			t.Fatal("pull from a dead Loki succeeded")
		}
		if i > 0 && !strings.Contains(err.Error(), "not retried") {
			t.Errorf("pull %d: %v, want it to say it was not retried", i, err)
		}
	}
	if got := requests.Load(); got != 4+1+1 {
		t.Errorf("%d requests to a dead Loki over 3 pulls, want 6 (4 for the first, 1 each after)", got)
	}
	if len(sl.get()) != 3 {
		t.Errorf("waited %d times, want 3", len(sl.get()))
	}

	// Loki is back, and then fails once more: a success restored the retries.
	dead.Store(false)
	if _, err := c.Pull(ctx, `{job="caddy"}`, "", t0, t0.Add(time.Hour), func(Entry) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var once atomic.Bool
	f.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
		if once.CompareAndSwap(false, true) {
			f.Fail(w, http.StatusServiceUnavailable, "restarting")
			return true
		}
		return false
	})
	if _, err := c.Pull(ctx, `{job="caddy"}`, "", t0, t0.Add(time.Hour), func(Entry) error { return nil }); err != nil {
		t.Fatalf("a single 503 after recovery was not retried: %v", err)
	}
}

// A result that paged nothing says so instead of "0 sub-ranges ... limit 0
// per call".
func TestRecordOfPullThatNeverPaged(t *testing.T) {
	f := lokitest.New(t)
	c, _ := newTestClient(t, f.URL(), nil)
	res, err := c.Pull(context.Background(), `{job="caddy"`, "", t0, t0.Add(time.Hour), func(Entry) error { return nil })
	if err == nil {
		t.Fatal("a malformed selector pulled")
	}
	note := res.Record("access/loki.log.gz").Note
	if strings.Contains(note, "sub-ranges") || strings.Contains(note, "limit 0") || !strings.Contains(note, "no line pulled") {
		t.Errorf("note %q", note)
	}
}

// Loki's 400 parse error is a query error (exit 2 in fetch); a refused
// limit or a 5xx is not.
func TestIsQueryError(t *testing.T) {
	f := lokitest.New(t)
	c, _ := newTestClient(t, f.URL(), func(cfg *Config) { cfg.Retries = 0 })
	_, err := c.Series(context.Background(), t0, t0.Add(time.Hour), `{job="caddy",}`)
	if !IsQueryError(err) || !strings.Contains(err.Error(), "parse error") {
		t.Errorf("malformed selector: IsQueryError false for %v", err)
	}
	if _, err := c.Pull(context.Background(), `{job="caddy"`, "", t0, t0.Add(time.Hour), func(Entry) error { return nil }); !IsQueryError(err) {
		t.Errorf("unterminated selector: IsQueryError false for %v", err)
	}
	f.SetMaxQueryLength(time.Minute / 2)
	_, err = c.QueryMatrix(context.Background(), `count_over_time({job="caddy"}[1m])`, t0, t0.Add(time.Hour), time.Minute)
	if err == nil || IsQueryError(err) {
		t.Errorf("query-length refusal: IsQueryError true or no error: %v", err)
	}
}

// Loki before grafana/loki#18176 said "maximum of series (N)": the limit
// is recognised in both wordings (before, the older one was an error
// that split nothing).
func TestSeriesLimitBothWordings(t *testing.T) {
	for _, msg := range []string{
		"maximum of series (500) reached for a single query",
		"maximum number of series (500) reached for a single query; consider reducing query cardinality",
	} {
		se := seriesLimitOf(asQueryLimitError(&APIError{StatusCode: 400, Message: msg}))
		if se == nil || se.max != 500 {
			t.Errorf("%q: %+v, want the series limit 500", msg, se)
		}
	}
}
