package scan

import (
	"math"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
)

// KindSaturation is a rise of busy-worker minutes, listen-queue depth or CPU;
// worker_saturation and listen_queue_overflow findings join it. An anomaly
// kind beyond the finding kinds of package detect, in their namespace.
const KindSaturation detect.Kind = "saturation"

func init() {
	registerConcern(Concern{Kind: KindSaturation, NewFacts: func() detect.Facts { return &SaturationFacts{} }})
}

// SaturationFacts are the numbers behind a saturation: the pool's busy
// minutes, listen queue and CPU in the window and usually.
type SaturationFacts struct {
	Workers               float64 `json:"workers"`
	SaturatedMinutes      float64 `json:"saturated_minutes"`
	SaturatedMinutesUsual float64 `json:"saturated_minutes_usual"`
	QueuePeak             float64 `json:"queue_peak"`
	QueuePeakUsual        float64 `json:"queue_peak_usual"`
	// Backlog is the listen queue's length, when php-fpm reported it.
	Backlog detect.Maybe[float64] `json:"backlog"`
	// CPUMean and CPUMeanUsual are in percent, with a CPU series.
	CPUMean      detect.Maybe[float64] `json:"cpu_mean_pct"`
	CPUMeanUsual detect.Maybe[float64] `json:"cpu_mean_usual_pct"`
	// BaselineSlots counts the slots of the baseline the observed value is
	// measured against.
	BaselineSlots int `json:"baseline_slots"`
}

// FindingKind implements detect.Facts.
func (*SaturationFacts) FindingKind() detect.Kind { return KindSaturation }

// saturation judges busy workers, the listen queue and CPU.
func (j *judge) saturation() {
	p := j.recent.Pool
	if p == nil {
		return
	}
	pools := func(f func(*PoolProfile) (float64, bool)) Baseline {
		return j.baselineOf(func(s *Profile) (float64, bool) {
			if s.Pool == nil {
				return 0, false
			}
			return f(s.Pool)
		})
	}
	bSat := pools(func(p *PoolProfile) (float64, bool) { return p.SaturatedMinutes, true })
	bQueue := pools(func(p *PoolProfile) (float64, bool) { return p.QueuePeak, true })
	if bSat.N < j.cfg.MinBaselineDays {
		j.note(sources.SeverityInfo, Messages.Say("saturation.no_baseline", bSat.N))
		return
	}
	qm := queueMeasure
	qm.minExcess = math.Max(p.Workers, 1)
	upSat := j.measureSite(metricSaturated, p.SaturatedMinutes, bSat, saturatedMeasure)
	upQueue := j.measureSite(metricQueuePeak, p.QueuePeak, bQueue, qm)
	upCPU := false
	bCPU := pools(func(p *PoolProfile) (float64, bool) { return p.CPUMean, p.HasCPU })
	if p.HasCPU && bCPU.N >= j.cfg.MinBaselineDays {
		upCPU = j.measureSite(metricCPUMean, p.CPUMean, bCPU, cpuMeasure)
	}
	if !upSat && !upQueue && !upCPU {
		return
	}
	sev := SeverityWarning
	if p.SaturatedMinutes >= criticalSaturatedMinutes || p.Backlog > 0 && p.QueuePeak >= 0.98*p.Backlog {
		sev = SeverityCritical
	}
	metric, o, b, s := metricSaturated, p.SaturatedMinutes, bSat, saturatedMeasure.score(p.SaturatedMinutes, bSat)
	if x := qm.score(p.QueuePeak, bQueue); upQueue && (!upSat || x > s) {
		metric, o, b, s = metricQueuePeak, p.QueuePeak, bQueue, x
	}
	if !upSat && !upQueue {
		metric, o, b, s = metricCPUMean, p.CPUMean, bCPU, cpuMeasure.score(p.CPUMean, bCPU)
	}
	start := j.cfg.Window(j.recent.To).From
	if !p.FirstSaturated.IsZero() {
		start = p.FirstSaturated
	}
	facts := &SaturationFacts{Workers: p.Workers, SaturatedMinutes: p.SaturatedMinutes, SaturatedMinutesUsual: bSat.Median,
		QueuePeak: p.QueuePeak, QueuePeakUsual: bQueue.Median, BaselineSlots: b.N}
	if p.Backlog > 0 {
		facts.Backlog = detect.Some(p.Backlog)
	}
	if p.HasCPU {
		facts.CPUMean, facts.CPUMeanUsual = detect.Some(round(p.CPUMean, 1)), detect.Some(round(bCPU.Median, 1))
	}
	a := &Anomaly{
		Kind: KindSaturation, Severity: sev, Start: start,
		Observed: round(o, 2), Baseline: round(b.Median, 2), Score: round(s, 1), Facts: facts,
	}
	a.measured(metric)
	a.summarize(Messages.Say("saturation.summary", struct {
		Span                                                             prose.Text
		Workers, Minutes, MinutesUsual, Queue, QueueUsual, CPU, CPUUsual float64
		HasCPU                                                           bool
	}{j.span(), p.Workers, p.SaturatedMinutes, bSat.Median, p.QueuePeak, bQueue.Median, p.CPUMean, bCPU.Median, p.HasCPU}))
	j.anomalies = append(j.anomalies, a)
}
