package failure

import "slices"

// A failing stretch: the one definition of "how many failures make an
// incident", used by detect (FindIncidents) to find the stretches of a window
// where clients were failed, and by the simulator's truth to list them. Were
// the two to differ, the truth would list a stretch the analysis cannot see
// (or the reverse), and a score would call the analysis wrong for following
// its own rule.
//
// What separates an incident from chance is concentration. Failures arrive
// as a Poisson trickle at the baseline's rate; a minute clearly fails when
// its count stands out from that trickle at ClearZ deviations (with a
// baseline that failed nobody, more than three in one minute) and is a real
// share of its arrivals. A php-fpm restart that refuses the five requests
// arriving in its few seconds is such a minute. Four or five 504s spread
// one to three a minute over a slowdown's minutes are not: each minute is
// within what chance gives, so they are the slowdown's cost (its finding
// counts them), not a stretch of their own. A stretch must hold at least one
// clear minute; its edges are the neighbouring minutes that failed more than
// almost every baseline minute (the first readers failed as a pool fills
// are few, but failed all the same); and its total must stand out at the
// same level over its length, at least twice the usual.

// Thresholds of a failing stretch.
const (
	// ClearZ is how many Poisson deviations a minute's failures must stand
	// above the usual minute's to fail clearly, and a stretch's total above
	// the usual for its length.
	ClearZ = 3.0
	// StretchRatio: a stretch fails at least this multiple of the usual for
	// its length. Failures are what users feel: twice the usual, far beyond
	// noise, is already an incident.
	StretchRatio = 2.0
	// SpreadZ: with no clear minute, the window's failures taken together
	// must stand this far above the usual for the window to be one stretch
	// of failures spread thin. Lone minutes are many, a window is one
	// judgement: it needs more than a minute does.
	SpreadZ = 5.0
	// MergeGapMinutes joins failing minutes with at most this many ordinary
	// minutes between them: a proxy flapping down and up is one outage.
	// Farther apart they are separate incidents (a restart blip is not the
	// outage hours later).
	MergeGapMinutes = 5
	// AbsShare: with no baseline, a minute fails clearly only when at least
	// this share of its arrivals failed.
	AbsShare = 0.05
	// EdgeQuantile: a stretch's edges fail more than this share of the
	// baseline's minutes did (its own spread, however bursty).
	EdgeQuantile = 0.99
)

// Usual is what an ordinary minute of the baseline failed. The zero value is
// no baseline: then absolute criteria judge (more than a handful and
// AbsShare of a minute's arrivals; any failure at an edge).
type Usual struct {
	// Known is false when there was no baseline to learn from.
	Known bool
	// PerMinute is the median failures of the baseline's minutes, Share the
	// baseline's failed share of its requests, Top the failures that
	// EdgeQuantile of its minutes did not exceed.
	PerMinute float64
	Share     float64
	Top       int
}

// UsualOf learns the usual from a baseline's failures per minute (every
// minute, empty ones as 0; the slice is sorted in place) and its requests.
// No minutes: no baseline.
func UsualOf(failedPerMinute []int, requests int) Usual {
	n := len(failedPerMinute)
	if n == 0 {
		return Usual{}
	}
	slices.Sort(failedPerMinute)
	u := Usual{Known: true, Top: failedPerMinute[int(EdgeQuantile*float64(n-1))]}
	if n%2 == 1 {
		u.PerMinute = float64(failedPerMinute[n/2])
	} else {
		u.PerMinute = (float64(failedPerMinute[n/2-1]) + float64(failedPerMinute[n/2])) / 2
	}
	failed := 0
	for _, f := range failedPerMinute {
		failed += f
	}
	if requests > 0 {
		u.Share = float64(failed) / float64(requests)
	}
	return u
}

// Clear reports whether a minute with failed of its requests failed clearly
// beyond the usual: its count stands out (ClearZ deviations), and so does
// its share: twice the usual share, or, where the baseline already failed a
// third of its requests or more (a rate limit refusing a crawler all day)
// and twice is out of reach, half the usual successes lost.
func (u Usual) Clear(failed, requests int) bool {
	if !u.Known {
		return Excess(float64(failed), 0, 0, ClearZ) && float64(failed) >= AbsShare*float64(requests)
	}
	clearShare := min(2*u.Share, (1+u.Share)/2)
	return Excess(float64(failed), u.PerMinute, 0, ClearZ) && float64(failed) >= clearShare*float64(requests)
}

// Edge reports whether a minute next to a clear one failed more than almost
// every baseline minute did (with no baseline, or one that failed nobody:
// any failure).
func (u Usual) Edge(failed int) bool { return failed > u.Top }

// Stands reports whether a stretch of minutes that failed failed requests
// stands out above the usual for its length (z deviations, StretchRatio
// times it).
func (u Usual) Stands(failed int, minutes int64, z float64) bool {
	expected := 0.0
	if u.Known && u.PerMinute > 0 {
		expected = u.PerMinute * float64(minutes)
	}
	return Excess(float64(failed), expected, StretchRatio, z)
}

// Span is a failing stretch of minutes [Start, End) (in the caller's minute
// numbering) and the failures of its minutes.
type Span struct {
	Start, End int64
	Failed     int
	// Clear is its first clearly failing minute: Start may be an edge
	// minute before it (a stray slow request, the first readers failed as
	// the pool fills), when failures were not yet anything clients could
	// notice. A stretch of failures spread thin, with no clear minute,
	// has Clear at Start.
	Clear int64
}

// Minutes gives the stretches' search what it needs of a window of minutes
// [First, Last): each minute's failures and requests (by arrival), and
// whether two failing minutes belong together although more than
// MergeGapMinutes ordinary ones lie between them (a pool saturated
// throughout, minutes the log has no lines for). Joined may be nil.
type Minutes struct {
	First, Last int64
	At          func(m int64) (failed, requests int)
	// Joined reports whether the stretch ending at end (exclusive) and the
	// failing minute next belong together; gap rules apply when it is nil
	// or false.
	Joined func(end, next int64) bool
}

// Stretches finds the failing stretches of a window: clear minutes joined
// over at most MergeGapMinutes ordinary ones, widened over the edge minutes
// within that gap, each standing out above the usual as a whole (ClearZ). With
// no clear minute and a baseline, failures spread thin over the window make
// one stretch of every minute with a failure when they stand out together
// (SpreadZ).
func Stretches(w Minutes, u Usual) []Span {
	gap := int64(MergeGapMinutes)
	var list []Span
	for m := w.First; m < w.Last; m++ {
		if f, r := w.At(m); !u.Clear(f, r) {
			continue
		}
		if n := len(list); n > 0 {
			prev := &list[n-1]
			if m-prev.End <= gap || (w.Joined != nil && w.Joined(prev.End, m)) {
				prev.End = m + 1
				continue
			}
		}
		list = append(list, Span{Start: m, End: m + 1, Clear: m})
	}
	list = widenToEdges(w, u, list)
	if len(list) == 0 && u.Known {
		total, minutes := 0, int64(0)
		var spread Span
		for m := w.First; m < w.Last; m++ {
			minutes++
			f, _ := w.At(m)
			if f == 0 {
				continue
			}
			total += f
			if spread.End == 0 {
				spread.Start, spread.Clear = m, m
			}
			spread.End = m + 1
		}
		if total > 0 && u.Stands(total, minutes, SpreadZ) {
			list = append(list, spread)
		}
	}
	var out []Span
	for _, s := range list {
		for m := s.Start; m < s.End; m++ {
			f, _ := w.At(m)
			s.Failed += f
		}
		if u.Stands(s.Failed, s.End-s.Start, ClearZ) {
			out = append(out, s)
		}
	}
	return out
}

// widenToEdges extends each clear stretch over the edge minutes before and
// after it that lie within the merge gap of it, inside the window, and joins
// stretches that then meet.
func widenToEdges(w Minutes, u Usual, list []Span) []Span {
	gap := int64(MergeGapMinutes)
	edge := func(m int64) bool { f, _ := w.At(m); return u.Edge(f) }
	for i := range list {
		s := &list[i]
		start, end := s.Start, s.End
		for m := start - 1; m >= w.First && start-m <= gap+1; m-- {
			if edge(m) {
				start = m
			}
		}
		for m := end; m < w.Last && m-(end-1) <= gap+1; m++ {
			if edge(m) {
				end = m + 1
			}
		}
		s.Start, s.End = start, end
	}
	var out []Span
	for _, s := range list {
		if n := len(out); n > 0 && s.Start <= out[n-1].End+gap {
			out[n-1].End = max(out[n-1].End, s.End)
			continue
		}
		out = append(out, s)
	}
	return out
}
