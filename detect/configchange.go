package detect

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
	"github.com/aftermath-forensics/aftermath/sources/duration"
)

// Roles of config_change findings besides RoleTrigger and RoleEnabler.
const (
	// RoleMitigation marks a change that lowers the risk the incident shows (a
	// smaller backlog, a tighter rate limit): recognised, never blamed.
	RoleMitigation = "mitigation"
	// RoleRuledOut marks a change of a setting whose failure mode the incident
	// shows, but which the numbers clear (the queue never passed the old cap):
	// reported so that nobody blames it, with the arithmetic that clears it.
	RoleRuledOut = "ruled_out"
	// RoleCandidate marks a change whose failure mechanism matches the findings
	// but whose effect the values cannot tell (a new PHP version): worth a
	// look, not an explanation.
	RoleCandidate = "candidate"
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
	// in the queue, in seconds: for php_fastcgi the transport's read_timeout
	// (sources.Site.EffectiveHealthTimeoutS); 0 when none applies (then a queued
	// check waits and passes, and the tests use ClientTimeoutS instead).
	HealthTimeoutS float64
	// ClientTimeoutS is how long readers wait before giving up, in seconds;
	// optional: queued work older than this reached nobody.
	ClientTimeoutS float64
	// Backlog is php-fpm's listen.backlog in force during the incident
	// (phpfpm_listen_queue_length); optional, used to weigh pm.max_children.
	Backlog int
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
}

// QueuePoint is one sample of the listen queue depth.
type QueuePoint struct {
	T     time.Time
	Depth float64
}

// knob is one row of the mechanism table: a setting, which way it raises the
// risk, the failure mode it leads to and the finding kinds that show it.
type knob struct {
	name string
	// raises is +1 when a higher value raises the risk, -1 when a lower one
	// does, 0 when any change may (direction unknown).
	raises int
	// unit parses values: "count", "seconds" (Caddy and php-fpm durations),
	// or "" for text compared as is.
	unit string
	// def is the value in force when the key is absent; for "seconds",
	// "inf" means no timeout at all.
	def string
	// zeroIsInf: a value of 0 switches the limit off (request_terminate_timeout).
	zeroIsInf bool
	effect    string
	// kinds are the finding kinds the failure mode shows as, strongest first.
	kinds []string
	// strength is how directly the setting causes that failure mode (0-1).
	strength float64
	test     func(a *assessment, q QueueFacts)
}

// knobs is the mechanism table (design.md, "config_change").
var knobs = []struct {
	match func(key string) bool
	k     knob
}{
	{keyIs("listen.backlog"), knob{name: "listen.backlog", raises: +1, unit: "count", def: "511",
		effect:   "a longer listen queue makes requests and health checks wait longer behind it, so the health check starves and PHP keeps working for clients who left",
		kinds:    []string{KindHealthcheckStarved, KindClientAbandonedWork, KindListenQueueOverflow, KindUpstreamErrors, KindIdlePinning},
		strength: 1, test: backlogTest}},
	{keyIs("pm.max_children"), knob{name: "pm.max_children", raises: -1, unit: "count",
		effect:   "with fewer workers the pool saturates sooner and every queued request waits longer",
		kinds:    []string{KindWorkerSaturation, KindListenQueueOverflow, KindHealthcheckStarved, KindClientAbandonedWork},
		strength: 1, test: workersTest}},
	{keyIs("pm"), knob{name: "pm", unit: "",
		effect:   "a different process manager mode may start workers on demand, adding delay under a burst",
		kinds:    []string{KindWorkerSaturation, KindListenQueueOverflow},
		strength: 0.5}},
	{keyIs("pm.max_requests"), knob{name: "pm.max_requests", unit: "",
		effect:   "workers recycle at a different rate",
		kinds:    []string{KindWorkerSaturation},
		strength: 0.3}},
	{keyIs("request_terminate_timeout"), knob{name: "request_terminate_timeout", raises: +1, unit: "seconds", def: "0", zeroIsInf: true,
		effect:   "slow requests may hold a worker longer before php-fpm kills them",
		kinds:    []string{KindWorkerSaturation, KindIdlePinning, KindClientAbandonedWork, KindSelfAmplification},
		strength: 0.7}},
	{keyIs("listen"), knob{name: "listen", unit: "",
		effect:   "a different listen socket changes how overflow fails (a Unix socket refuses at once, a TCP listener drops SYNs and lets dials and health checks hang)",
		kinds:    []string{KindListenQueueOverflow, KindHealthcheckStarved, KindUpstreamErrors},
		strength: 0.6}},
	{keySuffix("read_timeout"), knob{name: "read_timeout", raises: -1, unit: "seconds", def: "inf",
		effect:   "a shorter FastCGI read timeout fails queued health checks (and requests, as 504) sooner, so a slow but live upstream is marked down",
		kinds:    []string{KindHealthcheckStarved, KindUpstreamErrors},
		strength: 0.9, test: timeoutTest}},
	{keySuffix("health_timeout"), knob{name: "health_timeout", raises: -1, unit: "seconds", def: "5s",
		effect:   "a shorter health-check timeout marks a slow but live upstream down",
		kinds:    []string{KindHealthcheckStarved, KindUpstreamErrors},
		strength: 0.9, test: timeoutTest}},
	{keySuffix("health_fails"), knob{name: "health_fails", raises: -1, unit: "count", def: "1",
		effect:   "fewer failed checks before the upstream is marked down",
		kinds:    []string{KindHealthcheckStarved, KindUpstreamErrors},
		strength: 0.8}},
	{keySuffix("health_uri"), knob{name: "health_uri", unit: "",
		effect:   "a different health endpoint may be served by the same pool and queue behind the traffic",
		kinds:    []string{KindHealthcheckStarved},
		strength: 0.6}},
	{keySuffix("health_interval"), knob{name: "health_interval", unit: "",
		effect:   "health checks at a different rate change how fast a slow upstream is marked down",
		kinds:    []string{KindHealthcheckStarved},
		strength: 0.3}},
	{keySuffix("dial_timeout"), knob{name: "dial_timeout", raises: -1, unit: "seconds", def: "3s",
		effect:   "a shorter dial timeout turns a full backlog into 502s sooner",
		kinds:    []string{KindUpstreamErrors, KindListenQueueOverflow},
		strength: 0.6}},
	{keyContains("lb_"), knob{name: "lb_*", unit: "",
		effect:   "changed load balancing and retries spread or repeat failed attempts differently",
		kinds:    []string{KindUpstreamErrors, KindHealthcheckStarved},
		strength: 0.4}},
	{keyPrefix("rate_limit"), knob{name: "rate_limit", unit: "",
		effect:   "a rate-limit zone that no longer holds lets a crawler through to PHP",
		kinds:    []string{KindCrawlerBurst, KindWorkerSaturation, KindSelfAmplification},
		strength: 0.9}},
	{keyAnyOf("php_version", "base_image"), knob{name: "PHP runtime", unit: "",
		effect:   "a different PHP runtime changes the service time of every request",
		kinds:    []string{KindWorkerSaturation, KindHealthcheckStarved, KindListenQueueOverflow},
		strength: 0.6}},
	{keyIs("max_execution_time"), knob{name: "max_execution_time", raises: +1, unit: "seconds", def: "30", zeroIsInf: true,
		effect:   "scripts may run longer before PHP stops them",
		kinds:    []string{KindWorkerSaturation, KindClientAbandonedWork},
		strength: 0.5}},
	{keyPrefix("opcache."), knob{name: "opcache", unit: "",
		effect:   "a changed opcode cache may make every request compile its scripts again",
		kinds:    []string{KindWorkerSaturation},
		strength: 0.6}},
}

func keyIs(k string) func(string) bool { return func(s string) bool { return s == k } }
func keyPrefix(p string) func(string) bool {
	return func(s string) bool { return strings.HasPrefix(s, p) }
}
func keyContains(p string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, p) }
}
func keyAnyOf(ks ...string) func(string) bool {
	return func(s string) bool {
		for _, k := range ks {
			if s == k {
				return true
			}
		}
		return false
	}
}
func keySuffix(p string) func(string) bool {
	return func(s string) bool { return s == p || strings.HasSuffix(s, "."+p) }
}

// canonicalKey strips what only locates a setting: the site of a Caddy key
// ("...@http://:8080") and the pool of a multi-pool file ("[www]...").
func canonicalKey(key string) string {
	k := strings.TrimSpace(key)
	if i := strings.LastIndexByte(k, '@'); i > 0 {
		k = k[:i]
	}
	if strings.HasPrefix(k, "[") {
		if i := strings.IndexByte(k, ']'); i > 0 {
			k = k[i+1:]
		}
	}
	return strings.ToLower(k)
}

func knobFor(key string) *knob {
	ck := canonicalKey(key)
	for i := range knobs {
		if knobs[i].match(ck) {
			k := knobs[i].k
			return &k
		}
	}
	return nil
}

// assessment is RankChanges' working record for one change (or one group of
// changes made together, such as the keys of one rate-limit zone).
type assessment struct {
	c     sources.Change
	also  []sources.Change // changes of the same group, summarised with c
	k     *knob
	risk  int     // +1 raises the risk, -1 lowers it, 0 unknown direction
	mech  float64 // mechanism score: is its failure mode among the findings?
	found []string
	quant float64 // quantitative test score; 0 means the test rules it out
	// quantText is the arithmetic, as a sentence for the summary; notLinked
	// says why the change is reviewed but not linked.
	quantText string
	notLinked string
	// cannotJudge says which series the verdict needs and the evidence
	// lacks: the change is then a candidate, never a confident enabler.
	cannotJudge string
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
func RankChanges(cs []sources.Change, findings []Finding, q QueueFacts) ([]Finding, Check) {
	check := Check{Name: KindConfigChange}
	if len(cs) == 0 {
		check.Outcome = OutcomeNotInteresting
		check.Reason = "no change to review: no repository, change log or metric step in the lookback window"
		return nil, check
	}
	if q.Loc == nil {
		q.Loc = time.UTC
	}
	// A rise judged context (trigger.go: too early or too small) explains
	// nothing: it links no change, nor keeps a change from being the trigger.
	present := map[string]bool{}
	for _, f := range findings {
		if f.Role != RoleContext {
			present[f.Kind] = true
		}
		// A trigger already found (a crawler in time and weight, a service
		// time regression) explains the onset: a change is then its enabler.
		if f.Role == RoleTrigger || f.Role == "" && specRole(f.Kind) == RoleTrigger {
			present[RoleTrigger] = true
		}
	}

	var linked, mitigations, ruledOut []*assessment
	var deploys []Finding
	var reviewed []string
	review := func(c sources.Change, why string) {
		reviewed = append(reviewed, fmt.Sprintf("%s (%s): %s", reviewedLabel(c), refText(c), why))
	}
	for _, g := range groupChanges(cs) {
		c := g[0]
		switch {
		case c.Key == changes.KeyRestart:
			review(c, "a php-fpm restart, the moment settings took effect")
			continue
		case c.Key == "":
			if f, ok := deployFinding(c, q, present); ok {
				deploys = append(deploys, f)
				continue
			}
			if c.File == "" && c.Note != "" {
				review(c, "a deploy that changed no setting aftermath reads, not just before an onset that no traffic change explains")
				continue
			}
			review(c, "a file change with no setting read from it")
			continue
		}
		k := knobFor(c.Key)
		if k == nil {
			review(c, "no known failure mechanism")
			continue
		}
		if later := supersededBy(c, cs, q.Onset); later != nil {
			review(c, fmt.Sprintf("superseded by %s -> %s before the onset (%s)", valueOrNone(later.Old), valueOrNone(later.New), refText(*later)))
			continue
		}
		if o, ok1 := settingValue(c.Old, k); ok1 {
			if n, ok2 := settingValue(c.New, k); ok2 && o == n && len(g) == 1 {
				review(c, "the value in force did not change (an absent "+k.name+" means "+k.def+")")
				continue
			}
		}
		a := assess(c, g[1:], k, q, present)
		after := !q.Onset.IsZero() && c.Time.After(q.Onset)
		switch {
		case a.risk < 0 && a.mech > 0:
			mitigations = append(mitigations, a)
		case a.risk < 0:
			review(c, "lowers the risk of a failure mode ("+k.effect+") not seen in this incident")
		case after:
			review(c, fmt.Sprintf("made %s after the onset: it cannot have caused the incident", spanText(c.Time.Sub(q.Onset))))
		case a.mech == 0:
			review(c, "none of the findings its failure mode would produce ("+strings.Join(k.kinds, ", ")+") was found")
		case a.notLinked != "":
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

	var out []Finding
	var linkedText, mitigText []string
	for _, a := range linked {
		f := a.finding(q, present)
		f.ID = fmt.Sprintf("%s-%d", KindConfigChange, len(out)+1)
		out = append(out, f)
		linkedText = append(linkedText, fmt.Sprintf("%s (%s, confidence %.2f)", changeText(a.c), refText(a.c), f.Confidence))
	}
	var deployText []string
	for _, f := range deploys {
		f.ID = fmt.Sprintf("%s-%d", KindConfigChange, len(out)+1)
		out = append(out, f)
		deployText = append(deployText, fmt.Sprintf("%s (%s)", DeployName(*f.Change), refText(*f.Change)))
	}
	for _, a := range mitigations {
		f := a.mitigationFinding(q)
		f.ID = fmt.Sprintf("%s-%d", KindConfigChange, len(out)+1)
		out = append(out, f)
		mitigText = append(mitigText, fmt.Sprintf("%s (%s)", changeText(a.c), refText(a.c)))
	}
	var ruledText []string
	for _, a := range ruledOut {
		f := a.ruledOutFinding(q)
		f.ID = fmt.Sprintf("%s-%d", KindConfigChange, len(out)+1)
		out = append(out, f)
		ruledText = append(ruledText, fmt.Sprintf("%s (%s): %s", changeText(a.c), refText(a.c), a.notLinked))
	}
	for _, f := range out {
		check.Findings = append(check.Findings, f.ID)
	}

	var parts []string
	if len(linked) == 0 {
		parts = append(parts, "no change explains the incident")
	} else {
		parts = append(parts, "linked: "+strings.Join(linkedText, "; "))
	}
	if len(deployText) > 0 {
		parts = append(parts, "deployed just before the onset, changing no known setting (a candidate the logs cannot judge): "+strings.Join(deployText, "; "))
	}
	if len(mitigText) > 0 {
		parts = append(parts, "lowers the risk: "+strings.Join(mitigText, "; "))
	}
	if len(ruledText) > 0 {
		parts = append(parts, "ruled out by the numbers: "+strings.Join(ruledText, "; "))
	}
	if len(reviewed) > 0 {
		const maxListed = 20
		list := reviewed
		if len(list) > maxListed {
			list = append(list[:maxListed:maxListed], fmt.Sprintf("and %d more", len(reviewed)-maxListed))
		}
		parts = append(parts, fmt.Sprintf("reviewed and not linked (%d): %s", len(reviewed), strings.Join(list, "; ")))
	}
	check.Reason = strings.Join(parts, "; ")
	check.Outcome = OutcomeNotInteresting
	if len(out) > 0 {
		check.Outcome = OutcomeFound
	}
	return out, check
}

// deployLead is how long before the onset a deploy that changed no setting
// aftermath knows is still named: the hour within which a changed setting
// may be the onset's trigger (assessment.finding).
const deployLead = time.Hour

// deployFinding names a deploy that changed no setting aftermath reads (a
// deploy log entry with neither key nor file: new code, new dependencies)
// when it came within deployLead before the onset and no traffic change
// explains the onset: no trigger was found, or the trigger is PHP's own
// service time, which new code can raise. It is what changed, so it is
// said, as a candidate: the logs cannot tell what it shipped. It is named
// by its subject (DeployName), never as a setting.
func deployFinding(c sources.Change, q QueueFacts, present map[string]bool) (Finding, bool) {
	if c.File != "" || q.Onset.IsZero() || c.Time.After(q.Onset) || q.Onset.Sub(c.Time) > deployLead {
		return Finding{}, false
	}
	serviceTime := present[KindServiceTimeRegression]
	if present[RoleTrigger] && !serviceTime {
		return Finding{}, false
	}
	lead := q.Onset.Sub(c.Time)
	var b strings.Builder
	fmt.Fprintf(&b, "Deploy %s (%s, %s, %s before the onset) changed no setting aftermath reads, and no traffic change explains the onset",
		DeployName(c), refText(c), changeWhen(c.Time, q.Onset, q.Loc), spanText(lead))
	if serviceTime {
		b.WriteString("; PHP's own service time rose at it (service_time_regression), which new code or a new dependency can do")
	}
	b.WriteString(": what it shipped is a candidate cause the logs cannot judge. Compare it with the release before, or roll it back.")
	return Finding{Kind: KindConfigChange, Role: RoleCandidate, Start: c.Time, End: c.Time, Confidence: 0.4,
		Summary: b.String(), Facts: &ConfigChangeFacts{HoursBeforeOnset: Some(round(lead.Hours(), 2)), Linked: true}, Change: changePtr(c)}, true
}

// DeployName names a deploy by its subject (the first line of its note):
// `"Release 4.2"`; without a note, by its reference.
func DeployName(c sources.Change) string {
	subject, _, _ := strings.Cut(strings.TrimSpace(c.Note), "\n")
	if subject = strings.TrimSpace(subject); subject != "" {
		return strconv.Quote(subject)
	}
	return refText(c)
}

// groupChanges keeps together the changes one edit made to one thing, so
// that it is judged (and reported) once: the keys of one rate-limit zone, or
// a Dockerfile's base image and PHP version, in one commit.
func groupChanges(cs []sources.Change) [][]sources.Change {
	var out [][]sources.Change
	index := map[string]int{}
	for _, c := range cs {
		g := ""
		ck := canonicalKey(c.Key)
		switch {
		case ck == "rate_limit" || strings.HasPrefix(ck, "rate_limit."):
			// A commit's rate-limit edits are one decision: the directive,
			// its zones and their fields.
			g = "rate_limit"
		case ck == "php_version" || ck == "base_image":
			g = "runtime"
		}
		if g == "" {
			out = append(out, []sources.Change{c})
			continue
		}
		// The same commit seen through git and changes.yaml is one change.
		id := c.Ref + "\x00" + g
		if c.Ref == "" {
			id = c.Time.UTC().Format(time.RFC3339) + "\x00" + g
		}
		if i, ok := index[id]; ok {
			out[i] = append(out[i], c)
			continue
		}
		index[id] = len(out)
		out = append(out, []sources.Change{c})
	}
	for _, g := range out {
		// The representative: the zone itself (added or removed), else the
		// PHP version, else the first.
		sort.SliceStable(g, func(i, j int) bool { return groupRank(g[i].Key) < groupRank(g[j].Key) })
	}
	return out
}

func groupRank(key string) int {
	ck := canonicalKey(key)
	switch {
	case ck == "php_version":
		return 0
	case strings.HasPrefix(ck, "rate_limit.zone.") && !strings.Contains(strings.TrimPrefix(ck, "rate_limit.zone."), "."):
		return 0
	case ck == "rate_limit":
		return 1
	}
	return 2
}

// supersededBy returns a later change of the same setting, still before the
// onset: then c was not the value in force.
func supersededBy(c sources.Change, all []sources.Change, onset time.Time) *sources.Change {
	var best *sources.Change
	for i := range all {
		o := &all[i]
		// A later record of the same new value is the same change seen again
		// (a deploy after the commit), not a replacement.
		if canonicalKey(o.Key) != canonicalKey(c.Key) || !o.Time.After(c.Time) || sameSetting(o.New, c.New) {
			continue
		}
		if !onset.IsZero() && o.Time.After(onset) {
			continue
		}
		if best == nil || o.Time.After(best.Time) {
			best = o
		}
	}
	return best
}

// sameSetting compares values numerically when both are numbers.
func sameSetting(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	fa, err1 := strconv.ParseFloat(a, 64)
	fb, err2 := strconv.ParseFloat(b, 64)
	if err1 == nil && err2 == nil {
		return fa == fb
	}
	return strings.EqualFold(a, b)
}

// assess scores one change against the findings and the numbers.
func assess(c sources.Change, also []sources.Change, k *knob, q QueueFacts, present map[string]bool) *assessment {
	if k.name == "read_timeout" && c.New == "" && c.Old != "" {
		// Removing the read timeout is its own failure mode (design.md).
		silent := *k
		silent.effect = "without a FastCGI read timeout a queued health check waits and passes, so the upstream is never marked down while clients time out and PHP works for nobody (a silent wedge)"
		silent.kinds = []string{KindClientAbandonedWork, KindIdlePinning, KindUpstreamErrors}
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
		if present[kind] {
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
		a.facts.MetricsOnly = Some(true)
	}
	a.prox = 0.5
	if !q.Onset.IsZero() {
		a.hours = q.Onset.Sub(c.Time).Hours()
		a.facts.HoursBeforeOnset = Some(round(a.hours, 2))
		if a.hours >= 0 {
			a.prox = 1 / (1 + a.hours/24)
		} else {
			a.prox = 0
		}
	}
	if v, ok := settingValue(c.Old, k); ok && !math.IsInf(v, 0) {
		a.facts.OldValue = Some(v)
	}
	if v, ok := settingValue(c.New, k); ok && !math.IsInf(v, 0) {
		a.facts.NewValue = Some(v)
	}
	a.facts.RiskDirection = a.risk
	if k.test != nil {
		k.test(a, q)
	} else {
		a.quantText = "No arithmetic test applies to this setting."
	}
	if a.cannotJudge != "" {
		// The counterfactual (would the old value have held?) needs a
		// series the evidence lacks: whatever else fits, it is not known.
		a.quant = math.Min(a.quant, 0.3)
	}
	a.facts.MechanismScore = round(a.mech, 2)
	a.facts.QuantitativeScore = round(a.quant, 2)
	a.facts.ProximityScore = round(a.prox, 2)
	a.conf = round(clampUnit(a.evidence*(0.35*a.mech+0.40*a.quant+0.25*a.prox)), 2)
	if a.cannotJudge != "" {
		a.conf = math.Min(a.conf, 0.4)
	}
	return a
}

// riskOf compares old and new along the knob's direction.
func riskOf(c sources.Change, k *knob) int {
	ck := canonicalKey(c.Key)
	if strings.HasPrefix(ck, "rate_limit") {
		return rateLimitRisk(ck, c)
	}
	if k.name == "read_timeout" && c.New == "" && c.Old != "" {
		// No read timeout at all: a queued health check can no longer fail,
		// and the outage turns silent (design.md). Not safer.
		return +1
	}
	if k.raises == 0 {
		return 0
	}
	o, ok1 := settingValue(c.Old, k)
	n, ok2 := settingValue(c.New, k)
	if !ok1 || !ok2 || o == n {
		return 0
	}
	if n > o {
		return k.raises
	}
	return -k.raises
}

// rateLimitRisk: a zone removed or loosened (more events, a shorter window)
// lets more through; added or tightened lets less; a changed matcher or key
// may do either.
func rateLimitRisk(ck string, c sources.Change) int {
	rest := strings.TrimPrefix(ck, "rate_limit.zone.")
	if ck == "rate_limit" || rest != ck && !strings.Contains(rest, ".") { // the directive or a zone itself
		switch {
		case c.New == "" && c.Old != "":
			return +1
		case c.Old == "" && c.New != "":
			return -1
		}
		return 0
	}
	if c.New == "" && c.Old != "" && strings.HasSuffix(ck, ".events") {
		return +1
	}
	var dir int
	switch {
	case strings.HasSuffix(ck, ".events"):
		dir = +1
	case strings.HasSuffix(ck, ".window"):
		dir = -1
	default:
		return 0
	}
	unit := "count"
	if dir < 0 {
		unit = "seconds"
	}
	o, ok1 := settingValue(c.Old, &knob{unit: unit})
	n, ok2 := settingValue(c.New, &knob{unit: unit})
	if !ok1 || !ok2 || o == n {
		return 0
	}
	if n > o {
		return dir
	}
	return -dir
}

// backlogTest: the worst queue wait B*S/W before and after, against the
// health timeout, and whether the queue ever passed the old cap.
func backlogTest(a *assessment, q QueueFacts) {
	old, ok1 := settingValue(a.c.Old, a.k)
	nw, ok2 := settingValue(a.c.New, a.k)
	if !ok1 || !ok2 {
		a.quantText = "The values are not numbers: no arithmetic."
		return
	}
	W, S := float64(q.Workers), q.ServiceTimeS
	var sent []string
	haveRate := W > 0 && S > 0
	limit, limitName := q.HealthTimeoutS, "health timeout"
	if limit <= 0 && q.ClientTimeoutS > 0 {
		limit, limitName = q.ClientTimeoutS, "client timeout"
	}
	if haveRate {
		wb, wa := QueueWait(old, S, W), QueueWait(nw, S, W)
		a.facts.WaitBeforeS = Some(round(wb, 2))
		a.facts.WaitAfterS = Some(round(wa, 2))
		a.facts.Workers = Some(q.Workers)
		a.facts.ServiceTimeS = Some(S)
		s := fmt.Sprintf("With %s workers at %s per request, a full queue now holds %s of work", fmtInt(q.Workers), fmtSecTrim(S), fmtSecTrim(wa))
		if limit > 0 {
			a.facts.HealthTimeoutS = Some(q.HealthTimeoutS)
			s += fmt.Sprintf(" against a %s %s", fmtSecTrim(limit), limitName)
		}
		s += fmt.Sprintf(" (it held %s before)", fmtSecTrim(wb))
		sent = append(sent, s)
		switch {
		case limit <= 0:
			a.quant = 0.6
		case a.risk >= 0 && wb <= limit && wa > limit:
			a.quant = 1
		case a.risk >= 0 && wb > limit:
			a.quant = 0.7
		case a.risk >= 0:
			a.quant = 0.3
		case wa <= limit: // lowered, and now safe
			a.quant = 1
		default:
			a.quant = 0.5
		}
	} else {
		sent = append(sent, "Workers or service time unknown: the queue wait B*S/W could not be computed")
		a.quant = 0.5
	}
	peak, passedAt, reachedAt := queueStats(q, old, nw)
	if peak > 0 {
		a.facts.QueuePeak = Some(peak)
		passed := peak > old
		a.facts.QueuePassedOldCap = Some(passed)
		if a.risk > 0 && !passed {
			a.quant = 0
			a.notLinked = fmt.Sprintf("the queue peaked at %s and never passed the old cap of %s, so the old cap would have changed nothing",
				fmtNum(peak), fmtNum(old))
		}
		if a.risk > 0 && passed {
			s := "the queue passed " + fmtNum(old)
			if !passedAt.IsZero() {
				s += " at " + clockIn(passedAt, q.Loc)
			}
			if !reachedAt.IsZero() {
				s += " and reached " + fmtNum(nw) + " at " + clockIn(reachedAt, q.Loc)
			} else {
				s += " and peaked at " + fmtNum(peak)
			}
			if haveRate {
				wp := QueueWait(peak, S, W)
				a.facts.WaitAtPeakS = Some(round(wp, 2))
				if reachedAt.IsZero() {
					s += fmt.Sprintf(" (%s of waiting)", fmtSecTrim(wp))
				}
			}
			sent = append(sent, s)
		}
	} else if a.risk > 0 && len(q.Queue) == 0 {
		// Whether the old cap would have held the same incident is the
		// verdict; without the queue series it cannot be given.
		a.cannotJudge = "could not judge: whether the old cap of " + fmtNum(old) + " would have held needs php-fpm's listen queue series (phpfpm_listen_queue), which the evidence lacks"
		sent = append(sent, "no queue depth was measured, so whether the queue passed the old cap is unknown")
	}
	a.quantText = sentences(sent)
}

// workersTest: the same wait, for a pool that got smaller or larger.
func workersTest(a *assessment, q QueueFacts) {
	old, ok1 := settingValue(a.c.Old, a.k)
	nw, ok2 := settingValue(a.c.New, a.k)
	S := q.ServiceTimeS
	if !ok1 || !ok2 || old <= 0 || nw <= 0 || S <= 0 {
		a.quantText = "Service time or values unknown: no arithmetic."
		return
	}
	B := float64(q.Backlog)
	if B <= 0 {
		B = math.Max(q.QueuePeak, queueMax(q.Queue))
	}
	a.facts.ServiceTimeS = Some(S)
	s := fmt.Sprintf("Capacity went from %s to %s requests per second at %s per request", fmtNum(math.Round(old/S)), fmtNum(math.Round(nw/S)), fmtSecTrim(S))
	if B <= 0 {
		a.quantText = s + "."
		return
	}
	wb, wa := QueueWait(B, S, old), QueueWait(B, S, nw)
	a.facts.WaitBeforeS = Some(round(wb, 2))
	a.facts.WaitAfterS = Some(round(wa, 2))
	s += fmt.Sprintf("; a queue of %s now holds %s of work (%s before)", fmtNum(B), fmtSecTrim(wa), fmtSecTrim(wb))
	if T := q.HealthTimeoutS; T > 0 {
		a.facts.HealthTimeoutS = Some(T)
		s += fmt.Sprintf(" against a %s health timeout", fmtSecTrim(T))
		switch {
		case a.risk > 0 && wb <= T && wa > T:
			a.quant = 1
		case a.risk > 0 && wb > T:
			a.quant = 0.7
		case a.risk > 0:
			a.quant = 0.4
		case wa <= T:
			a.quant = 1
		}
	}
	a.quantText = s + "."
}

// timeoutTest: would the check have survived the observed queue wait under
// the old timeout, and does it fail under the new one?
func timeoutTest(a *assessment, q QueueFacts) {
	old, ok1 := settingValue(a.c.Old, a.k)
	nw, ok2 := settingValue(a.c.New, a.k)
	if !ok1 || !ok2 {
		a.quantText = "The timeouts are not durations: no arithmetic."
		return
	}
	var note string
	if strings.HasPrefix(canonicalKey(a.c.Key), "php_fastcgi.") && a.k.name == "health_timeout" {
		// design.md: a connected FastCGI check is cut short by read_timeout only.
		a.mech *= 0.7
		note = " Behind php_fastcgi the transport's read_timeout, not health_timeout, is what fails a queued check."
	}
	peak := math.Max(q.QueuePeak, queueMax(q.Queue))
	if q.Workers <= 0 || q.ServiceTimeS <= 0 || peak <= 0 {
		a.quantText = "The queue wait in the incident is unknown: no arithmetic." + note
		if peak <= 0 && a.risk > 0 {
			a.cannotJudge = "could not judge: whether the check would have survived the old timeout needs the queue wait, from php-fpm's listen queue series (phpfpm_listen_queue), which the evidence lacks"
		}
		return
	}
	w := peak * q.ServiceTimeS / float64(q.Workers)
	a.facts.WaitAtPeakS = Some(round(w, 2))
	s := fmt.Sprintf("At its peak of %s the queue held %s of work; the timeout went from %s to %s", fmtNum(peak), fmtSecTrim(w), timeoutText(old), timeoutText(nw))
	switch {
	case a.risk > 0 && w > nw && w <= old:
		a.quant = 1
		s += ": the check would have survived under the old timeout"
	case a.risk > 0 && w > old:
		a.quant = 0.5
		s += ": it would have failed under the old one too"
	case a.risk > 0:
		a.quant = 0
		a.notLinked = fmt.Sprintf("the queue never held more than %s of work, under both the old (%s) and the new (%s) timeout", fmtSecTrim(w), timeoutText(old), timeoutText(nw))
	case a.risk < 0 && w <= nw:
		a.quant = 1
	}
	a.quantText = s + "." + note
}

// finding renders a linked change.
func (a *assessment) finding(q QueueFacts, present map[string]bool) Finding {
	a.facts.Linked = true
	role := RoleEnabler
	switch {
	case a.risk == 0 || a.cannotJudge != "":
		role = RoleCandidate
	case !math.IsNaN(a.hours) && a.hours <= 1 && !present[RoleTrigger]:
		role = RoleTrigger
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s, %s).", changeText(a.c), refText(a.c), changeWhen(a.c.Time, q.Onset, q.Loc))
	if a.quantText != "" {
		b.WriteString(" " + a.quantText)
	}
	fmt.Fprintf(&b, " Mechanism: %s", a.k.effect)
	if len(a.found) > 0 {
		fmt.Fprintf(&b, " (found: %s)", strings.Join(a.found, ", "))
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
	if a.k.name == "listen.backlog" {
		if wa := a.facts.WaitAfterS; wa.OK && (q.HealthTimeoutS <= 0 || wa.V <= q.HealthTimeoutS) {
			b.WriteString(" The health check can no longer starve behind a full queue; overflow now fails fast at the proxy.")
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

func metricsOnly(c sources.Change) bool {
	for _, s := range strings.Split(c.Source, "+") {
		if s != changes.SourceMetrics {
			return false
		}
	}
	return c.Source != ""
}

func changePtr(c sources.Change) *sources.Change { return &c }

func changeText(c sources.Change) string {
	return fmt.Sprintf("%s %s -> %s", c.Key, valueOrNone(c.Old), valueOrNone(c.New))
}

func alsoText(cs []sources.Change) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = changeText(c)
	}
	return strings.Join(parts, ", ")
}

func reviewedLabel(c sources.Change) string {
	switch {
	case c.Key == changes.KeyRestart:
		return "restart"
	case c.Key != "":
		return changeText(c)
	case c.File == "" && c.Note != "":
		return "deploy " + DeployName(c)
	case c.File != "":
		s := c.File
		if c.New != "" || c.Old != "" {
			s += " (" + strings.TrimSpace(c.Old+" "+c.New) + ")"
		}
		return s
	}
	return "change"
}

var hexRef = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// refText names the evidence: "commit 9d78ccb", "deploy-42", or the metric.
func refText(c sources.Change) string {
	ref := c.Ref
	switch {
	case hexRef.MatchString(ref):
		return "commit " + ref[:7]
	case ref != "":
		return ref
	}
	return c.Source
}

func valueOrNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// settingValue parses a value for comparison; "" means the knob's default.
func settingValue(v string, k *knob) (float64, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		v = k.def
	}
	if v == "" {
		return 0, false
	}
	var f float64
	var ok bool
	switch k.unit {
	case "count":
		var err error
		f, err = strconv.ParseFloat(v, 64)
		ok = err == nil
	case "seconds":
		f, ok = parseDurationS(v)
	default:
		return 0, false
	}
	if ok && k.zeroIsInf && f == 0 {
		f = math.Inf(1)
	}
	return f, ok
}

// parseSeconds reads Caddy and php-fpm durations: "10s", "1m30s", "500ms",
// "2d", a bare number (seconds) or "inf".
func parseDurationS(v string) (float64, bool) {
	if v == "inf" {
		return math.Inf(1), true
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return f, true
	}
	d, err := duration.Parse(v)
	return d.Seconds(), err == nil
}

// queueStats: the deepest queue, when it first passed old, when it first
// reached (99% of) nw.
func queueStats(q QueueFacts, old, nw float64) (peak float64, passedAt, reachedAt time.Time) {
	pts := append([]QueuePoint(nil), q.Queue...)
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })
	peak = q.QueuePeak
	for _, p := range pts {
		peak = math.Max(peak, p.Depth)
		if passedAt.IsZero() && p.Depth > old {
			passedAt = p.T
		}
		if reachedAt.IsZero() && nw > old && p.Depth >= 0.99*nw {
			reachedAt = p.T
		}
	}
	return peak, passedAt, reachedAt
}

func queueMax(pts []QueuePoint) float64 {
	m := 0.0
	for _, p := range pts {
		m = math.Max(m, p.Depth)
	}
	return m
}

// when says when a change was made relative to the onset's day:
// "23:48 the day before", "07:07", "14:02 on 30 Sep, 3 days before".
func changeWhen(t, onset time.Time, loc *time.Location) string {
	lt := t.In(loc)
	if onset.IsZero() {
		return lt.Format("2006-01-02 15:04")
	}
	days := civilDay(onset.In(loc)) - civilDay(lt)
	c := lt.Format("15:04")
	switch {
	case days == 0:
		return c
	case days == 1:
		return c + " the day before"
	case days == -1:
		return c + " the day after"
	case days > 1:
		return fmt.Sprintf("%s on %s, %d days before", c, lt.Format("2 Jan"), days)
	}
	return c + " on " + lt.Format("2 Jan")
}

func civilDay(t time.Time) int64 {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

func clockIn(t time.Time, loc *time.Location) string { return t.In(loc).Format("15:04") }

// humanDuration: "3 h 12 min", "40 min", "2 days".
func spanText(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	case d >= time.Hour:
		h := int(d.Hours())
		m := int(d.Minutes()) - 60*h
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d min", h, m)
	}
	return fmt.Sprintf("%d min", int(math.Round(d.Minutes())))
}

// fmtSecTrim prints seconds as the reference does: "0.3 s", "9.6 s", "77 s".
func fmtSecTrim(v float64) string {
	if math.IsInf(v, 1) {
		return "no limit"
	}
	return fmtSec(v)
}

func timeoutText(v float64) string {
	if math.IsInf(v, 1) {
		return "none"
	}
	return fmtSec(v)
}

func sentences(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return strings.Join(s, "; ") + "."
}

func clampUnit(v float64) float64 { return math.Max(0, math.Min(1, v)) }
