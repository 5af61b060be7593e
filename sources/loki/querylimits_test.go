package loki

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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

	mv, err := c.MinuteValues(ctx, `sum by (host) (count_over_time({job="caddy"}[1m]))`, t0, t0.Add(window))
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
		f := lokitest.New(t)
		f.SetMaxQuerySeries(3)
		for p := 0; p < 5; p++ {
			f.Push(map[string]string{"job": "caddy", "pod": fmt.Sprint("p", p)}, t0.Add(time.Second), "GET /")
		}
		c, _ := newTestClient(t, f.URL(), nil)
		q := `sum by (pod) (count_over_time({job="caddy"}[1m]))`
		_, err := c.MinuteValues(context.Background(), q, t0, t0.Add(6*time.Hour))
		if err == nil || !strings.Contains(err.Error(), "maximum number of series (3) reached for a single query") || !strings.Contains(err.Error(), "count_over_time") {
			t.Fatalf("err = %v, want Loki's series limit naming the query", err)
		}
	})
}
