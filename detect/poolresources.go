package detect

import (
	"context"
	"math"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// The PromQL of php-fpm's own CPU and memory, defined here only. Two
// exporters expose them:
//
//   - hipages/php-fpm_exporter reads php-fpm's full status page and gives
//     every child its last request: phpfpm_process_last_request_cpu (the
//     %cpu of that request, CPU time over its wall time, 100 = one core; 0
//     while the child is not Idle, since php-fpm computes it when the request
//     ends), phpfpm_process_request_duration (microseconds) and
//     phpfpm_process_last_request_memory (the most memory that request
//     took, PHP's own allocator peak: less than the process's resident size,
//     which adds the binary, its extensions and the opcode cache);
//   - ncabatoff/process-exporter groups processes by name:
//     namedprocess_namegroup_cpu_seconds_total (user and system, a counter),
//     namedprocess_namegroup_memory_bytes{memtype="resident"} and
//     namedprocess_namegroup_num_procs.
//
// The host's cores and free memory come from node_exporter.
const (
	// QueryRequestCPUPct is the %cpu of the requests the children last
	// finished, weighted by their durations: the CPU a busy worker keeps
	// running, 100 per core.
	QueryRequestCPUPct = `sum(phpfpm_process_last_request_cpu * phpfpm_process_request_duration) / sum(phpfpm_process_request_duration and phpfpm_process_last_request_cpu > 0)`
	// QueryRequestCPUSeconds is the CPU seconds of those requests, on
	// average: %cpu / 100 x duration in microseconds / 1e6.
	QueryRequestCPUSeconds = `sum(phpfpm_process_last_request_cpu * phpfpm_process_request_duration) / 1e8 / count(phpfpm_process_last_request_cpu > 0)`
	// QueryRequestMemory is the largest memory peak of a child's last request.
	QueryRequestMemory = `max(phpfpm_process_last_request_memory)`
	// QueryProcessCPU is the cores php-fpm's processes used.
	QueryProcessCPU = `sum(rate(namedprocess_namegroup_cpu_seconds_total{groupname=~".*php-fpm.*"}[1m]))`
	// QueryProcessRSS is php-fpm's processes' resident memory, in bytes.
	QueryProcessRSS = `sum(namedprocess_namegroup_memory_bytes{groupname=~".*php-fpm.*",memtype="resident"})`
	// QueryProcessCount is php-fpm's processes (the master and its children).
	QueryProcessCount = `sum(namedprocess_namegroup_num_procs{groupname=~".*php-fpm.*"})`
	// QueryHostCores is the host's cores.
	QueryHostCores = `count(node_cpu_seconds_total{mode="idle"})`
	// QueryHostNiceCores is the cores niced processes used (batch jobs,
	// backups, builds at low priority): CPU they yield to php-fpm.
	QueryHostNiceCores = `sum(rate(node_cpu_seconds_total{mode="nice"}[1m]))`
	// QueryHostMemAvailable is the memory the host could give without
	// swapping, in bytes.
	QueryHostMemAvailable = `sum(node_memory_MemAvailable_bytes)`
)

// ProcessSeries are php-fpm's own CPU and memory and the host's cores and
// free memory, as the metrics show them on the Pool's grid. A nil slice
// means the series was absent.
type ProcessSeries struct {
	RequestCPUPct, RequestCPUSeconds, RequestMemory []metrics.Point
	ProcessCPU, ProcessRSS, ProcessCount            []metrics.Point
	HostCores, HostNiceCores, HostMemAvailable      []metrics.Point
}

var processQueries = []struct {
	query string
	dst   func(*ProcessSeries) *[]metrics.Point
}{
	{QueryRequestCPUPct, func(p *ProcessSeries) *[]metrics.Point { return &p.RequestCPUPct }},
	{QueryRequestCPUSeconds, func(p *ProcessSeries) *[]metrics.Point { return &p.RequestCPUSeconds }},
	{QueryRequestMemory, func(p *ProcessSeries) *[]metrics.Point { return &p.RequestMemory }},
	{QueryProcessCPU, func(p *ProcessSeries) *[]metrics.Point { return &p.ProcessCPU }},
	{QueryProcessRSS, func(p *ProcessSeries) *[]metrics.Point { return &p.ProcessRSS }},
	{QueryProcessCount, func(p *ProcessSeries) *[]metrics.Point { return &p.ProcessCount }},
	{QueryHostCores, func(p *ProcessSeries) *[]metrics.Point { return &p.HostCores }},
	{QueryHostNiceCores, func(p *ProcessSeries) *[]metrics.Point { return &p.HostNiceCores }},
	{QueryHostMemAvailable, func(p *ProcessSeries) *[]metrics.Point { return &p.HostMemAvailable }},
}

// loadProcessSeries runs processQueries over [from, to] at step.
func loadProcessSeries(ctx context.Context, q metrics.Querier, from, to time.Time, step time.Duration) (ProcessSeries, error) {
	var ps ProcessSeries
	for _, pq := range processQueries {
		s, err := q.QueryRange(ctx, RateQuery(q, pq.query), from, to, step)
		if err != nil {
			return ps, err
		}
		if len(s) > 0 && len(s[0].Points) > 0 {
			*pq.dst(&ps) = s[0].Points
		}
	}
	return ps, nil
}

// PoolResources is what one php-fpm worker costs and what the host has to
// give the pool, measured on php-fpm's own processes (never the whole
// machine's CPU, which other processes share). A zero field is unknown.
type PoolResources struct {
	// CoresPerBusyWorker is the CPU a busy worker keeps running (1 = one
	// core): the pool's CPU over its busy workers (process-exporter), else
	// the %cpu of the requests last finished (php-fpm's status page).
	CoresPerBusyWorker float64
	// CPUFromProcesses: CoresPerBusyWorker came from the processes' CPU
	// counters; false: from php-fpm's last requests.
	CPUFromProcesses bool
	// CPUSecondsPerRequest is the CPU time of a request (php-fpm's status).
	CPUSecondsPerRequest float64
	// MemPerWorkerBytes is one worker's memory: its resident size
	// (process-exporter), else the largest peak of a request (php-fpm's
	// status), which leaves out what every process maps besides PHP's heap.
	MemPerWorkerBytes float64
	// MemResident: MemPerWorkerBytes is a resident size.
	MemResident bool
	// HostCores is the host's cores; CoresForPHP is those less what other
	// processes used at normal priority (when the host's CPU and the pool's
	// are both measured; niced work yields to php-fpm).
	HostCores, CoresForPHP float64
	// MemForPHPBytes is the memory the pool could hold at its tightest: the
	// host's available memory plus what the pool already held.
	MemForPHPBytes float64
}

// Known says whether any per-process series was measured: without one,
// the pool cannot be sized on its own CPU or memory.
func (r PoolResources) Known() bool { return r.CoresPerBusyWorker > 0 || r.MemPerWorkerBytes > 0 }

// Resources measures the pool's own CPU and memory over [from, to).
func (p *Pool) Resources(from, to time.Time) PoolResources {
	var r PoolResources
	ps := p.Processes
	// CPU a busy worker keeps running: the pool's cores over its busy
	// workers, a ratio of sums over every scrape, idle ones too. An idle
	// child uses no CPU, so idle scrapes add next to nothing to either sum;
	// but the CPU is a rate over a minute and the busy count an instant, so
	// a scrape that caught the pool idle between two busy ones still carries
	// their CPU. Leaving such scrapes out lost a fifth of the CPU on a real
	// recording (0.05 of a core a busy worker against 0.069 measured in
	// /proc), whose upstream flapped and left the pool idle for seconds.
	cpu, busy := 0.0, 0.0
	for _, pt := range between(ps.ProcessCPU, from, to) {
		if a := valueAt(p.Active, pt.T); a >= 0 {
			cpu += pt.V
			busy += a
		}
	}
	switch {
	case busy > 0 && cpu > 0:
		r.CoresPerBusyWorker, r.CPUFromProcesses = cpu/busy, true
	default:
		if v := meanBetween(ps.RequestCPUPct, from, to); v > 0 {
			r.CoresPerBusyWorker = v / 100
		}
	}
	if v := meanBetween(ps.RequestCPUSeconds, from, to); v > 0 {
		r.CPUSecondsPerRequest = v
	}
	// The group counts the master too, which serves no request: its memory
	// is spread over the children, which errs on the safe side. Averaged
	// over the scrapes: a pool of few children spreads it thicker.
	rss, scrapes := 0.0, 0
	for _, pt := range between(ps.ProcessRSS, from, to) {
		if n := valueAt(ps.ProcessCount, pt.T); n >= 1 {
			rss += pt.V / math.Max(1, n-1)
			scrapes++
		}
	}
	if scrapes > 0 {
		r.MemPerWorkerBytes, r.MemResident = rss/float64(scrapes), true
	}
	if !r.MemResident {
		r.MemPerWorkerBytes = peak(between(ps.RequestMemory, from, to)).V
	}
	r.HostCores = peak(between(ps.HostCores, from, to)).V
	r.CoresForPHP = r.HostCores
	if r.HostCores > 0 && r.CPUFromProcesses {
		// Other processes' cores: the host's busy cores less the pool's and
		// less the niced ones. A niced process yields its CPU to php-fpm (the
		// scheduler weighs nice 10 at a tenth of nice 0): on a real host whose
		// cores a low-priority job kept 100% busy, php-fpm still got what it
		// asked for. php-fpm's own CPU is niced time too when php-fpm runs
		// niced, so the larger of the two is taken off, not both: exact then,
		// and erring low by the smaller of them when php-fpm is not niced.
		others, n := 0.0, 0
		for _, pt := range between(p.CPU, from, to) {
			if pool := valueAt(ps.ProcessCPU, pt.T); !math.IsNaN(pool) {
				yielded := pool
				if nice := valueAt(ps.HostNiceCores, pt.T); nice > pool {
					yielded = nice
				}
				others += math.Max(0, pt.V/100*r.HostCores-yielded)
				n++
			}
		}
		if n > 0 {
			r.CoresForPHP = math.Max(0, r.HostCores-others/float64(n))
		}
	}
	if r.MemPerWorkerBytes > 0 {
		tightest := math.Inf(1)
		for _, pt := range between(ps.HostMemAvailable, from, to) {
			held := valueAt(ps.ProcessRSS, pt.T)
			if math.IsNaN(held) {
				held = valueAt(p.Total, pt.T) * r.MemPerWorkerBytes
			}
			if !math.IsNaN(held) {
				tightest = math.Min(tightest, pt.V+held)
			}
		}
		if !math.IsInf(tightest, 1) {
			r.MemForPHPBytes = tightest
		}
	}
	return r
}

// What binds a pool's size: the memory the host has for it, the CPU it has
// for it, or the load (Little's law) when both leave room.
const (
	BoundMemory = "memory"
	BoundCPU    = "cpu"
	BoundLoad   = "load"
)

// PoolFit is how many workers the host holds: by memory (the memory for PHP
// over one worker's), by CPU (the cores for PHP over a busy worker's); -1
// when unknown. Fit is the smaller known one (-1 if neither).
type PoolFit struct {
	ByMemory, ByCPU, Fit int
	// Bound is BoundMemory or BoundCPU, whichever gives Fit ("" if neither).
	Bound string
}

// Fit is how many workers the host holds on the pool's own CPU and memory.
func (r PoolResources) Fit() PoolFit {
	byMemory, byCPU := -1, -1
	if r.MemPerWorkerBytes > 0 && r.MemForPHPBytes > 0 {
		byMemory = int(math.Floor(r.MemForPHPBytes / r.MemPerWorkerBytes))
	}
	if r.CoresPerBusyWorker > 0 && r.CoresForPHP > 0 {
		byCPU = int(math.Floor(r.CoresForPHP / r.CoresPerBusyWorker))
	}
	return FitOf(byMemory, byCPU)
}

// FitOf is the fit of the workers memory and CPU hold (-1: unknown): the
// smaller known one binds, memory on a tie.
func FitOf(byMemory, byCPU int) PoolFit {
	f := PoolFit{ByMemory: byMemory, ByCPU: byCPU, Fit: -1}
	switch {
	case byMemory >= 0 && (byCPU < 0 || byMemory <= byCPU):
		f.Fit, f.Bound = byMemory, BoundMemory
	case byCPU >= 0:
		f.Fit, f.Bound = byCPU, BoundCPU
	}
	return f
}

// SizePool is the pool size the load and the host agree on: the workers
// the peak kept busy (Little's law) with headroom, at least floor (the size
// a blamed cut took the pool from, or 0), at most what the host fits; and
// what bound it (BoundLoad when the host leaves room). When the host fits
// fewer than the load needs, the size is what fits and ok is false: no
// setting holds the peak on this host.
func SizePool(needed, floor float64, fit PoolFit) (size int, bound string, ok bool) {
	want := int(math.Max(floor, math.Ceil(needed*SizingHeadroom)))
	if fit.Fit < 0 || want <= fit.Fit {
		return want, BoundLoad, true
	}
	return fit.Fit, fit.Bound, float64(fit.Fit) >= needed
}

// SizingHeadroom is the margin over the workers a peak kept busy that a pool
// is sized with: the next peak is not the last one's.
const SizingHeadroom = 1.25
