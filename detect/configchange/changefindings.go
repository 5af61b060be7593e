package configchange

import (
	"math"
	"strings"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
)

// finding renders a linked change.
func (a *assessment) finding(q QueueFacts, present shown) detect.Finding {
	a.facts.Linked = true
	role := detect.RoleEnabler
	switch {
	case a.risk == 0 || said(a.cannotJudge):
		role = detect.RoleCandidate
	case !math.IsNaN(a.hours) && a.hours <= 1 && !present.trigger:
		role = detect.RoleTrigger
	}
	if said(a.cannotJudge) {
		a.facts.CouldNotJudge = detect.Some(true)
	}
	summary := detect.Messages.Say("config_change.linked", struct {
		Change, Ref, When, Quant, Effect, Verdict, Also prose.Text
		Found                                           string
		HasQuant, UnknownDirection, HasVerdict, HasAlso bool
		MetricsOnly, MetricConfirms                     bool
	}{
		Change: changeText(a.c), Ref: refText(a.c), When: detect.ChangeWhen(a.c.Time, q.Onset, q.Loc),
		Quant: a.quantText, HasQuant: said(a.quantText), Effect: a.k.effect, Found: detect.JoinKinds(a.found, ", "),
		UnknownDirection: a.risk == 0, Verdict: a.cannotJudge, HasVerdict: said(a.cannotJudge),
		Also: alsoText(a.also), HasAlso: len(a.also) > 0,
		MetricsOnly:    a.evidence < 1,
		MetricConfirms: strings.Contains(a.c.Source, changes.SourceMetrics),
	})
	return detect.Finding{
		Kind: detect.KindConfigChange, Role: role, Start: a.c.Time, End: a.c.Time,
		Confidence: a.conf, Summary: summary.String(), SummaryText: summary, Facts: a.facts, Change: changePtr(a.c),
	}
}

// mitigationFinding renders a change that lowers the risk.
func (a *assessment) mitigationFinding(q QueueFacts) detect.Finding {
	mitigation := struct {
		Change, Ref, When, Quant, Effect, ClientTimeout, Since, Also prose.Text
		New, Backlog                                                 string
		HasQuant, AfterOnset, HasAlso, MetricsOnly                   bool
	}{
		Change: changeText(a.c), Ref: refText(a.c), When: detect.ChangeWhen(a.c.Time, q.Onset, q.Loc),
		Quant: a.quantText, HasQuant: said(a.quantText) && a.k.test != nil, Effect: a.k.effect,
		New: a.c.New, Also: alsoText(a.also), HasAlso: len(a.also) > 0, MetricsOnly: a.evidence < 1,
	}
	if wa := a.facts.WaitAfterS; a.k.name == "listen.backlog" && wa.OK {
		// The claim follows the limit the wait was held against: a health
		// check no timeout applies to waits and passes, so only the
		// clients' timeout says what the smaller queue does.
		switch ht, ct := a.facts.HealthTimeoutS, a.facts.ClientTimeoutS; {
		case ht.OK && wa.V <= ht.V:
			mitigation.Backlog = "health_fits"
		case ct.OK && wa.V <= ct.V:
			mitigation.Backlog, mitigation.ClientTimeout = "client_fits", secsText(ct.V)
		case ct.OK:
			mitigation.Backlog, mitigation.ClientTimeout = "client_outlasted", secsText(ct.V)
		}
	}
	if !q.Onset.IsZero() && a.c.Time.After(q.Onset) {
		mitigation.AfterOnset, mitigation.Since = true, spanSaid(a.c.Time.Sub(q.Onset))
	}
	summary := detect.Messages.Say("config_change.mitigation", mitigation)
	a.facts.Linked = false
	conf := 0.6
	if a.quant >= 1 {
		conf = 0.9
	}
	return detect.Finding{
		Kind: detect.KindConfigChange, Role: detect.RoleMitigation, Start: a.c.Time, End: a.c.Time,
		Confidence: detect.Round(a.evidence*conf, 2), Summary: summary.String(), SummaryText: summary, Facts: a.facts, Change: changePtr(a.c),
	}
}

// ruledOutFinding renders a change of a relevant setting that the arithmetic
// clears.
func (a *assessment) ruledOutFinding(q QueueFacts) detect.Finding {
	ruled := struct {
		Change, Ref, When, Why, Quant      prose.Text
		Service, OldWait, NewWait, Timeout prose.Text
		Old, New                           string
		Workers                            int
		Unsafe, HasQuant                   bool
	}{
		Change: changeText(a.c), Ref: refText(a.c), When: detect.ChangeWhen(a.c.Time, q.Onset, q.Loc), Why: a.notLinked,
		Quant: a.quantText, HasQuant: said(a.quantText), Old: a.c.Old, New: a.c.New,
	}
	wb, okB := a.facts.WaitBeforeS.V, a.facts.WaitBeforeS.OK
	wa, okA := a.facts.WaitAfterS.V, a.facts.WaitAfterS.OK
	if a.k.name == "listen.backlog" && okB && okA && q.HealthTimeoutS > 0 && wb > q.HealthTimeoutS {
		ruled.Unsafe, ruled.Workers = true, q.Workers
		ruled.Service, ruled.OldWait, ruled.NewWait, ruled.Timeout = secsText(q.ServiceTimeS), secsText(wb), secsText(wa), secsText(q.HealthTimeoutS)
	}
	summary := detect.Messages.Say("config_change.ruled_out", ruled)
	a.facts.Linked = false
	return detect.Finding{
		Kind: detect.KindConfigChange, Role: detect.RoleRuledOut, Start: a.c.Time, End: a.c.Time,
		Confidence: detect.Round(a.evidence*0.1, 2), Summary: summary.String(), SummaryText: summary, Facts: a.facts, Change: changePtr(a.c),
	}
}

func changePtr(c sources.Change) *sources.Change { return &c }
