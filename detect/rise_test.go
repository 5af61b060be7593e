package detect

import (
	"math"
	"testing"
	"time"
)

// A rise begins at the first of three minutes in a row at its level: a
// shorter burst before it is no onset, and the third minute may lie past the
// range searched (the rise is judged on its own minutes, not the window's).
func TestSustainedOnset(t *testing.T) {
	perMinute := map[int64]int{10: 9, 11: 9, 12: 2, 13: 8, 14: 8, 15: 8, 20: 8, 21: 8, 22: 8}
	for _, tc := range []struct {
		from, to int64
		want     int64
		ok       bool
	}{
		{0, 30, 13, true},  // 10-11 are two minutes only
		{14, 30, 20, true}, // from 14 only two of 13-15 remain
		{0, 21, 13, true},
		{16, 21, 20, true}, // 21 and 22 lie past to
		{16, 20, 0, false},
	} {
		got, ok := SustainedOnset(perMinute, RiseLevel(1, 3), tc.from, tc.to)
		if got != tc.want || ok != tc.ok {
			t.Errorf("[%d, %d): %d %v, want %d %v", tc.from, tc.to, got, ok, tc.want, tc.ok)
		}
	}
	if l := RiseLevel(1, 3); l <= 2 || l > 8 {
		t.Fatalf("level %v: the test's counts of 2 and 8 must lie either side", l)
	}
}

// A rise starts where the rate rose into its peak. A crawler that walked
// at a steady ~18 a minute for forty minutes (above a baseline of nothing)
// and then twenty-five times as fast rose, for the burst, at the step; its
// first requests are not the onset (wordpress-search-crawl seed 16 put the
// onset 19 minutes early so). A burst from nothing, a burst whose next
// stage came ten minutes after its first, a ramp that climbed
// from its first minute, a steady climb that doubles every twenty minutes
// and a walk that never multiplied keep their first minute; the fade is
// still the last minute above the baseline.
func TestSustainedRiseStepsIntoItsPeak(t *testing.T) {
	walk := []int{17, 19, 15, 21, 18, 27, 16, 13, 21, 25, 15, 21, 19, 22, 18, 20, 23, 17, 26, 14}
	burst := []int{96, 263, 401, 478, 460, 492, 470, 470, 501, 469, 627, 901, 1188, 1306, 1372, 1147}
	series := func(rate func(m int) int) map[int64]int {
		perMinute := map[int64]int{}
		for m := 60; m < 120; m++ {
			perMinute[int64(m)] = rate(m)
		}
		return perMinute
	}
	for _, tc := range []struct {
		name string
		rate func(m int) int
		want int64
	}{
		{"walk then burst", func(m int) int {
			if m < 100 {
				return walk[m%len(walk)]
			}
			return burst[min(m-100, len(burst)-1)]
		}, 100},
		{"two steps", func(m int) int { // 18, then ~55 from 80, then ~470 from 100
			switch {
			case m < 80:
				return walk[m%len(walk)]
			case m < 100:
				return 3 * walk[m%len(walk)]
			}
			return burst[min(m-100, len(burst)-1)]
		}, 100},
		{"burst from nothing", func(m int) int { return burst[min(m-60, len(burst)-1)] }, 60},
		{"burst in stages", func(m int) int { // ~470 for ten minutes, then ~1,500: one rise
			if m < 70 {
				return 450 + walk[m%len(walk)]
			}
			return 1450 + 2*walk[m%len(walk)]
		}, 60},
		{"ramp", func(m int) int { return min(10*(m-59), 600) }, 60},
		{"doubling", func(m int) int { return int(20 * math.Pow(2, float64(m-60)/20)) }, 60},
		{"walk only", func(m int) int { return walk[m%len(walk)] }, 60},
	} {
		onset, end := sustainedRise(series(tc.rate), 0, time.Unix(0, 0), time.Unix(120*60, 0))
		if got := onset.Unix() / 60; got != tc.want {
			t.Errorf("%s: onset at minute %d, want %d", tc.name, got, tc.want)
		}
		if end.Unix()/60 != 120 {
			t.Errorf("%s: end at minute %d, want 120", tc.name, end.Unix()/60)
		}
	}
}
