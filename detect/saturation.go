package detect

import (
	"context"
	"math"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/fpmlog"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

func init() {
	Register(Spec{
		Kind: KindWorkerSaturation, New: func() Detector { return saturationDetector{} },
		NewFacts: func() Facts { return &WorkerSaturationFacts{} },
		Role:     RoleMechanism,
		Chain:    1,
		Scan: ScanMeasure{Anomaly: "saturation", Metric: Messages.SayLater("worker_saturation.scan_metric", nil),
			Observed: func(f *Finding) float64 { return FactsOf[WorkerSaturationFacts](f).SaturatedSeconds }},
		Events:  map[Event]int{EventSaturation: 2},
		Explain: explainSaturation,
		Moments: saturationMoments,
	})
}

// WorkerSaturationFacts are a worker_saturation finding's numbers.
type WorkerSaturationFacts struct {
	Workers          int     `json:"workers"`
	SaturatedSeconds float64 `json:"saturated_seconds"`
	// CPUAvgPct (the host's) and CPUBound need a CPU series; CPUBound is
	// judged on php-fpm's own processes when they are measured
	// (cpuBoundPct).
	CPUAvgPct Maybe[float64] `json:"cpu_avg_pct"`
	CPUBound  Maybe[bool]    `json:"cpu_bound"`
	// CompletionRatePerS and ServiceTimeS (Little's law with every worker
	// busy) need the accepted-connections series.
	CompletionRatePerS Maybe[float64] `json:"completion_rate_per_s"`
	ServiceTimeS       Maybe[float64] `json:"service_time_s"`
	// NormalServiceTimeS and NormalCapacityPerS are the pool's before the
	// incident, when measured.
	NormalServiceTimeS         Maybe[float64] `json:"normal_service_time_s"`
	NormalCapacityPerS         Maybe[float64] `json:"normal_capacity_per_s"`
	MaxChildrenReachedIncrease Maybe[float64] `json:"max_children_reached_increase"`
	// MaxChildrenWarnings counts php-fpm log warnings, when the log is given.
	MaxChildrenWarnings Maybe[int] `json:"max_children_warnings"`
	// php-fpm's own CPU and memory while saturated, when per-process series
	// exist (poolresources.go): the cores a busy worker kept running, a
	// worker's MiB (resident, else PHP's peak in a request), and the workers
	// the host fits by memory and by CPU.
	PoolCoresPerBusyWorker Maybe[float64] `json:"pool_cores_per_busy_worker"`
	PoolMemPerWorkerMiB    Maybe[float64] `json:"pool_mem_per_worker_mib"`
	PoolMemResident        Maybe[bool]    `json:"pool_mem_resident"`
	WorkersFitMemory       Maybe[int]     `json:"workers_fit_memory"`
	WorkersFitCPU          Maybe[int]     `json:"workers_fit_cpu"`
}

func (*WorkerSaturationFacts) FindingKind() Kind { return KindWorkerSaturation }

// EventSaturation is the timeline event of every worker turning busy.
const EventSaturation Event = "saturation"

func explainSaturation(p Phraser, f *Finding, _ Story) string {
	return p.Say("worker_saturation.explain", about[WorkerSaturationFacts]{f, FactsOf[WorkerSaturationFacts](f)})
}

func saturationMoments(f *Finding, _ Story) []Moment {
	return []Moment{{Time: f.Start, Event: EventSaturation, Topic: "workers", Text: func(p Phraser) string { return saturationMoment(p, f) }}}
}

func saturationMoment(p Phraser, f *Finding) string {
	return p.Say("worker_saturation.moment", FactsOf[WorkerSaturationFacts](f))
}

// saturationDetector finds stretches where every php-fpm worker was busy.
type saturationDetector struct{}

func (saturationDetector) Name() Kind { return KindWorkerSaturation }

// Saturation must last minSaturated to matter: a pool touching its maximum for
// one scrape is ordinary at peak hour.
const minSaturated = time.Minute

// cpuBoundPct is where busy workers are taken to be computing rather than
// waiting: above it the host had no headroom to give more workers. It is a
// share of the host's CPU, or, when php-fpm's own processes are measured, the
// share they ran of the cores PHP could have.
const cpuBoundPct = 80.0

func (saturationDetector) Detect(ctx context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error) {
	p := ev.Pool
	if p == nil || len(p.Active) == 0 {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("worker_saturation.no_series", nil)), nil
	}
	workers := poolSize(ev)
	if workers == 0 {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("worker_saturation.no_pool_size", nil)), nil
	}
	rs := runs(p.Active, ev.From, ev.To, 2*p.Step, func(pt metrics.Point) bool { return pt.V >= float64(workers) })
	var longest run
	var busy time.Duration
	for _, r := range rs {
		d := r.End.Sub(r.Start) + p.Step
		busy += d
		if d > longest.End.Sub(longest.Start)+p.Step || longest.Points == 0 {
			longest = r
		}
	}
	if busy < minSaturated {
		return nil, Because("", Messages.Say("worker_saturation.brief", struct {
			Workers   int
			Busy, Min time.Duration
		}{workers, busy.Round(time.Second), minSaturated})), nil
	}
	start, end := rs[0].Start, rs[len(rs)-1].End.Add(p.Step)
	facts := &WorkerSaturationFacts{Workers: workers, SaturatedSeconds: busy.Seconds()}
	cpu := meanBetween(p.CPU, start, end)
	said := struct {
		Workers                               int
		Busy                                  time.Duration
		Start, End                            time.Time
		CPUKnown, CPUBound, OwnCPU            bool
		CPU, Rate, Service, Normal, NormalCap float64
		// On php-fpm's own processes: the cores the pool ran, the cores
		// PHP could have, a busy worker's; Waiting when a busy worker
		// kept less than half a core running, OthersMost when other
		// processes ran more of the host's CPU than the pool.
		PoolCores, ForPHP, PerWorker float64
		Waiting, OthersMost          bool
	}{Workers: workers, Busy: busy.Round(time.Second), Start: start.In(ev.Loc), End: end.In(ev.Loc), CPU: cpu}
	res := p.Resources(start, end)
	if !math.IsNaN(cpu) {
		said.CPUKnown, said.CPUBound = true, cpu >= cpuBoundPct
		if res.CPUFromProcesses && res.CoresForPHP > 0 {
			// The host's CPU counts other processes, niced ones too, which a
			// busy pool does not wait for: on php-fpm's own processes the
			// workers computed when they ran most of the cores PHP could
			// have (a real host kept at 100% by niced builds called a pool
			// that ran 0.19 of 1.1 cores "CPU-bound").
			said.OwnCPU = true
			pool := res.CoresPerBusyWorker * float64(workers)
			said.PoolCores, said.ForPHP, said.PerWorker = round(pool, 2), round(res.CoresForPHP, 1), round(res.CoresPerBusyWorker, 2)
			said.CPUBound = pool >= cpuBoundPct/100*res.CoresForPHP
			said.Waiting = res.CoresPerBusyWorker < 0.5
			said.OthersMost = res.HostCores > 0 && cpu/100*res.HostCores-pool > pool
		}
		facts.CPUAvgPct = Some(round(cpu, 1))
		facts.CPUBound = Some(said.CPUBound)
	}
	rate := meanBetween(p.Accepted, start, end)
	if !math.IsNaN(rate) && rate > 0 {
		facts.CompletionRatePerS = Some(round(rate, 2))
		// Little's law with every worker busy: the service time is the
		// workers over the rate they finish at.
		serviceS := LittleTime(float64(workers), rate)
		facts.ServiceTimeS = Some(round(serviceS, 3))
		said.Rate, said.Service = rate, serviceS
	}
	var estimated []Estimate
	if normal := normalServiceTime(ev); normal > 0 {
		facts.NormalServiceTimeS = Some(round(normal, 3))
		normalCapacity := LittleRate(float64(workers), normal)
		facts.NormalCapacityPerS = Some(round(normalCapacity, 1))
		said.Normal, said.NormalCap = normal, normalCapacity
		if normalServiceTimeSampled(ev) {
			estimated = []Estimate{{Figures: []string{"normal_service_time_s", "normal_capacity_per_s"}, Reason: EstimateBaselineSample}}
		}
	}
	if inc := increase(p.MaxChildrenReached, start, end); inc > 0 {
		facts.MaxChildrenReachedIncrease = Some(inc)
	}
	if ev.FPMLogGiven {
		n := 0
		for _, e := range ev.FPM {
			if e.Kind == fpmlog.MaxChildren && !e.Time.Before(ev.From) && e.Time.Before(ev.To) {
				n++
			}
		}
		facts.MaxChildrenWarnings = Some(n)
	}
	if r := res; r.Known() {
		if r.CoresPerBusyWorker > 0 {
			facts.PoolCoresPerBusyWorker = Some(round(r.CoresPerBusyWorker, 2))
		}
		if r.MemPerWorkerBytes > 0 {
			facts.PoolMemPerWorkerMiB, facts.PoolMemResident = Some(round(r.MemPerWorkerBytes/(1<<20), 1)), Some(r.MemResident)
		}
		fit := r.Fit()
		if fit.ByMemory >= 0 {
			facts.WorkersFitMemory = Some(fit.ByMemory)
		}
		if fit.ByCPU >= 0 {
			facts.WorkersFitCPU = Some(fit.ByCPU)
		}
	}
	conf := 0.7 + 0.25*math.Min(1, busy.Minutes()/10)
	f := Finding{Kind: KindWorkerSaturation, Role: RoleMechanism, Start: start, End: end, Confidence: round(conf, 2),
		Facts: facts, Estimated: estimated}
	f.summarize(Messages.Say("worker_saturation.summary", said))
	return []Finding{f}, Check{}, nil
}

// poolSize is the pool's maximum: the larger of the site facts and the most
// processes seen (a dynamic pool that never needed all its children shows fewer
// than pm.max_children; a stale site fact shows fewer than were running).
func poolSize(ev *Evidence) int {
	if ev.Pool == nil {
		return ev.Site.Workers
	}
	return PoolSizeOf(ev.Site.Workers, ev.Pool.Total)
}

// PoolSizeOf is poolSize from the site's pm.max_children (0 if unknown) and
// php-fpm's total processes over the range: the pool every worker of which
// is busy when active processes reach it. The scan's pool profile sizes
// each slot's pool by it.
func PoolSizeOf(siteWorkers int, total []metrics.Point) int {
	return max(siteWorkers, int(peak(total).V))
}

// normalServiceTime is the median PHP duration of successes over the baseline:
// with no queue, a request's duration is its service time.
func normalServiceTime(ev *Evidence) float64 {
	if ev.Traffic == nil {
		return 0
	}
	from, to := ev.normalServiceRange()
	var h Histogram
	for _, m := range ev.Traffic.minutes {
		if !m.Start.Before(from) && m.Start.Before(to) {
			h.Merge(&m.Latency)
		}
	}
	if h.N < 20 {
		return 0
	}
	return h.Quantile(0.5)
}

// normalServiceRange is the baseline before the window, where
// normalServiceTime reads PHP's durations.
func (ev *Evidence) normalServiceRange() (from, to time.Time) {
	from, to, _ = ev.baselineRange()
	if to.After(ev.From) {
		to = ev.From
	}
	return from, to
}

// normalServiceTimeSampled reports whether normalServiceTime rests on a
// pushdown's sample: durations exist only in lines read, and some minutes of
// its range were only counted.
func normalServiceTimeSampled(ev *Evidence) bool {
	if ev.Traffic == nil {
		return false
	}
	from, to := ev.normalServiceRange()
	return ev.countedIn(from, to)
}

// increase of a counter over [from, to], tolerating resets.
func increase(ps []metrics.Point, from, to time.Time) float64 {
	inc := 0.0
	prev := math.NaN()
	for _, p := range between(ps, from, to.Add(time.Nanosecond)) {
		if !math.IsNaN(prev) {
			if p.V >= prev {
				inc += p.V - prev
			} else {
				inc += p.V
			}
		}
		prev = p.V
	}
	return inc
}
