package loki

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

// Source is the data-quality source name of everything this package reports.
const Source = "loki"

// maxNotes caps the per-sub-range notes of one pull; the rest are summarised.
const maxNotes = 10

// Pull fetches the raw lines of selector+pipeline in [from, to) like QueryRange,
// and checks them: for every sub-range, before paging, it asks Loki for
//
//	sum by (<the streams' label names>) (count_over_time(<selector><pipeline> [<sub-range>]))
//
// evaluated at the sub-range's end minus 1 ns (a LogQL range is (t-r, t], a
// query_range is [start, end): the shift makes both cover the same
// nanoseconds). Only streams with lines are paged, and the lines delivered per
// stream must equal the count. A failed or truncated sub-range, a count that
// disagrees, or a count that could not be obtained makes the sub-range
// incomplete, with a note in Result.Notes; callers must treat !Result.Complete()
// as partial evidence (exit code 1).
//
// The window is widened to whole milliseconds (LogQL ranges cannot express
// less). A parser stage in the pipeline that extracts a field named like one of
// the streams' labels would confuse the per-stream grouping of the count: that
// shows up as a mismatch, never as a false "complete".
func (c *Client) Pull(ctx context.Context, selector, pipeline string, from, to time.Time, sink func(Entry) error) (Result, error) {
	return c.PullCounted(ctx, selector, pipeline, from, to, nil, sink)
}

// PullCounted is Pull for a caller that has counted the lines already
// (Counted, nil: not): a sub-range whose count it knows is not counted
// again, so a full pull after a pushdown's per-minute counts reads its
// range once.
func (c *Client) PullCounted(ctx context.Context, selector, pipeline string, from, to time.Time, counted Counted, sink func(Entry) error) (Result, error) {
	query := strings.TrimSpace(selector)
	if p := strings.TrimSpace(pipeline); p != "" {
		query += " " + p
	}
	from, to = alignMillis(from, to)
	if !from.Before(to) {
		return Result{Query: query, From: from, To: to}, c.queryErr(query, fmt.Errorf("empty window [%s, %s)", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano)))
	}
	return c.pull(ctx, query, from, to, []span{{from, to}}, c.subRangeLength, counted, sink)
}

// PullMinutes fetches raw lines only for the given minutes (each [m, m+1m),
// truncated to the minute; duplicates ignored), merging adjacent minutes into
// one range, with the same per-range completeness check as Pull. It is the raw
// half of pushdown: MinuteCounts finds the minutes worth reading, PullMinutes
// reads them, and Result.Bytes() says how many raw bytes that cost. selector may
// carry a pipeline.
//
// counted, when not nil, is what the caller already knows of the lines
// (Counted): a sub-range it knows is not counted again.
func (c *Client) PullMinutes(ctx context.Context, selector string, minutes []time.Time, counted Counted, sink func(Entry) error) (Result, error) {
	spans := mergeMinutes(minutes)
	if len(spans) == 0 {
		return Result{Query: selector}, nil
	}
	return c.pull(ctx, selector, spans[0].from, spans[len(spans)-1].to, spans, c.subRangeLength, counted, sink)
}

// Counted is a caller's count of the lines a pull's query selects in
// [from, to), every stream's together, as Loki counted them before (a
// pushdown's per-minute counts, count_over_time of the same selector and
// pipeline at a 1m step); false when it does not know that range's (not
// on its minutes, or outside them). A sub-range whose count is known is
// paged without the count_over_time cross-check, a pass of Loki over the
// sub-range the caller's count already made: the lines delivered must
// equal it, and only when they do not is Loki asked per stream, which
// says which stream is short (or that lines were still being ingested).
// A sub-range counted empty is not paged at all.
type Counted func(from, to time.Time) (int64, bool)

// Span is a time range [From, To) a pull asks for in one sub-range.
type Span struct{ From, To time.Time }

// PullSpans fetches raw lines for the given spans (sorted, not overlapping),
// each pulled as one sub-range, cut only where Loki's max_query_length
// demands, with the same completeness check as Pull. It is for a caller that
// knows how many lines each span holds (a pushdown's counts): a sparse
// query (one client family across a day) is then pulled in a few requests
// rather than two per Config.SplitBy. query may carry a pipeline.
func (c *Client) PullSpans(ctx context.Context, query string, spans []Span, counted Counted, sink func(Entry) error) (Result, error) {
	if len(spans) == 0 {
		return Result{Query: query}, nil
	}
	ss := make([]span, len(spans))
	for i, s := range spans {
		ss[i].from, ss[i].to = alignMillis(s.From.UTC(), s.To.UTC())
	}
	unsplit := func() time.Duration {
		if l := c.spanLimit(); l > 0 {
			return l
		}
		return 100 * 365 * 24 * time.Hour
	}
	return c.pull(ctx, query, ss[0].from, ss[len(ss)-1].to, ss, unsplit, counted, sink)
}

func (c *Client) pull(ctx context.Context, query string, from, to time.Time, spans []span, splitBy func() time.Duration, counted Counted, sink func(Entry) error) (Result, error) {
	res := Result{Query: query, From: from, To: to}
	sel, pipe, err := splitQuery(query)
	if err != nil {
		return res, c.queryErr(query, err)
	}
	rs := &runState{query: query, sel: sel, inner: selectorInner(sel), pipe: pipe}

	// One /series call over the whole window gives the label names the count
	// query groups by and the exact per-stream selectors need.
	m := &meter{run: &rs.totals}
	streams, err := c.series(ctx, from, to, []string{sel}, m)
	res.SeriesRequests, res.SeriesWireBytes = m.requests, m.wire
	if err != nil {
		return res, c.queryErr(query, fmt.Errorf("listing streams: %w", err))
	}
	names := labelNames(streams)
	all := rs.plan(streams, names)

	plan := func(ctx context.Context, j *job, _ *meter) ([]plannedStream, error) {
		if counted != nil {
			if n, ok := counted(j.sr.From, j.sr.To); ok {
				j.sr.Counted, j.sr.HasCounted = n, true
				if n == 0 {
					return nil, nil
				}
				return all, nil
			}
		}
		cm := &meter{run: &rs.totals}
		counts, err := c.counts(ctx, query, names, j.sr.From, j.sr.To, cm)
		j.sr.CountRequests += cm.requests
		j.sr.CountWireBytes += cm.wire
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if IsQueryError(err) {
				// The lines' query is the count's: Loki would refuse it too.
				return nil, err
			}
			// Still pull the lines; they just cannot be verified.
			j.sr.Problems = append(j.sr.Problems, "count_over_time cross-check failed, lines unverified: "+c.scrub(err).Error())
			return all, nil
		}
		j.sr.Expected = map[string]int64{}
		var withLines []map[string]string
		for _, s := range counts {
			n := int64(math.Round(s.V))
			j.sr.Expected[s.Labels] = n
			if n > 0 {
				withLines = append(withLines, s.Metric)
			}
		}
		return rs.plan(withLines, names), nil
	}
	// Lines ingested between the count and the pull (a window ending near now)
	// make the two disagree although nothing is missing: count once more and
	// keep the newer figure. A line really lost stays a mismatch.
	rs.recheck = func(ctx context.Context, j *job) {
		if j.sr.Expected == nil && j.sr.HasCounted {
			var fetched int64
			for _, n := range j.fetched {
				fetched += n
			}
			if fetched == j.sr.Counted {
				return
			}
			// The caller's count disagrees: Loki's, per stream, says
			// which stream is short, and is newer.
		} else if j.sr.Expected == nil || sameCounts(j.sr.Expected, j.fetched) {
			return
		}
		cm := &meter{run: &rs.totals}
		counts, err := c.counts(ctx, query, names, j.sr.From, j.sr.To, cm)
		j.sr.CountRequests += cm.requests
		j.sr.CountWireBytes += cm.wire
		if err != nil {
			return // the first count stands
		}
		j.sr.Expected = map[string]int64{}
		for _, s := range counts {
			j.sr.Expected[s.Labels] = int64(math.Round(s.V))
		}
	}
	err = c.run(ctx, rs, &res, split(spans, splitBy()), plan, checkCounts, sink)
	return res, c.queryErr(query, err)
}

// counts runs the count cross-check for [from, to). When Loki refuses it
// for the bytes it would read, the range is counted in halves (on the
// minute, down to single minutes) and the halves' counts summed.
func (c *Client) counts(ctx context.Context, query string, names []string, from, to time.Time, m *meter) ([]Sample, error) {
	q, err := countQuery(query, names, to.Sub(from))
	if err != nil {
		return nil, err
	}
	out, err := c.vector(ctx, q, to.Add(-time.Nanosecond), m)
	if be := bytesLimitOf(err); be != nil {
		mid := from.Add(to.Sub(from) / 2).Truncate(time.Minute)
		if mid.After(from) && mid.Before(to) {
			a, err := c.counts(ctx, query, names, from, mid, m)
			if err != nil {
				return nil, err
			}
			b, err := c.counts(ctx, query, names, mid, to, m)
			if err != nil {
				return nil, err
			}
			return sumSamples(a, b), nil
		}
		// One minute still reads too much: fewer streams at a time.
		out, err = c.vectorSharded(ctx, q, to.Add(-time.Nanosecond), m, err)
	}
	if err != nil {
		return nil, &QueryError{Query: q, Err: err}
	}
	return out, nil
}

// sumSamples adds b's samples to a's, by labels.
func sumSamples(a, b []Sample) []Sample {
	index := map[string]int{}
	for i, s := range a {
		index[s.Labels] = i
	}
	for _, s := range b {
		if i, ok := index[s.Labels]; ok {
			a[i].V += s.V
			continue
		}
		index[s.Labels] = len(a)
		a = append(a, s)
	}
	return a
}

// sameCounts compares per-stream counts, ignoring zero entries.
func sameCounts(a, b map[string]int64) bool {
	for k, n := range a {
		if b[k] != n {
			return false
		}
	}
	for k, n := range b {
		if a[k] != n {
			return false
		}
	}
	return true
}

// checkCounts compares delivered lines with count_over_time per stream.
func checkCounts(sr *SubRange) {
	if sr.Expected == nil && sr.HasCounted {
		var got int64
		for _, n := range sr.Got {
			got += n
		}
		switch {
		case got < sr.Counted:
			sr.missing += sr.Counted - got
			sr.Problems = append(sr.Problems, fmt.Sprintf("the per-minute counts say %d lines, %d fetched (%d missing)", sr.Counted, got, sr.Counted-got))
		case got > sr.Counted:
			sr.surplus += got - sr.Counted
			sr.Problems = append(sr.Problems, fmt.Sprintf("the per-minute counts say %d lines, %d fetched (%d more; still being ingested?)", sr.Counted, got, got-sr.Counted))
		}
		sr.checked = sr.missing == 0 && sr.surplus == 0
		return
	}
	if sr.Expected == nil {
		return // unverified; the problem is already recorded
	}
	keys := map[string]bool{}
	for k := range sr.Expected {
		keys[k] = true
	}
	for k := range sr.Got {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		want, got := sr.Expected[k], sr.Got[k]
		switch {
		case got < want:
			sr.missing += want - got
			sr.Problems = append(sr.Problems, fmt.Sprintf("stream %s: count_over_time says %d lines, %d fetched (%d missing)", k, want, got, want-got))
		case got > want:
			sr.surplus += got - want
			sr.Problems = append(sr.Problems, fmt.Sprintf("stream %s: count_over_time says %d lines, %d fetched (%d more; still being ingested?)", k, want, got, got-want))
		}
	}
	sr.checked = sr.missing == 0 && sr.surplus == 0
}

// notes renders the data-quality notes of a result.
func (c *Client) notes(r Result) []sources.QualityNote {
	var out []sources.QualityNote
	for _, lc := range r.LimitChanges {
		out = append(out, sources.QualityNote{Source: Source, Severity: sources.SeverityInfo, Message: lc})
	}
	bad := 0
	for _, s := range r.SubRanges {
		if s.Complete {
			continue
		}
		bad++
		if bad > maxNotes {
			continue
		}
		sev := sources.SeverityError
		if s.Err == nil && !s.truncated && s.missing == 0 {
			sev = sources.SeverityWarning // lines present but unverified or surplus
		}
		var why []string
		if s.Err != nil {
			why = append(why, fmt.Sprintf("failed after %d lines: %v", s.Lines, c.scrub(s.Err)))
		}
		why = append(why, s.Problems...)
		if len(why) == 0 {
			why = append(why, "incomplete")
		}
		// The reason first, then the query, once: a reason naming the
		// query it failed on (a count's) already says it.
		msg := fmt.Sprintf("[%s, %s): %s", s.From.Format(time.RFC3339), s.To.Format(time.RFC3339), strings.Join(why, "; "))
		if !strings.Contains(msg, queryMark) {
			msg += queryMark + r.Query
		}
		out = append(out, sources.QualityNote{Source: Source, Severity: sev, Message: msg})
	}
	if bad > maxNotes {
		out = append(out, sources.QualityNote{Source: Source, Severity: sources.SeverityError,
			Message: fmt.Sprintf("%d more incomplete sub-ranges not listed (%d of %d incomplete)%s%s", bad-maxNotes, bad, len(r.SubRanges), queryMark, r.Query)})
	}
	return out
}

// Record is the bundle.yaml entry for a pull written to file. It is Failed
// when a sub-range failed with an error (not only truncated or unverified).
func (r Result) Record(file string) bundle.Query {
	bad, failed := 0, false
	for _, s := range r.SubRanges {
		if !s.Complete {
			bad++
		}
		if s.Err != nil {
			failed = true
		}
	}
	var note string
	if len(r.SubRanges) == 0 {
		// Nothing was paged (the stream listing failed): no sub-range or
		// per-call limit to speak of.
		note = fmt.Sprintf("no line pulled, %d requests, %d response bytes", r.Requests(), r.WireBytes())
	} else {
		note = fmt.Sprintf("%d sub-ranges (%d incomplete), %d requests, %d response bytes, limit %d per call",
			len(r.SubRanges), bad, r.Requests(), r.WireBytes(), r.Limit)
	}
	for _, lc := range r.LimitChanges {
		note += "; " + lc
	}
	return bundle.Query{
		Source:   Source,
		Query:    r.Query,
		From:     r.From,
		To:       r.To,
		File:     file,
		Lines:    r.Lines(),
		Series:   r.Streams(),
		Bytes:    r.Bytes(),
		Complete: r.Complete(),
		Failed:   failed,
		Note:     note,
	}
}

// MinuteCounts is lines per minute per stream, computed inside Loki.
type MinuteCounts struct {
	Query    string // the count query sent
	From, To time.Time
	Streams  []StreamMinutes
	// Requests and WireBytes are the cost of computing it (series + matrix).
	Requests  int
	WireBytes int64
}

// StreamMinutes is one stream's per-minute line counts; Counts[i] is the
// minute From + i minutes.
type StreamMinutes struct {
	Stream map[string]string
	Labels string
	Counts []int64
}

// Minutes is the number of minutes covered.
func (mc MinuteCounts) Minutes() int { return int(mc.To.Sub(mc.From) / time.Minute) }

// Minute returns the start of minute i.
func (mc MinuteCounts) Minute(i int) time.Time { return mc.From.Add(time.Duration(i) * time.Minute) }

// Totals sums all streams per minute.
func (mc MinuteCounts) Totals() []int64 {
	out := make([]int64, mc.Minutes())
	for _, s := range mc.Streams {
		for i, n := range s.Counts {
			out[i] += n
		}
	}
	return out
}

// Record is the bundle.yaml entry for the counts.
func (mc MinuteCounts) Record(file string) bundle.Query {
	var lines int64
	for _, n := range mc.Totals() {
		lines += n
	}
	return bundle.Query{
		Source: Source, Query: mc.Query, From: mc.From, To: mc.To, File: file,
		Series: len(mc.Streams), Complete: true,
		Note: fmt.Sprintf("per-minute line counts computed in Loki (%d lines counted), %d requests, %d response bytes", lines, mc.Requests, mc.WireBytes),
	}
}

// MinuteCounts returns per-minute line counts per stream of selector (which may
// carry a pipeline) over [from, to) widened to whole minutes, computed inside
// Loki with count_over_time([1m]) at a 1m step: the cost does not grow with the
// number of lines.
func (c *Client) MinuteCounts(ctx context.Context, selector string, from, to time.Time) (mc MinuteCounts, err error) {
	from, to = wholeMinutes(from, to)
	mc = MinuteCounts{From: from, To: to}
	if !from.Before(to) {
		return mc, nil
	}
	sel, _, err := splitQuery(selector)
	if err != nil {
		return mc, c.queryErr(selector, err)
	}
	m := &meter{}
	defer func() { mc.Requests, mc.WireBytes = m.requests, m.wire }()
	streams, err := c.series(ctx, from, to, []string{sel}, m)
	if err != nil {
		return mc, c.queryErr(selector, fmt.Errorf("listing streams: %w", err))
	}
	q := groupedCount(selector, labelNames(streams), MinuteRange)
	mc.Query = q
	series, err := c.minuteMatrix(ctx, q, from, to, m)
	if err != nil {
		return mc, c.queryErr(q, err)
	}
	for _, s := range series {
		sm := StreamMinutes{Stream: s.Metric, Labels: s.Labels, Counts: make([]int64, len(s.Values))}
		for i, v := range s.Values {
			sm.Counts[i] = int64(math.Round(v))
		}
		mc.Streams = append(mc.Streams, sm)
	}
	return mc, nil
}

// MinuteValues is a metric query's values per minute and series.
type MinuteValues struct {
	Query    string
	From, To time.Time
	Series   []MinuteSeries
	// Requests and WireBytes are the cost of computing it.
	Requests  int
	WireBytes int64
}

// MinuteSeries is one series of MinuteValues; Values[i] is the minute From +
// i minutes (0 where Loki returned no sample).
type MinuteSeries struct {
	Metric map[string]string
	Labels string
	Values []float64
}

// MinuteValues evaluates query, a metric query whose range aggregations span
// MinuteRange (sum by (status) (count_over_time({job="caddy"} | json [1m] offset 1ns))),
// once per minute of [from, to) widened to whole minutes: what Loki computes
// for minute m covers log lines in [m, m+1m). The query is split where Loki's
// limits demand, on the minute grid, so that every minute is evaluated once.
func (c *Client) MinuteValues(ctx context.Context, query string, from, to time.Time) (MinuteValues, error) {
	from, to = wholeMinutes(from, to)
	mv := MinuteValues{Query: query, From: from, To: to}
	if !from.Before(to) {
		return mv, nil
	}
	m := &meter{}
	series, err := c.minuteMatrix(ctx, query, from, to, m)
	mv.Series, mv.Requests, mv.WireBytes = series, m.requests, m.wire
	return mv, c.queryErr(query, err)
}

// MinuteValuesWhole is MinuteValues, except that a sum Loki refuses for its
// series is not split by its grouping's values (matrixByValues): Loki's
// refusal is the error (IsSeriesLimit), for a caller that has a cheaper
// way to ask than the parts of a wide grouping, each a pass over the
// range.
func (c *Client) MinuteValuesWhole(ctx context.Context, query string, from, to time.Time) (MinuteValues, error) {
	from, to = wholeMinutes(from, to)
	mv := MinuteValues{Query: query, From: from, To: to}
	if !from.Before(to) {
		return mv, nil
	}
	m := &meter{noValueSplit: true}
	series, err := c.minuteMatrix(ctx, query, from, to, m)
	mv.Series, mv.Requests, mv.WireBytes = series, m.requests, m.wire
	return mv, c.queryErr(query, err)
}

// IsSeriesLimit reports whether err is Loki's refusal of a metric query
// for the series its answer would hold (max_query_series).
func IsSeriesLimit(err error) bool { return seriesLimitOf(err) != nil }

// wholeMinutes widens [from, to) to whole minutes (UTC).
func wholeMinutes(from, to time.Time) (time.Time, time.Time) {
	from = from.UTC().Truncate(time.Minute)
	if t := to.UTC().Truncate(time.Minute); t.Before(to) {
		to = t.Add(time.Minute)
	} else {
		to = t
	}
	return from, to
}

// minuteMatrix runs a MinuteRange metric query at a 1m step over the whole
// minutes [from, to): the step at the end of minute m (m+1m, on the grid Loki
// evaluates on) gives minute m.
func (c *Client) minuteMatrix(ctx context.Context, q string, from, to time.Time, m *meter) ([]MinuteSeries, error) {
	first := from.Add(time.Minute)
	series, err := c.matrix(ctx, q, first, to, time.Minute, m)
	if err != nil {
		return nil, err
	}
	n := int(to.Sub(from) / time.Minute)
	out := make([]MinuteSeries, 0, len(series))
	for _, s := range series {
		ms := MinuteSeries{Metric: s.Metric, Labels: s.Labels, Values: make([]float64, n)}
		for _, p := range s.Points {
			// Loki reports step times in milliseconds: round back to the step.
			i := int(math.Round(float64(p.T.Sub(first)) / float64(time.Minute)))
			if i >= 0 && i < n {
				// Each step is asked for once (matrix splits on the grid):
				// a second value for it would be counted twice.
				ms.Values[i] = p.V
			}
		}
		out = append(out, ms)
	}
	return out, nil
}
