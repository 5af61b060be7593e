package configchange

import (
	"math"

	"github.com/aftermath-forensics/aftermath/detect"
)

// poolSizing is a pool size change sized on php-fpm's own CPU and memory
// (never the machine's, which other processes share) against Little's law:
// what one busy worker costs, what the host has for the pool, how many
// workers that fits by memory and by CPU, and which of memory, CPU or the
// load binds. It is the data of config_change.sizing.
type poolSizing struct {
	// Known: some per-process series was measured; without one nothing
	// below is, and the message says the pool cannot be sized.
	Known bool
	// Cores is the CPU a busy worker kept running (1 = one core), FromProcesses
	// whether from the processes' counters (else php-fpm's last requests);
	// CPUSeconds a request's CPU time (0: unknown).
	Cores, CPUSeconds float64
	FromProcesses     bool
	// MiB is one worker's memory, Resident whether its resident size (else
	// the peak of PHP's memory in a request, a lower bound).
	MiB      float64
	Resident bool
	// ForMiB and ForCores are what the host had for PHP; ByMemory and ByCPU
	// the workers they fit (-1: unknown).
	ForMiB, ForCores  float64
	ByMemory, ByCPU   int
	Needed, Floor     float64
	Size              int
	Bound             string
	Holds, FloorIsOld bool
}

// sizing sizes the pool for the peak's needed busy workers, at least floor
// (the size a cut took the pool from; 0 when it grew).
func sizing(r detect.PoolResources, needed, floor float64) poolSizing {
	s := poolSizing{Known: r.Known(), Needed: detect.Round(needed, 1), Floor: floor, FloorIsOld: floor > 0}
	if !s.Known {
		return s
	}
	s.Cores, s.CPUSeconds, s.FromProcesses = detect.Round(r.CoresPerBusyWorker, 2), detect.Round(r.CPUSecondsPerRequest, 3), r.CPUFromProcesses
	s.MiB, s.Resident = detect.Round(r.MemPerWorkerBytes/(1<<20), 1), r.MemResident
	s.ForMiB, s.ForCores = math.Round(r.MemForPHPBytes/(1<<20)), detect.Round(r.CoresForPHP, 1)
	fit := r.Fit()
	s.ByMemory, s.ByCPU = fit.ByMemory, fit.ByCPU
	s.Size, s.Bound, s.Holds = detect.SizePool(needed, floor, fit)
	return s
}

// state writes the sizing into the finding's facts.
func (s poolSizing) state(f *ConfigChangeFacts) {
	if !s.Known {
		f.CannotSizeOnPool = detect.Some(true)
		return
	}
	if s.Cores > 0 {
		f.PoolCoresPerBusyWorker = detect.Some(s.Cores)
	}
	if s.CPUSeconds > 0 {
		f.PoolCPUSPerRequest = detect.Some(s.CPUSeconds)
	}
	if s.MiB > 0 {
		f.PoolMemPerWorkerMiB, f.PoolMemResident = detect.Some(s.MiB), detect.Some(s.Resident)
	}
	if s.ByMemory >= 0 {
		f.MemForPHPMiB, f.WorkersFitMemory = detect.Some(s.ForMiB), detect.Some(s.ByMemory)
	}
	if s.ByCPU >= 0 {
		f.CoresForPHP, f.WorkersFitCPU = detect.Some(s.ForCores), detect.Some(s.ByCPU)
	}
	f.WorkersSized = detect.Some(s.Size)
	f.SizedByMemory, f.SizedByCPU = detect.Some(s.Bound == detect.BoundMemory), detect.Some(s.Bound == detect.BoundCPU)
	f.SizedHoldsPeak = detect.Some(s.Holds)
}

// sizingFromFacts reads the sizing back from a finding's facts, for the
// explanation in the report's language.
func sizingFromFacts(f *ConfigChangeFacts) (poolSizing, bool) {
	switch {
	case f.CannotSizeOnPool.V:
		return poolSizing{}, true
	case !f.WorkersSized.OK:
		return poolSizing{}, false
	}
	s := poolSizing{Known: true, Cores: f.PoolCoresPerBusyWorker.V, CPUSeconds: f.PoolCPUSPerRequest.V,
		MiB: f.PoolMemPerWorkerMiB.V, Resident: f.PoolMemResident.V, ForMiB: f.MemForPHPMiB.V, ForCores: f.CoresForPHP.V,
		ByMemory: f.WorkersFitMemory.Or(-1), ByCPU: f.WorkersFitCPU.Or(-1), Needed: f.WorkersNeeded.V, Size: f.WorkersSized.V,
		Holds: f.SizedHoldsPeak.V, Bound: detect.BoundLoad}
	switch {
	case f.SizedByMemory.V:
		s.Bound = detect.BoundMemory
	case f.SizedByCPU.V:
		s.Bound = detect.BoundCPU
	}
	if f.RiskDirection > 0 && f.OldValue.OK {
		s.Floor, s.FloorIsOld = f.OldValue.V, true
	}
	return s, true
}
