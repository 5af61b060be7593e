package detect

import "github.com/aftermath-forensics/aftermath/sources/failure"

// What stands out above a usual count, and from when: the Poisson tests every
// detector and the scan use on counts of requests and failures. The
// arithmetic itself is sources/failure's (fetch's pushdown flags minutes by
// it too); these name its uses here.

// sustainedMinutes is how many minutes in a row a rise stays at its level
// before it counts as begun: one or two noisy minutes are no onset.
const sustainedMinutes = 3

// poissonExcess reports whether observed is significantly above an expected
// count (failure.Excess: the one definition fetch's pushdown flags by too).
func poissonExcess(observed, expected, ratio, z float64) bool {
	return failure.Excess(observed, expected, ratio, z)
}

// RiseLevel is the count a minute must reach to stand out above a usual
// perMin a minute: z Poisson deviations above it (failure.Level).
func RiseLevel(perMin, z float64) float64 {
	return failure.Level(perMin, z)
}

// SustainedOnset is the first minute (unix minutes) in [from, to) from which
// perMinute stays at or above level for sustainedMinutes minutes in a row
// (the last of them may lie past to); ok is false when there is none.
func SustainedOnset(perMinute map[int64]int, level float64, from, to int64) (onset int64, ok bool) {
	for m := from; m < to; m++ {
		if sustainedFrom(perMinute, level, m) {
			return m, true
		}
	}
	return 0, false
}

func sustainedFrom(perMinute map[int64]int, level float64, m int64) bool {
	for i := range int64(sustainedMinutes) {
		if float64(perMinute[m+i]) < level {
			return false
		}
	}
	return true
}
