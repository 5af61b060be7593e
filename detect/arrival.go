package detect

import (
	"math"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/failure"
)

// arrivalMinute counts the requests that arrived in one minute: Caddy logs a
// request when it answers, so a request answered after ten minutes in
// php-fpm's queue is logged ten minutes after the reader asked. Failures and
// onsets are placed by arrival (log time minus duration): that is when a
// reader was failed.
type arrivalMinute struct {
	Requests int
	// Refused counts 5xx and 429: failed whenever they were answered.
	Refused int
	// Late counts 2xx/3xx answered after the clients' timeout when the site
	// says what it is (site.client_timeout_s), and the late rows of
	// per-minute counts whose lines were not read.
	Late int
	// Answers holds the durations of 2xx/3xx answers: without a known
	// client timeout, the late ones are counted against a threshold found
	// after the pass (lateAfter).
	Answers Histogram
}

// arrivalTimes returns when request r arrived as the arrival counts take
// it (arrived: its Start, but its log time where its duration is no
// positive finite number) and r.Start() itself. Observe asks for both:
// one time.Time.Add per request, where the minute's, the second's and the
// address's counts each made one.
func arrivalTimes(r *sources.Request) (arrived, start time.Time) {
	arrived, start = r.Time, r.Time
	if r.Duration != 0 {
		start = r.Start()
		if r.Duration > 0 && !math.IsInf(r.Duration, 0) {
			arrived = start
		}
	}
	return arrived, start
}

// observeArrival adds r to the minute it arrived in (arrivalTimes gives
// arrivedAt, the caller its minute, which it needs too).
func (t *Traffic) observeArrival(r *sources.Request, arrivedAt time.Time, arrived int64) {
	t.observeSecond(r, arrivedAt)
	a := t.arrival(arrived)
	a.Requests++
	switch {
	case failure.Status(r.Status):
		a.Refused++
	case failure.Answered(r.Status):
		if failure.Late(r.Duration, t.site.ClientTimeoutS) {
			a.Late++
		}
		a.Answers.Add(r.Duration)
	}
}

// arrivalCounts adds per-minute counts of lines that were not read: with no
// duration, they are placed at their log minute.
func (t *Traffic) arrivalCounts(minute int64, status int, late bool, n int) {
	a := t.arrival(minute)
	a.Requests += n
	switch {
	case failure.Status(status):
		a.Refused += n
	case late && failure.Answered(status):
		a.Late += n
	}
}

func (t *Traffic) arrival(m int64) *arrivalMinute {
	// Most requests arrive in the minute of the one before (hot path).
	if t.lastArrival != nil && m == t.lastArrivalMinute {
		return t.lastArrival
	}
	if t.arrivals == nil {
		t.arrivals = map[int64]*arrivalMinute{}
	}
	a := t.arrivals[m]
	if a == nil {
		a = &arrivalMinute{}
		t.arrivals[m] = a
	}
	t.lastArrival, t.lastArrivalMinute = a, m
	return a
}

// failed counts what the minute's arrivals lost: refusals and answers after
// lateAfter seconds (0: only those the site's timeout made late).
func (a *arrivalMinute) failed(lateAfter float64) int {
	return a.Refused + a.late(lateAfter)
}

func (a *arrivalMinute) late(lateAfter float64) int {
	if lateAfter <= 0 {
		return a.Late
	}
	return a.Late + a.Answers.countAbove(lateAfter)
}

// countAbove counts the durations in buckets that lie wholly above v: the
// histogram's 10% buckets make it exact to within one bucket.
func (h *Histogram) countAbove(v float64) int {
	n := 0
	for b := bucketOf(v) + 1; b < histBuckets; b++ {
		n += int(h.Counts[b])
	}
	return n
}
