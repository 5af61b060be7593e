package configchange

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect"
)

// realPoolCutTruth is what testdata/realpoolcut/record.sh measured outside
// aftermath (truth.py): /proc for php-fpm's processes and the host's CPU,
// php-fpm's own access log for each request's time, the load generator for
// the arrivals.
type realPoolCutTruth struct {
	MaxChildren struct{ Old, New float64 } `json:"max_children"`
	Needed      float64                    `json:"busy_workers_needed_at_peak"`
	CPU         struct {
		CoresPerBusyWorker   float64 `json:"cores_per_busy_worker"`
		HostCores            float64 `json:"host_cores"`
		PHPFPMCPUS           float64 `json:"php_fpm_cpu_s"`
		SpanS                float64 `json:"span_s"`
		OthersNotNiced       float64 `json:"others_cores_not_niced"`
		OthersWithNicedCores float64 `json:"others_cores"`
	} `json:"cpu"`
	MemoryKB struct {
		RSSMean float64 `json:"worker_rss_mean"`
		PSSMean float64 `json:"worker_pss_mean"`
	} `json:"memory_kb"`
}

// TestRealPoolCutSizedOnItsOwnProcesses analyzes a real recording (real
// Caddy, php-fpm 8.2, Prometheus, process-exporter and node_exporter on a
// 2-core host that other work kept 100% busy, most of it niced): a commit
// three hours earlier cut pm.max_children from 8 to 3 and a crowd of 9
// requests a second at about 0.6 s each then filled the pool. The sizing must
// match what /proc and php-fpm's own log measured: the CPU a busy worker
// kept running, the cores php-fpm could have had (the host's less what ran
// at normal priority: niced builds yield to it), one worker's resident
// memory, CPU binding long before memory, and a size that is never the
// blamed 3. Tolerances: 25% on a busy worker's cores and memory (the facts
// round to 0.01 of a core, the scrapes are 5 s apart); the cores for PHP may
// err low by php-fpm's own use (not knowing whether php-fpm ran niced, its
// CPU and the niced CPU are not both taken off), never high.
func TestRealPoolCutSizedOnItsOwnProcesses(t *testing.T) {
	dir := filepath.Join("testdata", "realpoolcut", "bundle")
	var truth realPoolCutTruth
	data, err := os.ReadFile(filepath.Join(dir, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &truth); err != nil {
		t.Fatal(err)
	}
	res := detected(t, dir)
	// The workers ran 0.2 of the 1.3 cores PHP could have: waiting, though
	// the host's CPU read 100% (other processes, most of them niced).
	for _, f := range res.Findings {
		if f.Kind == detect.KindWorkerSaturation {
			if sf := detect.FactsOf[detect.WorkerSaturationFacts](&f); !sf.CPUBound.OK || sf.CPUBound.V {
				t.Errorf("worker_saturation cpu_bound %v: the pool ran %.2f cores of %.2f it could have\n%s", sf.CPUBound,
					truth.CPU.CoresPerBusyWorker*truth.MaxChildren.New, truth.CPU.HostCores-truth.CPU.OthersNotNiced, f.Summary)
			}
		}
	}
	cut := poolSizeChange(t, res)
	cf := detect.FactsOf[ConfigChangeFacts](cut)
	if cf.OldValue.V != truth.MaxChildren.Old || cf.NewValue.V != truth.MaxChildren.New {
		t.Fatalf("change %v -> %v, truth %v -> %v", cf.OldValue.V, cf.NewValue.V, truth.MaxChildren.Old, truth.MaxChildren.New)
	}
	if !cf.Linked || cut.Role != detect.RoleEnabler || !cf.OldPoolHeld.V {
		t.Errorf("cut role %s, linked %v, old pool held %v: want the enabler (%v busy workers needed, measured; 8 hold them, 3 do not)\n%s",
			cut.Role, cf.Linked, cf.OldPoolHeld, truth.Needed, cut.Summary)
	}
	// Whether 8 would have held is the queue the crowd built, second by
	// second, against the clients' 10 s: not two full-queue waits (both past
	// it), and not a span's average alone.
	if oldW, newW := cf.OldPoolLongestWaitS, cf.NewPoolLongestWaitS; !oldW.OK || !newW.OK || oldW.V > cf.ClientTimeoutS.V || newW.V <= cf.ClientTimeoutS.V {
		t.Errorf("longest queue waits %v with 8, %v with 3, against the clients' %v: want 8 within it, 3 past it\n%s", oldW, newW, cf.ClientTimeoutS, cut.Summary)
	}
	// The load that filled the pool is named beside the cut: the crowd's
	// demand for PHP against the log's own minutes before it rose.
	if !cf.UsualPHPPerS.OK || cf.PeakPHPPerS.V <= detect.ArrivalsFlat*cf.UsualPHPPerS.V {
		t.Errorf("usual demand %v against a peak of %v a second: the crowd that filled the pool is not named as a rise\n%s", cf.UsualPHPPerS, cf.PeakPHPPerS.V, cut.Summary)
	}
	if got := cf.WorkersNeeded.V; got < 0.7*truth.Needed || got > 1.3*truth.Needed {
		t.Errorf("busy workers needed %v, measured %v (peak minute's arrivals x the baseline's service time)", got, truth.Needed)
	}
	if !cf.WorkersSized.OK || cf.CannotSizeOnPool.OK {
		t.Fatalf("sized %v, cannot size %v: the bundle has process-exporter's php-fpm group\n%s", cf.WorkersSized, cf.CannotSizeOnPool, cut.Summary)
	}
	within := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol*want {
			t.Errorf("%s %v, measured %v (tolerance %.0f%%)", what, got, want, 100*tol)
		}
	}
	within("cores a busy worker kept running", cf.PoolCoresPerBusyWorker.V, truth.CPU.CoresPerBusyWorker, 0.25)
	// process-exporter's resident size counts the pages a worker shares
	// with the others (libraries, opcache), which PSS divides among them;
	// a request's own 8 MiB comes and goes between scrapes. Resident is the
	// safe side: what one more worker may take.
	const kib = 1024.0
	within("one worker's resident MiB", cf.PoolMemPerWorkerMiB.V, truth.MemoryKB.RSSMean/kib, 0.25)
	if !cf.PoolMemResident.V || cf.PoolMemPerWorkerMiB.V < truth.MemoryKB.PSSMean/kib {
		t.Errorf("worker memory %v MiB (resident %v) below its proportional share %.1f MiB", cf.PoolMemPerWorkerMiB.V, cf.PoolMemResident.V, truth.MemoryKB.PSSMean/kib)
	}
	poolCores := truth.CPU.PHPFPMCPUS / truth.CPU.SpanS
	forPHP := truth.CPU.HostCores - truth.CPU.OthersNotNiced
	if got := cf.CoresForPHP.V; got > forPHP+0.05 || got < forPHP-poolCores-0.15 {
		t.Errorf("cores for PHP %v; measured: %.2f of %v cores free of work at normal priority (php-fpm itself used %.2f; counting niced work leaves %.2f)",
			got, forPHP, truth.CPU.HostCores, poolCores, truth.CPU.HostCores-truth.CPU.OthersWithNicedCores)
	}
	fitCPU := forPHP / truth.CPU.CoresPerBusyWorker
	if got := float64(cf.WorkersFitCPU.V); got > 1.25*fitCPU || got < 0.6*fitCPU {
		t.Errorf("workers the CPU fits %v, measured %.1f", got, fitCPU)
	}
	if !cf.SizedByCPU.OK || cf.SizedByMemory.V || cf.WorkersFitMemory.V < 10*cf.WorkersFitCPU.V {
		t.Errorf("fit by memory %v, by CPU %v, sized by memory %v: the host had gigabytes free, CPU binds first",
			cf.WorkersFitMemory.V, cf.WorkersFitCPU.V, cf.SizedByMemory.V)
	}
	if got := float64(cf.WorkersSized.V); got == truth.MaxChildren.New || got < truth.MaxChildren.Old || !cf.SizedHoldsPeak.V {
		t.Errorf("sized at %v (holds the peak %v): want at least the old %v, never the blamed %v\n%s",
			got, cf.SizedHoldsPeak.V, truth.MaxChildren.Old, truth.MaxChildren.New, cut.Summary)
	}
}

// TestRealShortBurstsJudgedOnTheirQueue analyzes two more recordings of the
// same stack (record.sh with OUT and PHASES; the pool cut from 8 to 3, a
// usual 2 requests a second at about 0.65 s each, clients that give up after
// 10 s) where the obvious answer is wrong:
//   - shortburst: 45 s at 9 a second. Five minutes average to under 3 busy
//     workers, within the new pool, which cleared the cut; but 3 workers
//     take under 5 a second, and the burst's queue outlasts the clients.
//   - shortspike: 10 s at 18 a second, past what even 8 workers take (about
//     12 a second): its busiest second needs 11 workers, which says the old
//     pool would have failed too; but 8 drain the spike's queue in a few
//     seconds, within the clients' timeout.
//
// In both the cut is the enabler: the old pool's queue drains within the
// timeout, the new one's does not.
func TestRealShortBurstsJudgedOnTheirQueue(t *testing.T) {
	for _, name := range []string{"shortburst", "shortspike"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := detected(t, filepath.Join("testdata", "realpoolcut", name))
			cut := poolSizeChange(t, res)
			cf := detect.FactsOf[ConfigChangeFacts](cut)
			if cf.WorkersNeeded.V > cf.NewValue.V {
				t.Errorf("five minutes average to %v busy workers, past the new pool of %v: the recording no longer hides its burst in the average",
					cf.WorkersNeeded.V, cf.NewValue.V)
			}
			oldW, newW, limit := cf.OldPoolLongestWaitS, cf.NewPoolLongestWaitS, cf.ClientTimeoutS
			if !oldW.OK || !newW.OK || limit.V != 10 || oldW.V > limit.V || newW.V <= limit.V {
				t.Errorf("longest queue waits %v with 8, %v with 3, against %v: want 8 within the clients' 10 s, 3 past it\n%s", oldW, newW, limit, cut.Summary)
			}
			if !cf.Linked || cut.Role != detect.RoleEnabler || !cf.OldPoolHeld.V {
				t.Errorf("cut role %s, linked %v, old pool held %v: want the enabler\n%s", cut.Role, cf.Linked, cf.OldPoolHeld, cut.Summary)
			}
		})
	}
}
