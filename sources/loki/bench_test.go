package loki

import (
	"context"
	"fmt"
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
