// Package lokitest provides a fake Loki for tests, as net/http/httptest
// provides a server: an HTTP server on loopback that answers as Loki's HTTP
// API documentation says (docs/sources/reference/loki-http-api.md), so the real
// client (sources/loki) talks to it over HTTP.
//
// It serves query_range for log queries (streams, start inclusive, end
// exclusive, limit default 100, direction default backward, the oldest/newest
// `limit` entries across all matching streams) and for metric queries (matrix,
// start rounded down and end up to the step's grid as Loki's frontend does,
// then steps start, start+step, ... <= end, each range aggregation over
// (t-range, t], shifted back by an `offset`, no sample for an empty window), instant queries (vector),
// /series, /labels, /index/stats (indexstats.go), the stats block, plain-text error bodies, and the
// 400s of max_entries_limit_per_query, max_query_length and max_query_series
// with Loki's own texts. It implements the LogQL subset the client
// and the pushdown queries use: a stream selector (=, !=, =~, !~), line filters
// (|=, !=, |~, !~), | json with or without parameters (| json status="status"),
// | regexp with named sub-matches,
// label filters (| status >= 500 or duration >= 10, | __error__=""),
// count_over_time / rate over a range, sum_over_time of an | unwrap label,
// and one sum [by (...)]. Hooks inject
// faults (status codes, slowness, dropped lines). Metric results are
// cached as Loki's frontend caches them (resultcache.go).
//
// It does not import sources/loki, whose own tests use it.
package lokitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/common/model"

	"github.com/aftermath-forensics/aftermath/sources/loki/internal/logql"
)

// Entry is one stored line.
type Entry struct {
	TS   int64 // Unix nanoseconds
	Line string
}

type fakeStream struct {
	labels  map[string]string
	key     string
	entries []Entry
	seen    map[Entry]bool
	sorted  bool
}

// Stream is one result stream of a log query, as a SetAlter hook sees it.
type Stream struct {
	Labels  map[string]string
	Entries []Entry
}

// Loki is a fake Loki server. Its methods may be called concurrently.
type Loki struct {
	t   testing.TB
	srv *httptest.Server

	mu sync.Mutex
	// streams are guarded by store.mu, not mu (concurrent.go).
	store   storeOf
	streams map[string]*fakeStream
	// queries holds each query parsed (queryOf).
	queries sync.Map

	// maxEntries is max_entries_limit_per_query (0: no limit).
	maxEntries int
	// maxQueryLength is max_query_length (0: no limit).
	maxQueryLength time.Duration
	// maxQuerySeries is max_query_series (0: no limit).
	maxQuerySeries int
	// maxQueryBytes is max_query_bytes_read, maxQuerierBytes
	// max_querier_bytes_read (0: no limit); splitInterval is
	// split_queries_by_interval, the pieces a querier answers.
	maxQueryBytes, maxQuerierBytes int64
	splitInterval                  time.Duration
	// before runs first for every request (n counts requests from 1); if it
	// returns true it has answered.
	before func(w http.ResponseWriter, r *http.Request, n int) bool
	// alter may change the answer of a log query after limit is applied.
	alter func(r *http.Request, out []Stream) []Stream

	n       int
	calls   map[string]int   // by kind: series, labels, logs, matrix, vector, error
	written map[string]int64 // response bytes by kind
	// processed sums the totalBytesProcessed of every answer (BytesProcessed).
	processed int64
	headers   []http.Header
}

// New starts a fake Loki, closed when t's test ends.
func New(t testing.TB) *Loki {
	f := &Loki{t: t, streams: map[string]*fakeStream{}, calls: map[string]int{}, written: map[string]int64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/loki/api/v1/query_range", f.queryRange)
	mux.HandleFunc("/loki/api/v1/query", f.query)
	mux.HandleFunc("/loki/api/v1/series", f.series)
	mux.HandleFunc("/loki/api/v1/labels", f.labels)
	mux.HandleFunc("/loki/api/v1/index/stats", f.indexStats)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.n++
		n := f.n
		f.headers = append(f.headers, r.Header.Clone())
		before := f.before
		f.mu.Unlock()
		// Loki's frontend gzips its answers for a client that accepts it
		// (query_frontend.compress_responses). The fastest level: the client
		// reads any, and compressing at the default level was a tenth of the
		// live tests' time.
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			zw := gzipWriters.Get().(*gzip.Writer)
			zw.Reset(w)
			gw := &gzipWriter{ResponseWriter: w, zw: zw}
			defer func() {
				zw.Close()
				gzipWriters.Put(zw)
			}()
			w = gw
		}
		if before != nil && before(w, r, n) {
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// gzipWriters are reused: a new writer allocates its compressor's tables
// (about a megabyte), a quarter of the fake's time when each answer made
// one. klauspost's gzip (the module's, as the bundle writers use), not the
// standard library's: at the fastest level it compresses answers 3 times as fast, and the
// client reads any gzip.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// gzipWriter gzips an answer.
type gzipWriter struct {
	http.ResponseWriter
	zw          *gzip.Writer
	wroteHeader bool
}

func (g *gzipWriter) WriteHeader(code int) {
	if !g.wroteHeader {
		g.wroteHeader = true
		g.Header().Set("Content-Encoding", "gzip")
		g.Header().Del("Content-Length")
		g.ResponseWriter.WriteHeader(code)
	}
}

func (g *gzipWriter) Write(b []byte) (int, error) {
	g.WriteHeader(http.StatusOK)
	return g.zw.Write(b)
}

// URL is the fake's base URL.
func (f *Loki) URL() string { return f.srv.URL }

// Push stores a line; like Loki it keeps one copy of an identical
// (stream, timestamp, line).
func (f *Loki) Push(labels map[string]string, ts time.Time, line string) {
	defer f.writeStreams()()
	k := logql.LabelsKey(labels)
	s := f.streams[k]
	if s == nil {
		s = &fakeStream{labels: labels, key: k, seen: map[Entry]bool{}}
		f.streams[k] = s
	}
	e := Entry{ts.UnixNano(), line}
	if s.seen[e] {
		return
	}
	s.seen[e] = true
	s.entries = append(s.entries, e)
	f.store.content.add(k, e)
	s.sorted = false
}

func (f *Loki) sortLocked() {
	for _, s := range f.streams {
		if !s.sorted {
			sort.SliceStable(s.entries, func(i, j int) bool { return s.entries[i].TS < s.entries[j].TS })
			s.sorted = true
		}
	}
}

func (f *Loki) count(kind string, bytes int) {
	f.mu.Lock()
	f.calls[kind]++
	f.written[kind] += int64(bytes)
	f.mu.Unlock()
}

// Stats returns the requests answered and the response bytes written so far
// (before gzip), by kind: series, labels, logs, matrix, vector, error.
func (f *Loki) Stats() (map[string]int, map[string]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, w := map[string]int{}, map[string]int64{}
	for k, v := range f.calls {
		c[k] = v
	}
	for k, v := range f.written {
		w[k] = v
	}
	return c, w
}

// BytesProcessed is the sum of totalBytesProcessed over every answer so
// far: what Loki's statistics say it read.
func (f *Loki) BytesProcessed() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.processed
}

// ResetStats zeroes what Stats counts.
func (f *Loki) ResetStats() {
	f.mu.Lock()
	f.calls, f.written, f.processed = map[string]int{}, map[string]int64{}, 0
	f.mu.Unlock()
}

// SetBefore installs a hook that runs first for every request (n counts
// requests from 1); if it returns true it has answered.
func (f *Loki) SetBefore(h func(w http.ResponseWriter, r *http.Request, n int) bool) {
	f.locked(func() { f.before = h })
}

// SetAlter installs a hook that may change the answer of a log query after
// its limit is applied (e.g. drop a line).
func (f *Loki) SetAlter(h func(r *http.Request, out []Stream) []Stream) {
	f.locked(func() { f.alter = h })
}

// SetMaxEntries sets max_entries_limit_per_query (0: no limit).
func (f *Loki) SetMaxEntries(n int) { f.locked(func() { f.maxEntries = n }) }

// SetMaxQueryLength sets max_query_length (0: no limit): query_range and
// /series over a longer range answer 400 with Loki's text
// "the query time range exceeds the limit (query length: 25h30m0s, limit: 12h)".
func (f *Loki) SetMaxQueryLength(d time.Duration) { f.locked(func() { f.maxQueryLength = d }) }

// SetMaxQuerySeries sets max_query_series (0: no limit): a metric query whose
// answer holds more series answers 400 with Loki's text "maximum number of
// series (500) reached for a single query; ...".
func (f *Loki) SetMaxQuerySeries(n int) { f.locked(func() { f.maxQuerySeries = n }) }

// SetMaxQueryBytesRead sets max_query_bytes_read (0: no limit): a query
// whose selector's streams hold more bytes in its range (Loki estimates from
// its index, before any filter) answers 400 with Loki's text "the query
// would read too many bytes (query: 150 MB, limit: 100 MB); ...".
func (f *Loki) SetMaxQueryBytesRead(n int64) { f.locked(func() { f.maxQueryBytes = n }) }

// SetMaxQuerierBytesRead sets max_querier_bytes_read (0: no limit): the same
// test for each piece of split_queries_by_interval (1h) a querier answers,
// with Loki's text "query too large to execute on a single querier: ...".
func (f *Loki) SetMaxQuerierBytesRead(n int64) { f.locked(func() { f.maxQuerierBytes = n }) }

// tooManyBytes answers Loki's 400 when the query's selector reads more
// bytes in [start, end] than max_query_bytes_read, or in one hour-aligned
// piece of it than max_querier_bytes_read.
func (f *Loki) tooManyBytes(w http.ResponseWriter, expr *Query, start, end int64) bool {
	f.mu.Lock()
	maxQuery, maxQuerier := f.maxQueryBytes, f.maxQuerierBytes
	split := int64(f.splitInterval)
	if split <= 0 {
		split = int64(time.Hour)
	}
	f.mu.Unlock()
	if maxQuery <= 0 && maxQuerier <= 0 {
		return false
	}
	unlock := f.readStreams()
	bytesIn := func(from, to int64) int64 {
		var n int64
		for _, s := range f.streams {
			if expr.Matches(s.labels) {
				for _, e := range s.window(from, to+1) {
					n += int64(len(e.Line))
				}
			}
		}
		return n
	}
	total := bytesIn(start, end)
	var worst int64
	if maxQuerier > 0 {
		for from := start - start%split; from <= end; from += split {
			worst = max(worst, bytesIn(max(from, start), min(from+split-1, end)))
		}
	}
	unlock()
	switch {
	case maxQuery > 0 && total > maxQuery:
		f.Fail(w, http.StatusBadRequest, fmt.Sprintf("the query would read too many bytes (query: %s, limit: %s); consider adding more specific stream selectors or reduce the time range of the query", humanBytes(total), humanBytes(maxQuery)))
		return true
	case maxQuerier > 0 && worst > maxQuerier:
		f.Fail(w, http.StatusBadRequest, fmt.Sprintf("query too large to execute on a single querier: (query: %s, limit: %s); consider adding more specific stream selectors, reduce the time range of the query, or increase the max_querier_bytes_read limit", humanBytes(worst), humanBytes(maxQuerier)))
		return true
	}
	return false
}

// humanBytes writes a size as Loki's messages do (go-humanize's Bytes:
// SI units, "150 MB").
func humanBytes(n int64) string {
	units := []string{"B", "kB", "MB", "GB", "TB"}
	x, i := float64(n), 0
	for x >= 1000 && i < len(units)-1 {
		x /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	if x < 10 {
		return fmt.Sprintf("%.1f %s", x, units[i])
	}
	return fmt.Sprintf("%.0f %s", x, units[i])
}

// locked runs set under the fake's lock: the hooks and limits are read by the
// server's goroutines.
func (f *Loki) locked(set func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	set()
}

// tooLong answers Loki's 400 if [start, end] is longer than max_query_length.
// Loki measures the range in milliseconds and writes the limit as a Prometheus
// duration.
func (f *Loki) tooLong(w http.ResponseWriter, start, end int64) bool {
	f.mu.Lock()
	limit := f.maxQueryLength
	f.mu.Unlock()
	length := time.Duration(end/1e6-start/1e6) * time.Millisecond
	if limit <= 0 || length <= limit {
		return false
	}
	f.Fail(w, http.StatusBadRequest, fmt.Sprintf("the query time range exceeds the limit (query length: %s, limit: %s)", length, model.Duration(limit)))
	return true
}

// tooManySeries answers Loki's 400 if a metric answer holds more series than
// max_query_series.
func (f *Loki) tooManySeries(w http.ResponseWriter, n int) bool {
	f.mu.Lock()
	limit := f.maxQuerySeries
	f.mu.Unlock()
	if limit <= 0 || n <= limit {
		return false
	}
	f.Fail(w, http.StatusBadRequest, fmt.Sprintf("maximum number of series (%d) reached for a single query; consider reducing query cardinality by adding more specific stream selectors, reducing the time range, or aggregating results with functions like sum(), count() or topk()", limit))
	return true
}

// Headers returns the headers of every request so far.
func (f *Loki) Headers() []http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]http.Header(nil), f.headers...)
}

// Each calls fn for every stored line that the log query selects in
// [from, to), with its stream's labels rendered as Loki does ({a="x", b="y"}):
// what a client that lost nothing would receive. A query the fake cannot
// parse fails the test. fn must not call f.
func (f *Loki) Each(query string, from, to time.Time, fn func(stream string, e Entry)) {
	expr, err := f.queryOf(query)
	if err != nil {
		f.t.Fatal(err)
	}
	defer f.readStreams()()
	for _, s := range f.streams {
		if !expr.Matches(s.labels) {
			continue
		}
		for _, e := range s.window(from.UnixNano(), to.UnixNano()) {
			if _, _, ok := expr.apply(s.labels, e.Line); ok {
				fn(s.key, e)
			}
		}
	}
}

// Bytes counts the lines the log query selects in [from, to) and the sum of
// their lengths.
func (f *Loki) Bytes(query string, from, to time.Time) (lines, bytes int64) {
	f.Each(query, from, to, func(_ string, e Entry) {
		lines++
		bytes += int64(len(e.Line))
	})
	return lines, bytes
}

// Fail answers as Loki's WriteError does: plain text with the status. Hooks
// use it to inject errors.
func (f *Loki) Fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	n, _ := fmt.Fprint(w, msg)
	f.count("error", n)
}

func (f *Loki) ok(w http.ResponseWriter, kind string, data any) {
	b, err := json.Marshal(map[string]any{"status": "success", "data": data})
	if err != nil {
		f.t.Errorf("fake loki: %v", err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	n, _ := w.Write(b)
	f.count(kind, n)
}

// parseTime reads a Loki timestamp: integer nanoseconds, float seconds or RFC3339Nano.
func parseTime(s string, def time.Time) (int64, error) {
	if s == "" {
		return def.UnixNano(), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil {
		return int64(x * 1e9), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("cannot parse %q to a valid timestamp", s)
	}
	return t.UnixNano(), nil
}

func parseStep(s string) (time.Duration, error) {
	if d, err := promDuration(s); err == nil {
		return d, nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("cannot parse %q to a valid duration", s)
	}
	return time.Duration(x * float64(time.Second)), nil
}

func (f *Loki) queryRange(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	now := time.Now()
	start, err := parseTime(q.Get("start"), now.Add(-time.Hour))
	if err != nil {
		f.Fail(w, 400, err.Error())
		return
	}
	end, err := parseTime(q.Get("end"), now)
	if err != nil {
		f.Fail(w, 400, err.Error())
		return
	}
	if end < start {
		f.Fail(w, 400, "end timestamp must not be before or equal to start time")
		return
	}
	if f.tooLong(w, start, end) {
		return
	}
	expr, err := f.queryOf(q.Get("query"))
	if err != nil {
		f.Fail(w, 400, err.Error())
		return
	}
	if f.tooManyBytes(w, expr, start-int64(expr.rng)-int64(expr.offset), end) {
		return
	}
	if expr.fn == "" { // log query
		limit := 100
		if s := q.Get("limit"); s != "" {
			if limit, err = strconv.Atoi(s); err != nil {
				f.Fail(w, 400, err.Error())
				return
			}
		}
		f.mu.Lock()
		maxEntries, alter := f.maxEntries, f.alter
		f.mu.Unlock()
		if maxEntries > 0 && limit > maxEntries {
			f.Fail(w, 400, fmt.Sprintf("max entries limit per query exceeded, limit > max_entries_limit_per_query (%d > %d)", limit, maxEntries))
			return
		}
		forward := false
		switch strings.ToLower(q.Get("direction")) {
		case "forward":
			forward = true
		case "", "backward":
		default:
			f.Fail(w, 400, "invalid direction")
			return
		}
		out, scanned, scannedBytes := f.evalLogs(expr, start, end, limit, forward)
		if alter != nil {
			out = alter(r, out)
		}
		res := make([]map[string]any, 0, len(out))
		for _, o := range out {
			vals := make([][2]string, 0, len(o.Entries))
			for _, e := range o.Entries {
				vals = append(vals, [2]string{strconv.FormatInt(e.TS, 10), e.Line})
			}
			res = append(res, map[string]any{"stream": o.Labels, "values": vals})
		}
		f.ok(w, "logs", map[string]any{"resultType": "streams", "result": res, "stats": f.stats(scanned, scannedBytes)})
		return
	}
	step := time.Duration(0)
	if s := q.Get("step"); s != "" {
		if step, err = parseStep(s); err != nil {
			f.Fail(w, 400, err.Error())
			return
		}
	} else {
		step = time.Duration(max((end-start)/250, int64(time.Second)))
	}
	if step <= 0 {
		f.Fail(w, 400, "zero or negative query resolution step widths are not accepted. Try a positive integer")
		return
	}
	if (end-start)/int64(step) > 11000 {
		f.Fail(w, 400, "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)")
		return
	}
	// Loki's query frontend puts every metric query on the step's grid,
	// counted from the Unix epoch, before it splits and evaluates it: the
	// start is rounded down and the end up (pkg/querier/queryrange,
	// metricQuerySplitter.alignStartEnd), unconditionally and in
	// milliseconds. The answer is not moved back to what was asked: two
	// requests whose ends meet between grid points both evaluate the grid
	// point between them.
	start, end = alignToStep(start, end, int64(step))
	f.answerMetric(w, expr, start, end, int64(step), "matrix", func(s fakeSeries) map[string]any {
		vals := make([][2]any, 0, len(s.points))
		for _, p := range s.points {
			vals = append(vals, samplePair(p))
		}
		return map[string]any{"metric": s.labels, "values": vals}
	})
}

func (f *Loki) query(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	t, err := parseTime(q.Get("time"), time.Now())
	if err != nil {
		f.Fail(w, 400, err.Error())
		return
	}
	expr, err := f.queryOf(q.Get("query"))
	if err != nil {
		f.Fail(w, 400, err.Error())
		return
	}
	if expr.fn == "" {
		f.Fail(w, 400, "log queries are not supported as an instant query type, please change your query to a range query type")
		return
	}
	if f.tooManyBytes(w, expr, t-int64(expr.rng)-int64(expr.offset), t) {
		return
	}
	f.answerMetric(w, expr, t, t, 1, "vector", func(s fakeSeries) map[string]any {
		return map[string]any{"metric": s.labels, "value": samplePair(s.points[0])}
	})
}

// answerMetric evaluates a metric query and answers its series as Loki does
// (resultType matrix or vector, each series written by render); a query Loki
// refuses, or one over max_query_series, answers 400.
func (f *Loki) answerMetric(w http.ResponseWriter, expr *Query, start, end, step int64, resultType string, render func(fakeSeries) map[string]any) {
	series, scanned, scannedBytes, err := f.evalMetric(expr, start, end, step)
	if err != nil {
		f.Fail(w, 400, err.Error())
		return
	}
	if f.tooManySeries(w, len(series)) {
		return
	}
	res := make([]map[string]any, 0, len(series))
	for _, s := range series {
		res = append(res, render(s))
	}
	f.ok(w, resultType, map[string]any{"resultType": resultType, "result": res, "stats": f.stats(scanned, scannedBytes)})
}

// samplePair is a point as Prometheus's API writes it: [unix seconds, "value"].
func samplePair(p fakePoint) [2]any {
	return [2]any{json.Number(promTime(p.t)), strconv.FormatFloat(p.v, 'f', -1, 64)}
}

// indexRange reads the [start, end] (Unix nanoseconds) of a request to an
// index endpoint (series, index/stats): an hour back from now unless given,
// answered 400 when unreadable and refused past max_query_length as a query
// is.
func (f *Loki) indexRange(w http.ResponseWriter, q url.Values) (start, end int64, ok bool) {
	start, err1 := parseTime(q.Get("start"), time.Now().Add(-time.Hour))
	end, err2 := parseTime(q.Get("end"), time.Now())
	if err1 != nil || err2 != nil {
		f.Fail(w, 400, "bad start/end")
		return start, end, false
	}
	return start, end, !f.tooLong(w, start, end)
}

func (f *Loki) series(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	start, end, ok := f.indexRange(w, q)
	if !ok {
		return
	}
	if len(q["match[]"]) == 0 {
		f.Fail(w, 400, "0 matchers provided")
		return
	}
	set := map[string]map[string]string{}
	for _, m := range q["match[]"] {
		expr, err := f.queryOf(m)
		if err != nil {
			f.Fail(w, 400, err.Error())
			return
		}
		if expr.fn != "" || len(expr.stages) > 0 {
			f.Fail(w, 400, fmt.Sprintf("invalid match[] %q", m))
			return
		}
		unlock := f.readStreams()
		for _, s := range f.streams {
			if expr.Matches(s.labels) && len(s.window(start, end)) > 0 {
				set[s.key] = s.labels
			}
		}
		unlock()
	}
	out := make([]map[string]string, 0, len(set))
	for _, l := range set {
		out = append(out, l)
	}
	f.ok(w, "series", out)
}

func (f *Loki) labels(w http.ResponseWriter, r *http.Request) {
	var expr *Query
	if s := r.URL.Query().Get("query"); s != "" {
		var err error
		if expr, err = f.queryOf(s); err != nil {
			f.Fail(w, 400, err.Error())
			return
		}
	}
	set := map[string]bool{}
	unlock := f.readStreams()
	for _, s := range f.streams {
		if expr == nil || expr.Matches(s.labels) {
			for n := range s.labels {
				set[n] = true
			}
		}
	}
	unlock()
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	f.ok(w, "labels", out)
}

// alignToStep rounds start down and end up to multiples of step (ns), as
// Loki's frontend does with the step in whole milliseconds.
func alignToStep(start, end, step int64) (int64, int64) {
	stepNs := step / 1e6 * 1e6
	if stepNs <= 0 {
		return start, end
	}
	floor := func(x int64) int64 {
		m := x % stepNs
		if m < 0 {
			m += stepNs
		}
		return x - m
	}
	start = floor(start)
	if e := floor(end); e != end {
		end = e + stepNs
	}
	return start, end
}

// promTime renders a step time as Loki does: seconds with millisecond precision.
func promTime(ns int64) string {
	ms := ns / 1e6
	if ns < 0 && ns%1e6 != 0 {
		ms--
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
}

// stats is an answer's data.stats: the lines and bytes the query read
// (BytesProcessed sums them over every answer).
func (f *Loki) stats(lines, bytes int64) map[string]any {
	f.mu.Lock()
	f.processed += bytes
	f.mu.Unlock()
	zero := map[string]any{"compressedBytes": 0, "decompressedBytes": 0, "decompressedLines": 0, "headChunkBytes": bytes,
		"headChunkLines": lines, "totalBatches": 1, "totalChunksMatched": 1, "totalDuplicates": 0, "totalLinesSent": lines, "totalReached": 1}
	return map[string]any{
		"ingester": zero,
		"store": map[string]any{"compressedBytes": 0, "decompressedBytes": 0, "decompressedLines": 0, "chunksDownloadTime": 0,
			"totalChunksRef": 0, "totalChunksDownloaded": 0, "totalDuplicates": 0},
		"summary": map[string]any{"bytesProcessedPerSecond": bytes * 1000, "execTime": 0.001, "linesProcessedPerSecond": lines * 1000,
			"queueTime": 0, "totalBytesProcessed": bytes, "totalLinesProcessed": lines},
	}
}

// window returns the entries with start <= ts < end (store must be sorted).
func (s *fakeStream) window(start, end int64) []Entry {
	i := sort.Search(len(s.entries), func(i int) bool { return s.entries[i].TS >= start })
	j := sort.Search(len(s.entries), func(i int) bool { return s.entries[i].TS >= end })
	return s.entries[i:j]
}

type tagged struct {
	key    string
	labels map[string]string
	e      Entry
	seq    int
}

// evalLogs answers a log query: matching lines in [start, end), the first
// `limit` in the requested direction across all result streams. Each stream
// contributes at most `limit` candidates, so a page costs O(limit), not O(window).
func (f *Loki) evalLogs(expr *Query, start, end int64, limit int, forward bool) ([]Stream, int64, int64) {
	unlock := f.readStreams()
	var all []tagged
	var scanned, scannedBytes int64
	seq := 0
	for _, s := range f.streams {
		if !expr.Matches(s.labels) {
			continue
		}
		w := s.window(start, end)
		taken := 0
		for i := range w {
			e := w[i]
			if !forward {
				e = w[len(w)-1-i]
			}
			scanned++
			scannedBytes += int64(len(e.Line))
			ls, _, ok := expr.apply(s.labels, e.Line)
			if !ok {
				continue
			}
			seq++
			all = append(all, tagged{logql.LabelsKey(ls), ls, e, seq})
			if taken++; taken >= limit {
				// Lines at the same instant as the last one taken may still be
				// needed to break ties the way the merge below does.
				last := e.TS
				for k := i + 1; k < len(w); k++ {
					e2 := w[k]
					if !forward {
						e2 = w[len(w)-1-k]
					}
					if e2.TS != last {
						break
					}
					if ls2, _, ok := expr.apply(s.labels, e2.Line); ok {
						seq++
						all = append(all, tagged{logql.LabelsKey(ls2), ls2, e2, seq})
					}
				}
				break
			}
		}
	}
	unlock()
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.e.TS != b.e.TS {
			return (a.e.TS < b.e.TS) == forward
		}
		if a.key != b.key {
			return a.key < b.key
		}
		return a.seq < b.seq
	})
	if len(all) > limit {
		all = all[:limit]
	}
	byKey := map[string]*Stream{}
	var keys []string
	for _, t := range all {
		o := byKey[t.key]
		if o == nil {
			o = &Stream{Labels: t.labels}
			byKey[t.key] = o
			keys = append(keys, t.key)
		}
		o.Entries = append(o.Entries, t.e)
	}
	sort.Strings(keys)
	out := make([]Stream, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out, scanned, scannedBytes
}

// group is the labels of the sum's group a series with labels ls falls in.
func (e *Query) group(ls map[string]string) map[string]string {
	g := map[string]string{}
	for _, n := range e.by {
		if v := ls[n]; v != "" {
			g[n] = v
		}
	}
	return g
}

type fakePoint struct {
	t int64
	v float64
}

type fakeSeries struct {
	labels map[string]string
	points []fakePoint
}

// evalMetric evaluates a metric query at start, start+step, ... <= end. A
// sample | unwrap could not read fails the query, as in Loki, unless a label
// filter after the unwrap dropped it.
func (f *Loki) evalMetric(expr *Query, start, end, step int64) ([]fakeSeries, int64, int64, error) {
	unlock := f.readStreams()
	defer unlock()
	key := metricKey{content: f.store.content, query: expr.text, start: start, end: end, step: step}
	metricResults.mu.Lock()
	r, hit := metricResults.m[key]
	metricResults.mu.Unlock()
	if !hit {
		r.series, r.scanned, r.scannedBytes, r.err = f.evalMetricLocked(expr, start, end, step)
		metricResults.mu.Lock()
		if len(metricResults.m) < maxCachedResults {
			metricResults.m[key] = r
		}
		metricResults.mu.Unlock()
	}
	return r.series, r.scanned, r.scannedBytes, r.err
}

// evalMetricLocked is evalMetric, evaluated, with the streams locked for
// reading.
func (f *Loki) evalMetricLocked(expr *Query, start, end, step int64) ([]fakeSeries, int64, int64, error) {
	rng, off := int64(expr.rng), int64(expr.offset)
	type sample struct {
		ts int64
		v  float64
	}
	// Samples per output series of the range aggregation, sorted by time.
	perSeries := map[string][]sample{}
	seriesLabels := map[string]map[string]string{}
	var scanned, scannedBytes int64
	for _, s := range f.streams {
		if !expr.Matches(s.labels) {
			continue
		}
		for _, e := range s.window(start-rng-off, end-off+1) {
			scanned++
			scannedBytes += int64(len(e.Line))
			ls, v, ok := expr.apply(s.labels, e.Line)
			if !ok {
				continue
			}
			if expr.fn == "bytes_over_time" {
				v = float64(len(e.Line))
			}
			if expr.sum && ls["__error__"] != "SampleExtractionErr" {
				// The range aggregations the fake knows add up across the
				// series of a sum, so the samples are kept by group: a query
				// over lines with a distinct label each stays cheap.
				ls = expr.group(ls)
			}
			k := logql.LabelsKey(ls)
			if ls["__error__"] == "SampleExtractionErr" {
				return nil, scanned, scannedBytes, fmt.Errorf("pipeline error: 'SampleExtractionErr' for series: '%s'.\n"+
					"Use a label filter to intentionally skip this error. (e.g | __error__!=\"SampleExtractionErr\").\n"+
					"To skip all potential errors you can match empty errors.(e.g __error__=\"\")\n"+
					"The label filter can also be specified after unwrap. (e.g | unwrap latency | __error__=\"\" )", k)
			}
			perSeries[k] = append(perSeries[k], sample{e.TS, v})
			seriesLabels[k] = ls
		}
	}
	type acc struct {
		labels map[string]string
		vals   map[int64]float64
	}
	groups := map[string]*acc{}
	for k, ss := range perSeries {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].ts < ss[j].ts })
		ls := seriesLabels[k]
		if expr.sum {
			ls = expr.group(ls)
		}
		gk := logql.LabelsKey(ls)
		a := groups[gk]
		if a == nil {
			a = &acc{labels: ls, vals: map[int64]float64{}}
			groups[gk] = a
		}
		for t := start; t <= end; t += step {
			// (t-rng-off, t-off]
			lo := sort.Search(len(ss), func(i int) bool { return ss[i].ts > t-rng-off })
			hi := sort.Search(len(ss), func(i int) bool { return ss[i].ts > t-off })
			if hi == lo {
				continue
			}
			v := float64(hi - lo)
			switch expr.fn {
			case "rate":
				v /= time.Duration(rng).Seconds()
			case "sum_over_time", "bytes_over_time":
				v = 0
				for _, x := range ss[lo:hi] {
					v += x.v
				}
			}
			a.vals[t] += v
		}
	}
	out := make([]fakeSeries, 0, len(groups))
	for _, a := range groups {
		if len(a.vals) == 0 {
			continue
		}
		s := fakeSeries{labels: a.labels}
		for t, v := range a.vals {
			s.points = append(s.points, fakePoint{t, v})
		}
		sort.Slice(s.points, func(i, j int) bool { return s.points[i].t < s.points[j].t })
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return logql.LabelsKey(out[i].labels) < logql.LabelsKey(out[j].labels) })
	return out, scanned, scannedBytes, nil
}
