package detect

import (
	"math"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/failure"
)

// secondsLead is how far before the window the per-second series begin:
// the load that filled a pool rises into the onset, which may sit at the
// window's start.
const secondsLead = time.Hour

// maxSecondsSpan bounds the per-second series (two bytes a second each): a
// window longer than this keeps none, and the queue they model is not run.
const maxSecondsSpan = 31 * 24 * time.Hour

// phpSeconds counts, second by second over the window (and secondsLead
// before it), the requests that needed PHP by the second they arrived, and
// the failures by the second their clients were told: a retry cannot come
// before that. A minute averages a burst of seconds away; a queue builds and
// drains second by second, so the question whether a pool would have held a
// burst is asked of these.
type phpSeconds struct {
	base int64 // unix second of index 0
	// needed counts Minute.NeededPHP's requests by arrival second; told
	// the failed ones (Minute.FailedPHP's, and 429) by the second the client
	// learned of it: the answer's log time, or the clients' timeout after
	// arrival for an answer later than that.
	needed, told []uint16
	// arrived counts every request, PHP's or not, by arrival second: what
	// arrived before the first failure was told is load, what came after
	// may be its retries.
	arrived []uint16
}

// observeSecond adds r, which arrived at arrived (arrivalTimes), to the
// per-second series.
func (t *Traffic) observeSecond(r *sources.Request, arrived time.Time) {
	s := &t.seconds
	if s.needed == nil {
		if t.from.IsZero() || t.to.IsZero() || t.to.Sub(t.from) > maxSecondsSpan || !t.to.After(t.from) {
			return
		}
		s.base = t.from.Add(-secondsLead).Unix()
		n := t.to.Unix() - s.base
		s.needed, s.told, s.arrived = make([]uint16, n), make([]uint16, n), make([]uint16, n)
	}
	bump(s.arrived, arrived.Unix()-s.base)
	if r.Origin != sources.OriginUpstream && !(r.Origin == sources.OriginProxy && upstreamFailedStatus(r.Status)) {
		return
	}
	bump(s.needed, arrived.Unix()-s.base)
	if !failure.Failed(r.Status, r.Duration, t.site.ClientTimeoutS) {
		return
	}
	told := r.Time
	if failure.Late(r.Duration, t.site.ClientTimeoutS) {
		told = arrived.Add(time.Duration(t.site.ClientTimeoutS * float64(time.Second)))
	}
	bump(s.told, told.Unix()-s.base)
}

// bump adds one to c[i] when i is inside c, saturating.
func bump(c []uint16, i int64) {
	if i >= 0 && i < int64(len(c)) && c[i] < math.MaxUint16 {
		c[i]++
	}
}

// PHPArrivalsBySecond is, for each second of [from, to), the requests that
// needed PHP (as Minute.NeededPHP counts them) that arrived in it, from
// start: from, or the series' first second when from is before it. ok is
// false when the series do not reach the span (no access log read, lines
// counted rather than read, a window too long to keep them).
func (t *Traffic) PHPArrivalsBySecond(from, to time.Time) (perSecond []int, start time.Time, ok bool) {
	s := &t.seconds
	i, j := max(from.Unix()-s.base, 0), to.Unix()-s.base
	// Lines counted, not read (pushdown), have no second.
	j = min(j, int64(len(s.needed)))
	if s.needed == nil || t.counted || j <= i {
		return nil, time.Time{}, false
	}
	out := make([]int, j-i)
	for k := range out {
		out[k] = int(s.needed[i+int64(k)])
	}
	return out, time.Unix(s.base+i, 0).UTC(), true
}

// FirstFailureTold is the first second in [from, to) in which a client that
// needed PHP was told of a failure (an error, or the clients' timeout
// passing): no retry of a failure can arrive before it. ok is false when
// there is none, or no series.
func (t *Traffic) FirstFailureTold(from, to time.Time) (time.Time, bool) {
	s := &t.seconds
	if s.told == nil {
		return time.Time{}, false
	}
	i, j := max(from.Unix()-s.base, 0), min(to.Unix()-s.base, int64(len(s.told)))
	for k := i; k < j; k++ {
		if s.told[k] > 0 {
			return time.Unix(s.base+k, 0).UTC(), true
		}
	}
	return time.Time{}, false
}

// arrivalsIn counts the requests (every one, PHP's or not) that arrived in
// [from, to), by the second. ok is false when the series do not cover the
// whole span (no access log read, lines counted rather than read, a window
// too long to keep them).
func (t *Traffic) arrivalsIn(from, to time.Time) (n int, ok bool) {
	s := &t.seconds
	i, j := from.Unix()-s.base, to.Unix()-s.base
	if s.arrived == nil || t.counted || i < 0 || j > int64(len(s.arrived)) || j <= i {
		return 0, false
	}
	for _, c := range s.arrived[i:j] {
		n += int(c)
	}
	return n, true
}
