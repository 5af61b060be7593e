// Package livetest holds fakes of the live sources for tests: a Loki that
// answers as Loki's HTTP API documentation says, and a Prometheus HTTP API
// over a metrics.Store. They are servers on loopback (httptest), so the real
// clients (sources/loki, client_golang) talk to them over HTTP.
package livetest

// The fake Loki is sources/loki's test fake (lokitest_test.go), exported and
// extended with what pushdown queries use: | json with parameters
// (| json status="status"), and label filters (| status >= 500 or
// duration >= 10, | __error__="").

// A fake Loki that answers as Loki's HTTP API documentation says
// (docs/sources/reference/loki-http-api.md): query_range for log queries
// (streams, start inclusive, end exclusive, limit default 100, direction default
// backward, the oldest/newest `limit` entries across all matching streams) and
// for metric queries (matrix, steps start, start+step, ... <= end, each
// range aggregation over (t-range, t], no sample for an empty window), instant
// queries (vector), /series, /labels, the stats block, plain-text error bodies,
// and the max_entries_limit_per_query 400. It implements the small LogQL subset
// the client uses: a stream selector (=, !=, =~, !~), line filters (|=, !=, |~,
// !~), | json, count_over_time / rate over a range, and one sum [by (...)].
// Hooks inject faults (status codes, slowness, dropped lines).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

type fakeEntry struct {
	ts   int64
	line string
}

type fakeStream struct {
	labels  map[string]string
	key     string
	entries []fakeEntry
	seen    map[fakeEntry]bool
	sorted  bool
}

// fakeOut is one result stream of a log query.
type fakeOut struct {
	labels  map[string]string
	entries []fakeEntry
}

type Loki struct {
	t   testing.TB
	srv *httptest.Server

	mu      sync.Mutex
	streams map[string]*fakeStream

	// maxEntries is max_entries_limit_per_query (0: no limit).
	maxEntries int
	// before runs first for every request (n counts requests from 1); if it
	// returns true it has answered.
	before func(w http.ResponseWriter, r *http.Request, n int) bool
	// alter may change the answer of a log query after limit is applied.
	alter func(r *http.Request, out []fakeOut) []fakeOut

	n       int
	calls   map[string]int   // by kind: series, labels, logs, matrix, vector, error
	written map[string]int64 // response bytes by kind
	headers []http.Header
}

func NewLoki(t testing.TB) *Loki {
	f := &Loki{t: t, streams: map[string]*fakeStream{}, calls: map[string]int{}, written: map[string]int64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/loki/api/v1/query_range", f.queryRange)
	mux.HandleFunc("/loki/api/v1/query", f.query)
	mux.HandleFunc("/loki/api/v1/series", f.series)
	mux.HandleFunc("/loki/api/v1/labels", f.labels)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.n++
		n := f.n
		f.headers = append(f.headers, r.Header.Clone())
		before := f.before
		f.mu.Unlock()
		if before != nil && before(w, r, n) {
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// push stores a line; like Loki it keeps one copy of an identical
// (stream, timestamp, line).
func (f *Loki) Push(labels map[string]string, ts time.Time, line string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := labelsKey(labels)
	s := f.streams[k]
	if s == nil {
		s = &fakeStream{labels: labels, key: k, seen: map[fakeEntry]bool{}}
		f.streams[k] = s
	}
	e := fakeEntry{ts.UnixNano(), line}
	if s.seen[e] {
		return
	}
	s.seen[e] = true
	s.entries = append(s.entries, e)
	s.sorted = false
}

func (f *Loki) sortLocked() {
	for _, s := range f.streams {
		if !s.sorted {
			sort.SliceStable(s.entries, func(i, j int) bool { return s.entries[i].ts < s.entries[j].ts })
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

func (f *Loki) ResetStats() {
	f.mu.Lock()
	f.calls, f.written = map[string]int{}, map[string]int64{}
	f.mu.Unlock()
}

// URL is the fake's base URL.
func (f *Loki) URL() string { return f.srv.URL }

// SetBefore installs a hook that runs first for every request (n counts
// requests from 1); if it returns true it has answered.
func (f *Loki) SetBefore(h func(w http.ResponseWriter, r *http.Request, n int) bool) {
	f.mu.Lock()
	f.before = h
	f.mu.Unlock()
}

// SetMaxEntries sets max_entries_limit_per_query (0: no limit).
func (f *Loki) SetMaxEntries(n int) {
	f.mu.Lock()
	f.maxEntries = n
	f.mu.Unlock()
}

// Headers returns the headers of every request so far.
func (f *Loki) Headers() []http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]http.Header(nil), f.headers...)
}

// Bytes is the sum of the line lengths of selector (no pipeline) in [from, to).
func (f *Loki) Bytes(selector string, from, to time.Time) (lines, bytes int64) {
	expr, err := parseLogQL(selector)
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sortLocked()
	for _, s := range f.streams {
		if !expr.matches(s.labels) {
			continue
		}
		for _, e := range s.window(from.UnixNano(), to.UnixNano()) {
			if _, ok := expr.apply(s.labels, e.line); ok {
				lines++
				bytes += int64(len(e.line))
			}
		}
	}
	return lines, bytes
}

// labelsKey renders a label set as Loki does: {a="x", b="y"}, names sorted,
// empty values left out.
func labelsKey(ls map[string]string) string {
	names := make([]string, 0, len(ls))
	for n, v := range ls {
		if v != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(ls[n]))
	}
	b.WriteByte('}')
	return b.String()
}

// fail answers as Loki's WriteError does: plain text with the status.
func (f *Loki) fail(w http.ResponseWriter, status int, msg string) {
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
		f.fail(w, 400, err.Error())
		return
	}
	end, err := parseTime(q.Get("end"), now)
	if err != nil {
		f.fail(w, 400, err.Error())
		return
	}
	if end < start {
		f.fail(w, 400, "end timestamp must not be before or equal to start time")
		return
	}
	expr, err := parseLogQL(q.Get("query"))
	if err != nil {
		f.fail(w, 400, err.Error())
		return
	}
	if expr.fn == "" { // log query
		limit := 100
		if s := q.Get("limit"); s != "" {
			if limit, err = strconv.Atoi(s); err != nil {
				f.fail(w, 400, err.Error())
				return
			}
		}
		f.mu.Lock()
		maxEntries := f.maxEntries
		f.mu.Unlock()
		if maxEntries > 0 && limit > maxEntries {
			f.fail(w, 400, fmt.Sprintf("max entries limit per query exceeded, limit > max_entries_limit_per_query (%d > %d)", limit, maxEntries))
			return
		}
		forward := false
		switch strings.ToLower(q.Get("direction")) {
		case "forward":
			forward = true
		case "", "backward":
		default:
			f.fail(w, 400, "invalid direction")
			return
		}
		out, scanned, scannedBytes := f.evalLogs(expr, start, end, limit, forward)
		if f.alter != nil {
			out = f.alter(r, out)
		}
		res := make([]map[string]any, 0, len(out))
		for _, o := range out {
			vals := make([][2]string, 0, len(o.entries))
			for _, e := range o.entries {
				vals = append(vals, [2]string{strconv.FormatInt(e.ts, 10), e.line})
			}
			res = append(res, map[string]any{"stream": o.labels, "values": vals})
		}
		f.ok(w, "logs", map[string]any{"resultType": "streams", "result": res, "stats": fakeStats(scanned, scannedBytes)})
		return
	}
	step := time.Duration(0)
	if s := q.Get("step"); s != "" {
		if step, err = parseStep(s); err != nil {
			f.fail(w, 400, err.Error())
			return
		}
	} else {
		step = time.Duration(max((end-start)/250, int64(time.Second)))
	}
	if step <= 0 {
		f.fail(w, 400, "zero or negative query resolution step widths are not accepted. Try a positive integer")
		return
	}
	if (end-start)/int64(step) > 11000 {
		f.fail(w, 400, "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)")
		return
	}
	series, scanned, scannedBytes := f.evalMetric(expr, start, end, int64(step))
	res := make([]map[string]any, 0, len(series))
	for _, s := range series {
		vals := make([][2]any, 0, len(s.points))
		for _, p := range s.points {
			vals = append(vals, [2]any{json.Number(promTime(p.t)), strconv.FormatFloat(p.v, 'f', -1, 64)})
		}
		res = append(res, map[string]any{"metric": s.labels, "values": vals})
	}
	f.ok(w, "matrix", map[string]any{"resultType": "matrix", "result": res, "stats": fakeStats(scanned, scannedBytes)})
}

func (f *Loki) query(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	t, err := parseTime(q.Get("time"), time.Now())
	if err != nil {
		f.fail(w, 400, err.Error())
		return
	}
	expr, err := parseLogQL(q.Get("query"))
	if err != nil {
		f.fail(w, 400, err.Error())
		return
	}
	if expr.fn == "" {
		f.fail(w, 400, "log queries are not supported as an instant query type, please change your query to a range query type")
		return
	}
	series, scanned, scannedBytes := f.evalMetric(expr, t, t, 1)
	res := make([]map[string]any, 0, len(series))
	for _, s := range series {
		p := s.points[0]
		res = append(res, map[string]any{"metric": s.labels, "value": [2]any{json.Number(promTime(p.t)), strconv.FormatFloat(p.v, 'f', -1, 64)}})
	}
	f.ok(w, "vector", map[string]any{"resultType": "vector", "result": res, "stats": fakeStats(scanned, scannedBytes)})
}

func (f *Loki) series(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	start, err1 := parseTime(q.Get("start"), time.Now().Add(-time.Hour))
	end, err2 := parseTime(q.Get("end"), time.Now())
	if err1 != nil || err2 != nil {
		f.fail(w, 400, "bad start/end")
		return
	}
	if len(q["match[]"]) == 0 {
		f.fail(w, 400, "0 matchers provided")
		return
	}
	set := map[string]map[string]string{}
	for _, m := range q["match[]"] {
		expr, err := parseLogQL(m)
		if err != nil || expr.fn != "" || len(expr.stages) > 0 {
			f.fail(w, 400, fmt.Sprintf("invalid match[] %q", m))
			return
		}
		f.mu.Lock()
		f.sortLocked()
		for _, s := range f.streams {
			if expr.matches(s.labels) && len(s.window(start, end)) > 0 {
				set[s.key] = s.labels
			}
		}
		f.mu.Unlock()
	}
	out := make([]map[string]string, 0, len(set))
	for _, l := range set {
		out = append(out, l)
	}
	f.ok(w, "series", out)
}

func (f *Loki) labels(w http.ResponseWriter, r *http.Request) {
	var expr *fakeExpr
	if s := r.URL.Query().Get("query"); s != "" {
		var err error
		if expr, err = parseLogQL(s); err != nil {
			f.fail(w, 400, err.Error())
			return
		}
	}
	set := map[string]bool{}
	f.mu.Lock()
	for _, s := range f.streams {
		if expr == nil || expr.matches(s.labels) {
			for n := range s.labels {
				set[n] = true
			}
		}
	}
	f.mu.Unlock()
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	f.ok(w, "labels", out)
}

// promTime renders a step time as Loki does: seconds with millisecond precision.
func promTime(ns int64) string {
	ms := ns / 1e6
	if ns < 0 && ns%1e6 != 0 {
		ms--
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
}

func fakeStats(lines, bytes int64) map[string]any {
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
func (s *fakeStream) window(start, end int64) []fakeEntry {
	i := sort.Search(len(s.entries), func(i int) bool { return s.entries[i].ts >= start })
	j := sort.Search(len(s.entries), func(i int) bool { return s.entries[i].ts >= end })
	return s.entries[i:j]
}

type tagged struct {
	key    string
	labels map[string]string
	e      fakeEntry
	seq    int
}

// evalLogs answers a log query: matching lines in [start, end), the first
// `limit` in the requested direction across all result streams. Each stream
// contributes at most `limit` candidates, so a page costs O(limit), not O(window).
func (f *Loki) evalLogs(expr *fakeExpr, start, end int64, limit int, forward bool) ([]fakeOut, int64, int64) {
	f.mu.Lock()
	f.sortLocked()
	var all []tagged
	var scanned, scannedBytes int64
	seq := 0
	for _, s := range f.streams {
		if !expr.matches(s.labels) {
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
			scannedBytes += int64(len(e.line))
			ls, ok := expr.apply(s.labels, e.line)
			if !ok {
				continue
			}
			seq++
			all = append(all, tagged{labelsKey(ls), ls, e, seq})
			if taken++; taken >= limit {
				// Lines at the same instant as the last one taken may still be
				// needed to break ties the way the merge below does.
				last := e.ts
				for k := i + 1; k < len(w); k++ {
					e2 := w[k]
					if !forward {
						e2 = w[len(w)-1-k]
					}
					if e2.ts != last {
						break
					}
					if ls2, ok := expr.apply(s.labels, e2.line); ok {
						seq++
						all = append(all, tagged{labelsKey(ls2), ls2, e2, seq})
					}
				}
				break
			}
		}
	}
	f.mu.Unlock()
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.e.ts != b.e.ts {
			return (a.e.ts < b.e.ts) == forward
		}
		if a.key != b.key {
			return a.key < b.key
		}
		return a.seq < b.seq
	})
	if len(all) > limit {
		all = all[:limit]
	}
	byKey := map[string]*fakeOut{}
	var keys []string
	for _, t := range all {
		o := byKey[t.key]
		if o == nil {
			o = &fakeOut{labels: t.labels}
			byKey[t.key] = o
			keys = append(keys, t.key)
		}
		o.entries = append(o.entries, t.e)
	}
	sort.Strings(keys)
	out := make([]fakeOut, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out, scanned, scannedBytes
}

type fakePoint struct {
	t int64
	v float64
}

type fakeSeries struct {
	labels map[string]string
	points []fakePoint
}

// evalMetric evaluates a metric query at start, start+step, ... <= end.
func (f *Loki) evalMetric(expr *fakeExpr, start, end, step int64) ([]fakeSeries, int64, int64) {
	rng := int64(expr.rng)
	// Timestamps per output series of the range aggregation, sorted.
	f.mu.Lock()
	f.sortLocked()
	perSeries := map[string][]int64{}
	seriesLabels := map[string]map[string]string{}
	var scanned, scannedBytes int64
	for _, s := range f.streams {
		if !expr.matches(s.labels) {
			continue
		}
		for _, e := range s.window(start-rng, end+1) {
			scanned++
			scannedBytes += int64(len(e.line))
			ls, ok := expr.apply(s.labels, e.line)
			if !ok {
				continue
			}
			k := labelsKey(ls)
			perSeries[k] = append(perSeries[k], e.ts)
			seriesLabels[k] = ls
		}
	}
	f.mu.Unlock()
	type acc struct {
		labels map[string]string
		vals   map[int64]float64
	}
	groups := map[string]*acc{}
	for k, tss := range perSeries {
		sort.Slice(tss, func(i, j int) bool { return tss[i] < tss[j] })
		ls := seriesLabels[k]
		if expr.sum {
			g := map[string]string{}
			for _, n := range expr.by {
				if v := ls[n]; v != "" {
					g[n] = v
				}
			}
			ls = g
		}
		gk := labelsKey(ls)
		a := groups[gk]
		if a == nil {
			a = &acc{labels: ls, vals: map[int64]float64{}}
			groups[gk] = a
		}
		for t := start; t <= end; t += step {
			// (t-rng, t]
			lo := sort.Search(len(tss), func(i int) bool { return tss[i] > t-rng })
			hi := sort.Search(len(tss), func(i int) bool { return tss[i] > t })
			n := hi - lo
			if n == 0 {
				continue
			}
			v := float64(n)
			if expr.fn == "rate" {
				v /= time.Duration(rng).Seconds()
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
	sort.Slice(out, func(i, j int) bool { return labelsKey(out[i].labels) < labelsKey(out[j].labels) })
	return out, scanned, scannedBytes
}

// ---- the LogQL subset ----

type fakeMatcher struct {
	name, op, value string
	re              *regexp.Regexp
}

func (m fakeMatcher) match(v string) bool {
	switch m.op {
	case "=":
		return v == m.value
	case "!=":
		return v != m.value
	case "=~":
		return m.re.MatchString(v)
	default:
		return !m.re.MatchString(v)
	}
}

type fakeStage struct {
	op     string // |=, !=, |~, !~, json, label
	value  string
	re     *regexp.Regexp
	params map[string]string // json: label -> field
	filter []labelCmp        // label: comparisons joined by or/and
}

// labelCmp is one comparison of a label filter; join is "or" or "and" with
// the comparison before it (evaluated left to right, as the fake needs).
type labelCmp struct {
	join, name, op string
	str            string
	num            float64
	isNum          bool
	re             *regexp.Regexp
}

// eval applies a label filter: false drops the line; a value that is not a
// number sets __error__ (as Loki's LabelFilterErr) and keeps it.
func evalFilter(cmps []labelCmp, ls map[string]string) (keep bool, errLabel bool) {
	var result bool
	for i, c := range cmps {
		v, has := ls[c.name]
		var ok bool
		if c.isNum {
			if !has {
				ok = false
			} else if x, err := strconv.ParseFloat(v, 64); err != nil {
				errLabel, ok = true, true
			} else {
				switch c.op {
				case ">":
					ok = x > c.num
				case ">=":
					ok = x >= c.num
				case "<":
					ok = x < c.num
				case "<=":
					ok = x <= c.num
				case "==", "=":
					ok = x == c.num
				case "!=":
					ok = x != c.num
				}
			}
		} else {
			switch c.op {
			case "=", "==":
				ok = v == c.str
			case "!=":
				ok = v != c.str
			case "=~":
				ok = c.re.MatchString(v)
			case "!~":
				ok = !c.re.MatchString(v)
			}
		}
		switch {
		case i == 0:
			result = ok
		case c.join == "or":
			result = result || ok
		default:
			result = result && ok
		}
	}
	return result, errLabel
}

type fakeExpr struct {
	matchers []fakeMatcher
	stages   []fakeStage
	fn       string // "", count_over_time, rate
	rng      time.Duration
	sum      bool
	by       []string
}

func (e *fakeExpr) matches(ls map[string]string) bool {
	for _, m := range e.matchers {
		if !m.match(ls[m.name]) {
			return false
		}
	}
	return true
}

// apply runs the pipeline on one line: false if filtered out; the labels of the
// result (stream labels plus what | json extracted).
func (e *fakeExpr) apply(ls map[string]string, line string) (map[string]string, bool) {
	out := ls
	for _, s := range e.stages {
		switch s.op {
		case "|=":
			if !strings.Contains(line, s.value) {
				return nil, false
			}
		case "!=":
			if strings.Contains(line, s.value) {
				return nil, false
			}
		case "|~":
			if !s.re.MatchString(line) {
				return nil, false
			}
		case "!~":
			if s.re.MatchString(line) {
				return nil, false
			}
		case "json":
			out = jsonLabels(out, line, s.params)
		case "label":
			keep, errLabel := evalFilter(s.filter, out)
			if !keep {
				return nil, false
			}
			if errLabel {
				cp := make(map[string]string, len(out)+1)
				for k, v := range out {
					cp[k] = v
				}
				cp["__error__"] = "LabelFilterErr"
				out = cp
			}
		}
	}
	return out, true
}

var nonLabel = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// jsonLabels extracts JSON fields as Loki's | json does: nested objects
// flattened with "_", arrays skipped, names sanitized, a name taken by a stream
// label suffixed "_extracted", and __error__ on a line that is not JSON.
//
// With params (| json a="field"), only the named top-level fields are
// extracted, under the given label names.
func jsonLabels(ls map[string]string, line string, params map[string]string) map[string]string {
	out := make(map[string]string, len(ls)+8)
	for k, v := range ls {
		out[k] = v
	}
	var obj map[string]any
	d := json.NewDecoder(strings.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&obj); err != nil {
		out["__error__"] = "JSONParserErr"
		return out
	}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			name := nonLabel.ReplaceAllString(prefix+k, "_")
			switch x := v.(type) {
			case map[string]any:
				walk(name+"_", x)
				continue
			case []any:
				continue
			case string:
				v = x
			case json.Number:
				v = x.String()
			case bool:
				v = strconv.FormatBool(x)
			case nil:
				v = ""
			}
			if _, taken := ls[name]; taken {
				name += "_extracted"
			}
			out[name] = fmt.Sprint(v)
		}
	}
	if params != nil {
		for label, field := range params {
			if v, ok := obj[field]; ok {
				switch x := v.(type) {
				case map[string]any, []any:
					continue
				case nil:
					out[label] = ""
				default:
					out[label] = fmt.Sprint(x)
				}
			}
		}
		return out
	}
	walk("", obj)
	return out
}

var promDurationRE = regexp.MustCompile(`^(?:[0-9]+(?:ms|s|m|h|d|w|y))+$`)
var promUnitRE = regexp.MustCompile(`([0-9]+)(ms|s|m|h|d|w|y)`)

// promDuration parses a duration as Loki parses LogQL ranges (Prometheus'
// syntax: units ms, s, m, h, d, w, y; nothing below a millisecond).
func promDuration(s string) (time.Duration, error) {
	if !promDurationRE.MatchString(s) {
		return 0, fmt.Errorf("not a valid duration string: %q", s)
	}
	units := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour,
		"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "y": 365 * 24 * time.Hour}
	var d time.Duration
	for _, m := range promUnitRE.FindAllStringSubmatch(s, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		d += time.Duration(n) * units[m[2]]
	}
	return d, nil
}

type lexer struct {
	s   string
	pos int
}

type token struct {
	kind string // ident, string, punct, range, eof
	text string
	pos  int
}

func (l *lexer) next() (token, error) {
	for l.pos < len(l.s) && (l.s[l.pos] == ' ' || l.s[l.pos] == '\t' || l.s[l.pos] == '\n') {
		l.pos++
	}
	if l.pos >= len(l.s) {
		return token{kind: "eof", pos: l.pos}, nil
	}
	start := l.pos
	c := l.s[l.pos]
	switch {
	case c == '"':
		i := l.pos + 1
		for i < len(l.s) && l.s[i] != '"' {
			if l.s[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(l.s) {
			return token{}, parseErr(start, "literal not terminated")
		}
		v, err := strconv.Unquote(l.s[l.pos : i+1])
		if err != nil {
			return token{}, parseErr(start, err.Error())
		}
		l.pos = i + 1
		return token{"string", v, start}, nil
	case c == '`':
		i := strings.IndexByte(l.s[l.pos+1:], '`')
		if i < 0 {
			return token{}, parseErr(start, "literal not terminated")
		}
		v := l.s[l.pos+1 : l.pos+1+i]
		l.pos += i + 2
		return token{"string", v, start}, nil
	case c == '[':
		i := strings.IndexByte(l.s[l.pos:], ']')
		if i < 0 {
			return token{}, parseErr(start, "missing closing ']' in duration")
		}
		d, err := promDuration(strings.TrimSpace(l.s[l.pos+1 : l.pos+i]))
		if err != nil {
			return token{}, parseErr(start, err.Error())
		}
		l.pos += i + 1
		return token{"range", d.String(), start}, nil
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		i := l.pos
		for i < len(l.s) && (l.s[i] == '_' || l.s[i] >= 'a' && l.s[i] <= 'z' || l.s[i] >= 'A' && l.s[i] <= 'Z' || l.s[i] >= '0' && l.s[i] <= '9') {
			i++
		}
		l.pos = i
		return token{"ident", l.s[start:i], start}, nil
	}
	if c >= '0' && c <= '9' {
		i := l.pos
		for i < len(l.s) && (l.s[i] >= '0' && l.s[i] <= '9' || l.s[i] == '.') {
			i++
		}
		l.pos = i
		return token{"number", l.s[start:i], start}, nil
	}
	for _, p := range []string{"|=", "!=", "|~", "!~", "=~", ">=", "<=", "==", ">", "<", "{", "}", "(", ")", ",", "|", "="} {
		if strings.HasPrefix(l.s[l.pos:], p) {
			l.pos += len(p)
			return token{"punct", p, start}, nil
		}
	}
	return token{}, parseErr(start, fmt.Sprintf("syntax error: unexpected %q", string(c)))
}

func parseErr(pos int, msg string) error {
	return fmt.Errorf("parse error at line 1, col %d: %s", pos+1, msg)
}

type parser struct {
	lx  lexer
	tok token
}

func (p *parser) advance() error {
	t, err := p.lx.next()
	p.tok = t
	return err
}

func (p *parser) expect(kind, text string) error {
	if p.tok.kind != kind || (text != "" && p.tok.text != text) {
		what := p.tok.text
		if p.tok.kind == "eof" {
			what = "end of input"
		}
		want := text
		if want == "" {
			want = strings.ToUpper(kind)
		}
		return parseErr(p.tok.pos, fmt.Sprintf("syntax error: unexpected %s, expecting %s", what, want))
	}
	return p.advance()
}

// parseLogQL parses the supported subset.
func parseLogQL(q string) (*fakeExpr, error) {
	p := &parser{lx: lexer{s: q}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != "eof" {
		return nil, parseErr(p.tok.pos, fmt.Sprintf("syntax error: unexpected %s", p.tok.text))
	}
	return e, nil
}

func (p *parser) expr() (*fakeExpr, error) {
	if p.tok.kind == "ident" && p.tok.text == "sum" {
		if err := p.advance(); err != nil {
			return nil, err
		}
		var by []string
		var err error
		if p.tok.kind == "ident" && p.tok.text == "by" {
			if by, err = p.byClause(); err != nil {
				return nil, err
			}
		}
		if err := p.expect("punct", "("); err != nil {
			return nil, err
		}
		inner, err := p.expr()
		if err != nil {
			return nil, err
		}
		if inner.fn == "" || inner.sum {
			return nil, parseErr(p.tok.pos, "syntax error: sum needs a range aggregation")
		}
		if err := p.expect("punct", ")"); err != nil {
			return nil, err
		}
		if by == nil && p.tok.kind == "ident" && p.tok.text == "by" {
			if by, err = p.byClause(); err != nil {
				return nil, err
			}
		}
		inner.sum, inner.by = true, by
		return inner, nil
	}
	if p.tok.kind == "ident" && (p.tok.text == "count_over_time" || p.tok.text == "rate") {
		fn := p.tok.text
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := p.expect("punct", "("); err != nil {
			return nil, err
		}
		e, err := p.logExpr()
		if err != nil {
			return nil, err
		}
		if p.tok.kind != "range" {
			return nil, parseErr(p.tok.pos, "syntax error: unexpected "+p.tok.text+", expecting RANGE")
		}
		d, _ := time.ParseDuration(p.tok.text)
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := p.expect("punct", ")"); err != nil {
			return nil, err
		}
		e.fn, e.rng = fn, d
		return e, nil
	}
	return p.logExpr()
}

func (p *parser) byClause() ([]string, error) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := p.expect("punct", "("); err != nil {
		return nil, err
	}
	by := []string{}
	for p.tok.kind == "ident" {
		by = append(by, p.tok.text)
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == "punct" && p.tok.text == "," {
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
	}
	return by, p.expect("punct", ")")
}

func (p *parser) logExpr() (*fakeExpr, error) {
	e := &fakeExpr{}
	if err := p.expect("punct", "{"); err != nil {
		return nil, err
	}
	for {
		name := p.tok
		if err := p.expect("ident", ""); err != nil {
			return nil, err
		}
		op := p.tok
		if op.kind != "punct" || (op.text != "=" && op.text != "!=" && op.text != "=~" && op.text != "!~") {
			return nil, parseErr(op.pos, fmt.Sprintf("syntax error: unexpected %s, expecting = or != or =~ or !~", op.text))
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		val := p.tok
		if err := p.expect("string", ""); err != nil {
			return nil, err
		}
		m := fakeMatcher{name: name.text, op: op.text, value: val.text}
		if op.text == "=~" || op.text == "!~" {
			re, err := regexp.Compile("^(?:" + val.text + ")$")
			if err != nil {
				return nil, parseErr(val.pos, err.Error())
			}
			m.re = re
		}
		e.matchers = append(e.matchers, m)
		if p.tok.kind == "punct" && p.tok.text == "," {
			if err := p.advance(); err != nil {
				return nil, err
			}
			continue
		}
		if err := p.expect("punct", "}"); err != nil {
			return nil, err
		}
		break
	}
	nonEmpty := false
	for _, m := range e.matchers {
		if (m.op == "=" && m.value != "") || (m.op == "=~" && !m.re.MatchString("")) {
			nonEmpty = true
		}
	}
	if !nonEmpty {
		return nil, fmt.Errorf(`parse error : queries require at least one regexp or equality matcher that does not have an empty-compatible value. For instance, app=~".*" does not meet this requirement, but app=~".+" will`)
	}
	for p.tok.kind == "punct" {
		switch p.tok.text {
		case "|=", "!=", "|~", "!~":
			op := p.tok.text
			if err := p.advance(); err != nil {
				return nil, err
			}
			val := p.tok
			if err := p.expect("string", ""); err != nil {
				return nil, err
			}
			st := fakeStage{op: op, value: val.text}
			if op == "|~" || op == "!~" {
				re, err := regexp.Compile(val.text)
				if err != nil {
					return nil, parseErr(val.pos, err.Error())
				}
				st.re = re
			}
			e.stages = append(e.stages, st)
		case "|":
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.tok.kind != "ident" {
				return nil, parseErr(p.tok.pos, "syntax error: unexpected "+p.tok.text+", expecting json or a label filter (fake subset)")
			}
			if p.tok.text == "json" {
				if err := p.advance(); err != nil {
					return nil, err
				}
				st := fakeStage{op: "json"}
				for p.tok.kind == "ident" {
					name := p.tok.text
					if err := p.advance(); err != nil {
						return nil, err
					}
					if err := p.expect("punct", "="); err != nil {
						return nil, err
					}
					field := p.tok
					if err := p.expect("string", ""); err != nil {
						return nil, err
					}
					if st.params == nil {
						st.params = map[string]string{}
					}
					st.params[name] = field.text
					if p.tok.kind == "punct" && p.tok.text == "," {
						if err := p.advance(); err != nil {
							return nil, err
						}
					}
				}
				e.stages = append(e.stages, st)
				continue
			}
			st := fakeStage{op: "label"}
			join := ""
			for {
				name := p.tok
				if err := p.expect("ident", ""); err != nil {
					return nil, err
				}
				op := p.tok
				if op.kind != "punct" {
					return nil, parseErr(op.pos, "syntax error: unexpected "+op.text+", expecting a comparison")
				}
				if err := p.advance(); err != nil {
					return nil, err
				}
				cmp := labelCmp{join: join, name: name.text, op: op.text}
				switch p.tok.kind {
				case "number":
					x, err := strconv.ParseFloat(p.tok.text, 64)
					if err != nil {
						return nil, parseErr(p.tok.pos, err.Error())
					}
					cmp.num, cmp.isNum = x, true
				case "string":
					cmp.str = p.tok.text
					if op.text == "=~" || op.text == "!~" {
						re, err := regexp.Compile("^(?:" + p.tok.text + ")$")
						if err != nil {
							return nil, parseErr(p.tok.pos, err.Error())
						}
						cmp.re = re
					}
				default:
					return nil, parseErr(p.tok.pos, "syntax error: unexpected "+p.tok.text+", expecting a number or a string")
				}
				if err := p.advance(); err != nil {
					return nil, err
				}
				st.filter = append(st.filter, cmp)
				if p.tok.kind == "ident" && (p.tok.text == "or" || p.tok.text == "and") {
					join = p.tok.text
					if err := p.advance(); err != nil {
						return nil, err
					}
					continue
				}
				break
			}
			e.stages = append(e.stages, st)
			continue
		default:
			return e, nil
		}
	}
	return e, nil
}
