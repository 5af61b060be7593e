package rules

import "time"

// reorderMargin is added to the longest duration seen to form the reorder
// horizon. It covers the disorder of lines across Caddy's writers and, above
// all, a request slower than any before it (the first of a wedge's minutes-long
// waits): only one that outlasts the longest so far by more than the margin is
// replayed late. Five minutes of small records is a few megabytes even at a
// thousand requests a second.
const reorderMargin = 5 * time.Minute

// reorderBuffer puts the requests of an access log back in arrival order. The
// log is in response-end order: a request that took d seconds appears up to d
// seconds after later arrivals. The buffer (a min-heap on arrival) holds each
// queued item until the log has moved past its arrival by the longest duration
// seen so far plus reorderMargin; then no later line can arrive before it. It
// holds that horizon's worth of items, never the whole log. An item whose
// arrival is already behind the released ones (a duration longer than any
// before it) is queued at the last released time and counted in late.
//
// Items of equal arrival come out in the order they were queued (the log's
// order), whatever else is queued with them: the recording pass, which queues
// only some of a log's requests, releases those in the order a streaming
// replay does.
type reorderBuffer[T any] struct {
	heap            []queued[T]
	seq             int64
	maxTime, maxDur int64 // unix nanoseconds, nanoseconds
	released        int64 // arrival of the last released item
	late            int
}

type queued[T any] struct {
	at, seq int64
	v       T
}

func (q *queued[T]) before(o *queued[T]) bool {
	return q.at < o.at || q.at == o.at && q.seq < o.seq
}

// observe notes a line's log time and duration: every line of the log (queued
// or not) moves the horizon.
func (b *reorderBuffer[T]) observe(logTime, duration int64) {
	b.maxTime = max(b.maxTime, logTime)
	b.maxDur = max(b.maxDur, duration)
}

// push queues v at arrival at, or at the last released time when at is behind
// it (counted in late).
func (b *reorderBuffer[T]) push(at int64, v T) {
	if at < b.released {
		b.late++
		at = b.released
	}
	b.heap = append(b.heap, queued[T]{at: at, seq: b.seq, v: v})
	b.seq++
	h := b.heap
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h[i].before(&h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

// release hands fn, in order, the items that no later line can precede.
func (b *reorderBuffer[T]) release(fn func(at int64, v *T)) {
	horizon := b.maxTime - b.maxDur - int64(reorderMargin)
	for len(b.heap) > 0 && b.heap[0].at < horizon {
		b.pop(fn)
	}
}

// drain hands fn, in order, every item still queued: the log has ended.
func (b *reorderBuffer[T]) drain(fn func(at int64, v *T)) {
	for len(b.heap) > 0 {
		b.pop(fn)
	}
}

func (b *reorderBuffer[T]) pop(fn func(at int64, v *T)) {
	h := b.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	var zero queued[T]
	h[last] = zero // drop references the item holds
	h = h[:last]
	for i := 0; ; {
		smallest, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h[l].before(&h[smallest]) {
			smallest = l
		}
		if r < len(h) && h[r].before(&h[smallest]) {
			smallest = r
		}
		if smallest == i {
			break
		}
		h[i], h[smallest] = h[smallest], h[i]
		i = smallest
	}
	b.heap = h
	b.released = top.at
	fn(top.at, &top.v)
}

// lateCheck tells, in one pass and without a buffer, whether a reorderBuffer
// fed the same lines could replay an arrival late, whatever it queues: it
// releases only items before its horizon, so the last released is before the
// highest horizon so far, and an arrival at or after that cannot be behind
// it. An arrival before it is counted as possibly late; it is late only if an
// item between the two was queued and released, which in a dense log is
// nearly always (the count is conservative, never short).
type lateCheck struct {
	maxTime, maxDur int64
	highest         int64 // the highest horizon so far; the buffer's released starts at 0 too
	possiblyLate    int
}

// observe notes a line's log time, duration and arrival (unix nanoseconds),
// in the log's order, as reorderBuffer's observe and push would see them.
func (c *lateCheck) observe(logTime, duration, at int64) {
	if at < c.highest {
		c.possiblyLate++
	}
	c.maxTime = max(c.maxTime, logTime)
	c.maxDur = max(c.maxDur, duration)
	c.highest = max(c.highest, c.maxTime-c.maxDur-int64(reorderMargin))
}
