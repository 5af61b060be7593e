package scan

import (
	"math"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
)

// KindErrorRate is a rise of failed responses (5xx, 429, late successes);
// upstream_errors findings join it. An anomaly kind beyond the finding kinds
// of package detect, in their namespace.
const KindErrorRate detect.Kind = "error_rate"

func init() {
	registerConcern(Concern{Kind: KindErrorRate, NewFacts: func() detect.Facts { return &ErrorRateFacts{} }})
}

// ErrorRateFacts are the numbers behind an error_rate: the window's failed
// responses by cause.
type ErrorRateFacts struct {
	// Status5xx, Status429 and Late count the failed responses: 5xx, 429 and
	// successes logged after the clients gave up.
	Status5xx int `json:"status_5xx"`
	Status429 int `json:"status_429"`
	Late      int `json:"late"`
	// Proxy503 counts the 503s Caddy made itself (it had marked PHP down);
	// Proxy503Usual is their baseline median.
	Proxy503      int     `json:"proxy_503"`
	Proxy503Usual float64 `json:"proxy_503_usual"`
	// FailedShare is the share of the window's lines that failed.
	FailedShare float64 `json:"failed_share"`
	// BaselineSlots counts the baseline's covered slots.
	BaselineSlots int `json:"baseline_slots"`
}

// FindingKind implements detect.Facts.
func (*ErrorRateFacts) FindingKind() detect.Kind { return KindErrorRate }

// errors judges failed responses and the proxy's own 503s.
func (j *judge) errors() {
	r := j.recent
	floor := math.Max(minFailedPerHour*j.hours, minFailedShare*float64(r.Requests))
	m := errorMeasure
	m.minExcess = floor
	b := j.baselineOf(func(p *Profile) (float64, bool) { return float64(p.Failed), true })
	failedUp := j.measureSite(metricFailedAll, float64(r.Failed), b, m)
	p := errorMeasure
	p.minExcess = minFailedPerHour * j.hours
	pb := j.baselineOf(func(p *Profile) (float64, bool) { return float64(p.Proxy503), true })
	proxyUp := j.measureSite(metricProxy503, float64(r.Proxy503), pb, p)
	if !failedUp && !proxyUp {
		return
	}
	failedShare := share(r.Failed, r.Lines)
	sev := SeverityWarning
	if proxyUp || failedShare >= criticalFailedShare {
		sev = SeverityCritical
	}
	start := j.cfg.Window(r.To).From
	if j.traffic != nil {
		level := detect.RiseLevel(b.Median/j.cfg.Since.Minutes(), standOutZ)
		w := j.cfg.Window(r.To)
		if ms, ok := j.traffic.FailingMilestones(w.From, w.To, level); ok {
			start = ms.First
		}
	}
	a := &Anomaly{
		Kind: KindErrorRate, Severity: sev, Start: start,
		Observed: float64(r.Failed), Baseline: b.Median, Score: round(m.score(float64(r.Failed), b), 1),
		Facts: &ErrorRateFacts{Status5xx: r.Server5xx, Status429: r.Status429, Proxy503: r.Proxy503,
			Late: r.Late, FailedShare: round(failedShare, 4), BaselineSlots: b.N, Proxy503Usual: pb.Median},
	}
	a.measured(metricFailed)
	a.summarize(Messages.Say("error_rate.summary", struct {
		Span                                               prose.Text
		Failed, Server5xx, Proxy503, Status429, Late, Days int
		Share, Usual                                       float64
	}{j.span(), r.Failed, r.Server5xx, r.Proxy503, r.Status429, r.Late, b.N, failedShare, b.Median}))
	j.anomalies = append(j.anomalies, a)
}
