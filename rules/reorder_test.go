package rules

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestReorderBufferTies: items of equal arrival come out in the order they
// were queued, whatever the heap does with them.
func TestReorderBufferTies(t *testing.T) {
	var b reorderBuffer[int]
	var got []int
	collect := func(_ int64, v *int) { got = append(got, *v) }
	for i := range 200 {
		b.observe(int64(i), 0)
		b.push(int64(i%5), i) // five arrivals, forty times each, interleaved
	}
	b.drain(collect)
	want := make([]int, 0, 200)
	for at := range 5 {
		for i := at; i < 200; i += 5 {
			want = append(want, i)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// TestLateCheckIsConservative: on logs in response-end order with durations
// that grow now and then by minutes (a wedge), a reorder buffer keeping any
// share of the arrivals replays one late only when lateCheck said it might.
// And on a log without such growth it says none may be late.
func TestLateCheckIsConservative(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	flagged := 0
	for run := range 300 {
		type line struct{ logTime, dur int64 }
		var lines []line
		at := int64(1_800_000_000) * int64(time.Second)
		for range 400 {
			at += rng.Int64N(int64(2 * time.Second))
			d := rng.Int64N(int64(time.Second))
			if run%3 > 0 && rng.IntN(40) == 0 {
				d = rng.Int64N(int64(20 * time.Minute)) // queued behind a crawl
			}
			lines = append(lines, line{at + d, d})
		}
		slices.SortStableFunc(lines, func(a, b line) int { return int(a.logTime - b.logTime) })
		var check lateCheck
		for _, l := range lines {
			check.observe(l.logTime, l.dur, l.logTime-l.dur)
		}
		if run%3 == 0 && check.possiblyLate > 0 {
			t.Errorf("run %d: %d possibly late with durations under a second", run, check.possiblyLate)
		}
		for _, share := range []int{1, 2, 5} {
			var b reorderBuffer[struct{}]
			for i, l := range lines {
				b.observe(l.logTime, l.dur)
				if i%share == 0 {
					b.push(l.logTime-l.dur, struct{}{})
				}
				b.release(func(int64, *struct{}) {})
			}
			if b.late > 0 && check.possiblyLate == 0 {
				t.Fatalf("run %d, one in %d kept: %d late, none possibly late", run, share, b.late)
			}
			if b.late > 0 {
				flagged++
			}
		}
	}
	if flagged == 0 {
		t.Error("no run replayed anything late: the test tests nothing")
	}
}
