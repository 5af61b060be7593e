package loki

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/internal/logql"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

var t0 = time.Date(2026, 10, 3, 10, 0, 0, 0, time.UTC)

var (
	streamA = map[string]string{"job": "caddy", "host": "a"}
	streamB = map[string]string{"job": "caddy", "host": "b"}
)

// sleeper records the waits the client asked for instead of waiting.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeper) get() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// newTestClient builds a client for the fake with clock-free backoff: the waits
// are recorded, not slept (they stay randomly jittered: tests check bounds).
func newTestClient(t testing.TB, addr string, mod func(*Config)) (*Client, *sleeper) {
	t.Helper()
	cfg := Config{Addr: addr, Retries: 3}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	s := &sleeper{}
	c.retry.Sleep = s.sleep
	return c, s
}

// collector is a sink that records every entry as a multiset and checks that
// each stream arrives in time order and calls are never concurrent.
type collector struct {
	t       testing.TB
	busy    bool
	got     map[triple]int
	last    map[string]int64
	lines   int
	bytes   int64
	onEntry func(n int)
}

func newCollector(t testing.TB) *collector {
	return &collector{t: t, got: map[triple]int{}, last: map[string]int64{}}
}

func (c *collector) sink(e Entry) error {
	if c.busy {
		c.t.Error("sink called concurrently")
	}
	c.busy = true
	defer func() { c.busy = false }()
	ts := e.T.UnixNano()
	if last, ok := c.last[e.Labels]; ok && ts < last {
		c.t.Errorf("stream %s out of order: %s after %s", e.Labels, e.T, time.Unix(0, last).UTC())
	}
	c.last[e.Labels] = ts
	if e.Labels != logql.LabelsKey(e.Stream) {
		c.t.Errorf("Labels %s does not render Stream %v", e.Labels, e.Stream)
	}
	c.got[triple{e.Labels, ts, e.Line}]++
	c.lines++
	c.bytes += int64(len(e.Line))
	if c.onEntry != nil {
		c.onEntry(c.lines)
	}
	return nil
}

// triple is one line as a client receives it; maps of them count lines (multisets).
type triple struct {
	stream string
	ts     int64
	line   string
}

// expected is what a client that loses nothing receives for sel in [from, to).
func expected(f *lokitest.Loki, sel string, from, to time.Time) map[triple]int {
	out := map[triple]int{}
	f.Each(sel, from, to, func(stream string, e lokitest.Entry) { out[triple{stream, e.TS, e.Line}]++ })
	return out
}

// caddyLine is a Caddy-like JSON access log line of about 250 bytes.
func caddyLine(ts time.Time, ip, uri string, status int, seq int) string {
	return fmt.Sprintf(`{"level":"info","ts":%.6f,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":%q,"method":"GET","host":"wiki.example.org","uri":%q,"headers":{"User-Agent":["Mozilla/5.0"]}},"status":%d,"duration":0.%03d,"size":%d}`,
		float64(ts.UnixNano())/1e9, ip, uri, status, seq%1000, 1000+seq%5000)
}

// diffMultiset reports lost and duplicated triples.
func diffMultiset(t testing.TB, want, got map[triple]int) {
	t.Helper()
	lost, dup := 0, 0
	var examples []string
	for k, n := range want {
		if got[k] < n {
			lost += n - got[k]
			if len(examples) < 3 {
				examples = append(examples, fmt.Sprintf("lost %s %d %.40q", k.stream, k.ts, k.line))
			}
		}
	}
	for k, n := range got {
		if n > want[k] {
			dup += n - want[k]
			if len(examples) < 6 {
				examples = append(examples, fmt.Sprintf("extra %s %d %.40q", k.stream, k.ts, k.line))
			}
		}
	}
	if lost+dup > 0 {
		t.Errorf("multiset differs: %d lost, %d duplicated or unexpected; %v", lost, dup, examples)
	}
}

// loadRuns fills two streams over 3h with runs of lines sharing one nanosecond,
// interleaved across the streams, identical lines in both streams at the same
// instant, and lines exactly on the sub-range boundaries.
func loadRuns(f *lokitest.Loki, window time.Duration) int {
	n := 0
	i := 0
	for off := time.Duration(0); off < window; off += 13*time.Second + 7*time.Millisecond {
		ts := t0.Add(off)
		runA, runB := 1+i%5, 1+(i*3)%5 // up to 6 lines per stream per instant
		for k := 0; k < runA; k++ {
			f.Push(streamA, ts, fmt.Sprintf("GET /a/%d/%d", i, k))
			n++
		}
		for k := 0; k < runB; k++ {
			f.Push(streamB, ts, fmt.Sprintf("GET /b/%d/%d", i, k))
			n++
		}
		// The same text in both streams at the same instant: two lines, not one.
		f.Push(streamA, ts, "GET / 200")
		f.Push(streamB, ts, "GET / 200")
		n += 2
		i++
	}
	for h := time.Duration(0); h <= window; h += time.Hour {
		f.Push(streamA, t0.Add(h), "boundary line")
		f.Push(streamB, t0.Add(h).Add(-time.Nanosecond), "just before the boundary")
		n += 2
	}
	return n
}

func TestQueryRangePageBoundaries(t *testing.T) {
	f := lokitest.New(t)
	loadRuns(f, 3*time.Hour)
	sel := `{job="caddy"}`
	from, to := t0, t0.Add(3*time.Hour)
	want := expected(f, sel, from, to)
	tests := []struct {
		name     string
		limit    int
		parallel int
		splitBy  time.Duration
	}{
		{"limit 3: runs longer than a page", 3, 4, time.Hour},
		{"limit 6: runs as long as a page", 6, 4, time.Hour},
		{"limit 7 one sub-range", 7, 1, 6 * time.Hour},
		{"limit 7 hourly x4", 7, 4, time.Hour},
		{"limit 8", 8, 2, time.Hour},
		{"limit 13 10m split", 13, 4, 10 * time.Minute},
		{"limit 5000", 5000, 4, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestClient(t, f.URL(), func(cfg *Config) {
				cfg.Limit, cfg.Parallel, cfg.SplitBy = tt.limit, tt.parallel, tt.splitBy
			})
			col := newCollector(t)
			res, err := c.QueryRange(context.Background(), sel, from, to, col.sink)
			if err != nil {
				t.Fatal(err)
			}
			diffMultiset(t, want, col.got)
			if !res.Complete() {
				t.Errorf("result incomplete: %+v", res.Notes)
			}
			if res.Lines() != int64(col.lines) || res.Bytes() != col.bytes {
				t.Errorf("result counts %d lines %d bytes, sink saw %d and %d", res.Lines(), res.Bytes(), col.lines, col.bytes)
			}
			if len(res.Notes) != 0 {
				t.Errorf("notes on a clean pull: %v", res.Notes)
			}
		})
	}
}

func TestQueryRangeRunLongerThanLimit(t *testing.T) {
	tests := []struct {
		name       string
		serverMax  int
		wantLines  int
		complete   bool
		wantInNote string
	}{
		{"fetched alone with a larger limit", 0, 7, true, ""},
		{"server maximum reached: reported", 4, 5, false, "share the timestamp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := lokitest.New(t)
			f.SetMaxEntries(tt.serverMax)
			for k := 0; k < 6; k++ {
				f.Push(streamA, t0.Add(time.Second), fmt.Sprintf("same instant %d", k))
			}
			f.Push(streamA, t0.Add(2*time.Second), "later")
			c, _ := newTestClient(t, f.URL(), func(cfg *Config) { cfg.Limit = 4 })
			col := newCollector(t)
			res, err := c.QueryRange(context.Background(), `{job="caddy"}`, t0, t0.Add(time.Minute), col.sink)
			if err != nil {
				t.Fatal(err)
			}
			if res.Complete() != tt.complete || col.lines != tt.wantLines {
				t.Errorf("complete=%v lines=%d, want %v and %d", res.Complete(), col.lines, tt.complete, tt.wantLines)
			}
			if tt.wantInNote == "" && len(res.Notes) != 0 ||
				tt.wantInNote != "" && (len(res.Notes) != 1 || res.Notes[0].Severity != "error" || !strings.Contains(res.Notes[0].Message, tt.wantInNote)) {
				t.Errorf("notes = %+v", res.Notes)
			}
		})
	}
}

func TestQueryRangeJSONPipeline(t *testing.T) {
	f := lokitest.New(t)
	for i := 0; i < 300; i++ {
		ts := t0.Add(time.Duration(i/3) * time.Second) // three lines per instant
		f.Push(streamA, ts, caddyLine(ts, fmt.Sprintf("10.0.0.%d", i%7), fmt.Sprintf("/p/%d", i), 200+i%3, i))
		f.Push(streamB, ts, caddyLine(ts, fmt.Sprintf("10.0.1.%d", i%5), fmt.Sprintf("/q/%d", i), 503, i))
	}
	f.Push(streamA, t0, "not json at all")
	q := `{job="caddy"} | json |= "GET"`
	c, _ := newTestClient(t, f.URL(), func(cfg *Config) { cfg.Limit = 10 })
	col := newCollector(t)
	res, err := c.QueryRange(context.Background(), q, t0, t0.Add(10*time.Minute), col.sink)
	if err != nil {
		t.Fatal(err)
	}
	diffMultiset(t, expected(f, q, t0, t0.Add(10*time.Minute)), col.got)
	if !res.Complete() || res.Streams() != 2 {
		t.Errorf("complete=%v streams=%d (parsed labels must not split index streams)", res.Complete(), res.Streams())
	}
}

func TestQueryRangeStreamsResponse(t *testing.T) {
	f := lokitest.New(t)
	f.Push(streamA, t0.Add(time.Second), "one")
	f.Push(streamB, t0.Add(2*time.Second), "two")
	f.Push(map[string]string{"job": "other"}, t0.Add(time.Second), "not selected")
	f.Push(streamA, t0.Add(time.Hour), "at end: excluded (end is exclusive)")
	f.Push(streamA, t0, "at start: included")
	c, _ := newTestClient(t, f.URL(), nil)
	var got []Entry
	res, err := c.QueryRange(context.Background(), `{job="caddy"}`, t0, t0.Add(time.Hour), func(e Entry) error {
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{host="a", job="caddy"} 2026-10-03T10:00:00Z at start: included`,
		`{host="a", job="caddy"} 2026-10-03T10:00:01Z one`,
		`{host="b", job="caddy"} 2026-10-03T10:00:02Z two`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d: %v", len(got), len(want), got)
	}
	for i, e := range got {
		if s := e.Labels + " " + e.T.Format(time.RFC3339Nano) + " " + e.Line; s != want[i] {
			t.Errorf("entry %d = %s, want %s", i, s, want[i])
		}
	}
	if res.ServerBytesProcessed == 0 {
		t.Error("stats block not read")
	}
	rec := res.Record("access/loki.log")
	if rec.Source != "loki" || rec.Lines != 3 || rec.Series != 2 || !rec.Complete || rec.File != "access/loki.log" {
		t.Errorf("record = %+v", rec)
	}
}

func TestQueryMatrix(t *testing.T) {
	f := lokitest.New(t)
	for i := 0; i < 600; i++ {
		ts := t0.Add(time.Duration(i) * 500 * time.Millisecond) // 120 per minute per stream
		f.Push(streamA, ts, fmt.Sprintf("a %d", i))
		if i%2 == 0 {
			f.Push(streamB, ts, fmt.Sprintf("b %d", i))
		}
	}
	c, _ := newTestClient(t, f.URL(), nil)
	ctx := context.Background()
	tests := []struct {
		name  string
		query string
		want  map[string]float64 // labels -> value at t0+2m
	}{
		{"count_over_time per stream", `count_over_time({job="caddy"}[1m])`,
			map[string]float64{`{host="a", job="caddy"}`: 120, `{host="b", job="caddy"}`: 60}},
		{"sum by host", `sum by (host) (count_over_time({job="caddy"}[1m]))`,
			map[string]float64{`{host="a"}`: 120, `{host="b"}`: 60}},
		{"sum", `sum(count_over_time({job="caddy"}[1m]))`, map[string]float64{`{}`: 180}},
		{"rate", `sum by (job) (rate({job="caddy"}[1m]))`, map[string]float64{`{job="caddy"}`: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := c.QueryMatrix(ctx, tt.query, t0.Add(time.Minute), t0.Add(5*time.Minute), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != len(tt.want) {
				t.Fatalf("got %d series, want %d: %+v", len(ms), len(tt.want), ms)
			}
			for _, s := range ms {
				var at2 *Point
				for i := range s.Points {
					if s.Points[i].T.Equal(t0.Add(2 * time.Minute)) {
						at2 = &s.Points[i]
					}
				}
				if at2 == nil || at2.V != tt.want[s.Labels] {
					t.Errorf("%s at +2m = %v, want %v (points %v)", s.Labels, at2, tt.want[s.Labels], s.Points)
				}
			}
		})
	}
	if _, err := c.QueryMatrix(ctx, `{job="caddy"}`, t0, t0.Add(time.Minute), time.Minute); err == nil || !strings.Contains(err.Error(), "want a matrix") {
		t.Errorf("log query through QueryMatrix: err = %v", err)
	}
	// More steps than one call may ask for: the client splits, the points join up.
	ms, err := c.QueryMatrix(ctx, `sum(count_over_time({job="caddy"}[1m]))`, t0, t0.Add(5*time.Minute), 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || len(ms[0].Points) != 30001 {
		t.Errorf("split matrix: %d series, %d points", len(ms), len(ms[0].Points))
	}
}

func TestLabelsAndSeries(t *testing.T) {
	f := lokitest.New(t)
	f.Push(streamA, t0, "x")
	f.Push(streamB, t0, "y")
	f.Push(map[string]string{"job": "php", "pool": "www"}, t0, "z")
	c, _ := newTestClient(t, f.URL(), nil)
	ctx := context.Background()
	names, err := c.Labels(ctx, t0, t0.Add(time.Hour), "")
	if err != nil || strings.Join(names, ",") != "host,job,pool" {
		t.Errorf("Labels = %v, %v", names, err)
	}
	series, err := c.Series(ctx, t0, t0.Add(time.Hour), `{job="caddy"}`)
	if err != nil || len(series) != 2 || logql.LabelsKey(series[0]) != `{host="a", job="caddy"}` {
		t.Errorf("Series = %v, %v", series, err)
	}
}

func TestBadQueryIsNotRetried(t *testing.T) {
	f := lokitest.New(t)
	f.Push(streamA, t0, "x")
	tests := []struct {
		name, query, lokiText string
	}{
		{"syntax", `{job="caddy"} |= `, "parse error at line 1"},
		{"empty-compatible matcher", `{job=~".*"}`, "queries require at least one regexp or equality matcher"},
		{"bad regexp", `{job=~"("}`, "parse error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, s := newTestClient(t, f.URL(), nil)
			f.ResetStats()
			_, err := c.QueryMatrix(context.Background(), "count_over_time("+tt.query+"[1m])", t0, t0.Add(time.Minute), time.Minute)
			if err == nil {
				t.Fatal("no error")
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.StatusCode != 400 {
				t.Errorf("error %v is not a 400 APIError", err)
			}
			// Loki's reason first, then the query, once.
			if !strings.Contains(err.Error(), tt.lokiText) || !strings.HasSuffix(err.Error(), "; loki query: count_over_time("+tt.query+"[1m])") {
				t.Errorf("error %q lacks Loki's text or the query", err)
			}
			if calls, _ := f.Stats(); calls["error"] != 1 || len(s.get()) != 0 {
				t.Errorf("400 retried: %v calls, waits %v", calls, s.get())
			}
		})
	}
}

func TestRetryAfter429(t *testing.T) {
	tests := []struct {
		name   string
		header func() string
		want   time.Duration
	}{
		{"seconds", func() string { return "7" }, 7 * time.Second},
		{"http date", func() string { return time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat) }, 30 * time.Second},
		// Without the header the first backoff wait is drawn from [0, 500ms].
		{"absent: backoff", func() string { return "" }, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := lokitest.New(t)
			f.Push(streamA, t0, "x")
			f.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
				if n == 1 {
					if h := tt.header(); h != "" {
						w.Header().Set("Retry-After", h)
					}
					f.Fail(w, http.StatusTooManyRequests, "too many outstanding requests")
					return true
				}
				return false
			})
			c, s := newTestClient(t, f.URL(), nil)
			col := newCollector(t)
			res, err := c.QueryRange(context.Background(), `{job="caddy"}`, t0, t0.Add(time.Minute), col.sink)
			if err != nil || !res.Complete() || col.lines != 1 {
				t.Fatalf("err=%v complete=%v lines=%d", err, res.Complete(), col.lines)
			}
			w := s.get()
			if len(w) != 1 || w[0] < tt.want-2*time.Second && tt.want > time.Second || w[0] > tt.want {
				t.Errorf("waits %v, want one of about %v", w, tt.want)
			}
		})
	}
}

func TestRetry5xxUntilExhausted(t *testing.T) {
	f := lokitest.New(t)
	for h := 0; h < 3; h++ {
		for i := 0; i < 10; i++ {
			f.Push(streamA, t0.Add(time.Duration(h)*time.Hour+time.Duration(i)*time.Minute), fmt.Sprintf("h%d line %d", h, i))
		}
	}
	second := t0.Add(time.Hour).UnixNano()
	f.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
		// Every request about the second hour fails.
		if r.URL.Query().Get("start") == fmt.Sprint(second) {
			f.Fail(w, http.StatusBadGateway, "upstream connect error")
			return true
		}
		return false
	})
	c, s := newTestClient(t, f.URL(), func(cfg *Config) { cfg.Retries = 3 })
	col := newCollector(t)
	res, err := c.QueryRange(context.Background(), `{job="caddy"}`, t0, t0.Add(3*time.Hour), col.sink)
	if err == nil {
		t.Fatal("no error although a sub-range failed")
	}
	for _, want := range []string{"loki query", "1 of 3 sub-ranges failed", "502", "upstream connect error", "after 4 attempts"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if res.Complete() || !res.SubRanges[0].Complete || res.SubRanges[1].Complete || !res.SubRanges[2].Complete {
		t.Errorf("sub-range completeness %v %v %v", res.SubRanges[0].Complete, res.SubRanges[1].Complete, res.SubRanges[2].Complete)
	}
	if col.lines != 20 {
		t.Errorf("delivered %d lines, want the 20 of the hours that worked", col.lines)
	}
	if len(res.Notes) != 1 || res.Notes[0].Severity != "error" || res.Notes[0].Source != "loki" {
		t.Errorf("notes = %+v", res.Notes)
	}
	// Full jitter: each wait is drawn below a cap that doubles from 500ms.
	waits := s.get()
	if len(waits) != 3 {
		t.Fatalf("backoff waits %v, want 3", waits)
	}
	for i, w := range waits {
		if limit := retryBase << i; w < 0 || w > limit {
			t.Errorf("wait %d = %s, outside [0, %s]", i+1, w, limit)
		}
	}
}

func TestTimeoutIsRetried(t *testing.T) {
	f := lokitest.New(t)
	f.Push(streamA, t0, "x")
	var hung bool
	f.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
		if strings.HasSuffix(r.URL.Path, "query_range") && !hung {
			hung = true
			<-r.Context().Done() // hang until the client's per-request timeout
			return true
		}
		return false
	})
	c, s := newTestClient(t, f.URL(), func(cfg *Config) { cfg.Timeout = 100 * time.Millisecond })
	col := newCollector(t)
	res, err := c.QueryRange(context.Background(), `{job="caddy"}`, t0, t0.Add(time.Minute), col.sink)
	if err != nil || !res.Complete() || col.lines != 1 || len(s.get()) != 1 {
		t.Errorf("err=%v complete=%v lines=%d waits=%v", err, res.Complete(), col.lines, s.get())
	}
}

func TestMaxEntriesLimitLowered(t *testing.T) {
	f := lokitest.New(t)
	f.SetMaxEntries(1000)
	for i := 0; i < 3500; i++ {
		f.Push(streamA, t0.Add(time.Duration(i)*time.Millisecond), fmt.Sprintf("line %d", i))
	}
	c, s := newTestClient(t, f.URL(), func(cfg *Config) { cfg.Limit = 5000 })
	col := newCollector(t)
	res, err := c.QueryRange(context.Background(), `{job="caddy"}`, t0, t0.Add(time.Minute), col.sink)
	if err != nil || !res.Complete() || col.lines != 3500 {
		t.Fatalf("err=%v complete=%v lines=%d", err, res.Complete(), col.lines)
	}
	if c.Limit() != 1000 || res.Limit != 1000 || len(res.LimitChanges) != 1 {
		t.Errorf("limit %d/%d, changes %v", c.Limit(), res.Limit, res.LimitChanges)
	}
	if len(res.Notes) != 1 || res.Notes[0].Severity != "info" || !strings.Contains(res.Notes[0].Message, "from 5000 to 1000") ||
		!strings.Contains(res.Notes[0].Message, "max_entries_limit_per_query (5000 > 1000)") {
		t.Errorf("notes = %+v", res.Notes)
	}
	if len(s.get()) != 0 {
		t.Errorf("limit error waited %v: it is not a retry", s.get())
	}
}

func TestSinkErrorStops(t *testing.T) {
	f := lokitest.New(t)
	loadRuns(f, time.Hour)
	c, _ := newTestClient(t, f.URL(), func(cfg *Config) { cfg.Limit = 10; cfg.SplitBy = time.Minute })
	boom := errors.New("disk full")
	n := 0
	res, err := c.QueryRange(context.Background(), `{job="caddy"}`, t0, t0.Add(time.Hour), func(Entry) error {
		n++
		if n == 25 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || res.Complete() || res.Lines() != 24 {
		t.Errorf("err=%v complete=%v lines=%d", err, res.Complete(), res.Lines())
	}
}

// TestNaivePagingLosesLines shows that the test data catches the logcli way of
// paging (grafana/loki#17270): all streams in one query, the next page from the
// page's last timestamp, duplicates at that timestamp dropped by (time, line)
// whatever their stream. Identical lines of two streams at one instant are then
// taken for duplicates when a page edge falls between them.
func TestNaivePagingLosesLines(t *testing.T) {
	f := lokitest.New(t)
	loadRuns(f, time.Hour)
	c, _ := newTestClient(t, f.URL(), nil)
	want := expected(f, `{job="caddy"}`, t0, t0.Add(time.Hour))
	got := map[triple]int{}
	start, end := t0, t0.Add(time.Hour)
	type tl struct {
		ts   int64
		line string
	}
	var lastPage map[tl]bool
	for pages := 0; pages < 100000; pages++ {
		// 20 > the longest run at one instant (6 + 6 lines), so it does progress.
		streams, _, err := c.logPage(context.Background(), `{job="caddy"}`, start, end, 20, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		var maxTs int64
		for _, s := range streams {
			vals, err := flatten([]streamResult{s})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				n++
				maxTs = max(maxTs, v.ts)
				if lastPage[tl{v.ts, v.line}] {
					continue
				}
				got[triple{logql.LabelsKey(s.Stream), v.ts, v.line}]++
			}
		}
		if n < 20 {
			break
		}
		if maxTs == start.UnixNano() {
			t.Fatal("naive pager stuck")
		}
		lastPage = map[tl]bool{}
		all, _ := flatten(streams)
		for _, v := range all {
			if v.ts == maxTs {
				lastPage[tl{v.ts, v.line}] = true
			}
		}
		start = time.Unix(0, maxTs)
	}
	lost := 0
	for k, n := range want {
		if got[k] < n {
			lost += n - got[k]
		}
	}
	if lost == 0 {
		t.Error("naive all-streams paging lost nothing: the data does not exercise page edges")
	}
	t.Logf("naive paging lost %d of %d lines", lost, len(want))
}

func TestBrokenAnswers(t *testing.T) {
	tests := []struct {
		name      string
		answer    func(w http.ResponseWriter)
		wantErr   string // "" when the retry succeeds
		wantCalls int
	}{
		{"body cut short, then fine", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "1000")
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"streams","result":[{"stream":{"job":"caddy"},"values":[["1`)
		}, "", 2},
		{"not JSON: not retried", func(w http.ResponseWriter) {
			fmt.Fprint(w, `<html>proxy login</html>`)
		}, "reading response", 1},
		{"status error: not retried", func(w http.ResponseWriter) {
			fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"something odd"}`)
		}, "something odd", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := lokitest.New(t)
			f.Push(streamA, t0, "x")
			calls := 0
			f.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
				if !strings.HasSuffix(r.URL.Path, "query_range") {
					return false
				}
				if calls++; calls == 1 {
					tt.answer(w)
					return true
				}
				return false
			})
			c, _ := newTestClient(t, f.URL(), nil)
			col := newCollector(t)
			_, err := c.QueryRange(context.Background(), `{job="caddy"}`, t0, t0.Add(time.Minute), col.sink)
			if tt.wantErr == "" && (err != nil || col.lines != 1) || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, lines %d; want error %q", err, col.lines, tt.wantErr)
			}
			if calls != tt.wantCalls {
				t.Errorf("%d query_range calls, want %d", calls, tt.wantCalls)
			}
		})
	}
}
