package scan

import (
	"math"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
)

// KindLatency is a rise of PHP's response time over successes. An anomaly
// kind beyond the finding kinds of package detect, in their namespace.
const KindLatency detect.Kind = "latency"

func init() {
	registerConcern(Concern{Kind: KindLatency, NewFacts: func() detect.Facts { return &LatencyFacts{} }})
}

// LatencyFacts are the numbers behind a latency anomaly: PHP's success
// percentiles in the window and usually (seconds).
type LatencyFacts struct {
	P95       float64 `json:"p95_s"`
	P50       float64 `json:"p50_s"`
	P95Usual  float64 `json:"p95_usual_s"`
	P50Usual  float64 `json:"p50_usual_s"`
	Successes int     `json:"successes"`
	// BaselineSlots counts the baseline's covered slots.
	BaselineSlots int `json:"baseline_slots"`
}

// FindingKind implements detect.Facts.
func (*LatencyFacts) FindingKind() detect.Kind { return KindLatency }

// lowerQuantile is the low end of a quantile's 3-sigma confidence interval
// from its sample size (order statistics: the rank q*n varies by
// sqrt(n*q*(1-q))).
func lowerQuantile(h *detect.Histogram, q float64) float64 {
	lo := q - 3*math.Sqrt(q*(1-q)/float64(max(h.N, 1)))
	return h.Quantile(math.Max(lo, 0.01))
}

// latency judges PHP's response time over successes (p95, and p50).
func (j *judge) latency() {
	r := j.recent
	if r.Latency.N < minLatencySamples {
		return
	}
	q := func(p *Profile, quant float64) (float64, bool) {
		if p.Latency.N < minLatencySlot {
			return 0, false
		}
		return p.Latency.Quantile(quant), true
	}
	o95, _ := q(r, 0.95)
	o50, _ := q(r, 0.5)
	// The window is judged on the low end of its quantiles' confidence
	// interval: a quiet hour's p95 rests on a dozen requests, and a few slow
	// edits must not pass for PHP slowing down.
	g95, g50 := lowerQuantile(&r.Latency, 0.95), lowerQuantile(&r.Latency, 0.5)
	b95 := j.baselineOf(func(p *Profile) (float64, bool) { return q(p, 0.95) })
	b50 := j.baselineOf(func(p *Profile) (float64, bool) { return q(p, 0.5) })
	if b95.N < j.cfg.MinBaselineDays {
		return
	}
	up95 := j.measureSiteAt(metricLatencyP95, o95, g95, b95, latencyMeasure)
	up50 := j.measureSiteAt(metricLatencyP50, o50, g50, b50, latencyMeasure)
	if !up95 && !up50 {
		return
	}
	sev := SeverityWarning
	if j.site.ClientTimeoutS > 0 && o95 >= j.site.ClientTimeoutS {
		sev = SeverityCritical
	}
	metric, o, g, b := metricLatencyP95, o95, g95, b95
	if !up95 || latencyMeasure.score(g50, b50) > latencyMeasure.score(g95, b95) {
		metric, o, g, b = metricLatencyP50, o50, g50, b50
	}
	start := j.cfg.Window(r.To).From
	if j.traffic != nil {
		level := b95.Median * latencyMeasure.ratio
		start = firstMinute(j.traffic, j.cfg.Window(r.To), func(m *detect.Minute) bool {
			return m.Latency.N >= 5 && m.Latency.Quantile(0.95) >= level
		})
	}
	a := &Anomaly{
		Kind: KindLatency, Severity: sev, Start: start,
		Observed: round(o, 3), Baseline: round(b.Median, 3), Score: round(latencyMeasure.score(g, b), 1),
		Facts: &LatencyFacts{P95: round(o95, 3), P50: round(o50, 3), P95Usual: round(b95.Median, 3), P50Usual: round(b50.Median, 3),
			Successes: r.Latency.N, BaselineSlots: b.N},
	}
	a.measured(metric)
	a.summarize(Messages.Say("latency.summary", struct {
		Span                         prose.Text
		P95, P95Usual, P50, P50Usual float64
		Successes                    int
	}{j.span(), o95, b95.Median, o50, b50.Median, r.Latency.N}))
	j.anomalies = append(j.anomalies, a)
}
