package lokitest

// The fake's results cache.
//
// Loki's query frontend keeps the results of metric queries
// (query_range.cache_results) and answers a query it has answered before
// from them. The fake does the same, and shares the cache between fakes
// that hold the same lines: the tests of a package start many fakes from
// one fixture and ask them the same counts (a fetch with a limit and one
// without, a pushdown's two fetches), and evaluating a metric query over
// every line again was most of the fake's time.
//
// A result is keyed by what decides it: the stored lines (a fingerprint of
// every stream, timestamp and line, which each Push changes), the query's
// text and its aligned start, end and step. It holds what the evaluation
// returned - the series, the lines and bytes read, the error - so an answer
// from the cache counts the same statistics (BytesProcessed, Stats) and
// meets the same limits (max_query_series, checked on every answer; the
// bytes limits, checked before) as an evaluation would.

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
)

// contentPrint fingerprints the stored lines, in any order: two sums of a
// hash of each (stream, timestamp, line), under two seeds, and the count.
type contentPrint struct {
	a, b uint64
	n    int64
}

var printSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// add counts one stored line (Push calls it once per line kept).
func (p *contentPrint) add(streamKey string, e Entry) {
	var ts [8]byte
	binary.LittleEndian.PutUint64(ts[:], uint64(e.TS))
	for i, sum := range []*uint64{&p.a, &p.b} {
		var h maphash.Hash
		h.SetSeed(printSeeds[i])
		h.WriteString(streamKey)
		h.WriteByte(0)
		h.Write(ts[:])
		h.WriteString(e.Line)
		*sum += h.Sum64()
	}
	p.n++
}

type metricKey struct {
	content          contentPrint
	query            string
	start, end, step int64
}

type metricResult struct {
	series                []fakeSeries
	scanned, scannedBytes int64
	err                   error
}

// maxCachedResults bounds the cache: past it, results are evaluated and
// not kept.
const maxCachedResults = 1 << 12

var metricResults = struct {
	mu sync.Mutex
	m  map[metricKey]metricResult
}{m: map[metricKey]metricResult{}}
