package benchref

import "time"

// Result is one measured run, as a benchmark's child process reports it: one
// JSON object on its standard output. Each run is a process of its own, so
// that its CPU time and peak RSS are its own.
type Result struct {
	What   string  `json:"what"`
	Procs  int     `json:"procs"`
	Bytes  int64   `json:"bytes"` // uncompressed
	Lines  int64   `json:"lines"`
	WallS  float64 `json:"wall_s"`
	CPUS   float64 `json:"cpu_s"`
	RSSKiB int64   `json:"maxrss_kib"`
	// Faults counts the pages the process touched for the first time
	// (MinorFaults): most of its system time on a virtual machine.
	Faults int64  `json:"minor_faults,omitempty"`
	Check  string `json:"check"` // what was computed, to see that it ran
	// From analyzebench: the wall time of ingest (ingest.Load) and of what
	// follows it (detectors, report, rules with their backtest, rendering).
	IngestS float64 `json:"ingest_s,omitempty"`
	AfterS  float64 `json:"after_s,omitempty"`
	// From analyzebench: what the run allocated on the heap in all
	// (runtime.MemStats): unlike time, the same on a busy machine.
	AllocMiB float64 `json:"alloc_mib,omitempty"`
	Mallocs  uint64  `json:"mallocs,omitempty"`
	// From analyzebench: the largest heap the garbage collector found live,
	// read at each stage of the pipeline and at the end (runtime/metrics'
	// /gc/heap/live:bytes, as of the last collection): what the analysis
	// holds, without the garbage that peak RSS also counts until the next
	// collection, whose amount depends on how long the run is.
	LiveMiB float64 `json:"live_mib,omitempty"`
}

// Measure sets r's wall time since start and the whole process's CPU time
// (user+system), page faults and peak RSS so far (PeakRSSKiB: 0 where /proc does not
// say). The process's start-up, before main, counts: a program pays it as
// much as its loop.
func (r *Result) Measure(start time.Time) {
	r.WallS = time.Since(start).Seconds()
	r.CPUS = CPUTime().Seconds()
	r.RSSKiB = PeakRSSKiB()
	r.Faults = MinorFaults()
}

// RoundRatios pairs the runs of two programs measured in alternation, one
// run of each per round, and returns round by round b's CPU time over a's:
// a's speed as a share of b's. The two runs of a round are taken one right
// after the other, so they share the machine's speed of that minute, which
// on a shared or virtual machine changes from one minute to the next; a
// ratio of the two sides' medians can set a's runs of a faster minute
// against b's of a slower one. A round without both runs, or whose a run
// took no CPU time, has no ratio.
func RoundRatios(a, b []Result) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if a[i].CPUS > 0 {
			out = append(out, b[i].CPUS/a[i].CPUS)
		}
	}
	return out
}
