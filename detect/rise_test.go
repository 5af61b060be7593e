package detect

import "testing"

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
