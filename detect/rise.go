package detect

import (
	"time"

	"github.com/aftermath-forensics/aftermath/sources/failure"
)

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

// plateauMinutes is the span a rate is compared over when a rise is looked
// for a step in (stepOnset): ten minutes, as peak10 and baseline10 are.
const plateauMinutes = 10

// plateauHold is how long a rate must hold steady after a rise before a
// larger rise counts as a step of its own (stepOnset). A crawl that bursts
// in stages (about 470 a minute for ten minutes, then 1,200: the reference
// crawl, wordpress-search-crawl) rose once, at its first stage; a walk that
// held its low rate for forty minutes before multiplying it rose, for the
// burst, when it multiplied.
const plateauHold = 2 * plateauMinutes

// stepOnset is where a sustained rise that began at onset (unix minutes)
// rose into its peak, over [onset, to): a crawler that walked the site at
// a low, steady rate and then multiplied it rose, for what followed, when
// it multiplied, not when its first requests came. The count of the
// plateauMinutes from onset is the local level; a later rise counts as a
// step when the peak of ten minutes in [onset, to) clears that level as a
// rise clears a baseline (riseRatio, riseZ), the rate first stays at or
// above RiseLevel of it for sustainedMinutes only plateauHold or more after
// onset, and the plateau's last ten minutes before the step are no rise
// over its first ten: a ramp that kept climbing from its start, or a burst
// whose next stage came sooner, keeps that start. The step is taken again
// from the new onset while the peak still clears its level.
//
// from10 is the count of the plateauMinutes before the step the rise was
// taken from (the walk's level just before it multiplied), and stepped
// whether there was one: without a step the rise started from whatever
// level its caller measured it against.
func stepOnset(perMinute map[int64]int, onset, to int64) (start int64, from10 float64, stepped bool) {
	peakMinutes := func(from int64) float64 {
		best, _ := rollingMax(perMinute, time.Unix(from*60, 0), time.Unix(to*60, 0), plateauMinutes)
		return float64(best)
	}
	for onset+2*plateauMinutes <= to {
		plateau := float64(minutesSum(perMinute, onset, onset+plateauMinutes))
		if !poissonExcess(peakMinutes(onset), plateau, riseRatio, riseZ) {
			return onset, from10, stepped
		}
		next, ok := SustainedOnset(perMinute, RiseLevel(plateau/plateauMinutes, riseZ), onset, to)
		if !ok || next < onset+plateauHold {
			return onset, from10, stepped // it kept rising from its start: a ramp, or stages of one burst
		}
		before := float64(minutesSum(perMinute, next-plateauMinutes, next))
		if poissonExcess(before, plateau, 1, riseZ) {
			return onset, from10, stepped // the plateau climbed on its way
		}
		onset, from10, stepped = next, before, true
	}
	return onset, from10, stepped
}

// minutesSum is the count of perMinute over the unix minutes [from, to).
func minutesSum(perMinute map[int64]int, from, to int64) int {
	n := 0
	for m := from; m < to; m++ {
		n += perMinute[m]
	}
	return n
}
