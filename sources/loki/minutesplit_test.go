package loki

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// Per-minute counts split into several calls (a week is more steps than one
// call may hold; a day is longer than a 6h max_query_length) count every
// minute once and every line in the minute it was logged in, although Loki
// rounds each call's start and end outwards to the step's grid and counts a
// range's end, not its start (the fake does both, as Loki does). Every
// minute holds a line on its first nanosecond, one on its last and one in
// between, so a boundary minute evaluated twice, or a line counted a minute
// early, shows.
func TestMinuteCountsExactAcrossSplits(t *testing.T) {
	for _, tc := range []struct {
		name      string
		window    time.Duration
		maxLength time.Duration
		minCalls  int
	}{
		{"a week, split by Loki's points per call", 7 * 24 * time.Hour, 0, 2},
		{"a day under a 6h max_query_length", 24 * time.Hour, 6 * time.Hour, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lokitest.New(t)
			f.SetMaxQueryLength(tc.maxLength)
			minutes := int(tc.window / time.Minute)
			for m := range minutes {
				at := t0.Add(time.Duration(m) * time.Minute)
				f.Push(streamA, at, "first nanosecond")
				f.Push(streamA, at.Add(29*time.Second), "middle")
				f.Push(streamA, at.Add(time.Minute-time.Nanosecond), "last nanosecond")
			}
			// Lines just outside the window are no minute's.
			f.Push(streamA, t0.Add(-time.Nanosecond), "before")
			f.Push(streamA, t0.Add(tc.window), "after")
			c, _ := newTestClient(t, f.URL(), nil)
			ctx := context.Background()

			mc, err := c.MinuteCounts(ctx, `{job="caddy"}`, t0, t0.Add(tc.window))
			if err != nil {
				t.Fatal(err)
			}
			totals := mc.Totals()
			if len(totals) != minutes {
				t.Fatalf("%d minutes counted, want %d", len(totals), minutes)
			}
			var sum int64
			var wrong []string
			for i, n := range totals {
				sum += n
				if n != 3 && len(wrong) < 5 {
					wrong = append(wrong, fmt.Sprintf("%s: %d", mc.Minute(i).Format(time.RFC3339), n))
				}
			}
			if sum != int64(3*minutes) || len(wrong) > 0 {
				t.Errorf("counted %d lines, %d pushed in the window (%+d); minutes not holding their 3 lines: %v", sum, 3*minutes, sum-int64(3*minutes), wrong)
			}
			calls, _ := f.Stats()
			if calls["matrix"] < tc.minCalls {
				t.Errorf("%d metric calls: the window was not split (want at least %d), so the test tests nothing", calls["matrix"], tc.minCalls)
			}

			// The same holds for any per-minute metric query.
			mv, err := c.MinuteValues(ctx, `sum(bytes_over_time({job="caddy"} `+MinuteRange+`))`, t0, t0.Add(tc.window))
			if err != nil {
				t.Fatal(err)
			}
			perMinute := float64(len("first nanosecond") + len("middle") + len("last nanosecond"))
			for i, v := range mv.Series[0].Values {
				if v != perMinute {
					t.Fatalf("bytes of %s: %v, want %v", mc.Minute(i).Format(time.RFC3339), v, perMinute)
				}
			}
		})
	}
}
