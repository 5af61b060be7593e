package detect

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// ChangeLookback is how far before the window configuration changes are
// reviewed (issue #4: a backlog raised the evening before is the classic case).
const ChangeLookback = 72 * time.Hour

func init() {
	Register(Spec{
		Kind: KindConfigChange, Order: 9, New: func() Detector { return configChangeDetector{} },
		NewFacts: func() Facts { return &ConfigChangeFacts{} },
		Role:     RoleEnabler,
		Scan:     ScanMeasure{Severity: "info"},
		Events:   map[string]int{"config_change": 0, "deploy": 14},
	})
}

// ConfigChangeFacts are a config_change finding's numbers: the change's
// scores, and the before/after queue arithmetic its setting's test ran.
type ConfigChangeFacts struct {
	// MetricsOnly: the change was seen only as a metric step.
	MetricsOnly Maybe[bool] `json:"metrics_only"`
	// HoursBeforeOnset needs an onset.
	HoursBeforeOnset Maybe[float64] `json:"hours_before_onset"`
	// OldValue and NewValue are the setting's values, when numeric.
	OldValue Maybe[float64] `json:"old_value"`
	NewValue Maybe[float64] `json:"new_value"`
	// RiskDirection: +1 the change raised the risk, -1 lowered it, 0 unknown.
	RiskDirection     int     `json:"risk_direction"`
	MechanismScore    float64 `json:"mechanism_score"`
	QuantitativeScore float64 `json:"quantitative_score"`
	ProximityScore    float64 `json:"proximity_score"`
	// The queue wait B*S/W before and after the change, with its inputs and
	// the limit it was held against, when the setting's test could compute it.
	WaitBeforeS    Maybe[float64] `json:"wait_before_s"`
	WaitAfterS     Maybe[float64] `json:"wait_after_s"`
	Workers        Maybe[int]     `json:"workers"`
	ServiceTimeS   Maybe[float64] `json:"service_time_s"`
	HealthTimeoutS Maybe[float64] `json:"health_timeout_s"`
	// QueuePeak and QueuePassedOldCap: how deep the queue went against the
	// old cap; WaitAtPeakS the work the peak held.
	QueuePeak         Maybe[float64] `json:"queue_peak"`
	QueuePassedOldCap Maybe[bool]    `json:"queue_passed_old_cap"`
	WaitAtPeakS       Maybe[float64] `json:"wait_at_peak_s"`
	// Linked: the change explains the findings (an enabler or candidate);
	// false for a mitigation or a change ruled out.
	Linked bool `json:"linked"`
	// CouldNotJudge: the verdict needs a series the evidence lacks.
	CouldNotJudge Maybe[bool] `json:"could_not_judge"`
}

func (*ConfigChangeFacts) FindingKind() string { return KindConfigChange }

// configChangeDetector reviews every change before the onset (git, changes.yaml,
// metric steps) and links those whose mechanism explains the findings present.
type configChangeDetector struct{}

func (configChangeDetector) Name() string { return KindConfigChange }

func (configChangeDetector) Detect(ctx context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error) {
	inferred, err := metricChanges(ctx, ev)
	if err != nil {
		return nil, Check{}, err
	}
	all := changes.Merge(ev.Changes, inferred)
	if len(all) == 0 && len(ev.Changes) == 0 && ev.Metrics == nil {
		return nil, Check{Outcome: OutcomeCouldNotRun, Reason: "no configuration repository, changes.yaml or php-fpm metrics to find changes in"}, nil
	}
	fs, check := RankChanges(all, prior, queueFacts(ev, prior))
	check.Name, check.Findings = "", nil // Run names the check and numbers the findings
	if check.Outcome == OutcomeFound {
		check.Outcome = ""
	}
	return fs, check, nil
}

// metricChanges infers changes from php-fpm's own series over the lookback.
func metricChanges(ctx context.Context, ev *Evidence) ([]sources.Change, error) {
	if ev.Metrics == nil {
		return nil, nil
	}
	from, to := ev.From.Add(-ChangeLookback), ev.To
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
func queueFacts(ev *Evidence, prior []Finding) QueueFacts {
	q := QueueFacts{Workers: poolSize(ev), ServiceTimeS: serviceTime(ev, prior), ClientTimeoutS: ev.Site.ClientTimeoutS,
		Backlog: ev.Site.Backlog, Loc: ev.Loc}
	q.HealthTimeoutS = ev.Site.EffectiveHealthTimeoutS()
	if hc := first(prior, KindHealthcheckStarved); hc != nil && FactsOf[HealthcheckFacts](hc).HealthTimeoutS > 0 {
		q.HealthTimeoutS = FactsOf[HealthcheckFacts](hc).HealthTimeoutS
	}
	if p := ev.Pool; p != nil {
		if b := peak(between(p.Backlog, ev.From, ev.To)); b.V > 0 {
			q.Backlog = int(b.V)
		}
		q.QueuePeak = p.queuePeak(ev.From, ev.To).V
		for _, pt := range between(p.Queue, ev.From, ev.To) {
			q.Queue = append(q.Queue, QueuePoint{T: pt.T, Depth: pt.V})
		}
	}
	// The onset is when clients started to be failed or the pool saturated
	// (incident.go): a change after it cannot have made the incident
	// possible, and an early minor rise does not move it. Without an
	// incident, the earliest trigger or mechanism stands in.
	if inc := ev.incidents().WorstIncident(); inc != nil {
		q.Onset = inc.Onset
	}
	for _, f := range prior {
		if !q.Onset.IsZero() {
			break
		}
		if f.Role == RoleSymptom || f.Start.IsZero() {
			continue
		}
		if q.Onset.IsZero() || f.Start.Before(q.Onset) {
			q.Onset = f.Start
		}
	}
	if math.IsNaN(q.ServiceTimeS) {
		q.ServiceTimeS = 0
	}
	return q
}
