package scan

import (
	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"

	"time"
)

// Severity is how loud an anomaly is: info is news, warning and critical
// make the scan anomalous. Detectors' specs name it too (ScanMeasure), so it
// is declared in package detect.
type Severity = detect.AnomalySeverity

// Severities, in increasing order.
const (
	SeverityInfo     = detect.AnomalyInfo
	SeverityWarning  = detect.AnomalyWarning
	SeverityCritical = detect.AnomalyCritical
)

// SeverityRank orders severities (info 0, warning 1, critical 2; -1 unknown).
func SeverityRank(s Severity) int {
	switch s {
	case SeverityInfo:
		return 0
	case SeverityWarning:
		return 1
	case SeverityCritical:
		return 2
	}
	return -1
}

// Anomaly is one thing a scan found unusual, as serialised in scan.json.
type Anomaly struct {
	// Kind is a finding kind of package detect (crawler_burst,
	// healthcheck_starved, ...) or surge, error_rate, latency, saturation,
	// request_rate.
	Kind detect.Kind `json:"kind"`
	// Severity is info, warning or critical. Only warning and critical make a
	// scan anomalous (exit 1) and are announced.
	Severity Severity `json:"severity"`
	// Key tells anomalies of one kind apart: the fingerprint of a
	// crawler_burst, the path class of a request_rate; "" for site-wide ones.
	// Kind and Key identify an anomaly from one scan to the next.
	Key string `json:"key"`
	// KeyText is Key as a sentence names it (a crawler's fingerprint said
	// by detect.SayKey); zero when Key is an identifier.
	KeyText prose.Text `json:"-"`
	// Start is when it began inside the window (or before it, for a
	// detector's finding).
	Start time.Time `json:"start"`
	// Metric names what Observed and Baseline measure, with its unit.
	Metric string `json:"metric"`
	// MetricText is Metric as said by a catalog, for the report to say in
	// its language.
	MetricText prose.Text `json:"-"`
	// Observed is the window's value; Baseline the baseline's (the median of
	// the same hours on previous days, or the detector's own baseline).
	Observed float64 `json:"observed"`
	Baseline float64 `json:"baseline"`
	// Score is the excess of Observed over Baseline in units of the
	// baseline's spread (robust z-score; see the package doc).
	Score float64 `json:"score"`
	// NoBaseline is true when nothing was measured against a baseline: an
	// anomaly made from a detector's finding that names no baseline fact
	// (worker_saturation, client_abandoned_work, idle_pinning, config_change).
	// Baseline and Score are then 0 and mean nothing: show them as absent,
	// not as a usual 0.
	NoBaseline bool `json:"no_baseline,omitempty"`
	// Summary says what happened in one or two sentences (English).
	Summary string `json:"summary"`
	// SummaryText is Summary as said by a catalog, for the report to say
	// in its language.
	SummaryText prose.Text `json:"-"`
	// Findings are the ids of the detectors' findings that joined it.
	Findings []string `json:"findings,omitempty"`
	// Fingerprint is the client fingerprint of a crawler_burst.
	Fingerprint *detect.Fingerprint `json:"fingerprint,omitempty"`
	// Facts are the numbers behind the summary: the concern's facts struct
	// (Concern.NewFacts), or the facts of the finding the anomaly was made
	// from. scan.json writes them as one object of numbers (FactMap).
	Facts detect.Facts `json:"facts,omitempty"`
	// Joined are the facts of the findings that joined the anomaly since;
	// scan.json adds the names Facts does not state.
	Joined []detect.Facts `json:"-"`
}

// ID identifies an anomaly across scans: kind and key.
func (a *Anomaly) ID() string {
	if a.Key == "" {
		return string(a.Kind)
	}
	return string(a.Kind) + " " + a.Key
}

// summarize sets the anomaly's summary to t, in English and as said.
func (a *Anomaly) summarize(t prose.Text) { a.Summary, a.SummaryText = t.String(), t }

// measured sets what the anomaly's value measures to t, in English and as said.
func (a *Anomaly) measured(t prose.Text) { a.Metric, a.MetricText = t.String(), t }

// Alarming reports whether a's severity makes a scan anomalous.
func (a *Anomaly) Alarming() bool { return SeverityRank(a.Severity) >= SeverityRank(SeverityWarning) }
