package scan

import (
	"math"
	"testing"
)

func TestRobustBaseline(t *testing.T) {
	tests := []struct {
		name   string
		xs     []float64
		median float64
		mad    float64
	}{
		{"none", nil, 0, 0},
		{"one", []float64{5}, 5, 0},
		{"odd", []float64{3, 1, 2}, 2, 1},
		{"even", []float64{1, 2, 3, 4}, 2.5, 1},
		// One incident day among seven moves neither the median nor the MAD.
		{"one bad day", []float64{100, 104, 98, 101, 24000, 99, 103}, 101, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := robust(append([]float64(nil), tt.xs...))
			if b.Median != tt.median || b.MAD != tt.mad || b.N != len(tt.xs) {
				t.Errorf("robust(%v) = %+v, want median %v, MAD %v, N %d", tt.xs, b, tt.median, tt.mad, len(tt.xs))
			}
		})
	}
}

// The gates that keep an hourly scan quiet: a score, a ratio and a minimum
// volume must all be passed.
func TestMeasureRises(t *testing.T) {
	counts := measure{count: true, relFloor: 0.1, ratio: 3, minExcess: 60}
	latency := measure{relFloor: 0.25, absFloor: 0.05, ratio: 2, minExcess: 0.25}
	week := func(xs ...float64) Baseline { return robust(xs) }
	tests := []struct {
		name string
		m    measure
		o    float64
		b    Baseline
		want bool
	}{
		{"a new crawler", counts, 5040, week(0, 0, 0, 0, 0, 0, 0), true},
		{"tiny numbers never alarm however large the ratio", counts, 40, week(0, 0, 1, 0, 0, 0, 0), false},
		{"three times the usual, far beyond noise", counts, 3300, week(1000, 1100, 950, 1050, 980, 1020, 990), true},
		{"a busy weekday is not three times the usual", counts, 1350, week(1000, 1100, 950, 1050, 980, 1020, 990), false},
		{"a noisy baseline widens the spread", counts, 330, week(100, 10, 300, 40, 200, 5, 150), false},
		{"no baseline slot: no verdict", counts, 5000, Baseline{}, false},
		{"latency doubled by a tenth of a second is noise", latency, 0.2, week(0.1, 0.1, 0.11, 0.1, 0.09), false},
		{"latency from 0.45 s to 9 s", latency, 9.4, week(0.45, 0.45, 0.5, 0.4, 0.45, 0.45), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.rises(tt.o, tt.b, DefaultZ); got != tt.want {
				t.Errorf("rises(%v against %+v) = %v, want %v (score %.1f, noise %.2f)", tt.o, tt.b, got, tt.want,
					tt.m.score(tt.o, tt.b), tt.m.noise(tt.b))
			}
		})
	}
}

func TestNoiseFloors(t *testing.T) {
	b := Baseline{Median: 100, MAD: 0, N: 7}
	if n := (measure{count: true}).noise(b); math.Abs(n-math.Sqrt(101)) > 1e-9 {
		t.Errorf("count noise over a flat baseline = %v, want Poisson sqrt(101)", n)
	}
	if n := (measure{count: true, relFloor: 0.2}).noise(b); n != 20 {
		t.Errorf("relative floor: noise %v, want 20", n)
	}
	if n := (measure{count: true}).noise(Baseline{Median: 100, MAD: 30, N: 7}); math.Abs(n-madScale*30) > 1e-9 {
		t.Errorf("day-to-day spread: noise %v, want %v", n, madScale*30)
	}
}
