package configchange

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

func init() {
	// listen_queue_overflow's explanation reads a config_change finding's
	// old backlog as the mechanism table reads it.
	detect.ChangedValues = ChangedValues
	detect.Register(detect.Spec{
		Kind: detect.KindConfigChange, Requires: configChangeReads(), RequiresRoles: onsetRoles,
		New:      func() detect.Detector { return configChangeDetector{} },
		NewFacts: func() detect.Facts { return &ConfigChangeFacts{} },
		Role:     detect.RoleEnabler,
		Scan:     detect.ScanMeasure{Severity: detect.AnomalyInfo},
		Events:   map[detect.Event]int{EventConfigChange: 0, EventDeploy: 14},
		Explain:  explainChange,
		Moments:  changeMoments,

		ExplainNotCause: explainNotCause,
	})
}

// configChangeReads are the kinds config_change weighs a change against,
// gathered from the parts that read them rather than listed: the kinds each
// setting's failure mode shows as (the knob table, changeknobs.go, and a
// removed read timeout's silent wedge), cache_collapse for a cache change
// (changecache.go), service_time_regression for a deploy (changedeploy.go),
// and worker_saturation and healthcheck_starved for the queue arithmetic's
// service time and health timeout (queueFacts). A knob that names a new kind
// makes config_change read it.
func configChangeReads() []detect.Kind {
	var out []detect.Kind
	add := func(ks ...detect.Kind) {
		for _, k := range ks {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	for _, kb := range knobs {
		add(kb.k.kinds...)
	}
	add(readTimeoutRemovedKinds...)
	add(detect.KindCacheCollapse, detect.KindServiceTimeRegression, detect.KindWorkerSaturation, detect.KindHealthcheckStarved)
	return out
}

// onsetRoles are the roles whose findings config_change reads whatever their
// kind: without an incident the earliest trigger or mechanism stands in for
// the onset, and a trigger already found makes a change its enabler
// (RankChanges), so a trigger kind added later is read without being named.
var onsetRoles = []detect.Role{detect.RoleTrigger, detect.RoleMechanism}

// ConfigChangeFacts are a config_change finding's numbers: the change's
// scores, and the before/after queue arithmetic its setting's test ran.
type ConfigChangeFacts struct {
	// MetricsOnly: the change was seen only as a metric step.
	MetricsOnly detect.Maybe[bool] `json:"metrics_only"`
	// HoursBeforeOnset needs an onset.
	HoursBeforeOnset detect.Maybe[float64] `json:"hours_before_onset"`
	// OldValue and NewValue are the setting's values, when numeric.
	OldValue detect.Maybe[float64] `json:"old_value"`
	NewValue detect.Maybe[float64] `json:"new_value"`
	// RiskDirection: +1 the change raised the risk, -1 lowered it, 0 unknown.
	RiskDirection     int     `json:"risk_direction"`
	MechanismScore    float64 `json:"mechanism_score"`
	QuantitativeScore float64 `json:"quantitative_score"`
	ProximityScore    float64 `json:"proximity_score"`
	// The queue wait B*S/W before and after the change, with its inputs,
	// when the setting's test could compute it.
	WaitBeforeS  detect.Maybe[float64] `json:"wait_before_s"`
	WaitAfterS   detect.Maybe[float64] `json:"wait_after_s"`
	Workers      detect.Maybe[int]     `json:"workers"`
	ServiceTimeS detect.Maybe[float64] `json:"service_time_s"`
	// PoolServiceTimeS is the saturated pool's time per accepted connection
	// (worker_saturation's), stated when ServiceTimeS is instead the logged
	// requests' own: the proxy's health checks reach php-fpm too, quickly,
	// without being in the access log whose arrivals the pool-size
	// arithmetic multiplies it with.
	PoolServiceTimeS detect.Maybe[float64] `json:"pool_service_time_s"`
	// The limit the wait was held against, stated as what it is: the health
	// timeout that can fail a queued check, or, when none applies (a check
	// that waits and passes), the clients' timeout. At most one is stated;
	// neither when no limit is known.
	HealthTimeoutS detect.Maybe[float64] `json:"health_timeout_s"`
	ClientTimeoutS detect.Maybe[float64] `json:"client_timeout_s"`
	// QueuePeak and QueuePassedOldCap: how deep the queue went against the
	// old cap; WaitAtPeakS the work the peak held.
	QueuePeak         detect.Maybe[float64] `json:"queue_peak"`
	QueuePassedOldCap detect.Maybe[bool]    `json:"queue_passed_old_cap"`
	WaitAtPeakS       detect.Maybe[float64] `json:"wait_at_peak_s"`
	// Linked: the change explains the findings (an enabler or candidate);
	// false for a mitigation or a change ruled out.
	Linked bool `json:"linked"`
	// CouldNotJudge: the verdict needs a series the evidence lacks.
	CouldNotJudge detect.Maybe[bool] `json:"could_not_judge"`
	// PHPMedianBeforeS and PHPMedianAfterS: PHP's median own time per
	// request before and after a change whose mechanism is the service
	// time (a PHP runtime, the opcode cache), from the access log.
	PHPMedianBeforeS detect.Maybe[float64] `json:"php_median_before_s"`
	PHPMedianAfterS  detect.Maybe[float64] `json:"php_median_after_s"`
	// PeakPHPPerS and WorkersNeeded judge a change of the pool's size by
	// Little's law on the incident's own numbers: at the peak, requests a
	// second that needed PHP times the service time (ServiceTimeS) is the
	// workers the load kept busy, held against the old and new sizes.
	PeakPHPPerS   detect.Maybe[float64] `json:"peak_php_per_s"`
	WorkersNeeded detect.Maybe[float64] `json:"workers_needed"`
	// OldPoolHeld: the old pool would have held the load: the workers
	// needed fit in it, and the queue of the load second by second would
	// have drained within the clients' timeout without overflowing the
	// backlog.
	OldPoolHeld detect.Maybe[bool] `json:"old_pool_held"`
	// OldPoolLongestWaitS and NewPoolLongestWaitS are the longest waits the
	// queue of the load up to the first failure told (second by second,
	// QueueFacts.PHPArrivals) would have meant with the old and the new pool
	// size, held against ClientTimeoutS: a burst too short to move
	// a span's average can still queue past the clients.
	OldPoolLongestWaitS detect.Maybe[float64] `json:"old_pool_longest_wait_s"`
	NewPoolLongestWaitS detect.Maybe[float64] `json:"new_pool_longest_wait_s"`
	// QueueBacklog is the listen queue's cap that queue ran against (php-fpm's
	// listen.backlog in force, as the kernel applied it); OldPoolRefused and
	// NewPoolRefused the connections its full queue would have refused with
	// each size: a pool whose queue refused any did not hold the load,
	// however short its longest wait (a full queue's). Absent when the
	// backlog is unknown (the queue ran unbounded).
	QueueBacklog detect.Maybe[int] `json:"queue_backlog"`
	// OldPoolBacklog is the backlog the old pool size ran against instead,
	// when the same commit changed listen.backlog too: the configuration
	// before the commit had both. Absent: the old size ran against
	// QueueBacklog.
	OldPoolBacklog detect.Maybe[int] `json:"old_pool_backlog"`
	OldPoolRefused detect.Maybe[int] `json:"old_pool_refused"`
	NewPoolRefused detect.Maybe[int] `json:"new_pool_refused"`
	// QueueServiceTimeS is the time per request that queue drained at: PHP's
	// own mean time in the minutes before the onset where nothing queued
	// (absent: too few of them, or PHP got slower at the onset, and
	// ServiceTimeS was used).
	QueueServiceTimeS detect.Maybe[float64] `json:"queue_service_time_s"`
	// UsualPHPPerS is that demand over the hour before the load could rise
	// into the onset (or, in a log that begins later, over its seconds
	// before the onset): the load that filled the pool, against the usual.
	UsualPHPPerS detect.Maybe[float64] `json:"usual_php_per_s"`
	// A pool size change is sized on php-fpm's own processes (changesizing.go):
	// what a busy worker costs (cores it keeps running, CPU seconds a
	// request, MiB of memory, resident or PHP's own peak), what the host had
	// for PHP, the workers that fits by memory and by CPU, and the size
	// recommended with what bound it (memory, CPU, or else the load) and
	// whether it holds the peak. CannotSizeOnPool: no per-process series.
	PoolCoresPerBusyWorker detect.Maybe[float64] `json:"pool_cores_per_busy_worker"`
	PoolCPUSPerRequest     detect.Maybe[float64] `json:"pool_cpu_s_per_request"`
	PoolMemPerWorkerMiB    detect.Maybe[float64] `json:"pool_mem_per_worker_mib"`
	PoolMemResident        detect.Maybe[bool]    `json:"pool_mem_resident"`
	MemForPHPMiB           detect.Maybe[float64] `json:"mem_for_php_mib"`
	CoresForPHP            detect.Maybe[float64] `json:"cores_for_php"`
	WorkersFitMemory       detect.Maybe[int]     `json:"workers_fit_memory"`
	WorkersFitCPU          detect.Maybe[int]     `json:"workers_fit_cpu"`
	WorkersSized           detect.Maybe[int]     `json:"workers_sized"`
	SizedByMemory          detect.Maybe[bool]    `json:"sized_by_memory"`
	SizedByCPU             detect.Maybe[bool]    `json:"sized_by_cpu"`
	SizedHoldsPeak         detect.Maybe[bool]    `json:"sized_holds_peak"`
	CannotSizeOnPool       detect.Maybe[bool]    `json:"cannot_size_on_pool"`
}

func (*ConfigChangeFacts) FindingKind() detect.Kind { return detect.KindConfigChange }

// Timeline events of configuration changes.
const (
	EventConfigChange detect.Event = "config_change"
	EventDeploy       detect.Event = "deploy"
)

// changeMoments are the change itself (a mitigation or a ruled-out change says
// so) and, after the change a finding blames, the changes that followed it:
// the response to the incident.
func changeMoments(f *detect.Finding, s detect.Story) []detect.Moment {
	if f.Change == nil {
		return nil
	}
	c := *f.Change
	topic := "change:" + c.Key
	switch f.Role {
	case detect.RoleMitigation:
		return []detect.Moment{{Time: c.Time, Event: EventDeploy, Topic: topic, Prio: 1, Text: func(p detect.Phraser) string {
			return p.Say("config_change.moment.mitigation", ChangeText(p, c))
		}}}
	case detect.RoleRuledOut:
		return []detect.Moment{{Time: c.Time, Event: EventConfigChange, Topic: topic, Prio: 2, Text: func(p detect.Phraser) string {
			return p.Say("config_change.moment.ruled_out", ChangeText(p, c))
		}}}
	}
	out := []detect.Moment{{Time: c.Time, Event: EventConfigChange, Topic: topic, Text: func(p detect.Phraser) string { return ChangeText(p, c) }}}
	_, to := s.Window()
	n := 0
	for _, d := range s.Changes() {
		if n == maxDeploys || d.Time.After(to.Add(deployHorizon)) {
			break
		}
		// A later change judged in a finding of its own (a mitigation, one
		// ruled out) is that finding's moment, linked to it: told here too,
		// it would win the minute and link to this change instead.
		if !d.Time.After(c.Time) || sameChange(d, c) || judgedApart(s.Findings(), d) {
			continue
		}
		n++
		out = append(out, detect.Moment{Time: d.Time, Event: EventDeploy, Topic: "change:" + d.Key, Text: func(p detect.Phraser) string { return ChangeText(p, d) }})
	}
	return out
}

// queueingWait is the longest wait a full queue means: B * S / W (design.md,
// config_change), with S and W from the saturation finding.
func queueingWait(fs []detect.Finding, backlog float64) (float64, float64, float64, bool) {
	sat := detect.First(fs, detect.KindWorkerSaturation)
	if sat == nil {
		return 0, 0, 0, false
	}
	sf := detect.FactsOf[detect.WorkerSaturationFacts](sat)
	w, s := float64(sf.Workers), sf.ServiceTimeS.V
	if w <= 0 || s <= 0 || backlog <= 0 {
		return 0, 0, 0, false
	}
	return detect.QueueWait(backlog, s, w), w, s, true
}

func explainChange(p detect.Phraser, f *detect.Finding, st detect.Story) string {
	if f.Change == nil {
		return f.Summary
	}
	c := *f.Change
	cf := detect.FactsOf[ConfigChangeFacts](f)
	before, after := cf.WaitBeforeS.V, cf.WaitAfterS.V
	timeout := cf.HealthTimeoutS.V
	if hc := detect.First(st.Findings(), detect.KindHealthcheckStarved); hc != nil && timeout == 0 {
		timeout = detect.FactsOf[detect.HealthcheckFacts](hc).HealthTimeoutS.V
	}
	client := cf.ClientTimeoutS.V
	w, svc := float64(cf.Workers.V), cf.ServiceTimeS.V
	computed := w > 0 && svc > 0
	if before == 0 && after == 0 && strings.Contains(c.Key, "backlog") && cf.OldValue.OK && cf.NewValue.OK {
		var ok1, ok2 bool
		before, w, svc, ok1 = queueingWait(st.Findings(), cf.OldValue.V)
		after, _, _, ok2 = queueingWait(st.Findings(), cf.NewValue.V)
		computed = ok1 && ok2
	}
	said := p.Say("config_change.explain", struct {
		At                                       time.Time
		Key, Old, New, Detail, DeployName, Text  string
		Summary                                  string
		Deploy, Waits, Computed, Crossed         bool
		Workers, Service, Before, After, Timeout float64
		// ClientTimeout is the clients' timeout when it, not a health
		// timeout, was the limit the waits were held against (0: not).
		ClientTimeout                        float64
		ClientCrossed, ClientOutlastedBefore bool
		// PHP's median time per request across a runtime change (Korean
		// says it here; the English summary carries it with its spans).
		PHPMedians, RuledOut            bool
		PHPMedianBefore, PHPMedianAfter float64
		// Little: the pool's size judged by Little's law (busy workers
		// needed at the peak against the old and new sizes).
		Little, OldHeld                   bool
		PeakPHP, Needed, OldSize, NewSize float64
		// QueueWaits: the load's queue second by second, its longest
		// wait with the old and the new size (against ClientTimeout).
		QueueWaits         bool
		QueueOld, QueueNew float64
		// QueueBacklog, QueueOldRefused, QueueNewRefused: the backlog that
		// queue ran against and the connections its full queue refused
		// with each size (0: unknown backlog, or none refused).
		QueueBacklog, QueueOldRefused, QueueNewRefused int
		// The load that filled the pool (English says it in the
		// summary): the trigger found, else demand against its usual.
		LoadTrigger string
		Usual       float64
		LoadRose    bool
	}{
		At: c.Time, Key: c.Key, Old: SettingValue(c.Old), New: SettingValue(c.New),
		Detail: changeDetail(c), DeployName: DeployName(c) + shortRefDetail(c), Text: ChangeText(p, c),
		Summary: f.Summary,
		// A deploy that changed no known setting: what it shipped is
		// unknown to the logs.
		Deploy:   c.File == "" && c.Note != "",
		Waits:    before > 0 && after > 0,
		Computed: computed,
		// The change is what let the health check wait past its timeout.
		Crossed: timeout > 0 && before <= timeout && after > timeout,
		Workers: w, Service: svc, Before: before, After: after, Timeout: timeout,
		ClientTimeout:         client,
		ClientCrossed:         client > 0 && before <= client && after > client,
		ClientOutlastedBefore: client > 0 && before > client && after > client,
		PHPMedians:            cf.PHPMedianBeforeS.OK && cf.PHPMedianAfterS.OK,
		RuledOut:              f.Role == detect.RoleRuledOut,
		PHPMedianBefore:       cf.PHPMedianBeforeS.V, PHPMedianAfter: cf.PHPMedianAfterS.V,
		Little:  cf.WorkersNeeded.OK && cf.PeakPHPPerS.OK && cf.ServiceTimeS.OK,
		OldHeld: cf.OldPoolHeld.V,
		PeakPHP: cf.PeakPHPPerS.V, Needed: cf.WorkersNeeded.V, OldSize: cf.OldValue.V, NewSize: cf.NewValue.V,
		QueueWaits: cf.OldPoolLongestWaitS.OK && cf.NewPoolLongestWaitS.OK && client > 0,
		QueueOld:   cf.OldPoolLongestWaitS.V, QueueNew: cf.NewPoolLongestWaitS.V,
		QueueBacklog: cf.QueueBacklog.V, QueueOldRefused: cf.OldPoolRefused.V, QueueNewRefused: cf.NewPoolRefused.V,
		LoadTrigger: loadTriggerOf(st.Findings()), Usual: cf.UsualPHPPerS.V,
		LoadRose: cf.UsualPHPPerS.OK && cf.PeakPHPPerS.V > detect.ArrivalsFlat*cf.UsualPHPPerS.V,
	})
	// The pool sized on php-fpm's own CPU and memory: English says it in
	// the summary, which its explanation repeats; other languages here.
	if sz, ok := sizingFromFacts(cf); ok && cf.WorkersNeeded.OK {
		said += p.Say("config_change.sizing_explain", sz)
	}
	return said
}

// loadTriggerOf is the ID of the trigger among fs other than a change ("":
// none), the load a pool change is named beside.
func loadTriggerOf(fs []detect.Finding) string {
	for _, f := range fs {
		if f.Role == detect.RoleTrigger && f.Kind != detect.KindConfigChange {
			return f.ID
		}
	}
	return ""
}

// maxDeploys bounds the changes shown after the enabling one: a busy
// configuration repository must not drown the timeline.
const maxDeploys = 5

// deployHorizon is how long after the window a change still counts as the
// response to the incident (the reference's fix came four hours later).
const deployHorizon = 24 * time.Hour

// explainNotCause says why a change is no cause: ruled out by the numbers, or
// a mitigation. The detector's own summary carries the arithmetic in English;
// Korean gets the same numbers from the facts.
func explainNotCause(p detect.Phraser, f *detect.Finding, _ detect.Story) string {
	if f.Change == nil {
		return f.Summary
	}
	c := *f.Change
	cf := detect.FactsOf[ConfigChangeFacts](f)
	before, after, timeout := cf.WaitBeforeS.V, cf.WaitAfterS.V, cf.HealthTimeoutS.V
	client := cf.ClientTimeoutS.V
	passed := cf.QueuePassedOldCap
	return p.Say("config_change.not_cause", struct {
		Summary, What                       string
		At                                  time.Time
		Mitigation                          bool
		WaitFits, StayedUnderOld, OldUnsafe bool
		ClientFits                          bool
		Peak, Old, New, Before, After       float64
		Timeout, ClientTimeout              float64
	}{
		Summary: f.Summary, What: ChangeText(p, c), At: c.Time,
		Mitigation: f.Role == detect.RoleMitigation,
		// A full queue's wait within the health check's timeout is why a
		// mitigation keeps the check alive; when the clients' timeout was
		// the limit (no timeout applies to the check), the claim is about
		// the clients instead, as in the detector's summary.
		WaitFits:       after > 0 && cf.HealthTimeoutS.OK && after <= timeout,
		ClientFits:     after > 0 && client > 0 && after <= client,
		StayedUnderOld: passed.OK && !passed.V && cf.OldValue.V > 0,
		OldUnsafe:      before > 0 && timeout > 0 && before > timeout,
		Peak:           cf.QueuePeak.V, Old: cf.OldValue.V, New: cf.NewValue.V, Before: before, After: after,
		Timeout: timeout, ClientTimeout: client,
	})
}

func sameChange(a, b sources.Change) bool {
	return a.Time.Equal(b.Time) && a.Key == b.Key && a.Ref == b.Ref && a.New == b.New
}

// judgedApart reports whether a finding of its own is about change c.
func judgedApart(fs []detect.Finding, c sources.Change) bool {
	for i := range fs {
		if fs[i].Change != nil && sameChange(*fs[i].Change, c) {
			return true
		}
	}
	return false
}

// ChangeText describes a configuration change: "listen.backlog changed from
// 511 to 4,096 (php/pool.conf, 9d78ccb: PHP 8.3)"; a deploy that names no
// file or setting by its subject: `deploy "Release 4.2" (deploy-118)`.
func ChangeText(p detect.Phraser, c sources.Change) string {
	kind := "other"
	switch {
	case c.Key != "":
		kind = "setting"
	case c.File == "" && c.Note != "":
		kind = "deploy"
	}
	return p.Say("config_change.text", struct {
		Kind, Key, Old, New, Detail, Deploy string
	}{kind, c.Key, SettingValue(c.Old), SettingValue(c.New), changeDetail(c), DeployName(c) + shortRefDetail(c)})
}

// shortRefDetail is " (ref)" for a change named by its subject, or "".
func shortRefDetail(c sources.Change) string {
	if c.Ref == "" {
		return ""
	}
	return " (" + shortRef(c.Ref) + ")"
}

// changeDetail is " (file, ref: first line of the note)", or "".
func changeDetail(c sources.Change) string {
	var detail []string
	if c.File != "" {
		detail = append(detail, c.File)
	}
	if c.Ref != "" {
		detail = append(detail, shortRef(c.Ref))
	}
	d := strings.Join(detail, ", ")
	if note := firstLine(c.Note, 80); note != "" {
		if d != "" {
			d += ": "
		}
		d += note
	}
	if d == "" {
		return ""
	}
	return " (" + d + ")"
}

// SettingValue prints a setting's value: whole numbers grouped like every other
// number of the report ("4,096"), anything else as it is; "-" when empty.
func SettingValue(s string) string {
	if s == "" {
		return "-"
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && strings.Trim(s, "0123456789") == "" {
		return detect.FormatInt(n)
	}
	return s
}

// shortRef abbreviates a commit hash as git does; other references stay whole.
func shortRef(ref string) string {
	if len(ref) == 40 && strings.Trim(ref, "0123456789abcdef") == "" {
		return ref[:7]
	}
	return ref
}

// firstLine returns the first line of s, cut to at most n runes.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(s)
	if rs := []rune(s); len(rs) > n {
		s = string(rs[:n-1]) + "…"
	}
	return s
}

// configChangeDetector reviews every change before the onset (git, changes.yaml,
// metric steps) and links those whose mechanism explains the findings present.
type configChangeDetector struct{}

func (configChangeDetector) Name() detect.Kind { return detect.KindConfigChange }

func (configChangeDetector) Detect(ctx context.Context, ev *detect.Evidence, prior []detect.Finding) ([]detect.Finding, detect.Check, error) {
	inferred, err := metricChanges(ctx, ev)
	if err != nil {
		return nil, detect.Check{}, err
	}
	all := changes.Merge(ev.Changes, inferred)
	if len(all) == 0 && len(ev.Changes) == 0 && ev.Metrics == nil {
		return nil, detect.Because(detect.OutcomeCouldNotRun, detect.Messages.Say("config_change.no_input", nil)), nil
	}
	fs, check := RankChanges(all, prior, queueFacts(ev, prior))
	check.Name, check.Findings = "", nil // Run names the check and numbers the findings
	if check.Outcome == detect.OutcomeFound {
		check.Outcome = ""
	}
	return fs, check, nil
}

// metricChanges infers changes from php-fpm's own series over the lookback.
func metricChanges(ctx context.Context, ev *detect.Evidence) ([]sources.Change, error) {
	if ev.Metrics == nil {
		return nil, nil
	}
	from, to := ev.From.Add(-changes.Lookback), ev.To
	var sets [3][]changes.Series
	for i, name := range []string{changes.MetricListenQueueLength, changes.MetricTotalProcesses, changes.MetricStartSince} {
		ss, err := ev.Metrics.QueryRange(ctx, name, from, to, time.Minute)
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			sets[i] = append(sets[i], changes.Series{Labels: labelText(s.Labels), Points: changePoints(s.Points)})
		}
	}
	return changes.FromMetrics(sets[0], sets[1], sets[2]), nil
}

func changePoints(ps []metrics.Point) []changes.Point {
	out := make([]changes.Point, len(ps))
	for i, p := range ps {
		out[i] = changes.Point{T: p.T, V: p.V}
	}
	return out
}

func labelText(ls map[string]string) string {
	keys := make([]string, 0, len(ls))
	for k := range ls {
		if k != "__name__" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, ls[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// queueFacts gathers the queueing numbers of the incident for the before/after
// arithmetic: W, S, the effective health timeout, the queue and the onset.
func queueFacts(ev *detect.Evidence, prior []detect.Finding) QueueFacts {
	q := QueueFacts{Workers: detect.PoolSize(ev), ServiceTimeS: detect.ServiceTime(ev, prior), ClientTimeoutS: ev.Site.ClientTimeoutS,
		Backlog: ev.Site.Backlog, Loc: ev.Loc}
	if ev.Traffic != nil {
		q.PHPTimes = func(from, to time.Time) detect.Histogram { return ev.PHPServiceTimes(from, to, true) }
	}
	q.HealthTimeoutS, _ = detect.CheckTimeout(ev.Site, prior)
	if p := ev.Pool; p != nil {
		if b := detect.Peak(detect.Between(p.Backlog, ev.From, ev.To)); b.V > 0 {
			q.Backlog = int(b.V)
		}
		q.QueuePeak = p.QueuePeak(ev.From, ev.To).V
		q.Resources = p.Resources(ev.From, ev.To)
		for _, pt := range detect.Between(p.Queue, ev.From, ev.To) {
			q.Queue = append(q.Queue, QueuePoint{T: pt.T, Depth: pt.V})
		}
	}
	// The onset is when clients started to be failed or the pool saturated
	// (incident.go): a change after it cannot have made the incident
	// possible, and an early minor rise does not move it. Without an
	// incident, the earliest trigger or mechanism stands in.
	if inc := ev.FoundIncidents().WorstIncident(); inc != nil {
		q.Onset = inc.Onset
	}
	for _, f := range prior {
		if !q.Onset.IsZero() {
			break
		}
		if f.Role == detect.RoleSymptom || f.Start.IsZero() {
			continue
		}
		if q.Onset.IsZero() || f.Start.Before(q.Onset) {
			q.Onset = f.Start
		}
	}
	if math.IsNaN(q.ServiceTimeS) {
		q.ServiceTimeS = 0
	}
	q.LoggedServiceTimeS = loggedServiceTime(ev.Pool, prior, healthCheckSite{URI: ev.Site.HealthURI, IntervalS: ev.Site.HealthIntervalS})
	if inc := ev.FoundIncidents().WorstIncident(); inc != nil && ev.Traffic != nil {
		q.PeakPHPPerS, q.PeakAt = peakPHPDemand(ev, inc.Onset, inc.Start)
		q.UsualPHPPerS, q.UsualFrom, q.UsualTo = usualPHPDemand(ev, inc.Onset)
		q.PHPArrivals, q.ArrivalsFrom, q.ArrivalsUntil = loadBySecond(ev, inc.Onset, inc.Start)
	}
	q.SlowerAtOnset = detect.First(prior, detect.KindServiceTimeRegression) != nil
	if id := loadTriggerOf(prior); id != "" {
		q.LoadTrigger = id
	}
	return q
}

// usualPHPDemand is the requests a second that needed PHP (as
// peakPHPDemand counts them) over the hour before the load could rise into
// the onset (demandLead before it), and the span it was read over. When the
// access log holds less than half that hour (a recording that begins
// shortly before the incident), it is the log's own seconds before the
// onset, from its first line, if there are usualMinSpan of them: the usual
// as far as the log shows it, its span said. 0 when neither is there.
func usualPHPDemand(ev *detect.Evidence, onset time.Time) (float64, time.Time, time.Time) {
	from, to := onset.Add(-demandLead-time.Hour), onset.Add(-demandLead)
	n, minutes := 0, 0
	for m := from.Truncate(time.Minute); m.Before(to); m = m.Add(time.Minute) {
		if mm := ev.Traffic.Minute(m); mm != nil {
			n += mm.NeededPHP()
			minutes++
		}
	}
	if minutes >= int(time.Hour/time.Minute)/2 {
		return float64(n) / (float64(minutes) * 60), from, to
	}
	first, _ := ev.Traffic.Span()
	if first.IsZero() || first.Before(from) || onset.Sub(first) < usualMinSpan {
		return 0, time.Time{}, time.Time{}
	}
	// The first line's second may hold only part of its arrivals.
	first = first.Truncate(time.Second).Add(time.Second)
	perSecond, _, ok := ev.Traffic.PHPArrivalsBySecond(first, onset)
	if !ok {
		return 0, time.Time{}, time.Time{}
	}
	sum := 0
	for _, c := range perSecond {
		sum += c
	}
	return float64(sum) / float64(len(perSecond)), first, onset
}

// loadBySecond is the requests that needed PHP second by second from
// demandLead before the onset until the first second a client was told of a
// failure: no retry can have come before it, so this is the load alone. A
// client told at its timeout asked that long before: the load of the burst's
// first seconds of failures is in. Without a failure told, the arrivals run
// as far as peakPHPDemand reads them.
func loadBySecond(ev *detect.Evidence, onset, failing time.Time) ([]int, time.Time, time.Time) {
	from, to := onset.Add(-demandLead), detect.Later(onset, failing).Add(demandSpan)
	if to.After(ev.To) {
		to = ev.To
	}
	if !failing.IsZero() {
		if told, ok := ev.Traffic.FirstFailureTold(failing, to); ok {
			to = told
		}
	}
	perSecond, start, ok := ev.Traffic.PHPArrivalsBySecond(from, to)
	if !ok {
		return nil, time.Time{}, time.Time{}
	}
	return perSecond, start, to
}

// usualMinSpan is the least of a log's own seconds before the onset that
// stand for the usual demand: at a couple of requests a second, half a
// minute counts some sixty, within about an eighth of their rate (Poisson),
// enough to tell a load that rose severalfold (ArrivalsFlat) from a flat one.
const usualMinSpan = 30 * time.Second

// Where the load that filled the pool is read: from demandLead before the
// onset (the load rises into it) to demandSpan after clients began to be
// failed (a lunch peak goes on rising once the pool is full), in stretches
// of demandSpan. Later, clients retrying their failures inflate the count;
// the first minutes' retries make it an upper bound.
const (
	demandLead = 30 * time.Minute
	demandSpan = 5 * time.Minute
)

// peakPHPDemand is the busiest demandSpan's requests a second that needed
// PHP (Minute.NeededPHP, by the minute they were logged) from demandLead
// before the onset to demandSpan after the first failures.
func peakPHPDemand(ev *detect.Evidence, onset, failing time.Time) (float64, time.Time) {
	perMinute := map[int64]int{}
	from, to := onset.Add(-demandLead), detect.Later(onset, failing).Add(demandSpan)
	if to.After(ev.To) {
		to = ev.To
	}
	for m := from.Truncate(time.Minute); m.Before(to); m = m.Add(time.Minute) {
		mm := ev.Traffic.Minute(m)
		if mm == nil {
			continue
		}
		perMinute[m.Unix()/60] = mm.NeededPHP()
	}
	n, at := detect.RollingMax(perMinute, from, to, int(demandSpan/time.Minute))
	return float64(n) / demandSpan.Seconds(), at
}
