package detect

import (
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// BenchmarkObserve is the aggregation half of ingest alone: Traffic.Observe
// over requests already read. Its MB/s are of the log lines the requests came
// from, so that they add up with BenchmarkRead's (sources/accesslog) to the
// whole of ingest.
func BenchmarkObserve(b *testing.B) {
	const size = 16 << 20
	reqs := generatedRequests(b, size)
	site := sources.Site{ClientTimeoutS: 10, HealthURI: "/healthz.php"}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		// The window over the whole log: every request's client detail is kept.
		tr := NewTraffic(site, time.Unix(0, 0), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
		for i := range reqs {
			tr.Observe(&reqs[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(reqs)), "ns/request")
}
