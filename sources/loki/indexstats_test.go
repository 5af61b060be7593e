package loki

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// Loki's index statistics come without the status envelope every other
// answer has ({"streams": N, "chunks": N, "entries": N, "bytes": N}); they
// count the selector's lines in [from, to) and read none of them (no bytes
// processed), and their bytes per line are what the lines weigh.
func TestIndexStatsReadsTheIndex(t *testing.T) {
	lk := lokitest.New(t)
	var bytes int64
	for i := range 120 {
		line := fmt.Sprintf(`{"status":200,"uri":"/p/%d"}`, i) + strings.Repeat("x", i%7)
		lk.Push(streamA, t0.Add(time.Duration(i)*time.Second), line)
		bytes += int64(len(line))
		lk.Push(map[string]string{"job": "other"}, t0.Add(time.Duration(i)*time.Second), line)
	}
	// A line at the range's end is outside it.
	lk.Push(streamA, t0.Add(2*time.Minute), "outside")
	c, _ := newTestClient(t, lk.URL(), nil)
	st, err := c.IndexStats(context.Background(), `{job="caddy"}`, t0, t0.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if st.Streams != 1 || st.Entries != 120 || st.Bytes != bytes || st.Requests != 1 || st.WireBytes <= 0 {
		t.Errorf("index stats %+v: want 1 stream, 120 lines, %d bytes, in 1 request", st, bytes)
	}
	if per, ok := st.BytesPerLine(); !ok || per != float64(bytes)/120 {
		t.Errorf("bytes per line %v %v, want %v", per, ok, float64(bytes)/120)
	}
	if n := lk.BytesProcessed(); n != 0 {
		t.Errorf("the index statistics read %d bytes of lines", n)
	}
	if _, err := c.IndexStats(context.Background(), `{job="caddy"} | json`, t0, t0.Add(time.Minute)); err == nil {
		t.Error("a pipeline is not matchers: want Loki's 400")
	}
	empty, err := c.IndexStats(context.Background(), `{job="none"}`, t0, t0.Add(time.Minute))
	if _, ok := empty.BytesPerLine(); err != nil || ok {
		t.Errorf("no stream: %+v %v, want no bytes per line", empty, err)
	}
}
