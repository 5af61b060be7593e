package detect

import (
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchref"
	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchreqs"
	"github.com/aftermath-forensics/aftermath/sources"
)

// BenchmarkObserve is the aggregation half of ingest alone: Traffic.Observe
// over requests already read. Its MB/s are of the log lines the requests came
// from, so that they add up with BenchmarkRead's (sources/accesslog) to the
// whole of ingest.
func BenchmarkObserve(b *testing.B) {
	const size = 16 << 20
	reqs := benchreqs.Requests(b, size)
	site := sources.Site{ClientTimeoutS: 10, HealthURI: "/healthz.php"}
	b.SetBytes(size)
	b.ReportAllocs()
	cpu0 := benchref.CPUTime()
	for b.Loop() {
		// The window over the whole log: every request's client detail is kept.
		tr := NewTraffic(site, time.Unix(0, 0), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
		for i := range reqs {
			tr.Observe(&reqs[i])
		}
	}
	reportPerRequest(b, benchref.CPUTime()-cpu0, len(reqs))
}

// reportPerRequest reports wall and CPU time per request: on a shared
// machine the CPU time (of the whole process, the garbage collector's
// included) measures the work, the wall time the neighbours too.
func reportPerRequest(b *testing.B, cpu time.Duration, requests int) {
	n := float64(b.N) * float64(requests)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/request")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/request")
	}
}

// BenchmarkRouteTemplate is the route table's share of Observe: a template
// and its record for every request of the generated log, which repeats
// targets (assets, popular pages) among many seen once (titles, searches).
func BenchmarkRouteTemplate(b *testing.B) {
	reqs := benchreqs.Requests(b, 16<<20)
	b.ReportAllocs()
	cpu0 := benchref.CPUTime()
	for b.Loop() {
		tab := newRouteTable()
		for i := range reqs {
			r := &reqs[i]
			tab.observe(tab.template(r.Path, r.Query), r.Time.Unix()/60, r)
		}
	}
	reportPerRequest(b, benchref.CPUTime()-cpu0, len(reqs))
}
