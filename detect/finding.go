package detect

import (
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/prose"

	"github.com/aftermath-forensics/aftermath/sources"
)

// Kind names a finding kind (report.json "kind"): the contract of
// report.json (design.md, "Detectors").
type Kind string

// Finding kinds.
const (
	KindCrawlerBurst        Kind = "crawler_burst"
	KindWorkerSaturation    Kind = "worker_saturation"
	KindListenQueueOverflow Kind = "listen_queue_overflow"
	KindHealthcheckStarved  Kind = "healthcheck_starved"
	KindUpstreamErrors      Kind = "upstream_errors"
	KindClientAbandonedWork Kind = "client_abandoned_work"
	KindSelfAmplification   Kind = "self_amplification"
	KindIdlePinning         Kind = "idle_pinning"
	KindConfigChange        Kind = "config_change"
)

// joinKinds writes kinds separated by sep, as strings.Join does strings.
func joinKinds(kinds []Kind, sep string) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, sep)
}

// Role classifies a finding in the causal story (report.json "role").
type Role string

// Roles: a kind's usual part (Spec.Role), and what a finding's own evidence
// made of it.
const (
	RoleTrigger   Role = "trigger"
	RoleEnabler   Role = "enabler"
	RoleMechanism Role = "mechanism"
	RoleSymptom   Role = "symptom"
	// RoleMitigation marks a change that lowers the risk the incident shows (a
	// smaller backlog, a tighter rate limit): recognised, never blamed.
	RoleMitigation Role = "mitigation"
	// RoleRuledOut marks a change of a setting whose failure mode the incident
	// shows, but which the numbers clear (the queue never passed the old cap):
	// reported so that nobody blames it, with the arithmetic that clears it.
	RoleRuledOut Role = "ruled_out"
	// RoleCandidate marks a change whose failure mechanism matches the findings
	// but whose effect the values cannot tell (a new PHP version): worth a
	// look, not an explanation.
	RoleCandidate Role = "candidate"
	// RoleContext marks a finding that is part of the story but not a cause: a
	// rise that started too early or weighed too little to have triggered the
	// incident. The timeline shows it; the causes do not rank it.
	RoleContext Role = "context"
)

// Fingerprint describes a client cluster (crawler_burst's "fingerprint" field).
type Fingerprint struct {
	// UserAgent is the family with the major versions its requests
	// carried, most used first ("Chrome 121/120"), and Paths what they
	// walked, most first: a crawler's are its own addresses' (actorwalk.go),
	// not those of the readers who share its headers.
	UserAgent      string   `json:"user_agent"`
	AcceptLanguage string   `json:"accept_language"`
	LoggedIn       string   `json:"logged_in"`
	SecChUa        string   `json:"sec_ch_ua,omitempty"`
	Paths          []string `json:"paths"`
	// UserAgents and AcceptLanguages list what an actor spread over several
	// fingerprints rotated (actorjoin.go), UserAgent and AcceptLanguage
	// being then its largest part's; empty for one fingerprint.
	UserAgents      []string `json:"user_agents,omitempty"`
	AcceptLanguages []string `json:"accept_languages,omitempty"`
	// Method is "POST" when nearly all its requests were POSTs (a flood of
	// logins or forms); empty otherwise.
	Method string `json:"method,omitempty"`
	// Members are the fingerprints of an actor joined over several
	// (actorjoin.go), each as a rule tells its requests apart (user-agent
	// family, primary language, login state, client hints), so that a
	// consumer of report.json (rules) sees the whole actor, not its
	// largest part; empty for one fingerprint.
	Members []MemberFingerprint `json:"members,omitempty"`
}

// MemberFingerprint is one fingerprint of a joined actor, in
// Fingerprint's terms: UserAgent is the family ("Chrome"), SecChUa
// "absent" for a Chromium agent without client hints.
type MemberFingerprint struct {
	UserAgent      string `json:"user_agent"`
	AcceptLanguage string `json:"accept_language"`
	LoggedIn       string `json:"logged_in"`
	SecChUa        string `json:"sec_ch_ua,omitempty"`
}

// Finding is one thing the detectors found, as serialised in report.json.
type Finding struct {
	ID         string    `json:"id"`
	Kind       Kind      `json:"kind"`
	Role       Role      `json:"role,omitempty"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Confidence float64   `json:"confidence"`
	Summary    string    `json:"summary"`
	// SummaryText is Summary as said by a catalog, for the report to say in
	// its language (summarize sets both).
	SummaryText prose.Text `json:"-"`
	// Facts are the kind's numbers (its Spec's NewFacts type), written as
	// report.json's "facts" object by name.
	Facts Facts `json:"facts"`

	Fingerprint *Fingerprint `json:"fingerprint,omitempty"`
	// Cluster is the fingerprint as detect.Key computes it, so in-process
	// consumers (the rules backtest) can tell the crawler's requests apart.
	Cluster *request.ClusterKey `json:"-"`
	// Clusters are the fingerprints of an actor joined over several
	// (actorjoin.go), Cluster the largest; nil for one fingerprint.
	Clusters []request.ClusterKey `json:"-"`
	Change   *sources.Change      `json:"change,omitempty"`
	// TopPaths are Fingerprint.Paths with their requests (a crawler's:
	// they add up to its requests when it walked ten or fewer).
	TopPaths []PathCount `json:"top_paths,omitempty"`
	// Routes are a crawler's route templates with their requests and
	// measured cost (crawler_burst; its own addresses', readers apart):
	// what decided "expensive, uncacheable".
	Routes []RouteCost `json:"routes,omitempty"`
	// Logged is upstream_errors' failing stretch as the access log recorded
	// it (first, worst and last minute), for the timeline.
	Logged *LoggedMilestones `json:"-"`
	// Estimated marks the figures that are estimated, not measured (a
	// pushed-down fetch read some minutes only as counts): the report says so
	// next to them.
	Estimated []Estimate `json:"estimated,omitempty"`
}

// Reasons a figure is estimated (Estimate.Reason).
const (
	// EstimateNotRead: its lines were read only in the minutes that stood
	// out (a client whose family was not pulled across the window, or what
	// only a line tells, like a self-call), so its counts are lower bounds
	// and its start may be late.
	EstimateNotRead = "lines_not_read"
	// EstimateBaselineSample: its usual rate comes from the baseline's
	// sampled minutes, not from every baseline minute.
	EstimateBaselineSample = "baseline_sampled"
	// EstimateReadMinutes: it comes from the minutes whose lines were read
	// only, since what it needs (a crawler's share of a minute's answers, a
	// route's PHP time) is not in the minutes that were only counted.
	EstimateReadMinutes = "read_minutes_only"
	// EstimatePullFailed: the raw pull of some minutes of its failing
	// stretch failed (only their counts are known), so what it reads from
	// lines (addresses, routes, fingerprints) is a lower bound and its
	// start may be late (pullfailed.go).
	EstimatePullFailed = "pull_failed"
)

// Estimate names figures of a finding (fact names; "start" for the
// finding's start, "routes" for its Routes' measured costs) estimated for
// one reason.
type Estimate struct {
	Figures []string `json:"figures"`
	Reason  string   `json:"reason"`
}

// PathCount is a path (or path class) with how often it was requested.
type PathCount struct {
	Path     string `json:"path"`
	Requests int    `json:"requests"`
}

// Outcome is what one detector concluded (report.json checks' "outcome").
type Outcome string

// Outcome values of a Check.
const (
	OutcomeFound          Outcome = "found"
	OutcomeNotInteresting Outcome = "not_interesting"
	OutcomeCouldNotRun    Outcome = "could_not_run"
)

// Check is the outcome of one detector, listed in the report whatever it found.
type Check struct {
	Name    Kind    `json:"name"`
	Outcome Outcome `json:"outcome"`
	Reason  string  `json:"reason,omitempty"`
	// ReasonText is Reason as said by a catalog, for the report to say in
	// its language (Because sets both).
	ReasonText prose.Text `json:"-"`
	Findings   []string   `json:"findings,omitempty"`
}

// summarize sets the finding's summary to t, in English and as said.
func (f *Finding) summarize(t prose.Text) { f.Summary, f.SummaryText = t.String(), t }

// Because is a check that concluded outcome ("" for not_interesting) for
// the reason t, in English and as said: every detector's, in this package or
// registered from another.
func Because(outcome Outcome, t prose.Text) Check {
	return Check{Outcome: outcome, Reason: t.String(), ReasonText: t}
}

// SetReason sets the check's reason to t, in English and as said.
func (c *Check) SetReason(t prose.Text) { c.Reason, c.ReasonText = t.String(), t }
