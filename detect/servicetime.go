package detect

import (
	"context"
	"math"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// KindServiceTimeRegression is PHP's own time per request rising while
// arrivals did not: a slow database or external API (CPU low) or slower code
// or CPU (CPU high).
const KindServiceTimeRegression Kind = "service_time_regression"

func init() {
	Register(Spec{
		Kind: KindServiceTimeRegression, Requires: []Kind{KindIdlePinning, KindCacheCollapse}, New: func() Detector { return serviceTimeDetector{} },
		// When no traffic change explains the onset, what changed is the
		// service time: it is the trigger.
		Role:     RoleTrigger,
		NewFacts: func() Facts { return &ServiceTimeFacts{} },
		Scan: ScanMeasure{Anomaly: "latency", Metric: Messages.SayLater("service_time_regression.scan_metric", nil),
			Observed: func(f *Finding) float64 { return FactsOf[ServiceTimeFacts](f).ServiceMedianDuringS },
			Baseline: func(f *Finding) float64 { return FactsOf[ServiceTimeFacts](f).ServiceMedianBeforeS }},
		Events:  map[Event]int{EventServiceTime: 1},
		Explain: explainServiceTime,
		Moments: serviceTimeMoments,
	})
}

// ServiceTimeFacts are a service_time_regression finding's numbers.
type ServiceTimeFacts struct {
	ServiceMedianBeforeS float64 `json:"service_median_before_s"`
	ServiceP90BeforeS    float64 `json:"service_p90_before_s"`
	PHPAnswersBefore     int     `json:"php_answers_before"`
	PHPAnswersDuring     int     `json:"php_answers_during"`
	// ServiceLittleBeforeS, ServiceLittleDuringS and
	// ServiceIncludesQueueWait are stated when the queue never emptied and
	// Little's law over the busy workers judged PHP's own time.
	ServiceLittleBeforeS     Maybe[float64] `json:"service_little_before_s"`
	ServiceLittleDuringS     Maybe[float64] `json:"service_little_during_s"`
	ServiceIncludesQueueWait Maybe[bool]    `json:"service_includes_queue_wait"`
	ServiceMedianDuringS     float64        `json:"service_median_during_s"`
	ServiceP90DuringS        float64        `json:"service_p90_during_s"`
	ArrivalsPerMinBefore     float64        `json:"arrivals_per_min_before"`
	ArrivalsPerMinDuring     float64        `json:"arrivals_per_min_during"`
	// ArrivalsPerMinAtOnset and ArrivalsRoseAfterFailingS are stated when
	// arrivals rose during the incident but not at its onset: the mean
	// minute from the onset through the first minute clients were failed
	// in, and how long after they began to be failed the rise held (people
	// reloading and retrying: a consequence, not the cause).
	ArrivalsPerMinAtOnset     Maybe[float64] `json:"arrivals_per_min_at_onset"`
	ArrivalsRoseAfterFailingS Maybe[float64] `json:"arrivals_rose_after_failing_s"`
	// ArrivalsRoseAt is when that later rise held, in Unix seconds.
	ArrivalsRoseAt Maybe[float64] `json:"arrivals_rose_at"`
	// CPUDuringPct and CPUBeforePct need a CPU series.
	CPUDuringPct Maybe[float64] `json:"cpu_during_pct"`
	CPUBeforePct Maybe[float64] `json:"cpu_before_pct"`
	// BaselineWindowMinutes is stated when no data preceded the window and
	// the baseline is the window's own first minutes, before the slowdown.
	BaselineWindowMinutes Maybe[float64] `json:"baseline_window_minutes"`
}

func (*ServiceTimeFacts) FindingKind() Kind { return KindServiceTimeRegression }

// EventServiceTime is the timeline event of PHP's requests turning slower.
const EventServiceTime Event = "service_time"

// EventArrivalsAfterFailing is the timeline event of arrivals rising after
// clients began to be failed: people reloading and retrying.
const EventArrivalsAfterFailing Event = "arrivals_after_failing"

const (
	// serviceRise: PHP's median own time must rise at least this many
	// times over the baseline's to be a regression: less is the ordinary
	// spread of a page mix (and the CPU contention any busy hour brings).
	serviceRise = 3.0
	// arrivalsFlat: arrivals at most this many times the baseline's are
	// "did not rise"; a surge that slows PHP is the surge's story.
	arrivalsFlat = 1.5
	// arrivalsRose: arrivals more than this many times the baseline's
	// during the incident are said to have risen, and when they rose
	// (at the onset, or only after clients began to be failed) is told.
	arrivalsRose = 1.2
	// minServiceSamples is the fewest PHP answers a median is read from.
	minServiceSamples = 10
	// busyCPUPct: above it the host was working, not waiting.
	busyCPUPct = 70.0
)

func explainServiceTime(p Phraser, f *Finding, _ Story) string {
	facts := FactsOf[ServiceTimeFacts](f)
	// What CPU says of the slower requests: waiting (idle), computing
	// (busy), neither clearly, or nothing without a CPU series.
	cpu := ""
	switch v := facts.CPUDuringPct; {
	case !v.OK:
		cpu = "unknown"
	case v.V < idleCPUPct:
		cpu = "idle"
	case v.V >= busyCPUPct:
		cpu = "busy"
	}
	return p.Say("service_time_regression.explain", struct {
		about[ServiceTimeFacts]
		CPU string
	}{about[ServiceTimeFacts]{f, facts}, cpu})
}

func serviceTimeMoments(f *Finding, _ Story) []Moment {
	facts := FactsOf[ServiceTimeFacts](f)
	ms := []Moment{{Time: f.Start, Event: EventServiceTime, Topic: "service_time", Text: func(p Phraser) string {
		return p.Say("service_time_regression.moment", facts)
	}}}
	// Arrivals that rose after clients began to be failed are the
	// outage's effect: the timeline says so where they rose.
	if facts.ArrivalsRoseAt.OK {
		ms = append(ms, Moment{Time: time.Unix(int64(facts.ArrivalsRoseAt.V), 0).UTC(), Event: EventArrivalsAfterFailing, Topic: "arrivals_after_failing",
			Text: func(p Phraser) string { return p.Say("service_time_regression.moment.late_arrivals", facts) }})
	}
	return ms
}

// serviceTimeDetector finds PHP's own time per request rising across the
// site while arrivals did not. It reads durations of PHP's answers only (the
// proxy's own 503s and 504s are not PHP's time) and, when the queue series
// exists, only from minutes in which nothing queued: there the logged
// duration is PHP's own time, not the wait in php-fpm's backlog (a crawl
// lengthens every answer by its queue without PHP getting slower).
type serviceTimeDetector struct{}

func (serviceTimeDetector) Name() Kind { return KindServiceTimeRegression }

func (serviceTimeDetector) Detect(ctx context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error) {
	if ev.Traffic == nil {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("service_time_regression.no_log", nil)), nil
	}
	sp, check, ok := ev.serviceSpan()
	if !ok {
		return nil, check, nil
	}
	bFrom, bTo := sp.baseFrom, sp.baseTo
	before := ev.phpServiceTimes(bFrom, bTo, false)
	if before.N < minServiceSamples {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("service_time_regression.few_before", before.N)), nil
	}
	med0, p90b := before.Quantile(0.5), before.Quantile(0.9)
	// PHP's own time during the incident: the answers of minutes in which
	// nothing queued; when the queue never emptied, Little's law over the
	// workers (busy workers / answers a second), which leaves the queue out.
	during := ev.phpServiceTimes(sp.onset, sp.end, true)
	all := ev.phpServiceTimes(sp.onset, sp.end, false)
	facts := &ServiceTimeFacts{ServiceMedianBeforeS: round(med0, 3), ServiceP90BeforeS: round(p90b, 3), PHPAnswersBefore: before.N}
	if sp.inWindow {
		facts.BaselineWindowMinutes = Some(round(bTo.Sub(bFrom).Minutes(), 1))
	}
	var med1, p90d float64
	method := "quiet"
	switch {
	case during.N >= minServiceSamples:
		med1, p90d = during.Quantile(0.5), during.Quantile(0.9)
		facts.PHPAnswersDuring = during.N
	case all.N >= minServiceSamples && ev.Pool != nil && len(ev.Pool.Active) > 0:
		l0, l1 := ev.littleServiceTime(bFrom, bTo), ev.littleServiceTime(sp.onset, sp.end)
		if l0 <= 0 || l1 <= 0 {
			return nil, Because(OutcomeCouldNotRun, Messages.Say("service_time_regression.little_unrelated", nil)), nil
		}
		facts.ServiceLittleBeforeS, facts.ServiceLittleDuringS = Some(round(l0, 3)), Some(round(l1, 3))
		facts.ServiceIncludesQueueWait = Some(true)
		facts.PHPAnswersDuring = all.N
		// The answers' quantiles are reported as logged (queue wait
		// included); the judgement is Little's ratio applied to the usual median.
		med1, p90d = all.Quantile(0.5), all.Quantile(0.9)
		if l1 < serviceRise*l0 {
			return nil, Because("", Messages.Say("service_time_regression.little_none", struct{ During, Before float64 }{l1, l0})), nil
		}
		method = "little"
	case sp.inWindow && all.N >= minServiceSamples:
		// The slowdown was found from the answers as logged: without the
		// busy workers, they are all there is to measure it by.
		med1, p90d = all.Quantile(0.5), all.Quantile(0.9)
		facts.PHPAnswersDuring = all.N
		facts.ServiceIncludesQueueWait = Some(true)
		method = "logged"
	default:
		return nil, Because(OutcomeCouldNotRun, Messages.Say("service_time_regression.few_during", struct{ All, Quiet int }{all.N, during.N})), nil
	}
	var arr0 float64
	if sp.inc != nil {
		arr0 = ev.arrivalsBefore(sp.inc, bFrom, bTo)
	} else {
		arr0 = ev.arrivalsPerMinute(bFrom, bTo, true)
	}
	arr1 := ev.arrivalsPerMinute(sp.onset, sp.end, false)
	if !facts.ServiceIncludesQueueWait.V && med1 < serviceRise*med0 {
		return nil, Because("", Messages.Say("service_time_regression.none", struct{ During, Before float64 }{med1, med0})), nil
	}
	// Arrivals that rose only after clients began to be failed are people
	// reloading and retrying: the outage's effect. What slowed PHP is told
	// by the arrivals at the onset.
	lateRise := ev.arrivalsRoseLate(sp, arr0, arr1)
	if arr1 > arrivalsFlat*arr0 && !lateRise.ok {
		return nil, Because("", Messages.Say("service_time_regression.arrivals_rose", struct{ Before, During, ArrivalsBefore, ArrivalsDuring float64 }{med0, med1, arr0, arr1})), nil
	}
	for _, f := range prior {
		if f.Kind == KindIdlePinning && f.Start.Before(sp.end) && f.End.After(sp.onset) {
			return nil, Because("", Messages.Say("service_time_regression.pinned", nil)), nil
		}
		// A cache that emptied sends PHP what it used to answer, cold:
		// PHP's time rises because of it, and the cache is the cause.
		if f.Kind == KindCacheCollapse && !f.Start.After(sp.onset.Add(mergeGap)) && f.End.After(sp.onset) {
			return nil, Because("", Messages.Say("service_time_regression.cache_first", struct {
				Before, During float64
				At             time.Time
			}{med0, med1, f.Start.In(ev.loc())})), nil
		}
	}
	facts.ServiceMedianDuringS, facts.ServiceP90DuringS = round(med1, 3), round(p90d, 3)
	facts.ArrivalsPerMinBefore, facts.ArrivalsPerMinDuring = round(arr0, 1), round(arr1, 1)
	if lateRise.ok {
		facts.ArrivalsPerMinAtOnset = Some(round(lateRise.atOnset, 1))
		facts.ArrivalsRoseAfterFailingS = Some(lateRise.after.Seconds())
		facts.ArrivalsRoseAt = Some(float64(lateRise.at.Unix()))
	}
	start := sp.onset
	if sp.inc != nil {
		start = ev.serviceRiseStart(sp.inc, med0)
	}
	said := serviceTimeSummary{Before: med0, During: med1, P90Before: p90b, P90During: p90d, Start: start.In(ev.loc()),
		ArrivalsBefore: arr0, ArrivalsDuring: arr1, Method: method, InWindow: sp.inWindow, Failed: sp.failed, Requests: sp.requests}
	if lateRise.ok {
		said.LateRise, said.ArrivalsAtOnset = true, round(lateRise.atOnset, 1)
		said.LateAfter, said.LateAfterText = lateRise.after, spanText(lateRise.after)
	}
	if p := ev.Pool; p == nil || len(p.Queue) == 0 {
		said.Method = "no_queue"
	}
	if p := ev.Pool; p != nil && len(p.CPU) > 0 {
		c0, c1 := meanBetween(p.CPU, bFrom, bTo), meanBetween(p.CPU, sp.onset, sp.end)
		if !math.IsNaN(c1) {
			facts.CPUDuringPct = Some(round(c1, 1))
			said.CPU, said.CPUPct = "plain", c1
			switch {
			case c1 < idleCPUPct:
				said.CPU = "idle"
			case c1 >= busyCPUPct:
				said.CPU = "busy"
			}
		}
		if !math.IsNaN(c0) {
			facts.CPUBeforePct = Some(round(c0, 1))
		}
	}
	if sp.inWindow {
		said.BaseFrom, said.BaseTo = bFrom.In(ev.loc()), bTo.In(ev.loc())
		said.BaseSpan, said.BaseSpanText = bTo.Sub(bFrom), spanText(bTo.Sub(bFrom))
		if !sp.coldTo.IsZero() {
			said.Cold, said.BaseAnswers = true, before.N
			said.ColdFrom, said.ColdTo = sp.coldFrom.In(ev.loc()), sp.coldTo.In(ev.loc())
			said.ColdMedian, said.ColdAnswers = sp.coldMedian, sp.coldAnswers
		}
	}
	summary := Messages.Say("service_time_regression.summary", said)
	conf := 0.6 + 0.1*math.Min(math.Log10(med1/med0), 3)
	f := Finding{Kind: KindServiceTimeRegression, Role: RoleTrigger, Start: start, End: sp.end, Confidence: round(math.Min(conf, 0.9), 2),
		Facts: facts}
	f.summarize(summary)
	if ev.countedIn(bFrom, bTo) {
		// PHP's usual durations come from the baseline minutes read whole.
		f.Estimated = []Estimate{{Figures: []string{"service_median_before_s", "service_p90_before_s"}, Reason: EstimateBaselineSample}}
	}
	return []Finding{f}, Check{}, nil
}

// serviceTimeSummary is what a service-time regression's summary says:
// PHP's times before and during, how they were measured (Method: "quiet"
// minutes, "little"'s law, answers as "logged", or "no_queue" series), the
// CPU ("" unknown, "idle", "busy" or "plain") and, for a baseline inside the
// window, its span and the requests that failed (Failed < 0: not counted).
type serviceTimeSummary struct {
	Before, During, P90Before, P90During float64
	Start                                time.Time
	ArrivalsBefore, ArrivalsDuring       float64
	// LateRise: arrivals rose only LateAfter after clients began to be
	// failed (ArrivalsAtOnset until then): the outage's effect.
	LateRise         bool
	ArrivalsAtOnset  float64
	LateAfter        time.Duration
	LateAfterText    string
	Method, CPU      string
	CPUPct           float64
	InWindow         bool
	BaseFrom, BaseTo time.Time
	BaseSpan         time.Duration
	BaseSpanText     string
	Failed, Requests int
	// Cold: the in-window baseline is the window's calmest stretch
	// (BaseAnswers answers), the minutes before the slowdown (ColdFrom to
	// ColdTo, median ColdMedian over ColdAnswers answers) being slow.
	Cold             bool
	ColdFrom, ColdTo time.Time
	ColdMedian       float64
	ColdAnswers      int
	BaseAnswers      int
}

// serviceSpan is the stretch a service-time regression is judged over and
// the baseline it is held against.
type serviceSpan struct {
	baseFrom, baseTo time.Time
	onset, end       time.Time
	// inc is the worst incident the stretch is, nil for a slowdown found
	// inside the window (inWindow) that failed too few to be an incident.
	inc *Incident
	// inWindow: the baseline is the window's own minutes before the
	// slowdown, for want of data before it.
	inWindow bool
	// failed and requests count the arrivals of an in-window slowdown and
	// those that failed (-1: not counted).
	failed, requests int
	// coldFrom, coldTo: for an in-window baseline that is not the minutes
	// before the slowdown, those minutes, whose median coldMedian over
	// coldAnswers answers stood serviceRise times above the calmest
	// stretch's (zero times otherwise).
	coldFrom, coldTo time.Time
	coldMedian       float64
	coldAnswers      int
}

// serviceSpan settles what is compared: the worst incident against the
// baseline; else, when no incident stands out (a slowdown that failed few)
// or no data precedes it, a jump of PHP's time per request found inside the
// window, against the baseline or, lacking one, the window's own minutes
// before the jump.
func (ev *Evidence) serviceSpan() (serviceSpan, Check, bool) {
	inc := ev.incidents().WorstIncident()
	bFrom, bTo, none := ev.baselineRange()
	if inc != nil && !none {
		return serviceSpan{baseFrom: bFrom, baseTo: bTo, onset: inc.Onset, end: inc.End, inc: inc, failed: -1}, Check{}, true
	}
	if sp, ok := ev.slowdownInWindow(bFrom, bTo, none); ok {
		return sp, Check{}, true
	}
	if inc == nil {
		return serviceSpan{}, Because("", Messages.Say("service_time_regression.no_stretch", nil)), false
	}
	return serviceSpan{}, Because(OutcomeCouldNotRun, Messages.Say("service_time_regression.no_baseline", nil)), false
}

const (
	// slowRunMinutes is how many minutes running PHP's median answer must
	// stand serviceRise times above the usual to be a slowdown rather
	// than a slow page or two.
	slowRunMinutes = 3
	// minMinuteAnswers is the fewest PHP answers a minute's median is
	// read from.
	minMinuteAnswers = 3
)

// slowdownInWindow finds the first minute of the window from which PHP's
// median answer stood serviceRise times above the usual for slowRunMinutes
// minutes running, and where it fell back. The usual is the baseline's when
// there is one (none false), else the window's own minutes before that
// minute, at least minUsableBaseline of them: the minutes before a slowdown
// are its baseline, whatever the window's edges. Unless those minutes were
// themselves serviceRise times slower than the window's calmest stretch: a
// recording that starts with no sessions in progress answers its first
// visitors cold, and a usual read there would hide the slowdown that
// follows. The calmest stretch is then the usual, wherever it lies.
func (ev *Evidence) slowdownInWindow(bFrom, bTo time.Time, none bool) (serviceSpan, bool) {
	first, _ := ev.Traffic.Span()
	from := later(first.Truncate(time.Minute), ev.From.Truncate(time.Minute))
	to := ev.To.Truncate(time.Minute)
	median := func(m time.Time) (float64, bool) {
		mm := ev.Traffic.Minute(m)
		if mm == nil || mm.PHPDurations.N < minMinuteAnswers {
			return 0, false
		}
		return mm.PHPDurations.Quantile(0.5), true
	}
	var calm calmStretch
	if none {
		calm = ev.calmestStretch(from, to)
	}
	// usualOf is the usual time for a slowdown from minute m and the
	// minutes it is read from, [base, baseEnd).
	usualOf := func(m time.Time) (usual float64, base, baseEnd time.Time, ok bool) {
		if !none {
			h := ev.phpServiceTimes(bFrom, bTo, false)
			return h.Quantile(0.5), bFrom, bTo, h.N >= minServiceSamples
		}
		if m.Sub(from) < minUsableBaseline {
			return 0, time.Time{}, time.Time{}, false
		}
		h := ev.phpServiceTimes(from, m, false)
		if h.N < minServiceSamples {
			return 0, time.Time{}, time.Time{}, false
		}
		if v := h.Quantile(0.5); !calm.ok || v < serviceRise*calm.median {
			return v, from, m, true
		}
		return calm.median, calm.from, calm.to, true
	}
	slow := func(m time.Time, usual float64) bool {
		v, ok := median(m)
		return ok && v >= serviceRise*usual
	}
	start := from
	if !none {
		start = later(from, bTo)
	}
	for m := start; !m.Add(slowRunMinutes * time.Minute).After(to); m = m.Add(time.Minute) {
		usual, base, baseEnd, ok := usualOf(m)
		if !ok || usual <= 0 || !slow(m, usual) {
			continue
		}
		run := true
		for k := 1; k < slowRunMinutes; k++ {
			run = run && slow(m.Add(time.Duration(k)*time.Minute), usual)
		}
		if !run {
			continue
		}
		// The slowdown ends at the first of two minutes running back
		// under the rise (or the window's end).
		end := m.Add(slowRunMinutes * time.Minute)
		for ; end.Before(to); end = end.Add(time.Minute) {
			if !slow(end, usual) && !slow(end.Add(time.Minute), usual) {
				break
			}
		}
		sp := serviceSpan{baseFrom: bFrom, baseTo: bTo, onset: m, end: end, inc: nil, failed: -1}
		if none {
			sp.baseFrom, sp.baseTo, sp.inWindow = base, baseEnd, true
			if !base.Equal(from) || !baseEnd.Equal(m) {
				// The minutes before were slow themselves: say how slow.
				h := ev.phpServiceTimes(from, m, false)
				sp.coldFrom, sp.coldTo, sp.coldMedian, sp.coldAnswers = from, m, h.Quantile(0.5), h.N
			}
		}
		if inc := ev.incidents().WorstIncident(); inc != nil && inc.Onset.Before(end) && inc.End.After(m) {
			sp.inc = inc
		}
		sp.failed, sp.requests = 0, 0
		for a := m.Unix() / 60; a < end.Unix()/60; a++ {
			if am := ev.Traffic.arrivals[a]; am != nil {
				sp.failed += am.failed(ev.Traffic.lateAfter)
				sp.requests += am.Requests
			}
		}
		return sp, true
	}
	return serviceSpan{}, false
}

// calmStretch is the run of minUsableBaseline minutes of a window in which
// PHP answered fastest: its median over its answers, when ok.
type calmStretch struct {
	from, to time.Time
	median   float64
	ok       bool
}

// calmestStretch finds, among the runs of minUsableBaseline minutes in
// [from, to) holding at least minServiceSamples PHP answers, the one with
// the lowest median answer (all its answers merged, so each minute weighs
// by its answers; the earliest on a tie) and no minute whose own median
// (from minMinuteAnswers answers) stands serviceRise times above it.
func (ev *Evidence) calmestStretch(from, to time.Time) calmStretch {
	var best calmStretch
	for s := from; !s.Add(minUsableBaseline).After(to); s = s.Add(time.Minute) {
		h := ev.phpServiceTimes(s, s.Add(minUsableBaseline), false)
		if h.N < minServiceSamples {
			continue
		}
		v := h.Quantile(0.5)
		if best.ok && v >= best.median {
			continue
		}
		// A stretch is steady: none of its minutes is itself a slowdown
		// against it (a stretch reaching into the slowdown's last minute
		// can still have a low median).
		steady := true
		for m := s; m.Before(s.Add(minUsableBaseline)); m = m.Add(time.Minute) {
			if mm := ev.Traffic.Minute(m); mm != nil && mm.PHPDurations.N >= minMinuteAnswers && mm.PHPDurations.Quantile(0.5) >= serviceRise*v {
				steady = false
			}
		}
		if steady {
			best = calmStretch{from: s, to: s.Add(minUsableBaseline), median: v, ok: true}
		}
	}
	return best
}

// phpServiceTimes merges the durations of PHP's answers logged in [from, to).
// With queueFree and a queue series, only minutes in which nothing queued
// (from a minute before, so that a request logged in the minute did not
// wait either) are read: their durations are PHP's own time.
func (ev *Evidence) phpServiceTimes(from, to time.Time, queueFree bool) Histogram {
	var h Histogram
	var queue []metrics.Point
	if p := ev.Pool; queueFree && p != nil {
		queue = p.Queue
	}
	for m := from.Truncate(time.Minute); m.Before(to); m = m.Add(time.Minute) {
		mm := ev.Traffic.Minute(m)
		if mm == nil || mm.PHPDurations.N == 0 {
			continue
		}
		if len(queue) > 0 {
			// Under one request queued on average: a request logged in
			// the minute waited a moment at most.
			if q := meanBetween(queue, m, m.Add(time.Minute)); math.IsNaN(q) || q >= 1 {
				continue
			}
		}
		h.Merge(&mm.PHPDurations)
	}
	return h
}

// arrivalsPerMinute is the requests arriving a minute in [from, to): the
// median minute (usual) or the mean (during, where a burst counts whole).
func (ev *Evidence) arrivalsPerMinute(from, to time.Time, median bool) float64 {
	var xs []int
	sum := 0
	for m := from.Unix() / 60; m < (to.Unix()+59)/60; m++ {
		n := 0
		if a := ev.Traffic.arrivals[m]; a != nil {
			n = a.Requests
		}
		xs = append(xs, n)
		sum += n
	}
	if len(xs) == 0 {
		return 0
	}
	if median {
		return Median(xs)
	}
	return float64(sum) / float64(len(xs))
}

// arrivalsBefore is the requests arriving a minute in the half hour before
// the incident's onset (after the data's start): whether arrivals rose at
// the onset, not since a given baseline at another time of day. With less
// than a few minutes there, the baseline's median minute.
func (ev *Evidence) arrivalsBefore(inc *Incident, bFrom, bTo time.Time) float64 {
	first, _ := ev.Traffic.Span()
	from := later(inc.Onset.Add(-arrivalsLookback), first.Truncate(time.Minute).Add(time.Minute))
	if inc.Onset.Sub(from) >= minUsableBaseline {
		return ev.arrivalsPerMinute(from, inc.Onset, true)
	}
	return ev.arrivalsPerMinute(bFrom, bTo, true)
}

// lateArrivals is a rise of arrivals during an incident that was not there
// at its onset: atOnset is the mean minute from the onset through the first
// minute clients were failed in, after how long after that beginning the
// rise held.
type lateArrivals struct {
	ok      bool
	atOnset float64
	at      time.Time
	after   time.Duration
}

// arrivalsRoseLate tells whether arrivals that rose during the incident
// (arr1 against the usual arr0) rose only after clients began to be failed:
// flat at the onset (through the first failing minute), and held above
// arrivalsRose times the usual only from a later minute. A trigger rises
// before the failures it explains; a later rise is their effect.
func (ev *Evidence) arrivalsRoseLate(sp serviceSpan, arr0, arr1 float64) lateArrivals {
	if sp.inc == nil || arr0 <= 0 || arr1 <= arrivalsRose*arr0 {
		return lateArrivals{}
	}
	// Clients began to be failed at the first clear minute: an edge minute
	// before it (one stray slow page) is nothing anyone reloads after.
	failFrom := sp.inc.ClientsFailedFrom()
	if failFrom.IsZero() || failFrom.Before(sp.onset) {
		failFrom = sp.onset
	}
	// The onset's arrivals are those in the minute up to the first failure
	// a client was told of, and from the onset if it is earlier: a load that
	// failed the site was there by then, while reloads answer failures
	// seconds after them, so none arrived before the first. The first
	// failing minute as a whole holds both (its reloads alone can lift it
	// past arrivalsFlat), and is the span only when the arrivals were not
	// kept by the second or the first failure came too soon after the
	// window's start to read them.
	onsetEnd := failFrom.Truncate(time.Minute).Add(time.Minute)
	if onsetEnd.After(sp.end) {
		return lateArrivals{}
	}
	atOnset := ev.arrivalsPerMinute(sp.onset, onsetEnd, false)
	if first, ok := ev.Traffic.FirstFailureTold(failFrom.Truncate(time.Minute), onsetEnd); ok {
		// Never from before the window analysed: an onset at its start
		// may have begun there, and the minute before it, the usual, would
		// read a load that failed the site seconds later as flat. Too few
		// seconds of the window before the first failure say nothing; the
		// first minute then stands.
		from := later(ev.From, earlier(sp.onset, first.Add(-time.Minute)))
		if first.Sub(from) >= onsetArrivalsSpan {
			if n, ok := ev.Traffic.arrivalsIn(from, first); ok {
				atOnset = float64(n) / first.Sub(from).Minutes()
			}
		}
	}
	if atOnset > arrivalsFlat*arr0 {
		return lateArrivals{}
	}
	perMinute := map[int64]int{}
	for m := sp.onset.Unix() / 60; m < sp.end.Unix()/60; m++ {
		if a := ev.Traffic.arrivals[m]; a != nil {
			perMinute[m] = a.Requests
		}
	}
	m, ok := SustainedOnset(perMinute, arrivalsRose*arr0, onsetEnd.Unix()/60, sp.end.Unix()/60)
	if !ok {
		return lateArrivals{}
	}
	at := time.Unix(m*60, 0).UTC()
	return lateArrivals{ok: true, atOnset: atOnset, at: at, after: at.Sub(failFrom)}
}

// onsetArrivalsSpan is the fewest seconds before the first failure told
// that the arrivals at the onset are read over: at the usual
// couple of requests a second, 15 s hold about 30, whose Poisson spread
// (a sixth) stays well inside arrivalsFlat.
const onsetArrivalsSpan = 15 * time.Second

// arrivalsLookback is how far before the onset arrivals are compared with.
const arrivalsLookback = 30 * time.Minute

// littleServiceTime is PHP's mean time per request over [from, to) by
// Little's law: busy workers divided by PHP's answers a second. Queued
// requests hold no worker, so the queue is left out; answers PHP gave after
// the proxy stopped waiting are not logged, so it errs high during an
// outage. 0 when nothing was answered.
func (ev *Evidence) littleServiceTime(from, to time.Time) float64 {
	busy := meanBetween(ev.Pool.Active, from, to)
	n := 0
	for m := from.Truncate(time.Minute); m.Before(to); m = m.Add(time.Minute) {
		if mm := ev.Traffic.Minute(m); mm != nil {
			n += mm.PHPDone
		}
	}
	secs := to.Sub(from).Seconds()
	if n == 0 || secs <= 0 || math.IsNaN(busy) {
		return 0
	}
	return LittleTime(busy, float64(n)/secs)
}

// serviceRiseStart is the first minute, from shortly before the onset, whose
// PHP answers' median stood serviceRise times above the usual: when PHP
// turned slow, which may precede the first failure.
func (ev *Evidence) serviceRiseStart(inc *Incident, usual float64) time.Time {
	for m := inc.Onset.Add(-mergeGap).Truncate(time.Minute); m.Before(inc.End); m = m.Add(time.Minute) {
		if mm := ev.Traffic.Minute(m); mm != nil && mm.PHPDurations.N >= 2 && mm.PHPDurations.Quantile(0.5) >= serviceRise*usual {
			return m
		}
	}
	return inc.Onset
}
