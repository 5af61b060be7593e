package detect

import (
	"slices"
	"time"
)

// recentBaseline is how much of the baseline speaks for "usual" right before
// the incident: the hours just before, as the reference postmortem compares (a
// crawler that has walked the site at a low rate all evening is its usual, and
// 2 a.m. traffic is not the day's median).
const recentBaseline = 3 * time.Hour

// baselineRange returns the period thresholds are relative to: the given
// baseline, else the hours before the incident's onset, else (no incident)
// the hours before the window; none reaches into an incident (incident.go).
// none is true when no usable baseline exists: detectors then judge by
// absolute criteria, never against the incident itself.
func (ev *Evidence) baselineRange() (from, to time.Time, none bool) {
	b := ev.incidents().Baseline
	if !b.Usable() {
		return time.Time{}, time.Time{}, true
	}
	return b.From, b.To, false
}

// countsPerBucket sums per-minute counts into consecutive buckets of size
// minutes over [from, to), including empty buckets (a quiet stretch is data too).
func countsPerBucket(perMinute map[int64]int, from, to time.Time, size int) []int {
	start := from.Unix() / 60
	end := (to.Unix() + 59) / 60
	var out []int
	for b := start; b+int64(size) <= end; b += int64(size) {
		n := 0
		for m := b; m < b+int64(size); m++ {
			n += perMinute[m]
		}
		out = append(out, n)
	}
	return out
}

// Median returns the median of xs (0 for none); xs is reordered. Baselines use
// medians because an incident inside them moves a mean, not a median.
func Median[T int | int64 | float64](xs []T) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return float64(xs[n/2])
	}
	return (float64(xs[n/2-1]) + float64(xs[n/2])) / 2
}

// rollingMax returns the largest sum of size consecutive minutes within
// [from, to) and the minute where that stretch starts.
func rollingMax(perMinute map[int64]int, from, to time.Time, size int) (int, time.Time) {
	start := from.Unix() / 60
	end := to.Unix() / 60
	best, bestAt, sum := 0, start, 0
	for m := start; m < end; m++ {
		sum += perMinute[m]
		if m-start >= int64(size) {
			sum -= perMinute[m-int64(size)]
		}
		if sum > best {
			best, bestAt = sum, m-int64(size)+1
			if bestAt < start {
				bestAt = start
			}
		}
	}
	return best, time.Unix(bestAt*60, 0).UTC()
}

// minuteCount is one per-minute count of the access log over the window, with
// its baseline: what the window saw and what was usual.
type minuteCount struct {
	// Base holds the count of every baseline minute.
	Base []int
	// Total sums the window's minutes; Minutes counts them.
	Total, Minutes int
	// Start and End bound the window's minutes with a nonzero count.
	Start, End time.Time
}

// Expected is the usual total for a window as long as this one: the median
// baseline minute times the window's minutes.
func (c minuteCount) Expected() float64 { return Median(c.Base) * float64(c.Minutes) }

// countMinutes sums count over the window's minutes and collects it for each
// baseline minute. Traffic must not be nil.
func (ev *Evidence) countMinutes(count func(*Minute) int) minuteCount {
	return ev.countMinutesOf(count, false)
}

// countReadMinutes is countMinutes over the minutes read whole only, for
// what only a line read tells (a self-call): a pushdown's counted minutes
// would read as zero, in the window and in its baseline alike.
func (ev *Evidence) countReadMinutes(count func(*Minute) int) minuteCount {
	return ev.countMinutesOf(count, true)
}

func (ev *Evidence) countMinutesOf(count func(*Minute) int, readOnly bool) minuteCount {
	bFrom, bTo, _ := ev.baselineRange()
	var c minuteCount
	for _, m := range ev.Traffic.minutesInOrder() {
		if readOnly && m.Counted > 0 {
			continue
		}
		n := count(m)
		if !m.Start.Before(bFrom) && m.Start.Before(bTo) {
			c.Base = append(c.Base, n)
		}
		if !ev.inWindow(m) {
			continue
		}
		c.Minutes++
		if n > 0 {
			c.Total += n
			if c.Start.IsZero() {
				c.Start = m.Start
			}
			c.End = m.Start.Add(time.Minute)
		}
	}
	return c
}

// inWindow reports whether minute m belongs to the window: it starts within
// [From, To), From rounded down to its minute.
func (ev *Evidence) inWindow(m *Minute) bool {
	return !m.Start.Before(ev.From.Truncate(time.Minute)) && m.Start.Before(ev.To)
}
