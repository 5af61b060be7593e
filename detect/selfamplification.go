package detect

import (
	"context"
	"time"

	"github.com/aftermath-forensics/aftermath/prose"
)

func init() {
	Register(Spec{
		Kind: KindSelfAmplification, ReadsLines: true, Requires: []Kind{KindWorkerSaturation}, New: func() Detector { return selfAmplificationDetector{} },
		NewFacts: func() Facts { return &SelfAmplificationFacts{} },
		Role:     RoleMechanism,
		Chain:    2,
		Scan: ScanMeasure{Metric: Messages.SayLater("self_amplification.scan_metric", nil),
			Observed: func(f *Finding) float64 { return float64(FactsOf[SelfAmplificationFacts](f).SelfCalls) },
			Baseline: func(f *Finding) float64 { return FactsOf[SelfAmplificationFacts](f).Expected.V }},
		Events:  map[Event]int{EventSelfCall: 3},
		Explain: explainSelfAmplification,
		Moments: selfAmplificationMoments,
	})
}

// SelfAmplificationFacts are a self_amplification finding's numbers.
type SelfAmplificationFacts struct {
	SelfCalls int `json:"self_calls"`
	// Expected is the usual count in as long, when a baseline says it.
	Expected Maybe[float64] `json:"expected"`
	// SelfCallsWhileSaturated and ShareOfPHPWhileSaturated count the calls
	// made while every worker was busy, when there were any.
	SelfCallsWhileSaturated  Maybe[int]     `json:"self_calls_while_saturated"`
	ShareOfPHPWhileSaturated Maybe[float64] `json:"share_of_php_while_saturated"`
}

func (*SelfAmplificationFacts) FindingKind() Kind { return KindSelfAmplification }

// EventSelfCall is the timeline event of the site's first call to itself.
const EventSelfCall Event = "self_call"

func explainSelfAmplification(p Phraser, f *Finding, s Story) string {
	return p.Say("self_amplification.explain", struct {
		about[SelfAmplificationFacts]
		Unseen string
	}{about[SelfAmplificationFacts]{f, FactsOf[SelfAmplificationFacts](f)}, sayUnseen(p, s, f.Start)})
}

// selfAmplificationMoments places the first self-call; where the access
// log begins (or resumes) with the site already calling itself, the first
// call is not seen and the moment says so.
func selfAmplificationMoments(f *Finding, s Story) []Moment {
	unseen := unseenStart(s, f.Start)
	return []Moment{{Time: f.Start, Event: EventSelfCall, Topic: "self", Text: func(p Phraser) string {
		return p.Say("self_amplification.moment", struct {
			SelfCalls int
			Unseen    *Unseen
		}{FactsOf[SelfAmplificationFacts](f).SelfCalls, unseen})
	}}}
}

// selfAmplificationDetector finds pages that call the site's own API: each such
// request holds two workers, and when workers are short the inner call waits.
type selfAmplificationDetector struct{}

func (selfAmplificationDetector) Name() Kind { return KindSelfAmplification }

func (selfAmplificationDetector) Detect(ctx context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error) {
	if ev.Traffic == nil {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("self_amplification.no_log", nil)), nil
	}
	c := ev.countReadMinutes(func(m *Minute) int { return m.SelfCalls })
	n, start, end := c.Total, c.Start, c.End
	if n == 0 {
		return nil, Because("", Messages.Say("self_amplification.none", struct{ Unjudged prose.Text }{ev.unjudgedClause()})), nil
	}
	expected := c.Expected()
	facts := &SelfAmplificationFacts{SelfCalls: n, Expected: Some(round(expected, 1))}
	// Self-calls are harmless while workers are free; they amplify when every
	// worker is busy, because the outer request holds one worker while its
	// inner call waits in the queue for another.
	saturated, during := 0, 0
	// unseenSaturated is how much of the saturation the access log has no
	// lines for: calls made then are unknown, not absent.
	var unseenSaturated time.Duration
	if sat := first(prior, KindWorkerSaturation); sat != nil {
		unseenSaturated = unloggedWithin(Unlogged(ev.Coverage, ev.From, ev.To), sat.Start, sat.End)
		for m := sat.Start.Truncate(time.Minute); m.Before(sat.End); m = m.Add(time.Minute) {
			if mm := ev.Traffic.Minute(m); mm != nil {
				saturated += mm.SelfCalls
				during += mm.PHPDone
			}
		}
	}
	// With no baseline there is no usual count to rise above: only the
	// calls made while every worker was busy are judged.
	_, _, noBaseline := ev.baselineRange()
	rose := !noBaseline && poissonExcess(float64(n), expected, riseRatio, riseZ)
	if !rose && saturated == 0 {
		return nil, Because("", Messages.Say("self_amplification.usual", struct {
			N               int
			Expected        float64
			UnseenSaturated time.Duration
			UnseenSpan      string
			Unjudged        prose.Text
		}{n, expected, unseenSaturated, spanText(unseenSaturated), ev.unjudgedClause()})), nil
	}
	said := selfCallSummary{N: n, Expected: expected, NoBaseline: noBaseline, Start: start.In(ev.loc()), Unseen: ev.unseenAt(start)}
	if saturated > 0 {
		facts.SelfCallsWhileSaturated = Some(saturated)
		if during > 0 {
			facts.ShareOfPHPWhileSaturated = Some(round(float64(saturated)/float64(during), 3))
		}
		if noBaseline {
			facts.Expected = Maybe[float64]{}
		}
		said.Saturated = saturated
	}
	f := Finding{Kind: KindSelfAmplification, Role: RoleMechanism, Start: start, End: end, Confidence: 0.7,
		Facts: facts}
	f.summarize(Messages.Say("self_amplification.summary", said))
	if ev.countedIn(ev.From, ev.To) {
		// Self-calls are seen only in lines read: the minutes only counted
		// (a pushdown) are left out of the window and the baseline alike.
		f.Estimated = []Estimate{{Figures: []string{"start", "self_calls", "self_calls_while_saturated"}, Reason: EstimateNotRead}}
	}
	return []Finding{f}, Check{}, nil
}

// selfCallSummary is what a self-amplification finding's summary says:
// the calls made while every worker was busy (Saturated, 0 when none), else
// all of them from Start, where the access log may begin with them (Unseen).
type selfCallSummary struct {
	N, Saturated int
	Expected     float64
	NoBaseline   bool
	Start        time.Time
	Unseen       *Unseen
}
