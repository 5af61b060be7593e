package configchange

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
)

// QueueFacts are the incident's queueing numbers that RankChanges tests each
// change against. Zero means unknown; a test that needs an unknown number is
// skipped and the finding says so (with a lower confidence).
type QueueFacts struct {
	// Workers is W: the php-fpm workers that served the site during the
	// incident (pm.max_children in force, or the peak of phpfpm_active_processes).
	Workers int
	// ServiceTimeS is S: the mean PHP time per request during the incident, in
	// seconds (e.g. busy worker-seconds / completions).
	ServiceTimeS float64
	// HealthTimeoutS is the timeout that can really fail a health check waiting
	// in the queue, in seconds (CheckTimeout); 0 when none applies (then a
	// queued check waits and passes, and the tests use ClientTimeoutS instead).
	HealthTimeoutS float64
	// ClientTimeoutS is how long readers wait before giving up, in seconds;
	// optional: queued work older than this reached nobody.
	ClientTimeoutS float64
	// Backlog is php-fpm's listen.backlog in force during the incident
	// (phpfpm_listen_queue_length); optional, used to weigh pm.max_children.
	Backlog int
	// BacklogBefore is listen.backlog before the change being judged, when
	// the same commit changed it too (0: that change left it at Backlog):
	// the pool's old size is run against the configuration it had, all of
	// it, not against a backlog the same change brought.
	BacklogBefore int
	// QueuePeak is the deepest listen queue observed (max of phpfpm_listen_queue),
	// in requests; the maximum of Queue is used when it is larger.
	QueuePeak float64
	// Onset is when the incident began (its first symptom). A change after it
	// cannot have caused it. Zero: unknown (every change is taken as before).
	Onset time.Time
	// Queue is the listen queue depth over time (phpfpm_listen_queue), to say
	// when it passed a change's old cap and when it reached the new one.
	Queue []QueuePoint
	// Loc renders clock times in summaries; nil means UTC.
	Loc *time.Location
	// PHPTimes gives PHP's own times per request logged in [from, to)
	// (minutes without a queue, when the queue is known), to tell whether
	// a change whose mechanism is the service time made PHP slower; nil
	// without an access log.
	PHPTimes func(from, to time.Time) detect.Histogram
	// PeakPHPPerS is the busiest stretch's requests a second that needed PHP
	// (PHP's answers and the proxy's 502/503/504, which would have reached
	// it), around the onset; PeakAt is where that stretch starts. 0: unknown.
	// Little's law makes PeakPHPPerS x ServiceTimeS the workers the load
	// kept busy, against which a pool's old and new sizes are judged.
	PeakPHPPerS float64
	PeakAt      time.Time
	// LoggedServiceTimeS is PHP's time per request of the requests the
	// access log counts, the saturated pool's rate less the proxy's health
	// checks (loggedServiceTime); 0: ServiceTimeS stands for it. The
	// pool-size arithmetic multiplies it with the log's arrivals.
	LoggedServiceTimeS float64
	// UsualPHPPerS is the same demand a second over the hour before the
	// load could rise into the onset (0: unknown): whether the load that
	// filled the pool was a rise or the ordinary one.
	UsualPHPPerS float64
	// UsualFrom and UsualTo are the span it was read over (zero: the hour
	// before the load could rise, from the onset).
	UsualFrom, UsualTo time.Time
	// LoadTrigger is the ID of the trigger found, when one is: the load
	// that filled the pool, named beside the change.
	LoadTrigger string
	// PHPArrivals are the requests that needed PHP second by second from
	// ArrivalsFrom until the first second a client was told of a failure
	// (ArrivalsUntil): the load, without the retries that come after, whose
	// queue a pool's old and new sizes are run on (detect.LongestQueueWait).
	// nil: the log has no per-second series there.
	PHPArrivals                 []int
	ArrivalsFrom, ArrivalsUntil time.Time
	// SlowerAtOnset: a service_time_regression was found, so PHP's time
	// before the onset is not the incident's.
	SlowerAtOnset bool
	// Resources are php-fpm's own CPU and memory per worker and what the
	// host had for the pool, over the window (zero: no per-process series).
	Resources detect.PoolResources
}

// QueuePoint is one sample of the listen queue depth.
type QueuePoint struct {
	T     time.Time
	Depth float64
}

// assessment is RankChanges' working record for one change (or one group of
// changes made together, such as the keys of one rate-limit zone).
type assessment struct {
	c     sources.Change
	also  []sources.Change // changes of the same group, summarised with c
	k     *knob
	risk  int     // +1 raises the risk, -1 lowers it, 0 unknown direction
	mech  float64 // mechanism score: is its failure mode among the findings?
	found []detect.Kind
	quant float64 // quantitative test score; 0 means the test rules it out
	// quantText is the arithmetic, as a sentence for the summary; notLinked
	// says why the change is reviewed but not linked.
	quantText prose.Text
	notLinked prose.Text
	// cannotJudge says which series the verdict needs and the evidence
	// lacks: the change is then a candidate, never a confident enabler.
	cannotJudge prose.Text
	prox        float64
	hours       float64 // hours before the onset; NaN when unknown
	evidence    float64
	facts       *ConfigChangeFacts
	conf        float64
}

// RankChanges links configuration changes to the incident's findings and
// ranks them (design.md, "config_change"). For every change it asks:
//
//   - mechanism: is the setting in the knob table, and is the failure mode it
//     leads to among the findings (listen.backlog up -> health check
//     starvation and abandoned work; pm.max_children down -> saturation; a
//     shorter health or read timeout, fewer health_fails -> false down-marking;
//     a rate-limit zone loosened or removed -> a crawler passes; a PHP version
//     -> service time)?
//   - time: it must precede the onset to have caused it (a change after it is
//     at most the fix), and the closer before it the stronger;
//   - arithmetic: the worst queue wait before and after, B*S/W, against the
//     health timeout, and whether the observed queue ever passed the old cap
//     (if it never passed 511, a cap of 511 would have changed nothing).
//
// Each linked change becomes a config_change finding (RoleEnabler, or
// RoleTrigger when it came within the hour before an onset no other trigger
// explains; a crawler judged context explains none) with a one-paragraph summary giving the numbers, ranked by
// confidence (evidence x (mechanism, arithmetic, proximity)); a change seen
// only in metrics gets a lower confidence. A change that lowers the risk
// becomes a RoleMitigation finding that says so; a change of a relevant
// setting that the arithmetic clears becomes a RoleRuledOut finding with the
// numbers that clear it. Everything else (README, CSS, a password rotation, a
// change after the onset, a failure mode not seen) is listed as reviewed in
// the Check's Reason. When nothing is linked the Reason starts with "no change
// explains the incident" rather than blaming the nearest commit.
//
// Finding IDs are config_change-1, -2, ... in rank order (detect.Run renumbers
// them when it runs the detector with others).
func RankChanges(cs []sources.Change, findings []detect.Finding, q QueueFacts) ([]detect.Finding, detect.Check) {
	check := detect.Check{Name: detect.KindConfigChange}
	if len(cs) == 0 {
		check.Outcome = detect.OutcomeNotInteresting
		check.SetReason(detect.Messages.Say("config_change.none", nil))
		return nil, check
	}
	if q.Loc == nil {
		q.Loc = time.UTC
	}
	// A rise judged context (trigger.go: too early or too small) explains
	// nothing: it links no change, nor keeps a change from being the trigger.
	present := shown{kinds: map[detect.Kind]bool{}}
	for _, f := range findings {
		if f.Role != detect.RoleContext {
			present.kinds[f.Kind] = true
		}
		// A trigger already found (a crawler in time and weight, a service
		// time regression) explains the onset: a change is then its enabler.
		if f.Role == detect.RoleTrigger || f.Role == "" && detect.SpecRole(f.Kind) == detect.RoleTrigger {
			present.trigger = true
		}
	}

	var linked, mitigations, ruledOut []*assessment
	var deploys []detect.Finding
	var reviewed []prose.Text
	review := func(c sources.Change, why prose.Text) {
		reviewed = append(reviewed, reviewedText(reviewedLabel(c), refText(c), why))
	}
	for _, g := range groupChanges(cs) {
		c := g[0]
		switch {
		case c.Key == changes.KeyRestart:
			review(c, detect.Messages.Say("config_change.why.restart", nil))
			continue
		case c.Key == "":
			if f, ok := deployFinding(c, q, present); ok {
				deploys = append(deploys, f)
				continue
			}
			if c.File == "" && c.Note != "" {
				review(c, detect.Messages.Say("config_change.why.deploy", nil))
				continue
			}
			if f, ok := cacheChangeFinding(c, q, findings); ok {
				// The repository and the change log may both record it.
				if !sameRefLinked(deploys, c) {
					deploys = append(deploys, f)
				}
				continue
			}
			review(c, detect.Messages.Say("config_change.why.file", nil))
			continue
		}
		k := knobFor(c.Key)
		if k == nil {
			review(c, detect.Messages.Say("config_change.why.no_mechanism", nil))
			continue
		}
		if later := supersededBy(c, cs, q.Onset); later != nil {
			review(c, detect.Messages.Say("config_change.why.superseded", struct {
				Old, New string
				Ref      prose.Text
			}{later.Old, later.New, refText(*later)}))
			continue
		}
		if o, ok1 := settingValue(c.Old, k); ok1 {
			if n, ok2 := settingValue(c.New, k); ok2 && o == n && len(g) == 1 {
				review(c, detect.Messages.Say("config_change.why.unchanged", struct{ Name, Default string }{k.name, k.def}))
				continue
			}
		}
		qc := q
		qc.BacklogBefore = backlogBefore(c, cs, q.Backlog)
		a := assess(c, g[1:], k, qc, present)
		after := !q.Onset.IsZero() && c.Time.After(q.Onset)
		switch {
		case a.risk < 0 && a.mech > 0:
			mitigations = append(mitigations, a)
		case a.risk < 0:
			review(c, detect.Messages.Say("config_change.why.lowers_unseen", k.effect))
		case after:
			review(c, detect.Messages.Say("config_change.why.after_onset", spanSaid(c.Time.Sub(q.Onset))))
		case a.mech == 0:
			review(c, detect.Messages.Say("config_change.why.not_found", detect.JoinKinds(k.kinds, ", ")))
		case said(a.notLinked):
			ruledOut = append(ruledOut, a)
		default:
			linked = append(linked, a)
		}
	}

	byConf := func(as []*assessment) {
		sort.SliceStable(as, func(i, j int) bool {
			if as[i].conf != as[j].conf {
				return as[i].conf > as[j].conf
			}
			return as[i].c.Time.After(as[j].c.Time)
		})
	}
	byConf(linked)
	byConf(mitigations)
	byConf(ruledOut)

	var out []detect.Finding
	// reason is the Check's Reason: what was linked, what lowered the risk,
	// what the numbers ruled out and what was reviewed, each with its
	// evidence.
	var reason struct {
		Linked, Deploys, Mitigations, Ruled, Reviewed []prose.Text
		ReviewedN, More                               int
	}
	for _, a := range linked {
		f := a.finding(q, present)
		f.ID = fmt.Sprintf("%s-%d", detect.KindConfigChange, len(out)+1)
		out = append(out, f)
		reason.Linked = append(reason.Linked, detect.Messages.Say("config_change.reason.linked", struct {
			Change, Ref prose.Text
			Confidence  float64
		}{changeText(a.c), refText(a.c), f.Confidence}))
	}
	for _, f := range deploys {
		f.ID = fmt.Sprintf("%s-%d", detect.KindConfigChange, len(out)+1)
		out = append(out, f)
		reason.Deploys = append(reason.Deploys, withRef(prose.Text{}, DeployName(*f.Change), refText(*f.Change)))
	}
	for _, a := range mitigations {
		f := a.mitigationFinding(q)
		f.ID = fmt.Sprintf("%s-%d", detect.KindConfigChange, len(out)+1)
		out = append(out, f)
		reason.Mitigations = append(reason.Mitigations, withRef(changeText(a.c), "", refText(a.c)))
	}
	for _, a := range ruledOut {
		f := a.ruledOutFinding(q)
		f.ID = fmt.Sprintf("%s-%d", detect.KindConfigChange, len(out)+1)
		out = append(out, f)
		reason.Ruled = append(reason.Ruled, reviewedText(changeText(a.c), refText(a.c), a.notLinked))
	}
	for _, f := range out {
		check.Findings = append(check.Findings, f.ID)
	}

	const maxListed = 20
	reason.Reviewed, reason.ReviewedN = reviewed, len(reviewed)
	if len(reviewed) > maxListed {
		reason.Reviewed, reason.More = reviewed[:maxListed], len(reviewed)-maxListed
	}
	check.SetReason(detect.Messages.Say("config_change.reason", reason))
	check.Outcome = detect.OutcomeNotInteresting
	if len(out) > 0 {
		check.Outcome = detect.OutcomeFound
	}
	return out, check
}

// shown is what the findings show that a change is weighed against: the
// kinds found (a rise judged context counts for none), and whether a trigger
// already explains the onset.
type shown struct {
	kinds   map[detect.Kind]bool
	trigger bool
}

// readTimeoutRemovedKinds are the kinds a removed FastCGI read timeout's
// silent wedge shows as.
var readTimeoutRemovedKinds = []detect.Kind{detect.KindClientAbandonedWork, detect.KindIdlePinning, detect.KindUpstreamErrors}

// assess scores one change against the findings and the numbers.
func assess(c sources.Change, also []sources.Change, k *knob, q QueueFacts, present shown) *assessment {
	if k.name == "read_timeout" && c.New == "" && c.Old != "" {
		// Removing the read timeout is its own failure mode (design.md).
		silent := *k
		silent.effect = detect.Messages.Say("config_change.effect.read_timeout_removed", nil)
		silent.kinds = readTimeoutRemovedKinds
		silent.test = nil
		k = &silent
	}
	a := &assessment{c: c, also: also, k: k, hours: math.NaN(), facts: &ConfigChangeFacts{}, quant: 0.5}
	a.risk = riskOf(c, k)
	for _, o := range also {
		if r := riskOf(o, k); r > a.risk && a.risk >= 0 {
			a.risk = r
		}
	}
	for i, kind := range k.kinds {
		if present.kinds[kind] {
			a.found = append(a.found, kind)
			if a.mech == 0 {
				a.mech = 0.8
				if i == 0 {
					a.mech = 1
				}
			}
		}
	}
	a.mech *= k.strength

	a.evidence = 1
	if metricsOnly(c) {
		a.evidence = 0.7
		a.facts.MetricsOnly = detect.Some(true)
	}
	a.prox = 0.5
	if !q.Onset.IsZero() {
		a.hours = q.Onset.Sub(c.Time).Hours()
		a.facts.HoursBeforeOnset = detect.Some(detect.Round(a.hours, 2))
		if a.hours >= 0 {
			a.prox = 1 / (1 + a.hours/24)
		} else {
			a.prox = 0
		}
	}
	if v, ok := settingValue(c.Old, k); ok && !math.IsInf(v, 0) {
		a.facts.OldValue = detect.Some(v)
	}
	if v, ok := settingValue(c.New, k); ok && !math.IsInf(v, 0) {
		a.facts.NewValue = detect.Some(v)
	}
	a.facts.RiskDirection = a.risk
	if k.test != nil {
		k.test(a, q)
	} else {
		a.quantText = detect.Messages.Say("config_change.no_test", nil)
	}
	if said(a.cannotJudge) {
		// The counterfactual (would the old value have held?) needs a
		// series the evidence lacks: whatever else fits, it is not known.
		a.quant = math.Min(a.quant, 0.3)
	}
	a.facts.MechanismScore = detect.Round(a.mech, 2)
	a.facts.QuantitativeScore = detect.Round(a.quant, 2)
	a.facts.ProximityScore = detect.Round(a.prox, 2)
	a.conf = detect.Round(detect.ClampUnit(a.evidence*(0.35*a.mech+0.40*a.quant+0.25*a.prox)), 2)
	if said(a.cannotJudge) {
		a.conf = math.Min(a.conf, 0.4)
	}
	return a
}

func metricsOnly(c sources.Change) bool {
	for _, s := range strings.Split(c.Source, "+") {
		if s != changes.SourceMetrics {
			return false
		}
	}
	return c.Source != ""
}

// reviewedText says a change with its evidence and why it is not linked:
// "php_version 8.2 -> 8.3 (commit 297178f): ...".
func reviewedText(label, ref, why prose.Text) prose.Text {
	return detect.Messages.Say("config_change.reviewed", struct{ Label, Ref, Why prose.Text }{label, ref, why})
}

// withRef says a change, or a deploy by its name, with its evidence:
// "listen.backlog 4096 -> 64 (commit bdb164e)".
func withRef(what prose.Text, deploy string, ref prose.Text) prose.Text {
	return detect.Messages.Say("config_change.with_ref", struct {
		What, Ref prose.Text
		Deploy    string
	}{what, ref, deploy})
}
