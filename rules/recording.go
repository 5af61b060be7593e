package rules

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
)

// The replays (sizing, backtest, each resizing step, the backtest after zones
// are dropped) take their arrivals from an arrivalSource: a recording made in
// one pass over the requests, or the requests themselves (Input.Requests, else
// the logs), streamed again for each.
//
// The recording keeps only the arrivals that matched a zone. An arrival that
// matched none never reaches a limiter and is never refused: all it does in a
// replay is count in the tallies' requests by its class (arrivalClass), which
// the profile pass has already counted for every arrival (arrivalCounts). So
// the recording pass only needs the lines a zone may match, which a byte-level
// prefilter (lineFilter) picks out before the JSON parse when it reads the
// logs, or from a record's head (time, duration, path and query) before the
// rest of it is decoded when it reads the spill, which also skips the
// records arriving outside the replayed ranges (engine.spillFilter); the rest
// are never parsed. It stops reading once no later line can arrive in the
// replayed ranges.
//
// A replay from the recording equals the streaming replay when the profile
// pass found no arrival that a streaming replay's reorder buffer could replay
// late, whatever it keeps (profile.possiblyLate, lateCheck): both orders are
// then by arrival, ties in the log's order. When the profile found one, when
// the recording would grow past maxRecordedArrivals, or when the recording
// pass did not read what the profile pass read, the replays stream the logs.
//
// A replay from the recording sweeps idle per-client buffers when a recorded
// arrival comes a minute after the last sweep, where a streaming one sweeps
// on any arrival: the sweeps fall at other times, which changes nothing, as a
// buffer is only swept once its newest event is a window old, when it admits
// as a new one would.

// maxRecordedArrivals bounds the recording: 2M arrivals of 64 bytes are 128
// MiB. Recorded arrivals are the requests for the zones' tools in the replayed
// ranges, a small share of a log (4,197 of the 190,000 lines of the 256 MiB
// benchmark log, the crawler's included); 2M of them means a log of some tens
// of GB or a crawl of millions of tool requests, where reading the logs again
// for each replay (seconds per GB) is the better trade than holding them. A
// variable so that tests can force the fallback.
var maxRecordedArrivals = 2 << 20

// arrivalSource hands the replays their arrivals.
type arrivalSource interface {
	// each hands fn, in arrival order, the arrivals for which keep is true
	// (or a recording's share of them) and returns how many were replayed late.
	// fn may change the arrival, and must not keep the pointer past its call.
	each(ctx context.Context, keep func(at int64) bool, fn func(a *arrival)) (late int, err error)
	// settle counts into r the arrivals of its range that each did not hand over.
	settle(r *replay) error
	// remap follows a reload with fewer zones: newToOld[j] is the index new
	// zone j had.
	remap(newToOld []int)
}

// streamedArrivals reads the logs for each replay; its each hands over
// every arrival, and reloaded matchers match them anew.
type streamedArrivals struct{ e *engine }

func (s streamedArrivals) each(ctx context.Context, keep func(at int64) bool, fn func(a *arrival)) (int, error) {
	return s.e.stream(ctx, keep, fn)
}

func (streamedArrivals) settle(*replay) error { return nil }
func (streamedArrivals) remap([]int)          {}

// recordedArrivals is the recording: the arrivals that matched a zone, in
// arrival order (ties in the log's order), and the profile's counts of all.
type recordedArrivals struct {
	// chunks are full but the last: no copying as it grows. They double from
	// firstRecordingChunk arrivals up to recordingChunk, so that the few
	// thousand arrivals of a usual recording do not take recordingChunk's 4 MiB.
	chunks [][]arrival
	n      int
	all    *arrivalCounts
	// unmatchedIn keeps unmatched's answers by range: every resize step
	// settles the same baseline, and the counts do not change (a reload
	// changes match bits, not classes, and keeps every recorded arrival).
	unmatchedIn map[[2]int64]classCounts
}

// recordingChunk is the most arrivals per chunk of a recording (4 MiB),
// firstRecordingChunk the first chunk's (64 KiB).
const (
	recordingChunk      = 1 << 16
	firstRecordingChunk = 1 << 10
)

func (rec *recordedArrivals) append(a *arrival) {
	if n := len(rec.chunks); n == 0 || len(rec.chunks[n-1]) == cap(rec.chunks[n-1]) {
		size := firstRecordingChunk
		if n > 0 {
			size = min(2*cap(rec.chunks[n-1]), recordingChunk)
		}
		rec.chunks = append(rec.chunks, make([]arrival, 0, size))
	}
	last := &rec.chunks[len(rec.chunks)-1]
	*last = append(*last, *a)
	rec.n++
}

func (rec *recordedArrivals) each(ctx context.Context, keep func(at int64) bool, fn func(a *arrival)) (int, error) {
	var a arrival // fn gets its own copy, as from a stream (one for all: fn keeps none)
	for _, chunk := range rec.chunks {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("backtest: %w", err)
		}
		for i := range chunk {
			if keep(chunk[i].at) {
				a = chunk[i]
				fn(&a)
			}
		}
	}
	return 0, nil
}

// settle adds to r the arrivals of its range the recording lacks.
func (rec *recordedArrivals) settle(r *replay) error {
	unmatched, err := rec.unmatched(r.from, r.to)
	if err != nil {
		return err // record checked both ranges the replays settle
	}
	r.countUnmatched(unmatched)
	return nil
}

// unmatched counts by class the arrivals in [from, to) that matched no zone:
// all the profile counted there, less those recorded.
func (rec *recordedArrivals) unmatched(from, to int64) (classCounts, error) {
	if counts, ok := rec.unmatchedIn[[2]int64{from, to}]; ok {
		return counts, nil
	}
	counts, ok := rec.all.in(from, to)
	if !ok {
		return nil, errors.New("backtest: the profile did not count the arrivals of a replayed range")
	}
	for _, chunk := range rec.chunks {
		for i := range chunk {
			if a := &chunk[i]; a.at >= from && a.at < to {
				counts[classOf(a.crawler, a.reader, a.login, a.php)]--
			}
		}
	}
	for _, n := range counts {
		if n < 0 {
			return nil, errors.New("backtest: the recording holds arrivals the profile did not count")
		}
	}
	if rec.unmatchedIn == nil {
		rec.unmatchedIn = map[[2]int64]classCounts{}
	}
	rec.unmatchedIn[[2]int64{from, to}] = counts
	return counts, nil
}

func (rec *recordedArrivals) remap(newToOld []int) {
	for _, chunk := range rec.chunks {
		for i := range chunk {
			old := chunk[i].match
			var m uint64
			for j, o := range newToOld {
				m |= (old >> o & 1) << j
			}
			chunk[i].match = m
		}
	}
}

// countUnmatched counts arrivals that matched no zone, by class: no zone
// refused them, so they only add to the requests.
func (r *replay) countUnmatched(counts classCounts) {
	for c, n := range counts {
		if n == 0 {
			continue
		}
		class := arrivalClass(c)
		crawler, reader, login, php := class.crawler(), class.reader(), class.login(), class.php()
		r.all.count(crawler, reader, login, php, crawler >= 0, n)
		for i, t := range r.zone {
			t.count(crawler, reader, login, php, crawler == r.zones[i].crawler, n)
		}
	}
}

// errRecordingFull stops the recording pass at maxRecordedArrivals, and
// errPastRanges once the logs can hold no more arrival it records.
var (
	errRecordingFull = errors.New("recording full")
	errPastRanges    = errors.New("past the replayed ranges")
)

// record reads the logs once and records the arrivals that match a zone in
// the window (from warm before it) or the baseline, lines no zone can match
// rejected before they are parsed. It returns nil, and a note when the reason
// is worth one, when the replays must stream instead.
func (e *engine) record(ctx context.Context, prof *profile, zones []Zone, warm time.Duration, bFrom, bTo time.Time, limit int) (*recordedArrivals, *sources.QualityNote, error) {
	if prof.possiblyLate > 0 {
		// Streaming replays may replay some arrivals late, which a recording
		// would not: they stay the reference (the backtest's note says how
		// many were).
		return nil, nil, nil
	}
	wFrom, wTo := e.in.From.UnixNano(), e.in.To.UnixNano()
	bLo, bHi := bFrom.UnixNano(), bTo.UnixNano()
	for _, r := range [][2]int64{{wFrom, wTo}, {bLo, bHi}} {
		if _, ok := prof.arrivals.in(r[0], r[1]); !ok {
			return nil, nil, nil // a range the profile did not cut at: settle could not count it
		}
	}
	keep := func(at int64) bool { return at >= wFrom-int64(warm) && at < wTo || at >= bLo && at < bHi }
	// With no arrival possibly late, every line arrives at or after the
	// highest horizon before it (lateCheck), which is at least the latest log
	// time seen less the longest duration of the log and reorderMargin: once
	// that is past both ranges, no later line can be in them.
	keepEnd := max(wTo, bHi)
	rec := &recordedArrivals{all: prof.arrivals}
	// The horizon uses the longest duration of the whole log (the profile's),
	// not of the lines read: it is never ahead of the streaming replays', so
	// it releases nothing late when they do not.
	var order reorderBuffer[arrival]
	release := func(at int64, a *arrival) {
		a.at = at
		rec.append(a)
	}
	var failure error
	spillFilter := e.spillFilter(keep, min(wFrom-int64(warm), bLo), keepEnd, prof.maxDuration)
	stats, err := e.in.readRequests(ctx, e.matchers.filter.keep, &spillFilter,
		func(batch []sources.Request) error {
			for i := range batch {
				r := &batch[i]
				if isHealthCheck(r, e.in.Site.HealthURI) {
					continue
				}
				order.observe(r.Time.UnixNano(), prof.maxDuration)
				at := r.Start().UnixNano()
				if keep(at) {
					m, err := e.matchers.match(r)
					if err != nil {
						failure = err
						return err
					}
					if m != 0 {
						a := e.describe(r, at)
						a.match = m
						order.push(at, a)
					}
				}
				order.release(release)
				if rec.n+len(order.heap) > limit {
					failure = errRecordingFull
					return failure
				}
				if order.maxTime-prof.maxDuration-int64(reorderMargin) >= keepEnd {
					failure = errPastRanges
					return failure
				}
			}
			return nil
		})
	readAll := failure == nil
	if errors.Is(failure, errPastRanges) {
		failure, err = nil, nil
	}
	switch {
	case errors.Is(failure, errRecordingFull):
		return nil, &sources.QualityNote{Source: "rules", Severity: sources.SeverityInfo, Message: fmt.Sprintf(
			"more than %s requests matched the zones, too many to hold in memory: sizing, backtest and resizing read the access logs again for each replay (slower, same result)", fmtInt(limit))}, nil
	case failure != nil:
		return nil, nil, failure
	case err != nil:
		return nil, nil, fmt.Errorf("backtest: %w", err)
	}
	order.drain(release)
	// The profile's counts and the recording must describe the same lines
	// (a spill cannot change between the passes; the logs can).
	changed := order.late > 0 || e.in.Requests == nil && readAll && (stats.Files != prof.stats.Files || stats.Bytes != prof.stats.Bytes || stats.Lines != prof.stats.Lines)
	for _, r := range [][2]int64{{wFrom, wTo}, {bLo, bHi}} {
		if _, err := rec.unmatched(r[0], r[1]); err != nil {
			changed = true
		}
	}
	if changed {
		return nil, &sources.QualityNote{Source: "rules", Severity: sources.SeverityWarning, Message: "the access logs changed between the profile pass and the recording pass: " +
			"sizing, backtest and resizing read them again for each replay, and may not agree with the profile of the crawlers"}, nil
	}
	return rec, nil, nil
}

// spillFilter picks out of the spill the records the recording pass could
// record, before the rest of each is decoded: not a health check, arriving in
// a replayed range (keep), with a path or query a zone may match. It stops at
// the first record (not a health check) logged so late that no record from
// it on can arrive before keepEnd: with no arrival possibly late (the
// profile's lateCheck, over the same records), every one arrives at or after
// the highest horizon before it, which that record's own time less the log's
// longest duration (maxDuration) and reorderMargin already passes. The
// records it skips would only have moved the reorder buffer's horizon
// forward, which changes when arrivals are released, never their order.
// keepFrom is the earliest arrival keep accepts: the records before the
// first that arrived at or after it are skipped without being read
// (SpillFilter.From).
func (e *engine) spillFilter(keep func(at int64) bool, keepFrom, keepEnd, maxDuration int64) accesslog.SpillFilter {
	healthURI := e.in.Site.HealthURI
	return accesslog.SpillFilter{From: time.Unix(0, keepFrom), Head: func(h *accesslog.SpillHead) accesslog.SpillVerdict {
		switch {
		case isHealthPath(h.Path, healthURI):
			return accesslog.SpillSkip
		case h.Time-maxDuration-int64(reorderMargin) >= keepEnd:
			return accesslog.SpillStop
		case !keep(h.Arrival()) || !e.matchers.filter.pathQueryMayMatch(h.Path, h.Query):
			return accesslog.SpillSkip
		}
		return accesslog.SpillKeep
	}}
}
