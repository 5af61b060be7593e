package loki

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// Loki's max_query_bytes_read and max_querier_bytes_read refuse a query
// for the bytes its streams hold in its range: the counts, the per-minute
// values and the raw pull split in time until each request fits, as they do
// for max_query_length, and lose nothing; the limit learned says what Loki
// said. Before, the first refusal was the error and nothing was counted.
func TestBytesLimitsSplitUntilTheQueryFits(t *testing.T) {
	window := 6 * time.Hour
	for _, tc := range []struct {
		name string
		set  func(f *lokitest.Loki, total int64)
		said string
	}{
		{"max_query_bytes_read", func(f *lokitest.Loki, total int64) { f.SetMaxQueryBytesRead(total / 5) }, "the query would read too many bytes"},
		{"max_querier_bytes_read", func(f *lokitest.Loki, total int64) { f.SetMaxQuerierBytesRead(total / 12) }, "query too large to execute on a single querier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lokitest.New(t)
			loadRuns(f, window)
			lines, total := f.Bytes(`{job="caddy"}`, t0, t0.Add(window))
			tc.set(f, total)
			c, _ := newTestClient(t, f.URL(), nil)
			ctx := context.Background()

			mc, err := c.MinuteCounts(ctx, `{job="caddy"}`, t0, t0.Add(window))
			if err != nil {
				t.Fatalf("MinuteCounts: %v", err)
			}
			var counted int64
			for _, n := range mc.Totals() {
				counted += n
			}
			if counted != lines {
				t.Errorf("counted %d lines, %d in the window", counted, lines)
			}
			col := newCollector(t)
			res, err := c.Pull(ctx, `{job="caddy"}`, "", t0, t0.Add(window), col.sink)
			if err != nil || !res.Complete() {
				t.Fatalf("Pull: %v, notes %v", err, res.Notes)
			}
			diffMultiset(t, expected(f, `{job="caddy"}`, t0, t0.Add(window)), col.got)
			if learned := strings.Join(c.LimitsLearned(), "\n"); !strings.Contains(learned, "for the bytes they read") || !strings.Contains(learned, tc.said) {
				t.Errorf("limits learned: %q", learned)
			}
		})
	}
}

// A single minute that reads more than Loki allows cannot be had: the error
// is Loki's refusal, for that minute, not a silent gap.
func TestBytesLimitBelowAMinuteIsAnError(t *testing.T) {
	f := lokitest.New(t)
	loadRuns(f, time.Hour)
	f.SetMaxQueryBytesRead(10)
	c, _ := newTestClient(t, f.URL(), nil)
	_, err := c.MinuteCounts(context.Background(), `{job="caddy"}`, t0, t0.Add(time.Hour))
	var be *bytesLimitError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "the query would read too many bytes") {
		t.Fatalf("err %v: want Loki's refusal", err)
	}
}
