package failure

import (
	"fmt"
	"testing"
)

// window is per-minute failures over minutes of 180 arrivals each.
func window(failed ...int) Minutes {
	return Minutes{First: 0, Last: int64(len(failed)), At: func(m int64) (int, int) { return failed[m], 180 }}
}

// TestStretchesByConcentration: the same five failures are a stretch when
// one minute holds them (a restart refusing what arrived in its seconds)
// and none when they trickle one or two a minute (a slowdown's late
// answers); a baseline that fails three a minute as a rule makes five in a
// minute ordinary. Without a baseline a minute must also lose AbsShare of
// its arrivals: 5 of 180 is not enough, 10 is. A stretch's Clear (printed
// fourth) is its first clear minute, not the edge it starts at.
func TestStretchesByConcentration(t *testing.T) {
	quiet := UsualOf(make([]int, 180), 180*180)
	busy := UsualOf(func() []int {
		b := make([]int, 180)
		for i := range b {
			b[i] = 3
		}
		return b
	}(), 180*180)
	for _, c := range []struct {
		name    string
		usual   Usual
		w       Minutes
		stretch string
	}{
		{"blip, no baseline", Usual{}, window(0, 0, 5, 0, 0), "[]"},
		{"larger blip, no baseline", Usual{}, window(0, 0, 10, 0, 0), "[{2 3 10 2}]"},
		{"blip, quiet baseline", quiet, window(0, 0, 5, 0, 0), "[{2 3 5 2}]"},
		{"trickle, no baseline", Usual{}, window(0, 1, 2, 2, 0), "[]"},
		{"trickle, quiet baseline", quiet, window(0, 1, 2, 2, 0), "[]"},
		{"blip, busy baseline", busy, window(3, 3, 5, 3, 3), "[]"},
		// A clear minute takes its failing neighbours within the gap along;
		// its first clear minute (the fourth number) stays the clear one.
		{"edges", quiet, window(1, 0, 6, 1, 0, 0, 0, 0, 0, 0, 0, 1), "[{0 4 8 2}]"},
		// Five ordinary minutes between two clear ones join them; six part them.
		{"joined", quiet, window(4, 0, 0, 0, 0, 0, 4), "[{0 7 8 0}]"},
		{"apart", quiet, window(4, 0, 0, 0, 0, 0, 0, 4), "[{0 1 4 0} {7 8 4 7}]"},
	} {
		got := Stretches(c.w, c.usual)
		if s := fmt.Sprint(got); s != c.stretch && !(c.stretch == "[]" && len(got) == 0) {
			t.Errorf("%s: %v, want %s", c.name, got, c.stretch)
		}
	}
}
