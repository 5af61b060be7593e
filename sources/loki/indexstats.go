package loki

import (
	"context"
	"fmt"
	"net/url"
	"time"
)

// pathIndexStats is Loki's index statistics endpoint.
const pathIndexStats = "/loki/api/v1/index/stats"

// IndexStats is what Loki's index says a selector resolves to over a range
// (GET /loki/api/v1/index/stats): streams, chunks, entries (lines) and their
// bytes. Loki reads it from the index, not from the chunks, so it costs no
// pass over the lines; Loki documents it as an approximation that leaves out
// what the ingesters still hold, which makes it a sample of the range's lines
// rather than their sum: its bytes per entry are what the range's lines
// weigh.
type IndexStats struct {
	Streams int64 `json:"streams"`
	Chunks  int64 `json:"chunks"`
	Entries int64 `json:"entries"`
	Bytes   int64 `json:"bytes"`
	// Requests and WireBytes are the cost of asking.
	Requests  int   `json:"-"`
	WireBytes int64 `json:"-"`
}

// BytesPerLine is the mean size of a line the index holds; ok is false
// when it holds none.
func (s IndexStats) BytesPerLine() (float64, bool) {
	if s.Entries <= 0 || s.Bytes <= 0 {
		return 0, false
	}
	return float64(s.Bytes) / float64(s.Entries), true
}

// bareAnswer marks an answer Loki writes without the status envelope.
type bareAnswer struct{ v any }

// IndexStats asks Loki's index what selector (stream matchers only)
// resolves to in [from, to).
func (c *Client) IndexStats(ctx context.Context, selector string, from, to time.Time) (IndexStats, error) {
	var out IndexStats
	p := url.Values{"query": {selector}, "start": {nanos(from)}, "end": {nanos(to.Add(-time.Nanosecond))}}
	m := &meter{}
	err := c.get(ctx, pathIndexStats, p, bareAnswer{&out}, m)
	out.Requests, out.WireBytes = m.requests, m.wire
	if err != nil {
		return IndexStats{Requests: m.requests, WireBytes: m.wire}, c.scrub(fmt.Errorf("loki index stats %q: %w", selector, err))
	}
	return out, nil
}
