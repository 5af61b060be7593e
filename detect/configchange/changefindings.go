package configchange

import (
	"fmt"
	"math"
	"strings"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
)

// finding renders a linked change.
func (a *assessment) finding(q QueueFacts, present shown) Finding {
	a.facts.Linked = true
	role := RoleEnabler
	switch {
	case a.risk == 0 || a.cannotJudge != "":
		role = RoleCandidate
	case !math.IsNaN(a.hours) && a.hours <= 1 && !present.trigger:
		role = RoleTrigger
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s, %s).", changeText(a.c), refText(a.c), changeWhen(a.c.Time, q.Onset, q.Loc))
	if a.quantText != "" {
		b.WriteString(" " + a.quantText)
	}
	fmt.Fprintf(&b, " Mechanism: %s", a.k.effect)
	if len(a.found) > 0 {
		fmt.Fprintf(&b, " (found: %s)", joinKinds(a.found, ", "))
	}
	b.WriteString(".")
	if a.risk == 0 {
		b.WriteString(" Which way this change moved the risk is not known from the values alone.")
	}
	if a.cannotJudge != "" {
		b.WriteString(" Verdict: " + a.cannotJudge + ".")
		a.facts.CouldNotJudge = Some(true)
	}
	if len(a.also) > 0 {
		b.WriteString(" Made together with: " + alsoText(a.also) + ".")
	}
	if a.evidence < 1 {
		b.WriteString(" Seen only in metrics (no commit or change-log entry): weaker evidence.")
	} else if strings.Contains(a.c.Source, changes.SourceMetrics) {
		b.WriteString(" The metric confirms when it took effect.")
	}
	return Finding{
		Kind: KindConfigChange, Role: role, Start: a.c.Time, End: a.c.Time,
		Confidence: a.conf, Summary: b.String(), Facts: a.facts, Change: changePtr(a.c),
	}
}

// mitigationFinding renders a change that lowers the risk.
func (a *assessment) mitigationFinding(q QueueFacts) Finding {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s, %s) lowers the risk:", changeText(a.c), refText(a.c), changeWhen(a.c.Time, q.Onset, q.Loc))
	switch {
	case a.quantText != "" && a.k.test != nil:
		b.WriteString(" " + a.quantText)
	default:
		fmt.Fprintf(&b, " it works against the failure mode where %s.", a.k.effect)
	}
	if wa := a.facts.WaitAfterS; a.k.name == "listen.backlog" && wa.OK {
		// The claim follows the limit the wait was held against: a health
		// check no timeout applies to waits and passes, so only the
		// clients' timeout says what the smaller queue does.
		switch ht, ct := a.facts.HealthTimeoutS, a.facts.ClientTimeoutS; {
		case ht.OK && wa.V <= ht.V:
			b.WriteString(" The health check can no longer starve behind a full queue; overflow now fails fast at the proxy.")
		case ct.OK && wa.V <= ct.V:
			fmt.Fprintf(&b, " A full queue now drains within the clients' %s timeout; overflow now fails fast at the proxy.", fmtSecTrim(ct.V))
		case ct.OK:
			fmt.Fprintf(&b, " A full queue still outlasts the clients' %s timeout, so clients at its back still give up before PHP answers; only overflow past %s now fails fast at the proxy.", fmtSecTrim(ct.V), a.c.New)
		}
	}
	if !q.Onset.IsZero() && a.c.Time.After(q.Onset) {
		fmt.Fprintf(&b, " Made %s after the onset: a fix, not a cause.", spanText(a.c.Time.Sub(q.Onset)))
	} else {
		b.WriteString(" It is not an enabler of this incident.")
	}
	if len(a.also) > 0 {
		b.WriteString(" Made together with: " + alsoText(a.also) + ".")
	}
	if a.evidence < 1 {
		b.WriteString(" Seen only in metrics: weaker evidence.")
	}
	a.facts.Linked = false
	conf := 0.6
	if a.quant >= 1 {
		conf = 0.9
	}
	return Finding{
		Kind: KindConfigChange, Role: RoleMitigation, Start: a.c.Time, End: a.c.Time,
		Confidence: round(a.evidence*conf, 2), Summary: b.String(), Facts: a.facts, Change: changePtr(a.c),
	}
}

// ruledOutFinding renders a change of a relevant setting that the arithmetic
// clears.
func (a *assessment) ruledOutFinding(q QueueFacts) Finding {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s, %s) is not what enabled the incident: %s.", changeText(a.c), refText(a.c), changeWhen(a.c.Time, q.Onset, q.Loc), a.notLinked)
	wb, okB := a.facts.WaitBeforeS.V, a.facts.WaitBeforeS.OK
	wa, okA := a.facts.WaitAfterS.V, a.facts.WaitAfterS.OK
	switch {
	case a.k.name == "listen.backlog" && okB && okA && q.HealthTimeoutS > 0 && wb > q.HealthTimeoutS:
		fmt.Fprintf(&b, " The old value was already unsafe: with %s workers at %s per request a full queue of %s held %s of work against the %s health timeout (one of %s now holds %s).",
			fmtInt(q.Workers), fmtSecTrim(q.ServiceTimeS), a.c.Old, fmtSecTrim(wb), fmtSecTrim(q.HealthTimeoutS), a.c.New, fmtSecTrim(wa))
	case a.quantText != "":
		b.WriteString(" " + a.quantText)
	}
	a.facts.Linked = false
	return Finding{
		Kind: KindConfigChange, Role: RoleRuledOut, Start: a.c.Time, End: a.c.Time,
		Confidence: round(a.evidence*0.1, 2), Summary: b.String(), Facts: a.facts, Change: changePtr(a.c),
	}
}

func changePtr(c sources.Change) *sources.Change { return &c }
