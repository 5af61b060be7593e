package main

import (
	"math"
	"testing"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchref"
)

func cpuRuns(secs ...float64) []benchref.Result {
	out := make([]benchref.Result, len(secs))
	for i, s := range secs {
		out[i].CPUS = s
	}
	return out
}

// The runs of a make bench whose machine turned slower during its first
// round and faster for the loop's later ones: the two sides' medians (0.93
// s against 0.47 s) set the analysis's slow runs against the loop's fast
// ones and give 0.505; each round's pair, taken within seconds, gives 0.606,
// 0.505 and 0.566.
func TestPairedRatioComparesRunsOfOneRound(t *testing.T) {
	analysis := cpuRuns(0.94, 0.93, 0.83)
	loop := cpuRuns(0.57, 0.47, 0.47)
	got := pairedRatio(analysis, loop)
	if want := 0.47 / 0.83; math.Abs(got-want) > 1e-9 {
		t.Errorf("pairedRatio = %.4f, want %.4f (round 3's pair, the median of 0.606, 0.505, 0.566)", got, want)
	}
	// The runs are read, not sorted in place: the caller's order is the
	// rounds'.
	if analysis[0].CPUS != 0.94 || loop[0].CPUS != 0.57 {
		t.Errorf("pairedRatio reordered the runs: %v %v", analysis, loop)
	}
}

func TestPairedRatioOfUnevenOrMissingRuns(t *testing.T) {
	if got := pairedRatio(cpuRuns(1, 1), cpuRuns(0.5)); got != 0.5 {
		t.Errorf("one loop run against two analyses: %v, want 0.5 (the one pair)", got)
	}
	if got := pairedRatio(nil, cpuRuns(0.5)); got != 0 {
		t.Errorf("no analysis runs: %v, want 0", got)
	}
	if got := pairedRatio(cpuRuns(0, 1), cpuRuns(0.5, 0.5)); got != 0.5 {
		t.Errorf("a run without CPU time: %v, want 0.5 (skipped)", got)
	}
}
