package detect

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

func init() {
	Register(Spec{
		Kind: KindIdlePinning, New: func() Detector { return pinningDetector{} },
		NewFacts: func() Facts { return &IdlePinningFacts{} },
		Role:     RoleMechanism,
		Chain:    3,
		Scan: ScanMeasure{Severity: AnomalyCritical, Metric: Messages.SayLater("idle_pinning.scan_metric", nil),
			Observed: func(f *Finding) float64 { return FactsOf[IdlePinningFacts](f).PHPAnswersPerMin },
			Baseline: func(f *Finding) float64 { return FactsOf[IdlePinningFacts](f).PHPAnswersPerMinBefore.V }},
		Events:  map[Event]int{EventPinning: 4},
		Explain: explainPinning,
		Moments: pinningMoments,
	})
}

// IdlePinningFacts are an idle_pinning finding's numbers.
type IdlePinningFacts struct {
	CPUAvgPct        float64 `json:"cpu_avg_pct"`
	ActiveAvg        float64 `json:"active_avg"`
	Workers          int     `json:"workers"`
	QueuePeak        float64 `json:"queue_peak"`
	PHPAnswersPerMin float64 `json:"php_answers_per_min"`
	// PHPAnswersPerMinBefore needs a baseline.
	PHPAnswersPerMinBefore Maybe[float64] `json:"php_answers_per_min_before"`
	// TimeoutS and TimeoutShare: the share of PHP's answers piled at one
	// duration, when they did (a fixed timeout freeing pinned workers).
	TimeoutS     Maybe[float64] `json:"timeout_s"`
	TimeoutShare Maybe[float64] `json:"timeout_share"`
	// ClimbS is how long the busy workers climbed from their usual level
	// before the incident's onset (the finding starts where they began);
	// it needs a baseline to know the usual level.
	ClimbS Maybe[float64] `json:"climb_s"`
}

func (*IdlePinningFacts) FindingKind() Kind { return KindIdlePinning }

// EventPinning is the timeline event of workers held without working.
const EventPinning Event = "pinning"

func explainPinning(p Phraser, f *Finding, _ Story) string {
	return p.Say("idle_pinning.explain", FactsOf[IdlePinningFacts](f))
}

func pinningMoments(f *Finding, _ Story) []Moment {
	facts := FactsOf[IdlePinningFacts](f)
	held := f.Start.Add(time.Duration(facts.ClimbS.V * float64(time.Second)))
	ms := []Moment{{Time: held, Event: EventPinning, Topic: "pinning", Text: func(p Phraser) string {
		return p.Say("idle_pinning.moment", facts)
	}}}
	if held.After(f.Start) {
		ms = append(ms, Moment{Time: f.Start, Event: EventPinning, Topic: "pinning-climb", Text: func(p Phraser) string {
			return p.Say("idle_pinning.moment.climb", nil)
		}})
	}
	return ms
}

// pinningDetector finds a stall where workers are held without working
// (overload-lessons.md section 4): the queue grows, CPU idles, and requests end
// together at one fixed timeout. Busy-but-progressing workers are saturation.
type pinningDetector struct{}

func (pinningDetector) Name() Kind { return KindIdlePinning }

const (
	// idleCPUPct: below it the host is idle, whatever the workers claim.
	idleCPUPct = 30.0
	// busyShare: all workers are active when, on average over the
	// incident, at least this share of them is.
	busyShare = 0.9
	// collapseShare: completions collapse when each busy worker finishes
	// fewer than this share of the requests a busy worker usually finishes
	// a minute.
	collapseShare = 0.25
	// timeoutShare: the share of PHP responses that must end at one duration
	// (within ±10%) for the stall to look like a fixed timeout: supporting
	// evidence, not required (a pinning connection may be freed at no
	// fixed time, and its requests may end as the proxy's 503s).
	timeoutShare = 0.5
)

// Detect judges the incident's stretch only (onset to end): a day's window
// averages the stall with the busy hours around it. The signature is that of
// overload-lessons.md section 4: every worker active, PHP answering almost
// nothing, the queue growing, CPU idle; and what PHP did answer was not slow
// (slow answers are a service-time regression: workers busy working).
func (pinningDetector) Detect(ctx context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error) {
	p := ev.Pool
	if p == nil || len(p.Queue) == 0 || len(p.Active) == 0 {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("idle_pinning.no_series", nil)), nil
	}
	if len(p.CPU) == 0 {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("idle_pinning.no_cpu", nil)), nil
	}
	if ev.Traffic == nil {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("idle_pinning.no_log", nil)), nil
	}
	inc := ev.incidents().WorstIncident()
	if inc == nil {
		return nil, Because("", Messages.Say("idle_pinning.no_incident", nil)), nil
	}
	workers := poolSize(ev)
	if workers == 0 {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("idle_pinning.no_pool_size", nil)), nil
	}
	start, end := inc.Onset, inc.End
	active := meanBetween(p.Active, start, end)
	if math.IsNaN(active) || active < busyShare*float64(workers) {
		return nil, Because("", Messages.Say("idle_pinning.not_all_busy", struct {
			Active  float64
			Workers int
		}{active, workers})), nil
	}
	cpu := meanBetween(p.CPU, start, end)
	if math.IsNaN(cpu) || cpu >= idleCPUPct {
		return nil, Because("", Messages.Say("idle_pinning.cpu_busy", cpu)), nil
	}
	qPeak := p.queuePeak(start, end)
	if qPeak.V < 1 {
		return nil, Because("", Messages.Say("idle_pinning.nothing_queued", nil)), nil
	}
	minutes := math.Max(end.Sub(start).Minutes(), 1)
	var h Histogram
	for m := start.Truncate(time.Minute); m.Before(end); m = m.Add(time.Minute) {
		if mm := ev.Traffic.Minute(m); mm != nil {
			h.Merge(&mm.PHPDurations)
		}
	}
	perMin := float64(h.N) / minutes
	facts := &IdlePinningFacts{CPUAvgPct: round(cpu, 1), ActiveAvg: round(active, 1), Workers: workers,
		QueuePeak: qPeak.V, PHPAnswersPerMin: round(perMin, 1)}
	bFrom, bTo, none := ev.baselineRange()
	var usualDone, usualActive float64
	var before Histogram
	if !none {
		var per []int
		for m := bFrom.Truncate(time.Minute); m.Before(bTo); m = m.Add(time.Minute) {
			n := 0
			if mm := ev.Traffic.Minute(m); mm != nil {
				n = mm.PHPDone
				before.Merge(&mm.PHPDurations)
			}
			per = append(per, n)
		}
		usualDone = Median(per)
		usualActive = meanBetween(p.Active, bFrom, bTo)
		facts.PHPAnswersPerMinBefore = Some(round(usualDone, 1))
	}
	// Completions collapse per busy worker: a site that usually keeps two
	// workers busy answers no more a minute than two workers finish, so
	// "fewer answers than usual" says little when all 16 are held; what
	// does is each busy worker finishing a fraction of what a busy worker
	// usually finishes (Little's law: per busy worker, the answers a minute
	// are 60 over the service time). Without a baseline, collapse is judged
	// absolutely: fewer answers a minute than there are workers means each
	// busy worker finished less than one request a minute.
	limit := float64(workers)
	if usualDone > 0 && !math.IsNaN(usualActive) {
		limit = collapseShare * usualDone / math.Max(usualActive, 1) * active
	} else if usualDone > 0 {
		limit = collapseShare * usualDone
	}
	if perMin >= limit {
		return nil, Because("", Messages.Say("idle_pinning.answering", struct{ PerMin, Active, Limit float64 }{perMin, active, limit})), nil
	}
	// What PHP did answer tells pinned workers from slow ones: slow
	// answers spread over many durations are workers busy working (a
	// service-time regression); answers piled at one duration are a fixed
	// timeout freeing held workers, the seed's supporting evidence.
	conf := 0.7
	mode, share := 0.0, 0.0
	if h.N >= minServiceSamples {
		mode, share = modeShare(&h)
	}
	// A timeout lies far above the usual answer: a pile at the usual
	// duration is ordinary answers, not held workers let go.
	if usualAnswer := before.Quantile(0.5); before.N >= minServiceSamples && mode < 5*usualAnswer {
		share = 0
	}
	if share >= timeoutShare {
		facts.TimeoutS, facts.TimeoutShare = Some(round(mode, 1)), Some(round(share, 3))
		conf = math.Min(0.5+share/2, 0.9)
	} else if h.N >= minServiceSamples && before.N >= minServiceSamples && h.Quantile(0.5) >= serviceRise*before.Quantile(0.5) {
		return nil, Because("", Messages.Say("idle_pinning.slow", struct{ Median, Usual float64 }{h.Quantile(0.5), before.Quantile(0.5)})), nil
	}
	// The stall is judged over the incident, but it began when the workers
	// started to be taken: the climb of busy workers that ran into it.
	taken := start
	if !none {
		taken = takenFrom(p.Active, quantileOf(between(p.Active, bFrom, bTo), usualBusyQuantile), start, 2*p.Step)
		facts.ClimbS = Some(start.Sub(taken).Seconds())
	}
	said := pinningSummary{Start: start.In(ev.Loc), End: end.In(ev.Loc), Active: active, Workers: workers, PerMin: perMin,
		Usual: usualDone, QueuePeak: qPeak.V, CPU: cpu}
	if taken.Before(start) {
		said.Climb = taken.In(ev.Loc)
	}
	if facts.TimeoutShare.OK {
		said.TimeoutShare, said.Timeout = share, mode
	}
	// Nothing that arrived made the workers busy: whatever holds them
	// without a logged request is the trigger of the stall.
	f := Finding{Kind: KindIdlePinning, Role: RoleTrigger, Start: taken, End: end, Confidence: round(conf, 2),
		Facts: facts}
	f.summarize(Messages.Say("idle_pinning.summary", said))
	if ev.countedIn(start, end) {
		// PHP's answers are counted from the durations of lines read.
		f.Estimated = []Estimate{{Figures: []string{"php_answers_per_min"}, Reason: EstimateNotRead}}
	}
	return []Finding{f}, Check{}, nil
}

// pinningSummary is what an idle-pinning finding's summary says; a zero
// Climb is no climb before the stall, a zero TimeoutShare no fixed timeout,
// a zero Usual no baseline.
type pinningSummary struct {
	Start, End, Climb          time.Time
	Active                     float64
	Workers                    int
	PerMin, Usual, QueuePeak   float64
	CPU, TimeoutShare, Timeout float64
}

// usualBusyQuantile: the busy workers' usual level is the median of the
// baseline's samples. Not a high quantile: the baseline ends at the onset,
// so it holds the climb itself, and a climb of a few minutes is a high
// quantile of a short baseline. An ordinary sample above the median just
// before the climb moves its start by a sample or two, no more.
const usualBusyQuantile = 0.5

// takenFrom is when the workers began to be taken before onset: the first
// sample of the unbroken run of samples above the usual busy level that
// reaches the onset (samples further apart than gap break it: a hole in the
// series says nothing). Idle connections take workers one by one (a pool of
// 16 fills in minutes at a few connections a minute), and no failure shows
// until the last is taken; the onset (the first failure, or every worker
// busy) is the end of the taking, not its start. A run longer than
// TriggerLead is no climb (the workers were busy all along) and the onset
// stands; so does a run that does not reach it.
func takenFrom(active []metrics.Point, usual float64, onset time.Time, gap time.Duration) time.Time {
	if math.IsNaN(usual) {
		return onset
	}
	from := onset
	for _, p := range slices.Backward(between(active, onset.Add(-TriggerLead), onset.Add(time.Nanosecond))) {
		if p.V <= usual || (gap > 0 && from.Sub(p.T) > gap) {
			return from
		}
		from = p.T
	}
	return onset
}

// quantileOf is the q quantile of the points' values (NaN for none).
func quantileOf(ps []metrics.Point, q float64) float64 {
	if len(ps) == 0 {
		return math.NaN()
	}
	vs := make([]float64, len(ps))
	for i, p := range ps {
		vs[i] = p.V
	}
	slices.Sort(vs)
	return vs[int(q*float64(len(vs)-1))]
}

// modeShare finds the duration around which most responses ended (three
// adjacent 10% buckets) and the share of responses there.
func modeShare(h *Histogram) (float64, float64) {
	best, bestAt := uint32(0), 0
	for i := 1; i+1 < histBuckets; i++ {
		if s := h.Counts[i-1] + h.Counts[i] + h.Counts[i+1]; s > best {
			best, bestAt = s, i
		}
	}
	return bucketUpper(bestAt), float64(best) / float64(h.N)
}
