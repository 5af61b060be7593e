package loki

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// loadHosts stores window's minutes for five streams of one job (four
// hosts, and one stream with no host label but a zone): every stream holds
// six 100-byte lines a minute, none on a minute's edge.
func loadHosts(f *lokitest.Loki, window time.Duration) {
	streams := []map[string]string{
		{"job": "caddy", "host": "a"}, {"job": "caddy", "host": "b"},
		{"job": "caddy", "host": "c"}, {"job": "caddy", "host": "d"},
		{"job": "caddy", "zone": "x"},
	}
	for m := time.Duration(0); m < window; m += time.Minute {
		for i, s := range streams {
			for k := 0; k < 6; k++ {
				line := fmt.Sprintf("GET /%d/%d/%d ", i, m/time.Minute, k)
				f.Push(s, t0.Add(m+time.Duration(5+10*k)*time.Second), line+strings.Repeat("x", 100-len(line)))
			}
		}
	}
}

// When one step of a query still reads more bytes than Loki allows, the
// query is run per group of its streams (a label's values) and the groups
// summed: per-stream counts, a sum over every stream, and the raw lines
// are what the unlimited Loki answers, and the limit learned names the
// label. Before, the first single-minute refusal was the error and
// nothing was counted.
func TestBytesLimitsSplitByLabelBelowAMinute(t *testing.T) {
	const window = 30 * time.Minute
	// One stream over a two-minute step (what a minute's matrix point
	// reads with its neighbour) is 1,200 bytes: 1,300 fits one stream,
	// not two.
	const limit = 1300
	sum := `sum(count_over_time({job="caddy"} ` + MinuteRange + `))`
	for _, tc := range []struct {
		name string
		set  func(f *lokitest.Loki)
		said string
	}{
		{"max_query_bytes_read", func(f *lokitest.Loki) { f.SetMaxQueryBytesRead(limit) }, "the query would read too many bytes"},
		{"max_querier_bytes_read", func(f *lokitest.Loki) { f.SetMaxQuerierBytesRead(limit) }, "query too large to execute on a single querier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := lokitest.New(t)
			loadHosts(f, window)
			ctx := context.Background()
			free, _ := newTestClient(t, f.URL(), nil)
			wantCounts, err := free.MinuteCounts(ctx, `{job="caddy"}`, t0, t0.Add(window))
			if err != nil {
				t.Fatal(err)
			}
			wantSum, err := free.MinuteValues(ctx, sum, t0, t0.Add(window))
			if err != nil {
				t.Fatal(err)
			}

			tc.set(f)
			f.ResetStats()
			c, _ := newTestClient(t, f.URL(), nil)
			mc, err := c.MinuteCounts(ctx, `{job="caddy"}`, t0, t0.Add(window))
			if err != nil {
				t.Fatalf("MinuteCounts: %v", err)
			}
			if !reflect.DeepEqual(mc.Streams, wantCounts.Streams) {
				t.Errorf("per-stream minute counts differ from the unlimited Loki's (%d streams, want %d)", len(mc.Streams), len(wantCounts.Streams))
			}
			mv, err := c.MinuteValues(ctx, sum, t0, t0.Add(window))
			if err != nil {
				t.Fatalf("MinuteValues: %v", err)
			}
			if !reflect.DeepEqual(mv.Series, wantSum.Series) {
				t.Errorf("summed minute counts differ from the unlimited Loki's")
			}
			col := newCollector(t)
			res, err := c.Pull(ctx, `{job="caddy"}`, "", t0, t0.Add(window), col.sink)
			if err != nil || !res.Complete() {
				t.Fatalf("Pull: %v, notes %v", err, res.Notes)
			}
			diffMultiset(t, expected(f, `{job="caddy"}`, t0, t0.Add(window)), col.got)

			if calls, _ := f.Stats(); calls["error"] == 0 {
				t.Errorf("Loki refused nothing (calls %v): the limit does not bite", calls)
			}
			learned := strings.Join(c.LimitsLearned(), "\n")
			if !strings.Contains(learned, "split by the values of label host") || !strings.Contains(learned, tc.said) {
				t.Errorf("limits learned: %q", learned)
			}
		})
	}
}

// Only a sum over one selector may be summed over groups of streams.
func TestSplitSumQuery(t *testing.T) {
	for q, want := range map[string]string{
		`sum(count_over_time({job="caddy"} [1m] offset 1ns))`:                                                                                             `{job="caddy"}`,
		`sum by (status) (count_over_time({job="caddy", x=~"{a}"} |= "}" | json [5m]))`:                                                                   `{job="caddy", x=~"{a}"}`,
		`sum(bytes_over_time({job="caddy"} | label_format f="{{.a}}" [1m])) by (f)`:                                                                       `{job="caddy"}`,
		`sum by (s) (sum_over_time({job="caddy"} | json | unwrap duration | __error__="" [1m] offset 1ns))`:                                               `{job="caddy"}`,
		"sum by (f) (count_over_time({job=\"caddy\"} | json a=`h[\"UA\"][0]` | label_format f=`{{ if contains \"[0]\" .a }}x{{ end }}` [1m] offset 1ns))": `{job="caddy"}`,
		`max(count_over_time({job="caddy"} [1m]))`:                                                                                                        "",
		`sum(topk(3, count_over_time({job="caddy"} [1m])))`:                                                                                               "",
		`sum(count_over_time({job="caddy"} [1m])) / sum(count_over_time({job="php"} [1m]))`:                                                               "",
		`sum(count_over_time({job="caddy"} [1m])) > 5`:                                                                                                    "",
		`{job="caddy"} |= "x"`: "",
	} {
		s, ok := splitSumQuery(q)
		if got := map[bool]string{true: s.sel}[ok]; got != want {
			t.Errorf("%s: selector %q, want %q", q, got, want)
		}
		if ok && s.before+s.sel+s.after != q {
			t.Errorf("%s: cut into %q %q %q", q, s.before, s.sel, s.after)
		}
	}
	if s, _ := splitSumQuery(`sum(count_over_time({job="caddy"} [1m] offset 1ns))`); s.lookback != time.Minute+time.Nanosecond {
		t.Errorf("lookback %v", s.lookback)
	}
}

// One stream that alone reads too much for one step cannot be had: the
// error is Loki's refusal, naming the stream.
func TestBytesLimitOnOneStreamNamesIt(t *testing.T) {
	f := lokitest.New(t)
	loadHosts(f, 10*time.Minute)
	f.SetMaxQueryBytesRead(500)
	c, _ := newTestClient(t, f.URL(), nil)
	_, err := c.MinuteCounts(context.Background(), `{job="caddy"}`, t0, t0.Add(10*time.Minute))
	var be *bytesLimitError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "alone") || !strings.Contains(err.Error(), `stream {`) {
		t.Fatalf("err %v: want Loki's refusal naming the stream", err)
	}
}
