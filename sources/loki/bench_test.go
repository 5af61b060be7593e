package loki

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// BenchmarkQueryRange measures the client's decode-and-deliver throughput
// against the in-process fake (which dominates: read it as an upper bound).
func BenchmarkQueryRange(b *testing.B) {
	f := lokitest.New(b)
	var size int64
	for i := 0; i < 20000; i++ {
		ts := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		line := caddyLine(ts, "10.0.0.1", fmt.Sprintf("/w/%d", i), 200, i)
		f.Push(streamA, ts, line)
		size += int64(len(line))
	}
	c, _ := newTestClient(b, f.URL(), nil)
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		n := 0
		if _, err := c.QueryRange(context.Background(), `{job="caddy"}`, t0, t0.Add(time.Hour), func(Entry) error { n++; return nil }); err != nil || n != 20000 {
			b.Fatal(err, n)
		}
	}
}

// BenchmarkLogPageDecode measures decoding one full page of a log query (5,000
// Caddy lines in three streams, as Loki's query_range sends them, stats block
// included) into the page's ordered values: the client's share of a fetch,
// without the fake's work. The answer is served uncompressed from memory.
func BenchmarkLogPageDecode(b *testing.B) {
	const lines = 5000
	type stream struct {
		Stream map[string]string `json:"stream"`
		Values [][2]string       `json:"values"`
	}
	streams := []stream{
		{Stream: map[string]string{"job": "caddy", "host": "a"}},
		{Stream: map[string]string{"job": "caddy", "host": "b"}},
		{Stream: map[string]string{"job": "caddy", "host": "c"}},
	}
	var size int64
	for i := 0; i < lines; i++ {
		ts := t0.Add(time.Duration(i) * 7 * time.Millisecond)
		line := caddyLine(ts, fmt.Sprintf("10.0.%d.%d", i/250, i%250), fmt.Sprintf("/w/Page_%d?action=raw", i), 200, i)
		s := &streams[i%len(streams)]
		s.Values = append(s.Values, [2]string{strconv.FormatInt(ts.UnixNano(), 10), line})
		size += int64(len(line))
	}
	body, err := json.Marshal(map[string]any{"status": "success", "data": map[string]any{
		"resultType": "streams",
		"result":     streams,
		"stats":      map[string]any{"summary": map[string]any{"totalBytesProcessed": size, "totalLinesProcessed": lines, "execTime": 0.012}},
	}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	b.Cleanup(srv.Close)
	c, _ := newTestClient(b, srv.URL, nil)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		res, stats, err := c.logPage(context.Background(), `{job="caddy"}`, t0, t0.Add(time.Hour), lines, nil)
		if err != nil || stats == nil || stats.Summary.TotalBytesProcessed != size {
			b.Fatal(err, stats)
		}
		vals, err := flatten(res)
		if err != nil || len(vals) != lines {
			b.Fatal(err, len(vals))
		}
	}
}
