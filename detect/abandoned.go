package detect

import (
	"context"

	"github.com/aftermath-forensics/aftermath/prose"
)

func init() {
	Register(Spec{
		Kind: KindClientAbandonedWork, Requires: []Kind{KindWorkerSaturation}, New: func() Detector { return abandonedDetector{} },
		NewFacts: func() Facts { return &AbandonedWorkFacts{} },
		Role:     RoleSymptom,
		Chain:    7,
		Scan: ScanMeasure{Metric: Messages.SayLater("client_abandoned_work.scan_metric", nil),
			Observed: func(f *Finding) float64 { return float64(FactsOf[AbandonedWorkFacts](f).Requests) }},
		Explain: explainAbandoned,
	})
}

func explainAbandoned(p Phraser, f *Finding, _ Story) string {
	return p.Say("client_abandoned_work.explain", FactsOf[AbandonedWorkFacts](f))
}

// AbandonedWorkFacts are a client_abandoned_work finding's numbers.
type AbandonedWorkFacts struct {
	Requests       int     `json:"requests"`
	ClientTimeoutS float64 `json:"client_timeout_s"`
	// WorkerSeconds is the worker time spent on them, when PHP's service
	// time is known.
	WorkerSeconds Maybe[float64] `json:"worker_seconds"`
	// ClientLeft is how many of Requests were logged with status 0 (or
	// 499): the client closed the connection before PHP answered, at
	// whatever time, so PHP ran on after it left. Stated when any were.
	ClientLeft Maybe[int] `json:"client_left"`
}

func (*AbandonedWorkFacts) FindingKind() Kind { return KindClientAbandonedWork }

// abandonedDetector counts work PHP did for clients that had already left:
// Caddy 2.11 logs no 499, so it shows as PHP responses whose duration exceeds
// the clients' timeout (design.md).
type abandonedDetector struct{}

func (abandonedDetector) Name() Kind { return KindClientAbandonedWork }

func (abandonedDetector) Detect(ctx context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error) {
	if ev.Traffic == nil {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("client_abandoned_work.no_log", nil)), nil
	}
	// The clients' timeout: the site's, else the estimate incident.go made
	// (and counted late answers with).
	incs := ev.incidents()
	timeout := incs.LateAfterS
	if timeout <= 0 {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("client_abandoned_work.no_timeout", nil)), nil
	}
	said := struct {
		N                   int
		Timeout, Expected   float64
		Estimated           bool
		WorkerSeconds, Each float64
		Unjudged            prose.Text
		ClientLeft          int
	}{Timeout: timeout, Estimated: incs.LateSource != LateFromSite}
	c := ev.countMinutes(func(m *Minute) int { return m.Abandoned })
	n, expected, start, end := c.Total, c.Expected(), c.Start, c.End
	if !poissonExcess(float64(n), expected, riseRatio, riseZ) {
		said.N, said.Expected, said.Unjudged = n, expected, ev.unjudgedClause()
		return nil, Because("", Messages.Say("client_abandoned_work.usual", said)), nil
	}
	facts := &AbandonedWorkFacts{Requests: n, ClientTimeoutS: timeout}
	said.N = n
	if left := ev.countMinutes(func(m *Minute) int { return m.ClientLeft }).Total; left > 0 {
		facts.ClientLeft = Some(left)
		said.ClientLeft = left
	}
	// Caddy's duration includes the wait in php-fpm's queue, so the worker time
	// is the service time per request, not the logged duration.
	var estimated []Estimate
	if s := serviceTime(ev, prior); s > 0 {
		php := float64(n) * s
		facts.WorkerSeconds = Some(round(php, 1))
		said.WorkerSeconds, said.Each = php, s
		if serviceTimeSampled(ev, prior) {
			estimated = []Estimate{{Figures: []string{"worker_seconds"}, Reason: EstimateBaselineSample}}
		}
	}
	f := Finding{Kind: KindClientAbandonedWork, Role: RoleSymptom, Start: start, End: end, Confidence: 0.85,
		Facts: facts, Estimated: estimated}
	f.summarize(Messages.Say("client_abandoned_work.summary", said))
	return []Finding{f}, Check{}, nil
}

// serviceTimeSampled reports whether serviceTime is the baseline's median
// taken over a pushdown's sample (normalServiceTimeSampled) rather than the
// saturation's measure from php-fpm's own counters.
func serviceTimeSampled(ev *Evidence, prior []Finding) bool {
	if f := first(prior, KindWorkerSaturation); f != nil && FactsOf[WorkerSaturationFacts](f).ServiceTimeS.V > 0 {
		return false
	}
	return normalServiceTimeSampled(ev)
}

// serviceTime is PHP's time per request during the incident: from the
// saturation finding (workers / completion rate) when there is one, else the
// baseline's median.
func serviceTime(ev *Evidence, prior []Finding) float64 {
	if f := first(prior, KindWorkerSaturation); f != nil && FactsOf[WorkerSaturationFacts](f).ServiceTimeS.V > 0 {
		return FactsOf[WorkerSaturationFacts](f).ServiceTimeS.V
	}
	return normalServiceTime(ev)
}
