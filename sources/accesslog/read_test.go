package accesslog

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

const sampleLog = "testdata/lab-sample.log"

// TestReadSample checks the real sample at many block sizes and worker counts:
// wherever the chunk boundaries fall, the same requests come out in file order.
func TestReadSample(t *testing.T) {
	data := readFile(t, sampleLog)
	want := readWith("s", bytes.NewReader(data), Options{LoggedInCookie: "wikiUserID=", Workers: 1}, defaultBlock)
	if want.err != nil || want.skips.Count("") != 0 {
		t.Fatalf("err %v, skips %v", want.err, want.skips.Notes("a", "lines"))
	}
	// Counted independently with Python over the same 27 lines.
	status := map[int]int{}
	origin := map[sources.Origin]int{}
	lang := map[string]int{}
	logged := map[sources.LoggedIn]int{}
	for _, r := range want.reqs {
		status[r.Status]++
		origin[r.Origin]++
		lang[r.Lang]++
		logged[r.LoggedIn]++
	}
	checkCounts(t, "status", status, map[int]int{200: 19, 503: 3, 504: 3, 404: 2})
	checkCounts(t, "origin", origin, map[sources.Origin]int{sources.OriginStatic: 11, sources.OriginUpstream: 10, sources.OriginProxy: 6})
	checkCounts(t, "lang", lang, map[string]int{"en-us": 8, "zh-cn": 8, "ko-kr": 7, "": 4})
	checkCounts(t, "logged in", logged, map[sources.LoggedIn]int{sources.LoggedInNo: 24, sources.LoggedInYes: 3})
	if want.stats.Lines != 27 || want.stats.Requests != 27 || want.stats.Bytes != int64(len(data)) || want.stats.Files != 1 {
		t.Errorf("stats = %+v", want.stats)
	}

	for _, block := range []int{1500, 1531, 2048, 3000, 4096, 10007, 65536} {
		for _, workers := range []int{1, 3} {
			got := readWith("s", iotest.HalfReader(bytes.NewReader(data)), Options{LoggedInCookie: "wikiUserID=", Workers: workers}, block)
			if got.err != nil || got.skips.Count("") != 0 {
				t.Fatalf("block %d: err %v, skips %v", block, got.err, got.skips.Notes("a", "lines"))
			}
			if !sameRequests(got.reqs, want.reqs) || plainStats(got.stats) != plainStats(want.stats) {
				t.Errorf("block %d, workers %d: %d requests, stats %+v; want %d, %+v",
					block, workers, len(got.reqs), got.stats, len(want.reqs), want.stats)
			}
		}
	}
}

func sameRequests(a, b []sources.Request) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReadSkips feeds whole streams with good and bad lines and checks what is
// kept, what is skipped, under which reason and at which line.
func TestReadSkips(t *testing.T) {
	good := caddyLine(t, nil)
	caddyOwn := strings.TrimSuffix(string(readFile(t, "testdata/caddy-own.log")), "\n")
	tests := []struct {
		name     string
		input    string
		requests int
		lines    int64
		skips    map[string]string // reason -> substring of its note
	}{
		{name: "empty", input: "", requests: 0, lines: 0},
		{name: "one line", input: good + "\n", requests: 1, lines: 1},
		{name: "no trailing newline", input: good + "\n" + good, requests: 2, lines: 2},
		{name: "CRLF", input: good + "\r\n" + good + "\r\n", requests: 2, lines: 2},
		{name: "CRLF, no trailing newline", input: good + "\r\n" + good, requests: 2, lines: 2},
		{name: "blank lines are not data", input: "\n" + good + "\n\n  \t\r\n" + good + "\n\n", requests: 2, lines: 6},
		{name: "malformed JSON", input: good + "\n{\"ts\":\n" + good + "\n",
			requests: 2, lines: 3, skips: map[string]string{ReasonMalformedJSON: "1 lines skipped: malformed JSON (first at t.log:2)"}},
		{name: "invalid UTF-8", input: good + "\n" + strings.Replace(good, "Android", "Andr\xc3\x28id", 1) + "\n",
			requests: 1, lines: 2, skips: map[string]string{ReasonInvalidUTF8: "(first at t.log:2)"}},
		{name: "Caddy's own log", input: caddyOwn + "\n" + good + "\n",
			requests: 1, lines: 3, skips: map[string]string{ReasonNotAccessLog: "(first at t.log:1, t.log:2)"}},
		{name: "truncated last line", input: good + "\n" + good[:700],
			requests: 1, lines: 2, skips: map[string]string{ReasonTruncatedLine: "(first at t.log:2)"}},
		{name: "last line cut inside a UTF-8 sequence", input: good + "\n" + "{\"msg\":\"\xed\x86",
			requests: 1, lines: 2, skips: map[string]string{ReasonTruncatedLine: "(first at t.log:2)"}},
		{name: "missing fields", input: strings.Join([]string{
			caddyLine(t, func(m map[string]any) { delete(m, "ts") }),
			caddyLine(t, func(m map[string]any) { delete(m, "status") }),
			caddyLine(t, func(m map[string]any) { delete(req(m), "uri") }),
			good,
			caddyLine(t, func(m map[string]any) { req(m)["client_ip"] = "not-an-ip" }),
		}, "\n"), requests: 1, lines: 5, skips: map[string]string{
			ReasonMissingTS: "t.log:1", ReasonMissingStatus: "t.log:2", ReasonMissingURI: "t.log:3", ReasonBadClientIP: "t.log:5"}},
		{name: "locations across chunks", input: strings.Repeat(good+"\nnope\n", 10),
			requests: 10, lines: 20, skips: map[string]string{ReasonMalformedJSON: "10 lines skipped: malformed JSON (first at t.log:2, t.log:4, t.log:6)"}},
		{name: "only the first three locations are kept", input: strings.Repeat("nope\n", 10) + good,
			requests: 1, lines: 11, skips: map[string]string{ReasonMalformedJSON: "10 lines skipped: malformed JSON (first at t.log:1, t.log:2, t.log:3)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, block := range []int{defaultBlock, 1500} {
				res := readWith("t.log", strings.NewReader(tt.input), Options{}, block)
				if res.err != nil {
					t.Fatal(res.err)
				}
				if len(res.reqs) != tt.requests || res.stats.Requests != int64(tt.requests) || res.stats.Lines != tt.lines {
					t.Errorf("block %d: %d requests (stats %d), %d lines; want %d, %d",
						block, len(res.reqs), res.stats.Requests, res.stats.Lines, tt.requests, tt.lines)
				}
				got := notes(res.skips)
				for reason, want := range tt.skips {
					if !strings.Contains(got[reason], want) {
						t.Errorf("block %d: note for %q = %q, want it to contain %q", block, reason, got[reason], want)
					}
				}
				if len(got) != len(tt.skips) {
					t.Errorf("block %d: skips %v, want only %v", block, got, tt.skips)
				}
			}
		})
	}
}

// longLineReader streams a line of n bytes without holding it in memory.
type longLineReader struct{ n int }

func (r *longLineReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	r.n -= k
	return k, nil
}

func TestTenMegabyteLine(t *testing.T) {
	good := caddyLine(t, nil)
	input := func() io.Reader {
		return io.MultiReader(
			strings.NewReader(good+"\n"+`{"msg":"`),
			&longLineReader{n: 10 << 20},
			strings.NewReader("\"}\n"+good+"\n"))
	}
	readWith("warm-up", input(), Options{Workers: 1}, defaultBlock) // fill the chunk pool

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := readWith("big.log", input(), Options{Workers: 1}, defaultBlock)
	runtime.ReadMemStats(&after)

	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.reqs) != 2 || res.stats.Lines != 3 {
		t.Errorf("%d requests, %d lines; want 2, 3", len(res.reqs), res.stats.Lines)
	}
	if n := res.skips.Count(ReasonLineTooLong); n != 1 || !strings.Contains(notes(res.skips)[ReasonLineTooLong], "big.log:2") {
		t.Errorf("too-long skips = %d, %v", n, notes(res.skips))
	}
	if want := int64(2*len(good) + 2 + len(`{"msg":"`) + 10<<20 + 3); res.stats.Bytes != want {
		t.Errorf("Bytes = %d, want %d", res.stats.Bytes, want)
	}
	// The line is discarded while streaming: the read must not allocate anything
	// near its size (the blocks themselves come from the pool).
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2<<20 {
		t.Errorf("allocated %d bytes reading past a 10 MB line", alloc)
	}
}

// TestLineLengthLimit pins the limit with a small block: a line of block-1
// bytes fits, one of block bytes does not, wherever it sits.
func TestLineLengthLimit(t *testing.T) {
	const block = 2048
	good := caddyLine(t, nil)
	pad := func(n int) string { // a valid line of exactly n bytes
		l := caddyLine(t, func(m map[string]any) { m["msg"] = "" })
		return strings.Replace(l, `"msg":""`, `"msg":"`+strings.Repeat("p", n-len(l))+`"`, 1)
	}
	fits, tooLong := pad(block-1), pad(block)
	tests := []struct {
		name     string
		input    string
		requests int
		lines    int64
		tooLong  int
		where    string
	}{
		{"fits", good + "\n" + fits + "\n" + good + "\n", 3, 3, 0, ""},
		{"fits with CR", good + "\n" + fits[:len(fits)-1] + "\r\n" + good + "\n", 2, 3, 0, ""}, // the CR counts, and the cut line is not JSON
		{"too long", good + "\n" + tooLong + "\n" + good + "\n", 2, 3, 1, "t.log:2"},
		{"first line", tooLong + "\n" + good + "\n", 1, 2, 1, "t.log:1"},
		{"two in a row", good + "\n" + tooLong + "\n" + tooLong + "\n" + good, 2, 4, 2, "t.log:2, t.log:3"},
		{"last, no newline", good + "\n" + tooLong, 1, 2, 1, "t.log:2"},
		{"only", strings.Repeat("y", 5*block), 0, 1, 1, "t.log:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := readWith("t.log", iotest.OneByteReader(strings.NewReader(tt.input)), Options{Workers: 2}, block)
			var ue *UnusableError
			if res.err != nil && !(tt.requests == 0 && errors.As(res.err, &ue)) {
				t.Fatal(res.err)
			}
			if len(res.reqs) != tt.requests || res.stats.Lines != tt.lines || res.skips.Count(ReasonLineTooLong) != tt.tooLong {
				t.Errorf("%d requests, %d lines, %d too long; want %d, %d, %d (%v)", len(res.reqs), res.stats.Lines,
					res.skips.Count(ReasonLineTooLong), tt.requests, tt.lines, tt.tooLong, notes(res.skips))
			}
			if tt.where != "" && !strings.Contains(notes(res.skips)[ReasonLineTooLong], tt.where) {
				t.Errorf("note %q does not name %s", notes(res.skips)[ReasonLineTooLong], tt.where)
			}
		})
	}
}

// The chunker reads a block readStep bytes at a time, but a line is bounded
// by the block, not the step: lines longer than a step, up to MaxLineBytes,
// are read whole wherever the steps cut them; one byte more is too long.
// Cutting chunks at the step alone would skip the first two as too long.
func TestLinesLongerThanAStep(t *testing.T) {
	good := caddyLine(t, nil)
	pad := func(n int) string { // a valid line of exactly n bytes
		l := caddyLine(t, func(m map[string]any) { m["msg"] = "" })
		return strings.Replace(l, `"msg":""`, `"msg":"`+strings.Repeat("p", n-len(l))+`"`, 1)
	}
	input := strings.Join([]string{good, pad(readStep + 100), good, pad(MaxLineBytes), good, pad(MaxLineBytes + 1), good}, "\n") + "\n"
	for _, r := range []io.Reader{strings.NewReader(input), iotest.HalfReader(strings.NewReader(input))} {
		res := readWith("t.log", r, Options{Workers: 1}, defaultBlock)
		if res.err != nil {
			t.Fatal(res.err)
		}
		if len(res.reqs) != 6 || res.stats.Lines != 7 || res.skips.Count(ReasonLineTooLong) != 1 ||
			!strings.Contains(notes(res.skips)[ReasonLineTooLong], "t.log:6") {
			t.Errorf("%d requests, %d lines, %d too long (%v); want 6, 7, 1 at line 6", len(res.reqs), res.stats.Lines,
				res.skips.Count(ReasonLineTooLong), notes(res.skips))
		}
	}
}

func gzipped(t testing.TB, data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestGzip(t *testing.T) {
	data := readFile(t, sampleLog)
	plain := readWith("s", bytes.NewReader(data), Options{}, defaultBlock)
	for _, tc := range []struct {
		name string
		gz   []byte
		rep  int
	}{
		{"one member", gzipped(t, data), 1},
		{"two members (concatenated rotations)", append(gzipped(t, data), gzipped(t, data)...), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := readWith("s.gz", bytes.NewReader(tc.gz), Options{}, 4096)
			if res.err != nil || res.skips.Count("") != 0 {
				t.Fatalf("err %v, skips %v", res.err, notes(res.skips))
			}
			if len(res.reqs) != tc.rep*len(plain.reqs) || !sameRequests(res.reqs[:len(plain.reqs)], plain.reqs) {
				t.Errorf("got %d requests, want %d", len(res.reqs), tc.rep*len(plain.reqs))
			}
			if res.stats.Bytes != int64(tc.rep*len(data)) {
				t.Errorf("Bytes = %d, want the uncompressed %d", res.stats.Bytes, tc.rep*len(data))
			}
		})
	}
}

// completeLines decompresses what it can of a broken gzip stream and returns
// how many whole lines came out and whether a partial one followed.
func completeLines(gz []byte) (int, bool) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return 0, false
	}
	out, _ := io.ReadAll(zr)
	return bytes.Count(out, []byte("\n")), len(out) > 0 && out[len(out)-1] != '\n'
}

func TestTruncatedGzip(t *testing.T) {
	data := readFile(t, sampleLog)
	gz := gzipped(t, data)
	dir := t.TempDir()
	goodPath := filepath.Join(dir, "good.log.gz")
	if err := os.WriteFile(goodPath, gz, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{20, len(gz) / 3, len(gz) / 2, len(gz) - 12, len(gz) - 1} {
		t.Run(fmt.Sprint("cut at ", cut), func(t *testing.T) {
			wantLines, partial := completeLines(gz[:cut])
			cutPath := filepath.Join(dir, "cut.log.gz")
			if err := os.WriteFile(cutPath, gz[:cut], 0o644); err != nil {
				t.Fatal(err)
			}
			var skips sources.Skips
			n := 0
			st, err := Read(context.Background(), []string{cutPath, goodPath}, Options{}, &skips,
				func(b []sources.Request) error { n += len(b); return nil })
			if err != nil {
				t.Fatalf("a truncated file must not be an error: %v", err)
			}
			// The good file holds the same lines again: those before the cut
			// count once.
			if n != 27 || st.Files != 2 || st.Duplicates != int64(wantLines) {
				t.Errorf("%d requests from %d files, %d duplicates; want 27, of which the %d whole lines before the cut were read twice",
					n, st.Files, st.Duplicates, wantLines)
			}
			if skips.Count(ReasonTruncatedGzip) != 1 {
				t.Errorf("skips %v, want one %q", notes(&skips), ReasonTruncatedGzip)
			}
			wantPartial := 0
			if partial {
				wantPartial = 1
			}
			if skips.Count(ReasonTruncatedLine) != wantPartial {
				t.Errorf("skips %v, want %d %q", notes(&skips), wantPartial, ReasonTruncatedLine)
			}
			if !strings.Contains(notes(&skips)[ReasonTruncatedGzip], cutPath) {
				t.Errorf("note %q does not name the file", notes(&skips)[ReasonTruncatedGzip])
			}
		})
	}
}

func TestCorruptGzip(t *testing.T) {
	data := readFile(t, sampleLog)
	gz := gzipped(t, data)
	badCRC := bytes.Clone(gz)
	badCRC[len(badCRC)-8] ^= 0xff // CRC-32 in the trailer
	badHeader := bytes.Clone(gz)
	badHeader[2] = 7 // compression method: only 8 (deflate) exists
	for _, tc := range []struct {
		name     string
		gz       []byte
		requests int
		where    string
	}{
		{"checksum", badCRC, 27, "c.gz:27"},
		{"header", badHeader, 0, "c.gz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := readWith("c.gz", bytes.NewReader(tc.gz), Options{}, defaultBlock)
			if res.err != nil {
				t.Fatal(res.err)
			}
			if len(res.reqs) != tc.requests || res.skips.Count(ReasonCorruptGzip) != 1 ||
				!strings.Contains(notes(res.skips)[ReasonCorruptGzip], "(first at "+tc.where+")") {
				t.Errorf("%d requests, skips %v; want %d and a corrupt gzip at %s", len(res.reqs), notes(res.skips), tc.requests, tc.where)
			}
		})
	}
}

func TestOutOfOrder(t *testing.T) {
	at := func(ts string) string {
		return caddyLine(t, func(m map[string]any) { m["ts"] = jsonNumber(ts) })
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	// Caddy stamps the response end, so a slow request (11) logs after a fast
	// one that started later (12).
	// Equal times are not disorder.
	os.WriteFile(a, []byte(at("1795966410")+"\n"+at("1795966412")+"\n"+at("1795966412.0")+"\n"+at("1795966411")+"\n"+at("1795966413")+"\n"), 0o644)
	// b starts after a (files are read in the order of their first times),
	// and its first line is before a's last.
	os.WriteFile(b, []byte(at("1795966410.5")+"\n"+at("1795966414")+"\n"), 0o644)
	st, err := Read(context.Background(), []string{a, b}, Options{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.OutOfOrder != 2 || st.Requests != 7 || st.Files != 2 {
		t.Errorf("stats = %+v, want 2 out of order in 7 requests", st)
	}
	if !st.First.Equal(time.Unix(1795966410, 0)) || !st.Last.Equal(time.Unix(1795966414, 0)) {
		t.Errorf("First, Last = %v, %v", st.First, st.Last)
	}
}

// infiniteLog never ends: a context or the sink has to stop it.
type infiniteLog struct{ line []byte }

func (r *infiniteLog) Read(p []byte) (int, error) {
	n := 0
	for n+len(r.line) <= len(p) {
		n += copy(p[n:], r.line)
	}
	if n == 0 {
		n = copy(p, r.line)
	}
	return n, nil
}

func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCancel(t *testing.T) {
	line := []byte(caddyLine(t, nil) + "\n")
	base := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(context.Background())
	calls, afterCancel, delivered := 0, 0, 0
	cancelled := false
	st, err := ReadReader(ctx, "endless.log", &infiniteLog{line: line}, Options{Workers: 3}, nil, func(b []sources.Request) error {
		calls++
		delivered += len(b)
		if cancelled {
			afterCancel++
		}
		if calls == 3 {
			cancel()
			cancelled = true
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "endless.log") {
		t.Errorf("err = %v, want context.Canceled naming the stream", err)
	}
	if afterCancel != 0 {
		t.Errorf("sink called %d times after cancel", afterCancel)
	}
	if st.Requests != int64(delivered) {
		t.Errorf("stats count %d requests, the sink got %d", st.Requests, delivered)
	}
	waitGoroutines(t, base)

	// Already cancelled: nothing is read.
	called := false
	_, err = Read(ctx, []string{sampleLog}, Options{}, nil, func([]sources.Request) error { called = true; return nil })
	if !errors.Is(err, context.Canceled) || called {
		t.Errorf("cancelled Read: err %v, sink called %v", err, called)
	}

	// A deadline stops the read the same way.
	dctx, dcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer dcancel()
	_, err = ReadReader(dctx, "endless.log", &infiniteLog{line: line}, Options{}, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want DeadlineExceeded", err)
	}
	waitGoroutines(t, base)
}

func TestSinkError(t *testing.T) {
	line := []byte(caddyLine(t, nil) + "\n")
	base := runtime.NumGoroutine()
	stop := errors.New("enough")
	calls := 0
	_, err := ReadReader(context.Background(), "endless.log", &infiniteLog{line: line}, Options{Workers: 2}, nil,
		func([]sources.Request) error { calls++; return stop })
	if !errors.Is(err, stop) || !strings.Contains(err.Error(), "endless.log") || calls != 1 {
		t.Errorf("err = %v after %d calls; want %v, naming the stream, after 1 call", err, calls, stop)
	}
	waitGoroutines(t, base)
}

func TestReadErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.log")
	if _, err := Read(context.Background(), []string{sampleLog, missing}, Options{}, nil, nil); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("err = %v, want one naming %s", err, missing)
	}

	// A read error is the caller's to see, after the lines before it.
	data := readFile(t, sampleLog)
	boom := errors.New("disk on fire")
	n := 0
	st, err := ReadReader(context.Background(), "flaky.log",
		io.MultiReader(bytes.NewReader(data), iotest.ErrReader(boom)), Options{}, nil,
		func(b []sources.Request) error { n += len(b); return nil })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "flaky.log") {
		t.Errorf("err = %v, want %v naming the stream", err, boom)
	}
	if n != 27 || st.Requests != 27 {
		t.Errorf("delivered %d (stats %d), want the 27 lines before the error", n, st.Requests)
	}
	// Even when it strikes while peeking at the first bytes.
	if _, err := ReadReader(context.Background(), "dead.log", iotest.ErrReader(boom), Options{}, nil, nil); !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
}

// TestKeptStringsSurvive documents the sink contract: the batch slice is
// recycled, the strings in it are not.
func TestKeptStringsSurvive(t *testing.T) {
	data := bytes.Repeat([]byte(caddyLine(t, nil)+"\n"), 5000)
	var kept []string
	_, err := ReadReader(context.Background(), "r.log", bytes.NewReader(data), Options{Workers: 1}, nil, func(b []sources.Request) error {
		kept = append(kept, b[0].Path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range kept {
		if p != "/w/%EC%84%B1%EB%A7%A4%EB%A7%A4_%EB%B9%84%ED%8C%90" {
			t.Fatalf("a kept string changed: %q", p)
		}
	}
	if len(kept) < 2 {
		t.Fatalf("want several batches, got %d", len(kept))
	}
}

// TestPrefilter: a line the prefilter rejects is not parsed, not delivered and
// not counted as skipped, but still counts as a line and keeps the line
// numbers of later skips right; blank lines never reach it.
func TestPrefilter(t *testing.T) {
	data := readFile(t, sampleLog)
	all := readWith("s", bytes.NewReader(data), Options{LoggedInCookie: "wikiUserID="}, defaultBlock)
	var want []sources.Request
	for _, r := range all.reqs {
		if strings.Contains(r.Path, "Special") {
			want = append(want, r)
		}
	}
	if len(want) == 0 || len(want) == len(all.reqs) {
		t.Fatalf("the sample should hold some Special: requests and others, has %d of %d", len(want), len(all.reqs))
	}
	keepSpecial := func(line []byte) bool { return bytes.Contains(line, []byte(`"uri":"/w/Special`)) }
	for _, workers := range []int{1, 3} {
		got := readWith("s", bytes.NewReader(data), Options{LoggedInCookie: "wikiUserID=", Workers: workers, Prefilter: keepSpecial}, 4096)
		if got.err != nil || !sameRequests(got.reqs, want) {
			t.Fatalf("workers %d: err %v, %d requests, want %d", workers, got.err, len(got.reqs), len(want))
		}
		if got.stats.Lines != all.stats.Lines || got.stats.Requests != int64(len(want)) || got.stats.Bytes != all.stats.Bytes {
			t.Errorf("workers %d: stats %+v, want the lines and bytes of %+v with %d requests", workers, got.stats, all.stats, len(want))
		}
	}

	good := caddyLine(t, nil)
	input := "\n  \n" + "{\"ts\":\n" + good + "\n" + "{\"ts\":\n"
	var seen []string
	var mu sync.Mutex
	got := readString(input, Options{Workers: 1, Prefilter: func(line []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, string(line))
		return len(seen) != 1 // reject the first malformed line only
	}})
	if len(seen) != 3 || seen[0] != `{"ts":` {
		t.Errorf("the prefilter saw %q, want the three non-blank lines", seen)
	}
	if got.err != nil || len(got.reqs) != 1 || got.stats.Lines != 5 {
		t.Errorf("err %v, %d requests, stats %+v", got.err, len(got.reqs), got.stats)
	}
	if n := notes(got.skips); len(n) != 1 || !strings.Contains(n[ReasonMalformedJSON], "1 lines skipped: malformed JSON (first at t.log:5)") {
		t.Errorf("skips %v: only the accepted malformed line, at its own line number", n)
	}
}

// TestPipeAmongFiles: a pipe given with files is read once, whole (ordering
// the inputs by time must not consume its first lines), after the files.
func TestPipeAmongFiles(t *testing.T) {
	lines := sampleLines(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "a.log")
	os.WriteFile(file, []byte(strings.Join(lines[:10], "\n")+"\n"), 0o644)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		pw.Write([]byte(strings.Join(lines[10:], "\n") + "\n"))
		pw.Close()
	}()
	defer pr.Close()
	pipe := fmt.Sprintf("/proc/self/fd/%d", pr.Fd())
	if _, err := os.Stat(pipe); err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	st, err := Read(context.Background(), []string{pipe, file}, Options{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests != 27 || len(st.Inputs) != 2 || st.Inputs[1].Name != pipe || st.Inputs[1].Requests != 17 {
		t.Errorf("%d requests; inputs %v", st.Requests, st.Inputs)
	}
}

// With BorrowTargets a target views the chunk only when it lies there: one
// unwrapped from a Docker line, or unescaped by the slow path, lies in a
// buffer the next line overwrites, and gets its own string. The sink sees
// every target of its batch right; a sink that keeps them past its return
// keeps views of an overwritten chunk (the poison test hook), except for
// those owned strings.
func TestBorrowTargetsOnlyFromTheChunk(t *testing.T) {
	withURI := func(uri string) string {
		return caddyLine(t, func(m map[string]any) { req(m)["uri"] = uri })
	}
	for _, tc := range []struct {
		name    string
		lines   []string
		paths   []string
		queries []string
		owned   []bool // whether the target is the read's own string
	}{{
		name:  "plain",
		lines: []string{withURI("/w/index.php?title=A&action=raw"), withURI("/w/B_second"), withURI("/w/C_third?x=1")},
		paths: []string{"/w/index.php", "/w/B_second", "/w/C_third"}, queries: []string{"title=A&action=raw", "", "x=1"},
		owned: []bool{false, false, false},
	}, {
		// Escaped as JSON (\u0026), a target goes through the slow path's
		// unescaping buffer.
		name: "escaped",
		lines: []string{strings.Replace(withURI("/w/index.php?title=A&action=raw"), "&", `\u0026`, 1),
			strings.Replace(withURI("/w/index.php?title=Bee&action=history"), "&", `\u0026`, 1), withURI("/w/C_third")},
		paths: []string{"/w/index.php", "/w/index.php", "/w/C_third"}, queries: []string{"title=A&action=raw", "title=Bee&action=history", ""},
		owned: []bool{true, true, false},
	}, {
		name:  "docker",
		lines: []string{docker(withURI("/w/A_first")), docker(withURI("/w/B_second_longer")), docker(withURI("/w/C"))},
		paths: []string{"/w/A_first", "/w/B_second_longer", "/w/C"}, queries: []string{"", "", ""},
		owned: []bool{true, true, true},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			defer SetBorrowHooks(false, true)()
			var kept []sources.Request
			rd := newReader(Options{BorrowTargets: true}, nil, func(batch []sources.Request) error {
				for i, r := range batch {
					if r.Path != tc.paths[i] || r.Query != tc.queries[i] {
						t.Errorf("line %d in the sink: %q ? %q, want %q ? %q", i+1, r.Path, r.Query, tc.paths[i], tc.queries[i])
					}
				}
				kept = append(kept, batch...)
				return nil
			}, defaultBlock)
			if _, err := rd.readStream(context.Background(), "t.log", strings.NewReader(strings.Join(tc.lines, "\n")+"\n")); err != nil {
				t.Fatal(err)
			}
			if len(kept) != len(tc.paths) {
				t.Fatalf("%d requests, want %d", len(kept), len(tc.paths))
			}
			for i, r := range kept {
				if intact := r.Path == tc.paths[i]; intact != tc.owned[i] {
					t.Errorf("line %d kept past the sink: %q, want it owned %v", i+1, r.Path, tc.owned[i])
				}
			}
		})
	}
}
