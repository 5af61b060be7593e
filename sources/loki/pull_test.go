package loki

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/internal/logql"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

func TestPullComplete(t *testing.T) {
	f := lokitest.New(t)
	loadRuns(f, 3*time.Hour)
	var progress []Progress
	c, _ := newTestClient(t, f.URL(), func(cfg *Config) {
		cfg.Limit = 50
		cfg.Progress = func(p Progress) { progress = append(progress, p) }
	})
	col := newCollector(t)
	res, err := c.Pull(context.Background(), `{job="caddy"}`, "", t0, t0.Add(3*time.Hour), col.sink)
	if err != nil {
		t.Fatal(err)
	}
	diffMultiset(t, expected(f, `{job="caddy"}`, t0, t0.Add(3*time.Hour)), col.got)
	if !res.Complete() || len(res.Notes) != 0 || len(res.SubRanges) != 3 {
		t.Fatalf("complete=%v notes=%v sub-ranges=%d", res.Complete(), res.Notes, len(res.SubRanges))
	}
	for _, s := range res.SubRanges {
		if fmt.Sprint(s.Expected) != fmt.Sprint(s.Got) || s.CountRequests != 1 {
			t.Errorf("[%s, %s): expected %v got %v, %d count requests", s.From, s.To, s.Expected, s.Got, s.CountRequests)
		}
	}
	last := progress[len(progress)-1]
	if last.Lines != res.Lines() || last.SubRangesDone != 3 || last.SubRangesTotal != 3 || last.Requests != int64(res.Requests()) {
		t.Errorf("last progress %+v; result %d lines %d requests", last, res.Lines(), res.Requests())
	}
}

func TestPullDetectsMismatch(t *testing.T) {
	second := t0.Add(time.Hour)
	tests := []struct {
		name     string
		setup    func(f *lokitest.Loki)
		severity string
		inNote   string
		subRange int
	}{
		{
			name: "a page silently drops a line",
			setup: func(f *lokitest.Loki) {
				var dropped atomic.Bool
				f.SetAlter(func(r *http.Request, out []lokitest.Stream) []lokitest.Stream {
					start, _ := strconv.ParseInt(r.URL.Query().Get("start"), 10, 64) // the client sends nanoseconds
					if start < second.UnixNano() || start >= second.Add(time.Hour).UnixNano() || dropped.Load() {
						return out
					}
					for i := range out {
						if out[i].Labels["host"] == "b" && len(out[i].Entries) > 1 {
							dropped.Store(true)
							out[i].Entries = append(out[i].Entries[:1:1], out[i].Entries[2:]...)
							break
						}
					}
					return out
				})
			},
			severity: "error", inNote: "missing", subRange: 1,
		},
		{
			name: "lines ingested between count and pull, recount fails",
			setup: func(f *lokitest.Loki) {
				var pushed atomic.Bool
				var counts atomic.Int32
				f.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
					if strings.HasSuffix(r.URL.Path, "query_range") && r.URL.Query().Get("start") == fmt.Sprint(second.UnixNano()) && !pushed.Swap(true) {
						f.Push(streamA, second.Add(time.Minute), "late arrival")
					}
					if r.URL.Path == "/loki/api/v1/query" && r.URL.Query().Get("time") == fmt.Sprint(second.Add(time.Hour).UnixNano()-1) && counts.Add(1) > 1 {
						f.Fail(w, 503, "ingester unavailable")
						return true
					}
					return false
				})
			},
			severity: "warning", inNote: "still being ingested", subRange: 1,
		},
		{
			name: "count query fails",
			setup: func(f *lokitest.Loki) {
				f.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
					if r.URL.Path == "/loki/api/v1/query" && r.URL.Query().Get("time") == fmt.Sprint(second.Add(time.Hour).UnixNano()-1) {
						f.Fail(w, 500, "internal error")
						return true
					}
					return false
				})
			},
			severity: "warning", inNote: "unverified", subRange: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := lokitest.New(t)
			loadRuns(f, 3*time.Hour)
			tt.setup(f)
			c, _ := newTestClient(t, f.URL(), func(cfg *Config) { cfg.Limit = 40 })
			col := newCollector(t)
			res, err := c.Pull(context.Background(), `{job="caddy"}`, "", t0, t0.Add(3*time.Hour), col.sink)
			if err != nil {
				t.Fatalf("a mismatch is not a request failure: %v", err)
			}
			if res.Complete() {
				t.Fatal("mismatch not detected")
			}
			for i, s := range res.SubRanges {
				if s.Complete != (i != tt.subRange) {
					t.Errorf("sub-range %d complete=%v (%v)", i, s.Complete, s.Problems)
				}
			}
			if len(res.Notes) != 1 || string(res.Notes[0].Severity) != tt.severity || res.Notes[0].Source != "loki" ||
				!strings.Contains(res.Notes[0].Message, tt.inNote) {
				t.Errorf("notes = %+v", res.Notes)
			}
			if rec := res.Record("access/x.log"); rec.Complete {
				t.Error("bundle record says complete")
			}
		})
	}
}

func TestPullRecountsLateLines(t *testing.T) {
	f := lokitest.New(t)
	loadRuns(f, time.Hour)
	var pushed atomic.Bool
	f.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
		if strings.HasSuffix(r.URL.Path, "query_range") && !pushed.Swap(true) {
			f.Push(streamA, t0.Add(time.Minute), "late arrival") // after the count, before the pull
		}
		return false
	})
	c, _ := newTestClient(t, f.URL(), nil)
	col := newCollector(t)
	res, err := c.Pull(context.Background(), `{job="caddy"}`, "", t0, t0.Add(time.Hour), col.sink)
	if err != nil || !res.Complete() {
		t.Fatalf("err=%v notes=%v", err, res.Notes)
	}
	diffMultiset(t, expected(f, `{job="caddy"}`, t0, t0.Add(time.Hour)), col.got)
	if res.SubRanges[0].CountRequests != 2 {
		t.Errorf("%d count requests, want a recount", res.SubRanges[0].CountRequests)
	}
}

func TestMinuteCounts(t *testing.T) {
	f := lokitest.New(t)
	want := map[string][]int64{`{host="a", job="caddy"}`: make([]int64, 10), `{host="b", job="caddy"}`: make([]int64, 10)}
	add := func(s map[string]string, ts time.Time, line string) {
		f.Push(s, ts, line)
		if m := int(ts.Sub(t0) / time.Minute); m >= 0 && m < 10 {
			want[logql.LabelsKey(s)][m]++
		}
	}
	for m := 0; m < 10; m++ {
		base := t0.Add(time.Duration(m) * time.Minute)
		add(streamA, base, "exactly on the minute")                            // belongs to minute m
		add(streamA, base.Add(time.Minute-time.Nanosecond), "last nanosecond") // still minute m
		add(streamB, base.Add(17*time.Second), fmt.Sprintf("b %d", m))         //
		for k := 0; k < m; k++ {                                               // a ramp
			add(streamA, base.Add(time.Duration(k)*time.Second), fmt.Sprintf("a %d %d", m, k))
		}
	}
	f.Push(streamA, t0.Add(10*time.Minute), "first line after the window")
	c, _ := newTestClient(t, f.URL(), nil)
	mc, err := c.MinuteCounts(context.Background(), `{job="caddy"}`, t0, t0.Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if mc.Minutes() != 10 || len(mc.Streams) != 2 {
		t.Fatalf("%d minutes, %d streams", mc.Minutes(), len(mc.Streams))
	}
	for _, s := range mc.Streams {
		if fmt.Sprint(s.Counts) != fmt.Sprint(want[s.Labels]) {
			t.Errorf("%s: counts %v, want %v", s.Labels, s.Counts, want[s.Labels])
		}
	}
	if mc.Requests != 2 || !strings.Contains(mc.Query, "count_over_time") || mc.Record("").Source != "loki" {
		t.Errorf("requests %d query %q", mc.Requests, mc.Query)
	}
}

// load24h fills 24 hours of two Caddy-like streams: about 10 lines a minute each,
// and a 20-minute crawler burst at 400 a minute each from 14:00.
func load24h(f *lokitest.Loki, day time.Time) (burstFrom, burstTo time.Time) {
	burstFrom, burstTo = day.Add(14*time.Hour), day.Add(14*time.Hour+20*time.Minute)
	seed := uint64(42)
	rnd := func(n int64) int64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int64(seed>>33) % n
	}
	seq := 0
	for m := 0; m < 24*60; m++ {
		base := day.Add(time.Duration(m) * time.Minute)
		per := 10
		if !base.Before(burstFrom) && base.Before(burstTo) {
			per = 400
		}
		for _, s := range []map[string]string{streamA, streamB} {
			for k := 0; k < per; k++ {
				ts := base.Add(time.Duration(rnd(int64(time.Minute))))
				if k == 0 {
					ts = base // one line exactly on each minute
				}
				seq++
				f.Push(s, ts, caddyLine(ts, fmt.Sprintf("10.%d.%d.%d", rnd(256), rnd(256), rnd(256)), fmt.Sprintf("/w/index.php?title=Special:Search&search=%d", seq), 200, seq))
			}
		}
	}
	return burstFrom, burstTo
}

// phaseCost is what one phase cost in the 24 h tests.
type phaseCost struct {
	phase     string
	requests  int
	wireBytes int64
	lineBytes int64
	lines     int64
}

// pushdown runs the two-phase pull on [from, to): per-minute counts inside
// Loki, then raw lines only for minutes above 3x the window's median.
func pushdown(t *testing.T, c *Client, from, to time.Time) (flagged []time.Time, counts, raw phaseCost, got map[triple]int) {
	t.Helper()
	ctx := context.Background()
	mc, err := c.MinuteCounts(ctx, `{job="caddy"}`, from, to)
	if err != nil {
		t.Fatal(err)
	}
	totals := mc.Totals()
	sorted := append([]int64(nil), totals...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	median := sorted[len(sorted)/2]
	for i, n := range totals {
		if n > 3*median {
			flagged = append(flagged, mc.Minute(i))
		}
	}
	var lines int64
	for _, n := range totals {
		lines += n
	}
	counts = phaseCost{"pushdown counts (MinuteCounts)", mc.Requests, mc.WireBytes, 0, lines}
	col := newCollector(t)
	res, err := c.PullMinutes(ctx, `{job="caddy"}`, flagged, nil, col.sink)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete() {
		t.Fatalf("PullMinutes incomplete: %v", res.Notes)
	}
	raw = phaseCost{fmt.Sprintf("raw lines, %d flagged minutes (PullMinutes)", len(flagged)), res.Requests(), res.WireBytes(), res.Bytes(), res.Lines()}
	return flagged, counts, raw, col.got
}

func TestPullMinutesPullsOnlyFlaggedMinutes(t *testing.T) {
	f := lokitest.New(t)
	day := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	burstFrom, burstTo := load24h(f, day)
	c, _ := newTestClient(t, f.URL(), nil)
	ctx := context.Background()

	for _, w := range []struct {
		name     string
		from, to time.Time
	}{
		{"1h", day.Add(13*time.Hour + 30*time.Minute), day.Add(14*time.Hour + 30*time.Minute)},
		{"24h", day, day.Add(24 * time.Hour)},
	} {
		t.Run(w.name, func(t *testing.T) {
			flagged, counts, raw, got := pushdown(t, c, w.from, w.to)
			if len(flagged) != 20 || !flagged[0].Equal(burstFrom) || !flagged[19].Equal(burstTo.Add(-time.Minute)) {
				t.Fatalf("flagged %d minutes from %v", len(flagged), flagged)
			}
			want := expected(f, `{job="caddy"}`, burstFrom, burstTo)
			diffMultiset(t, want, got)
			var wantBytes int64
			for k, n := range want {
				wantBytes += int64(n * len(k.line))
			}
			if raw.lineBytes != wantBytes {
				t.Errorf("raw bytes pulled %d, want exactly the flagged minutes' %d", raw.lineBytes, wantBytes)
			}

			// The same window pulled raw, for comparison.
			col := newCollector(t)
			full, err := c.Pull(ctx, `{job="caddy"}`, "", w.from, w.to, col.sink)
			if err != nil || !full.Complete() {
				t.Fatalf("full pull: %v %v", err, full.Notes)
			}
			diffMultiset(t, expected(f, `{job="caddy"}`, w.from, w.to), col.got)
			fullCost := phaseCost{"raw lines, whole window (Pull)", full.Requests(), full.WireBytes(), full.Bytes(), full.Lines()}
			if w.name == "24h" && raw.lineBytes*2 > full.Bytes() {
				t.Errorf("pushdown pulled %d raw bytes, a full pull %d: not much of a saving", raw.lineBytes, full.Bytes())
			}
			t.Logf("window %s [%s, %s):", w.name, w.from.Format(time.RFC3339), w.to.Format(time.RFC3339))
			for _, p := range []phaseCost{counts, raw, fullCost} {
				t.Logf("  %-44s %4d requests %10d response bytes %10d line bytes %7d lines", p.phase, p.requests, p.wireBytes, p.lineBytes, p.lines)
			}
		})
	}
}

func TestPullMinutesMergesAdjacentMinutes(t *testing.T) {
	f := lokitest.New(t)
	for m := 0; m < 30; m++ {
		f.Push(streamA, t0.Add(time.Duration(m)*time.Minute+time.Second), fmt.Sprintf("m%d", m))
	}
	c, _ := newTestClient(t, f.URL(), nil)
	minutes := []time.Time{t0.Add(3 * time.Minute), t0.Add(4*time.Minute + 30*time.Second), t0.Add(5 * time.Minute), t0.Add(20 * time.Minute), t0.Add(4 * time.Minute)}
	col := newCollector(t)
	res, err := c.PullMinutes(context.Background(), `{job="caddy"}`, minutes, nil, col.sink)
	if err != nil || !res.Complete() {
		t.Fatal(err, res.Notes)
	}
	if len(res.SubRanges) != 2 || !res.SubRanges[0].To.Equal(t0.Add(6*time.Minute)) || col.lines != 4 {
		t.Errorf("%d ranges (first ends %s), %d lines", len(res.SubRanges), res.SubRanges[0].To, col.lines)
	}
}

func TestHundredThousandLines(t *testing.T) {
	f := lokitest.New(t)
	pad := strings.Repeat("x", 200)
	var wantSum uint64
	for i := 0; i < 50000; i++ {
		ts := t0.Add(time.Duration(i) * 144 * time.Millisecond)
		for _, s := range []map[string]string{streamA, streamB} {
			line := fmt.Sprintf("%s %s line %06d %s", s["host"], ts.Format(time.RFC3339Nano), i, pad)
			f.Push(s, ts, line)
			wantSum += hashLine(s["host"], ts, line)
		}
	}
	c, _ := newTestClient(t, f.URL(), func(cfg *Config) { cfg.Limit = 1000; cfg.SplitBy = 30 * time.Minute })
	var (
		n         int
		sum       uint64
		last      = map[string]int64{}
		heapAt20k uint64
		heapMax   uint64
	)
	res, err := c.QueryRange(context.Background(), `{job="caddy"}`, t0, t0.Add(2*time.Hour), func(e Entry) error {
		n++
		sum += hashLine(e.Stream["host"], e.T, e.Line)
		if e.T.UnixNano() < last[e.Labels] {
			t.Errorf("out of order in %s", e.Labels)
		}
		last[e.Labels] = e.T.UnixNano()
		if n%20000 == 0 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if n == 20000 {
				heapAt20k = ms.HeapAlloc
			}
			heapMax = max(heapMax, ms.HeapAlloc)
		}
		return nil
	})
	if err != nil || !res.Complete() {
		t.Fatal(err, res.Notes)
	}
	if n != 100000 || sum != wantSum {
		t.Errorf("got %d lines (checksum match %v), want 100000", n, sum == wantSum)
	}
	// Holding the lines would add ~80k x 300 B = 24 MB between the checkpoints.
	if grow := int64(heapMax) - int64(heapAt20k); grow > 8<<20 {
		t.Errorf("live heap grew by %d MB while streaming: lines are being kept", grow>>20)
	}
	if pages := res.sum(func(s SubRange) int64 { return int64(s.Pages) }); pages < 100 {
		t.Errorf("%d pages for 100k lines at limit 1000", pages)
	}
}

func hashLine(host string, ts time.Time, line string) uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, host, ts.UnixNano(), line)
	return h.Sum64()
}

func TestCancelSlowServer(t *testing.T) {
	f := lokitest.New(t)
	for i := 0; i < 2000; i++ {
		f.Push(streamA, t0.Add(time.Duration(i)*300*time.Millisecond), fmt.Sprintf("line %d", i))
	}
	var pages atomic.Int32
	blocked := make(chan struct{}, 64)
	f.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
		if strings.HasSuffix(r.URL.Path, "query_range") && pages.Add(1) > 3 {
			blocked <- struct{}{}
			select { // a server that stops answering
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
			}
			return true
		}
		return false
	})
	c, _ := newTestClient(t, f.URL(), func(cfg *Config) { cfg.Limit = 50; cfg.Parallel = 1; cfg.SplitBy = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	var cancelled time.Time
	go func() {
		<-blocked
		time.Sleep(20 * time.Millisecond)
		cancelled = time.Now()
		cancel()
	}()
	col := newCollector(t)
	res, err := c.QueryRange(ctx, `{job="caddy"}`, t0, t0.Add(10*time.Minute), col.sink)
	took := time.Since(cancelled)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if took > 2*time.Second {
		t.Errorf("returned %v after cancel", took)
	}
	// Three pages of 50 served; pages 2 and 3 start at the previous page's last
	// timestamp and skip the line already delivered: 50 + 49 + 49.
	if col.lines != 148 || res.Lines() != 148 || res.Complete() {
		t.Errorf("delivered %d (result says %d), complete=%v; want the 148 lines of the 3 pages served", col.lines, res.Lines(), res.Complete())
	}
	if len(res.Notes) == 0 || res.Notes[0].Severity != "error" {
		t.Errorf("notes = %+v", res.Notes)
	}
}

// A pull whose minutes the caller counted already (a pushdown's per-minute
// counts) asks Loki for no count_over_time: the lines delivered are checked
// against the caller's counts, and a minute counted empty is not paged.
// Only when they disagree is Loki asked per stream, which tells the
// caller's stale count (complete: Loki's newer count agrees) from a line a
// page dropped (incomplete, with a note). Before, every sub-range was
// counted again, a second pass of Loki over the lines pulled.
func TestPullMinutesTrustsTheCallersCounts(t *testing.T) {
	perMinute := func(m int) int64 {
		if m == 5 {
			return 0
		}
		return 3
	}
	counted := func(off int64) Counted {
		return func(from, to time.Time) (int64, bool) {
			var n int64
			for m := from; m.Before(to); m = m.Add(time.Minute) {
				n += perMinute(int(m.Sub(t0) / time.Minute))
			}
			return n + off, true
		}
	}
	minutes := []time.Time{t0.Add(2 * time.Minute), t0.Add(5 * time.Minute), t0.Add(8 * time.Minute)}
	for _, tt := range []struct {
		name           string
		off            int64 // added to the caller's counts
		drop           bool  // a page drops a line
		complete       bool
		counts, ranges int // count_over_time and query_range requests
	}{
		{name: "counts agree", complete: true, ranges: 2},
		{name: "stale count", off: 1, complete: true, counts: 3, ranges: 3},
		{name: "a page drops a line", drop: true, complete: false, counts: 1, ranges: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := lokitest.New(t)
			for m := range 10 {
				for i := range perMinute(m) {
					f.Push(streamA, t0.Add(time.Duration(m)*time.Minute+time.Duration(i)*time.Second), fmt.Sprintf("m%d-%d", m, i))
				}
			}
			var counts, ranges atomic.Int32
			f.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
				switch {
				case strings.Contains(r.URL.Query().Get("query"), "count_over_time"):
					counts.Add(1)
				case strings.HasSuffix(r.URL.Path, "query_range"):
					ranges.Add(1)
				}
				return false
			})
			if tt.drop {
				var dropped atomic.Bool
				f.SetAlter(func(r *http.Request, out []lokitest.Stream) []lokitest.Stream {
					for i := range out {
						if len(out[i].Entries) > 1 && !dropped.Swap(true) {
							out[i].Entries = out[i].Entries[1:]
						}
					}
					return out
				})
			}
			c, _ := newTestClient(t, f.URL(), nil)
			col := newCollector(t)
			res, err := c.PullMinutes(context.Background(), `{job="caddy"}`, minutes, counted(tt.off), col.sink)
			if err != nil {
				t.Fatal(err)
			}
			if res.Complete() != tt.complete || (!tt.complete && len(res.Notes) == 0) {
				t.Errorf("complete %v, want %v (notes %v)", res.Complete(), tt.complete, res.Notes)
			}
			if int(counts.Load()) != tt.counts || int(ranges.Load()) != tt.ranges {
				t.Errorf("%d counts and %d pages asked, want %d and %d", counts.Load(), ranges.Load(), tt.counts, tt.ranges)
			}
			if want := 6; !tt.drop && col.lines != want {
				t.Errorf("%d lines pulled, want %d", col.lines, want)
			}
		})
	}
}
