package detect

import (
	"context"
	"fmt"
	"time"
)

func init() {
	Register(Spec{
		Kind: KindSelfAmplification, Order: 7, New: func() Detector { return selfAmplificationDetector{} },
		Role:   RoleMechanism,
		Chain:  2,
		Scan:   ScanMeasure{Metric: "the site's calls to its own API", Observed: fact("self_calls"), Baseline: fact("expected")},
		Events: map[string]int{"self_call": 3},
	})
}

// selfAmplificationDetector finds pages that call the site's own API: each such
// request holds two workers, and when workers are short the inner call waits.
type selfAmplificationDetector struct{}

func (selfAmplificationDetector) Name() string { return KindSelfAmplification }

func (selfAmplificationDetector) Detect(ctx context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error) {
	if ev.Traffic == nil {
		return nil, Check{Outcome: OutcomeCouldNotRun, Reason: "no access log"}, nil
	}
	c := ev.countMinutes(func(m *Minute) int { return m.SelfCalls })
	n, start, end := c.Total, c.Start, c.End
	if n == 0 {
		return nil, Check{Reason: "no request from the site to its own API was logged"}, nil
	}
	expected := c.Expected()
	facts := map[string]float64{"self_calls": float64(n), "expected": round(expected, 1)}
	// Self-calls are harmless while workers are free; they amplify when every
	// worker is busy, because the outer request holds one worker while its
	// inner call waits in the queue for another.
	saturated, during := 0, 0
	if sat := first(prior, KindWorkerSaturation); sat != nil {
		for m := sat.Start.Truncate(time.Minute); m.Before(sat.End); m = m.Add(time.Minute) {
			if mm := ev.Traffic.Minute(m); mm != nil {
				saturated += mm.SelfCalls
				during += mm.PHPDone
			}
		}
	}
	rose := poissonExcess(float64(n), expected, riseRatio, riseZ)
	if !rose && saturated == 0 {
		return nil, Check{Reason: fmt.Sprintf("%s self-calls to the API in the window, as usual (%s expected), and none while every worker was busy", fmtInt(n), fmtNum(expected))}, nil
	}
	var summary string
	if saturated > 0 {
		facts["self_calls_while_saturated"] = float64(saturated)
		if during > 0 {
			facts["share_of_php_while_saturated"] = round(float64(saturated)/float64(during), 3)
		}
		summary = fmt.Sprintf("The site called its own API %s times while every php-fpm worker was busy (%s in the window, %s usual): each such request held a second worker, or waited in the queue for one while holding the first.",
			fmtInt(saturated), fmtInt(n), fmtNum(expected))
	} else {
		summary = fmt.Sprintf("The site called its own API %s times from %s (usually %s in as long): each such request holds a second worker while the first waits for it.",
			fmtInt(n), start.In(ev.Loc).Format("15:04"), fmtNum(expected))
	}
	return []Finding{{Kind: KindSelfAmplification, Role: RoleMechanism, Start: start, End: end, Confidence: 0.7,
		Summary: summary, Facts: facts}}, Check{}, nil
}
