package loki

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/loki/internal/logql"
)

// Entry is one log line.
type Entry struct {
	// Stream is the stream's label set as /series lists it (index labels only:
	// labels a pipeline parser extracts are not part of it). Shared between the
	// entries of a stream: do not modify.
	Stream map[string]string
	// Labels is Stream rendered as {a="x", b="y"}; it identifies the stream.
	Labels string
	T      time.Time
	Line   string
}

// SubRange is what happened to one sub-range [From, To) of a pull.
type SubRange struct {
	From, To time.Time
	// Streams is the number of streams paged in this sub-range.
	Streams int
	// Lines and Bytes count what was delivered to the sink (Bytes: line text).
	Lines int64
	Bytes int64
	// Pages counts successful query_range calls for lines, including those that
	// fetch a run of lines sharing one nanosecond on its own.
	Pages int
	// Requests and WireBytes count HTTP requests (retries included) and response
	// body bytes (as the transport decodes them) spent on lines: stream
	// discovery and query_range pages.
	Requests  int
	WireBytes int64
	// CountRequests and CountWireBytes are the count_over_time cross-check's cost.
	CountRequests  int
	CountWireBytes int64
	// Expected is lines per stream according to count_over_time (Pull only; nil
	// when no check ran). Got is lines per stream delivered.
	Expected map[string]int64
	Got      map[string]int64
	// Counted is the lines of the whole sub-range (every stream) the
	// caller counted before the pull (Counted), when it did: then no
	// count_over_time is asked unless the lines delivered disagree.
	Counted    int64
	HasCounted bool
	// Complete is true when every line of the sub-range was delivered: no error,
	// no truncation and, for Pull, the counts agree.
	Complete bool
	// Err is the error that stopped the sub-range, if any.
	Err error
	// Problems says in words what is missing or doubtful.
	Problems []string

	truncated bool  // a run of equal timestamps was longer than the limit
	checked   bool  // counts were obtained and compared
	missing   int64 // lines count_over_time saw that were not delivered
	surplus   int64 // lines delivered beyond what count_over_time saw
}

// Result describes a pull: per sub-range accounting and what is missing.
type Result struct {
	Query     string
	From, To  time.Time
	SubRanges []SubRange
	// Limit is the per-call line limit in force at the end.
	Limit int
	// LimitChanges lists each lowering of the limit because the server refused it.
	LimitChanges []string
	// SeriesRequests and SeriesWireBytes are the up-front stream discovery (Pull).
	SeriesRequests  int
	SeriesWireBytes int64
	// ServerBytesProcessed sums data.stats.summary.totalBytesProcessed: what Loki
	// scanned, as opposed to what it sent.
	ServerBytesProcessed int64
	// Notes are the data-quality notes (source "loki") for report.json: one per
	// incomplete sub-range (severity "error", or "warning" when lines were only
	// unverified or surplus) and one per limit change ("info").
	Notes []sources.QualityNote
}

// Lines is the number of lines delivered.
func (r Result) Lines() int64 { return r.sum(func(s SubRange) int64 { return s.Lines }) }

// Bytes is the number of line bytes delivered (raw bytes pulled).
func (r Result) Bytes() int64 { return r.sum(func(s SubRange) int64 { return s.Bytes }) }

// Requests is the number of HTTP requests made, retries included.
func (r Result) Requests() int {
	return r.SeriesRequests + int(r.sum(func(s SubRange) int64 { return int64(s.Requests + s.CountRequests) }))
}

// WireBytes is the number of response bytes read.
func (r Result) WireBytes() int64 {
	return r.SeriesWireBytes + r.sum(func(s SubRange) int64 { return s.WireBytes + s.CountWireBytes })
}

// Complete is true when every sub-range is complete.
func (r Result) Complete() bool {
	for _, s := range r.SubRanges {
		if !s.Complete {
			return false
		}
	}
	return true
}

// Streams is the number of distinct streams lines were delivered from.
func (r Result) Streams() int {
	set := map[string]bool{}
	for _, s := range r.SubRanges {
		for k, n := range s.Got {
			if n > 0 {
				set[k] = true
			}
		}
	}
	return len(set)
}

func (r Result) sum(f func(SubRange) int64) int64 {
	var n int64
	for _, s := range r.SubRanges {
		n += f(s)
	}
	return n
}

// Progress is a running total passed to Config.Progress.
type Progress struct {
	Query          string
	Lines, Bytes   int64
	Requests       int64
	WireBytes      int64
	SubRangesDone  int
	SubRangesTotal int
}

// QueryRange pulls every line of a log query in [from, to) (start inclusive, end
// exclusive, as Loki's query_range) and passes them to sink.
//
// The window is cut into sub-ranges of Config.SplitBy fetched by Config.Parallel
// workers. In each sub-range the streams are listed with /series and each stream
// is paged on its own with a selector that matches it alone (see the package
// documentation for why).
//
// Ordering: sink is never called concurrently. Within a stream, entries arrive
// in timestamp order over the whole window (sub-ranges are delivered in order,
// while later ones are already being fetched). Across streams there is no order:
// a sub-range is delivered stream after stream.
//
// A sub-range that fails (after retries) or is truncated is reported in Result
// (Complete false, Notes); the error returned then summarises the failures.
// When ctx ends, QueryRange returns promptly with ctx's error; lines already
// passed to sink stay delivered and the Result says which sub-ranges are
// incomplete. An error from sink stops the pull and is returned.
func (c *Client) QueryRange(ctx context.Context, query string, from, to time.Time, sink func(Entry) error) (Result, error) {
	res := Result{Query: query, From: from, To: to}
	sel, pipe, err := splitQuery(query)
	if err != nil {
		return res, c.queryErr(query, err)
	}
	if !from.Before(to) {
		return res, c.queryErr(query, fmt.Errorf("empty window [%s, %s)", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano)))
	}
	rs := &runState{query: query, sel: sel, inner: selectorInner(sel), pipe: pipe}
	spans := split([]span{{from.UTC(), to.UTC()}}, c.cfg.SplitBy)
	plan := func(ctx context.Context, j *job, m *meter) ([]plannedStream, error) {
		streams, err := c.series(ctx, j.sr.From, j.sr.To, []string{sel}, m)
		if err != nil {
			return nil, fmt.Errorf("listing streams: %w", err)
		}
		return rs.plan(streams, labelNames(streams)), nil
	}
	err = c.run(ctx, rs, &res, spans, plan, nil, sink)
	return res, c.queryErr(query, err)
}

// runState is shared by the workers of one pull.
type runState struct {
	query, sel, inner, pipe string
	totals                  runTotals
	serverBytes             atomic.Int64

	// recheck, when set, runs in the worker after a sub-range is fetched (Pull
	// re-counts when the fetched lines disagree with the count).
	recheck func(ctx context.Context, j *job)

	mu           sync.Mutex
	limitChanges []string

	// malformed is the first refusal of the query as malformed (a 400
	// "parse error": IsQueryError); stop ends the run then, since every
	// other sub-range would be refused alike.
	malformed error
	stop      func()
}

// refused records err when Loki refused the query as malformed, and stops
// the run; it reports whether it did.
func (rs *runState) refused(err error) bool {
	if !IsQueryError(err) {
		return false
	}
	rs.mu.Lock()
	if rs.malformed == nil {
		rs.malformed = err
	}
	stop := rs.stop
	rs.mu.Unlock()
	if stop != nil {
		stop()
	}
	return true
}

func (rs *runState) noteLimit(s string) {
	if s == "" {
		return
	}
	rs.mu.Lock()
	rs.limitChanges = append(rs.limitChanges, s)
	rs.mu.Unlock()
}

// plannedStream is one stream to page and the query that selects it alone.
type plannedStream struct {
	labels map[string]string
	key    string
	query  string
}

func (rs *runState) plan(streams []map[string]string, names []string) []plannedStream {
	out := make([]plannedStream, 0, len(streams))
	for _, s := range streams {
		out = append(out, plannedStream{
			labels: s,
			key:    logql.LabelsKey(s),
			query:  exactSelector(rs.inner, s, names) + rs.pipe,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// job is one sub-range in flight. The worker writes sr's worker-side fields and
// then closes ch; the delivering goroutine owns Lines, Bytes and Got.
type job struct {
	sr *SubRange
	ch chan []Entry
	// fetched counts lines per stream handed to delivery (worker-owned).
	fetched map[string]int64
}

// pipelineDepth is how many pages a worker may fetch ahead of delivery. Memory
// is bounded by Parallel x (pipelineDepth+1) pages, whatever the window's size.
const pipelineDepth = 2

// planFunc lists the streams to page in a sub-range (and may fill sr.Expected).
type planFunc func(ctx context.Context, j *job, m *meter) ([]plannedStream, error)

// checkFunc judges a finished sub-range (Pull's count cross-check).
type checkFunc func(sr *SubRange)

// run fetches spans with a bounded pool and delivers in sub-range order.
func (c *Client) run(ctx context.Context, rs *runState, res *Result, spans []span, plan planFunc, check checkFunc, sink func(Entry) error) error {
	res.SubRanges = make([]SubRange, len(spans))
	jobs := make([]*job, len(spans))
	for i, s := range spans {
		res.SubRanges[i] = SubRange{From: s.from, To: s.to, Got: map[string]int64{}}
		jobs[i] = &job{sr: &res.SubRanges[i], ch: make(chan []Entry, pipelineDepth), fetched: map[string]int64{}}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rs.mu.Lock()
	rs.stop = cancel
	rs.mu.Unlock()

	feed := make(chan *job)
	var wg sync.WaitGroup
	for range min(c.cfg.Parallel, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range feed {
				c.work(wctx, rs, j, plan)
				close(j.ch)
			}
		}()
	}
	go func() {
		// Jobs go out in order, so the one being delivered is always running:
		// later workers can block on a full channel without deadlock.
		defer close(feed)
		for i, j := range jobs {
			select {
			case feed <- j:
			case <-wctx.Done():
				for _, k := range jobs[i:] {
					k.sr.Err = fmt.Errorf("not fetched: %w", wctx.Err())
					close(k.ch)
				}
				return
			}
		}
	}()

	var sinkErr error
	done := 0
	for _, j := range jobs {
		for batch := range j.ch {
			if sinkErr != nil || wctx.Err() != nil {
				continue // stopping: drain so workers can exit
			}
			for _, e := range batch {
				if err := sink(e); err != nil {
					sinkErr = fmt.Errorf("sink: %w", err)
					cancel()
					break
				}
				j.sr.Lines++
				j.sr.Bytes += int64(len(e.Line))
				j.sr.Got[e.Labels]++
			}
			c.progress(rs, res, done)
		}
		done++
		// A sub-range fetched in full but not delivered in full (the sink failed
		// or ctx ended while its pages were buffered) is not complete.
		var fetched int64
		for _, n := range j.fetched {
			fetched += n
		}
		if j.sr.Err == nil && j.sr.Lines < fetched {
			cause := sinkErr
			if cause == nil {
				cause = wctx.Err()
			}
			if cause == nil {
				cause = errors.New("delivery stopped")
			}
			j.sr.Err = fmt.Errorf("%d fetched lines not delivered: %w", fetched-j.sr.Lines, cause)
		}
		c.finish(j.sr, check)
		c.progress(rs, res, done)
	}
	wg.Wait()

	res.Limit = c.Limit()
	res.LimitChanges = rs.limitChanges
	res.ServerBytesProcessed = rs.serverBytes.Load()
	rs.mu.Lock()
	malformed := rs.malformed
	rs.mu.Unlock()
	if malformed != nil {
		// One refusal says it all: no note per sub-range, and the error
		// is Loki's 400 (IsQueryError), which the caller names once.
		res.Notes = nil
		return malformed
	}
	res.Notes = c.notes(*res)
	switch {
	case sinkErr != nil:
		return sinkErr
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return failures(res.SubRanges)
}

// work fetches one sub-range: plan its streams, then page each.
func (c *Client) work(ctx context.Context, rs *runState, j *job, plan planFunc) {
	m := &meter{run: &rs.totals}
	defer func() {
		j.sr.Requests += m.requests
		j.sr.WireBytes += m.wire
	}()
	streams, err := plan(ctx, j, m)
	if err != nil {
		rs.refused(err)
		j.sr.Err = c.scrub(err)
		return
	}
	j.sr.Streams = len(streams)
	for _, ps := range streams {
		if err := c.pageStream(ctx, rs, j, ps, m); err != nil {
			rs.refused(err)
			j.sr.Err = c.scrub(fmt.Errorf("stream %s: %w", ps.key, err))
			return
		}
	}
	if rs.recheck != nil {
		rs.recheck(ctx, j)
	}
}

// pageStream pages one stream forward through the sub-range.
//
// Each page asks for `limit` lines from `start`. Within one stream Loki answers
// the oldest lines first, so when a page is full every line older than its last
// timestamp T has been seen, but only some of the lines AT T may have been (a
// page can end inside a run of lines sharing one nanosecond). The next page
// therefore starts at T itself (start is inclusive) and skips the lines at T
// already delivered, counted as a multiset of line texts: Loki keeps one copy
// of an identical (stream, timestamp, line), and the multiset also stays exact
// if a line_format stage makes two lines equal. If a whole page shares one
// timestamp, the run at that instant is fetched alone with a growing limit (up
// to the server's maximum); only a run longer than that is reported truncated.
func (c *Client) pageStream(ctx context.Context, rs *runState, j *job, ps plannedStream, m *meter) error {
	start, end := j.sr.From, j.sr.To
	var seen map[string]int
	for start.Before(end) {
		limit := c.Limit()
		// Under Loki's bytes limits a page spans no more than they allow.
		pageEnd := end
		if w := c.bytesSpanLimit(); w > 0 && start.Add(w).Before(end) {
			pageEnd = start.Add(w)
		}
		vals, err := c.page(ctx, rs, j, ps.query, start, pageEnd, limit, m)
		if errors.Is(err, errLimitLowered) {
			continue
		}
		if be := bytesLimitOf(err); be != nil && c.learnBytesLimit(be, pageEnd.Sub(start), time.Minute) {
			continue
		}
		if err != nil {
			return err
		}
		startNs := start.UnixNano()
		full := len(vals) >= limit
		if full && vals[len(vals)-1].ts == startNs {
			// The page is one run at `start`: fetch that instant on its own.
			run, complete, err := c.instant(ctx, rs, j, ps.query, start, limit, m)
			if err != nil {
				return err
			}
			if len(run) < len(vals) {
				run = vals // the server allowed no larger page: keep what this one had
			}
			if !complete {
				j.sr.truncated = true
				j.sr.Problems = append(j.sr.Problems, fmt.Sprintf(
					"stream %s: more than %d lines share the timestamp %s (more than Loki returns per call); only %d of them were fetched",
					ps.key, len(run), start.Format(time.RFC3339Nano), len(run)))
			}
			if err := deliver(ctx, j, ps, run, startNs, seen); err != nil {
				return err
			}
			start, seen = start.Add(time.Nanosecond), nil
			continue
		}
		if err := deliver(ctx, j, ps, vals, startNs, seen); err != nil {
			return err
		}
		if !full {
			if pageEnd.Before(end) {
				start, seen = pageEnd, nil
				continue
			}
			return nil // the server had no more lines in [start, end)
		}
		last := vals[len(vals)-1].ts
		seen = map[string]int{}
		for i := len(vals) - 1; i >= 0 && vals[i].ts == last; i-- {
			seen[vals[i].line]++
		}
		start = time.Unix(0, last).UTC()
	}
	return nil
}

// errLimitLowered asks the caller to retry its page with the new limit.
var errLimitLowered = errors.New("limit lowered")

// page fetches one page, lowering the client's limit when the server refuses it.
func (c *Client) page(ctx context.Context, rs *runState, j *job, query string, start, end time.Time, limit int, m *meter) ([]streamValue, error) {
	streams, stats, err := c.logPage(ctx, query, start, end, limit, m)
	if err != nil {
		var le *limitError
		if errors.As(err, &le) {
			if nl, note := c.lowerLimit(le, limit); nl > 0 && nl < limit {
				rs.noteLimit(note)
				return nil, errLimitLowered
			}
		}
		return nil, err
	}
	j.sr.Pages++
	if stats != nil {
		rs.serverBytes.Add(stats.Summary.TotalBytesProcessed)
	}
	return flatten(streams)
}

// maxRunLimit bounds the limit tried for one instant when the server does not
// say its maximum.
const maxRunLimit = 1 << 20

// instant fetches every line of one nanosecond, doubling the limit until the
// answer is not full. It reports false when the server's maximum still was not
// enough (the lines it did return are given back).
func (c *Client) instant(ctx context.Context, rs *runState, j *job, query string, at time.Time, limit int, m *meter) ([]streamValue, bool, error) {
	var best []streamValue
	full, next := limit, limit*2 // full: a limit known to come back full
	for next <= maxRunLimit {
		streams, stats, err := c.logPage(ctx, query, at, at.Add(time.Nanosecond), next, m)
		if err != nil {
			var le *limitError
			if !errors.As(err, &le) {
				return nil, false, err
			}
			if le.max > full && le.max < next {
				next = le.max // ask for exactly the server's maximum
				continue
			}
			return best, false, nil // the server's maximum is not enough
		}
		j.sr.Pages++
		if stats != nil {
			rs.serverBytes.Add(stats.Summary.TotalBytesProcessed)
		}
		if best, err = flatten(streams); err != nil {
			return nil, false, err
		}
		if len(best) < next {
			return best, true, nil
		}
		full, next = next, next*2
	}
	return best, false, nil
}

// deliver hands a page to the delivering goroutine, skipping the lines at
// startNs already delivered (seen).
func deliver(ctx context.Context, j *job, ps plannedStream, vals []streamValue, startNs int64, seen map[string]int) error {
	batch := make([]Entry, 0, len(vals))
	for _, v := range vals {
		if v.ts == startNs && seen[v.line] > 0 {
			seen[v.line]--
			continue
		}
		batch = append(batch, Entry{Stream: ps.labels, Labels: ps.key, T: time.Unix(0, v.ts).UTC(), Line: v.line})
	}
	if len(batch) == 0 {
		return nil
	}
	j.fetched[ps.key] += int64(len(batch))
	select {
	case j.ch <- batch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flatten merges the result streams of one page (a pipeline parser can split
// one stream into several label sets) into one list ordered by time. Equal
// timestamps are ordered by line so a page is deterministic.
func flatten(streams []streamResult) ([]streamValue, error) {
	n := 0
	for _, s := range streams {
		n += len(s.Values)
	}
	out := make([]streamValue, 0, n)
	for _, s := range streams {
		for _, v := range s.Values {
			ts, err := strconv.ParseInt(v[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("log line timestamp %q: %w", v[0], err)
			}
			out = append(out, streamValue{ts, v[1]})
		}
	}
	sort.Slice(out, func(i, k int) bool {
		if out[i].ts != out[k].ts {
			return out[i].ts < out[k].ts
		}
		return out[i].line < out[k].line
	})
	return out, nil
}

// finish decides whether a delivered sub-range is complete.
func (c *Client) finish(sr *SubRange, check checkFunc) {
	if check != nil && sr.Err == nil {
		check(sr)
	}
	sr.Complete = sr.Err == nil && !sr.truncated && (check == nil || sr.checked)
}

func (c *Client) progress(rs *runState, res *Result, done int) {
	if c.cfg.Progress == nil {
		return
	}
	p := Progress{
		Query:          rs.query,
		Requests:       rs.totals.requests.Load(),
		WireBytes:      rs.totals.wire.Load(),
		SubRangesDone:  done,
		SubRangesTotal: len(res.SubRanges),
	}
	for i := range res.SubRanges {
		p.Lines += res.SubRanges[i].Lines
		p.Bytes += res.SubRanges[i].Bytes
	}
	c.cfg.Progress(p)
}

// failures summarises failed sub-ranges as one error (nil if none failed).
func failures(srs []SubRange) error {
	var first error
	n := 0
	for _, s := range srs {
		if s.Err != nil {
			n++
			if first == nil {
				first = fmt.Errorf("[%s, %s): %w", s.From.Format(time.RFC3339), s.To.Format(time.RFC3339), s.Err)
			}
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d sub-ranges failed, first %w", n, len(srs), first)
}
