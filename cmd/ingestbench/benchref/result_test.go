package benchref

import (
	"math"
	"slices"
	"testing"
)

func cpuRuns(secs ...float64) []Result {
	out := make([]Result, len(secs))
	for i, s := range secs {
		out[i].CPUS = s
	}
	return out
}

// The runs of a make bench whose machine was slower during its first round
// and faster for the loop's later ones: the two sides' medians (0.93 s
// against 0.47 s) set the analysis's slow runs against the loop's fast ones
// and give 0.505; each round's two runs, taken within seconds, give 0.606,
// 0.505 and 0.566, whose median is 0.566.
func TestRoundRatiosPairTheRunsOfOneRound(t *testing.T) {
	analysis := cpuRuns(0.94, 0.93, 0.83)
	loop := cpuRuns(0.57, 0.47, 0.47)
	got := RoundRatios(analysis, loop)
	want := []float64{0.57 / 0.94, 0.47 / 0.93, 0.47 / 0.83}
	if !slices.EqualFunc(got, want, func(x, y float64) bool { return math.Abs(x-y) < 1e-12 }) {
		t.Errorf("RoundRatios = %.4f, want %.4f (round by round, in the rounds' order)", got, want)
	}
}

func TestRoundRatiosOfUnevenOrMissingRuns(t *testing.T) {
	if got := RoundRatios(cpuRuns(1, 1), cpuRuns(0.5)); !slices.Equal(got, []float64{0.5}) {
		t.Errorf("one loop run against two analyses: %v, want [0.5] (the one round with both)", got)
	}
	if got := RoundRatios(nil, cpuRuns(0.5)); len(got) != 0 {
		t.Errorf("no analysis runs: %v, want none", got)
	}
	if got := RoundRatios(cpuRuns(0, 1), cpuRuns(0.5, 0.5)); !slices.Equal(got, []float64{0.5}) {
		t.Errorf("a run without CPU time: %v, want [0.5] (its round left out)", got)
	}
}
