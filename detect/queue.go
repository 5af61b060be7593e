package detect

import (
	"context"
	"math"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

func init() {
	Register(Spec{
		Kind: KindListenQueueOverflow, New: func() Detector { return queueDetector{} },
		NewFacts: func() Facts { return &ListenQueueFacts{} },
		Role:     RoleMechanism,
		Chain:    4,
		Scan: ScanMeasure{Anomaly: "saturation", Metric: Messages.SayLater("listen_queue_overflow.scan_metric", nil),
			Observed: func(f *Finding) float64 { return FactsOf[ListenQueueFacts](f).QueuePeak },
			Baseline: func(f *Finding) float64 { return FactsOf[ListenQueueFacts](f).QueueUsual }},
		Events:  map[Event]int{EventQueueDeep: 5, EventQueueOldCap: 6, EventQueuePeak: 9, EventQueueCap: 10},
		Explain: explainQueue,
		Moments: queueMoments,
	})
}

// ListenQueueFacts are a listen_queue_overflow finding's numbers.
type ListenQueueFacts struct {
	QueuePeak float64 `json:"queue_peak"`
	// QueuePeakAt is the peak's time in Unix seconds.
	QueuePeakAt int64   `json:"queue_peak_at"`
	QueueUsual  float64 `json:"queue_usual"`
	Workers     int     `json:"workers"`
	// Backlog and ReachedCap need the listen.backlog in force.
	Backlog    Maybe[float64] `json:"backlog"`
	ReachedCap Maybe[bool]    `json:"reached_cap"`
	// EstWaitAtPeakS needs the completion rate at the peak.
	EstWaitAtPeakS Maybe[float64] `json:"est_wait_at_peak_s"`
}

func (*ListenQueueFacts) FindingKind() Kind { return KindListenQueueOverflow }

// Timeline events of the listen queue.
const (
	EventQueueDeep   Event = "queue_deep"
	EventQueueOldCap Event = "queue_old_cap"
	EventQueuePeak   Event = "queue_peak"
	EventQueueCap    Event = "queue_cap"
)

func explainQueue(p Phraser, f *Finding, s Story) string {
	qf := FactsOf[ListenQueueFacts](f)
	pt, peaked := peakPoint(s.QueueSeries(), qf.QueuePeak)
	return p.Say("listen_queue_overflow.explain", struct {
		Facts  *ListenQueueFacts
		Peaked bool
		At     time.Time
	}{qf, peaked, pt.T})
}

// queueMoments are the listen queue's milestones, read from the per-minute
// queue series: past the cap in force before a config change, the peak, the
// cap. Without the series only the finding's start is known.
func queueMoments(f *Finding, s Story) []Moment {
	var out []Moment
	add := func(t time.Time, event Event, prio int, text func(p Phraser) string) {
		out = append(out, Moment{Time: t, Event: event, Topic: "queue", Prio: prio, Text: text})
	}
	qf := FactsOf[ListenQueueFacts](f)
	peak, backlog := qf.QueuePeak, qf.Backlog.V
	q := s.QueueSeries()
	if len(q) == 0 {
		add(f.Start, EventQueueDeep, 3, func(p Phraser) string {
			return p.Say("listen_queue_overflow.moment.deep", peak)
		})
		return out
	}
	from, _ := s.Window()
	firstAtLeast := func(v float64) (SeriesPoint, bool) {
		for _, pt := range q {
			if !pt.T.Before(from.Truncate(time.Minute)) && pt.V >= v {
				return pt, true
			}
		}
		return SeriesPoint{}, false
	}
	if old, ok := oldBacklog(s.Findings()); ok && (backlog == 0 || old < backlog) {
		if pt, ok := firstAtLeast(old + 1); ok {
			add(pt.T, EventQueueOldCap, 2, func(p Phraser) string {
				return p.Say("listen_queue_overflow.moment.old_cap", struct{ Queue, Old float64 }{pt.V, old})
			})
		}
	}
	reached := qf.ReachedCap.V && backlog > 0
	if reached {
		if pt, ok := firstAtLeast(backlog * 0.98); ok {
			add(pt.T, EventQueueCap, 0, func(p Phraser) string {
				return p.Say("listen_queue_overflow.moment.cap", backlog)
			})
		}
	}
	if peak > 0 && (!reached || peak > backlog*1.02) {
		if pt, ok := peakPoint(q, peak); ok {
			wait := qf.EstWaitAtPeakS.V
			peak := math.Min(peak, pt.V)
			add(pt.T, EventQueuePeak, 1, func(p Phraser) string {
				return p.Say("listen_queue_overflow.moment.peak", struct{ Peak, Wait float64 }{peak, max(wait, 0)})
			})
		}
	}
	return out
}

// peakPoint finds when a series reached a finding's peak: the first point at
// or above it, else (the finding may read a finer grid than the per-minute
// series) the series' highest point when that is within 10% of the peak.
func peakPoint(points []SeriesPoint, peak float64) (SeriesPoint, bool) {
	if len(points) == 0 || peak <= 0 {
		return SeriesPoint{}, false
	}
	best := points[0]
	for _, pt := range points {
		if pt.V >= peak {
			return pt, true
		}
		if pt.V > best.V {
			best = pt
		}
	}
	return best, best.V >= 0.9*peak
}

// oldBacklog is listen.backlog before the change a config_change finding
// blames, as ChangedValues reads it.
func oldBacklog(fs []Finding) (float64, bool) {
	for _, f := range fs {
		if f.Kind != KindConfigChange || f.Change == nil {
			continue
		}
		if setting, old, _, ok := ChangedValues(*f.Change); setting == "listen.backlog" && ok && old > 0 {
			return old, true
		}
	}
	return 0, false
}

// queueDetector finds a deep php-fpm listen queue, and whether it hit its cap.
type queueDetector struct{}

func (queueDetector) Name() Kind { return KindListenQueueOverflow }

// A queue is deep when more requests wait than there are workers (each waits at
// least one full service time) and when it is far above its usual level.
const queueOverBaseline = 10.0

func (queueDetector) Detect(ctx context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error) {
	p := ev.Pool
	if p == nil || len(p.Queue) == 0 {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("listen_queue_overflow.no_series", nil)), nil
	}
	workers := poolSize(ev)
	bFrom, bTo, _ := ev.baselineRange()
	usual := medianPoints(between(p.Queue, bFrom, bTo))
	threshold := math.Max(float64(max(workers, 1)), queueOverBaseline*(usual+1))
	pk := p.queuePeak(ev.From, ev.To)
	backlog := valueAt(p.Backlog, pk.T)
	if math.IsNaN(backlog) {
		backlog = float64(ev.Site.Backlog)
	}
	if pk.V < threshold {
		return nil, Because("", Messages.Say("listen_queue_overflow.shallow", struct{ Peak, Threshold, Factor, Usual float64 }{
			pk.V, threshold, queueOverBaseline, usual})), nil
	}
	// The peak may come from php-fpm's high-water mark, between two scrapes
	// that both stayed under the threshold: then the peak alone is the stretch.
	start, end := pk.T, pk.T.Add(p.Step)
	if rs := runs(p.Queue, ev.From, ev.To, 2*p.Step, func(pt metrics.Point) bool { return pt.V >= threshold }); len(rs) > 0 {
		start, end = rs[0].Start, rs[len(rs)-1].End.Add(p.Step)
	}
	facts := &ListenQueueFacts{QueuePeak: pk.V, QueuePeakAt: pk.T.Unix(), QueueUsual: usual, Workers: workers}
	said := struct {
		Usual, Peak, Backlog, Rate, Wait float64
		PeakAt, CapAt                    time.Time
		HasCap, ReachedCap               bool
	}{Usual: usual, Peak: pk.V, Backlog: backlog, PeakAt: pk.T.In(ev.Loc), HasCap: backlog > 0}
	if backlog > 0 {
		facts.Backlog = Some(backlog)
		// php-fpm reports the queue as the kernel sees it; at the cap it reads
		// the backlog itself (or one more).
		facts.ReachedCap = Some(pk.V >= backlog*0.98)
		if pk.V >= backlog*0.98 {
			at, _ := firstAtLeast(p.Queue, backlog*0.98, ev.From, ev.To)
			said.ReachedCap, said.CapAt = true, at.In(ev.Loc)
		}
	}
	if rate := valueAt(p.Accepted, pk.T); rate > 0 {
		facts.EstWaitAtPeakS = Some(round(pk.V/rate, 1))
		said.Rate, said.Wait = rate, pk.V/rate
	}
	conf := 0.9
	if backlog == 0 {
		conf = 0.75
	}
	f := Finding{Kind: KindListenQueueOverflow, Role: RoleMechanism, Start: start, End: end, Confidence: conf, Facts: facts}
	f.summarize(Messages.Say("listen_queue_overflow.summary", said))
	return []Finding{f}, Check{}, nil
}

func medianPoints(ps []metrics.Point) float64 {
	vs := make([]float64, len(ps))
	for i, p := range ps {
		vs[i] = p.V
	}
	return Median(vs)
}
