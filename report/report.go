// Package report turns findings and evidence into the postmortem an on-call
// engineer takes away: it assembles the timeline, ranks the causes, measures the
// impact, and renders them as Markdown (English or Korean), one self-contained
// HTML page with inline SVG charts, report.json (schema aftermath.report/v1) and a
// terminal summary.
//
// Build assembles a Report from what detect produced; WriteAll renders it. Every
// renderer treats text that came from a log line (paths, user agents, languages,
// header values) as attacker-controlled: Markdown escapes it (MarkdownCell), HTML
// goes through html/template, the SVG charts carry no log text at all, JSON is
// encoded by encoding/json and the terminal strips control characters.
package report

import (
	"fmt"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/rules/rule"
	"github.com/aftermath-forensics/aftermath/sources"
)

// Schema identifies the report.json format; outside tests read it.
const Schema = "aftermath.report/v1"

// Report is report.json. Field names are a contract (design.md, "Report"); the
// human texts in it (timeline, causes, caveats) are English, whatever language
// the Markdown and HTML were rendered in.
type Report struct {
	// Schema is always "aftermath.report/v1".
	Schema string `json:"schema"`
	// Generator names the aftermath build that wrote the report: a reader of
	// an old report.json can tell which version's detectors produced it. The
	// caller sets it after Build (the build is the command's to know).
	Generator *Generator `json:"generator,omitempty"`
	// Window is the analysed period.
	Window Window `json:"window"`
	// Coverage says, for each source (access log, php-fpm metrics, CPU,
	// Caddy's and php-fpm's logs), the part of the window its evidence really
	// covers: first and last evidence, the stretches without any (a missing
	// head, gaps, a missing tail) and inputs cut short. The counts below hold
	// for the covered part only; the rest is unknown, never quiet.
	Coverage []sources.Coverage `json:"coverage"`
	// Impact is what users saw.
	Impact Impact `json:"impact"`
	// Findings are the detectors' findings, as detect produced them.
	Findings []detect.Finding `json:"findings"`
	// Checks say what every detector concluded, found something or not.
	Checks []detect.Check `json:"checks"`
	// Timeline lists the key moments in time order, each tied to a finding.
	Timeline []Moment `json:"timeline"`
	// Causes ranks the findings that explain the outage: trigger, enabling
	// change, mechanisms, then symptoms (never a root cause).
	Causes []Cause `json:"causes"`
	// Rules are the generated Caddy rate_limit rules with their backtests. The
	// caller sets them after Build (rules are generated from the same findings).
	Rules []rule.Rule `json:"rules"`
	// RulesPlacement says where the rules' zones go in the configuration
	// repository's Caddyfile, or why they were not placed there (nil when
	// there is no rule).
	RulesPlacement *RulesPlacement `json:"rules_placement,omitempty"`
	// Recommendations are configuration advice with its arithmetic; set by the
	// caller like Rules.
	Recommendations []rule.Recommendation `json:"recommendations"`
	// DataQuality lists what could not be read or checked: caveats on every number.
	DataQuality []sources.QualityNote `json:"data_quality"`
	// Changes are the configuration changes that were read (git, changes.yaml,
	// metrics), in time order: the timeline shows the one a config_change finding
	// blames and those deployed after it.
	Changes []sources.Change `json:"changes"`
	// Evidence summarises the raw inputs (what was read, per-minute counts,
	// metric series), enough to redraw the charts.
	Evidence Evidence `json:"evidence"`

	// incidents are the failing stretches detect found (nil when the report
	// was assembled by hand): the impact leads with the worst.
	incidents *detect.Incidents
	// unread is the part of the failing stretches whose raw lines could not
	// be pulled and the checks it left unjudged (nil when none): the
	// summary says so, data_quality has it in words.
	unread *detect.UnreadStretch
	// proseErr is the first message Assemble could not say.
	proseErr error
	// printers are Assemble's while it runs, one per language, zone and day.
	printers map[printerKey]printer
	// saidIn lists the languages Assemble says the texts in (Build's langs):
	// nil means every language (Langs). A Markdown or HTML rendering in
	// another language is an error rather than English under a Korean title.
	saidIn []string
}

// Generator is the program that wrote a report: its version and the commit,
// build date and Go toolchain it was built from ("" where unknown).
type Generator struct {
	// Name is always "aftermath".
	Name string `json:"name"`
	// Version is `git describe --always --dirty` when built by the Makefile
	// ("v0.4.1-3-gabc1234-dirty"), the module version from go install, or
	// "(devel)".
	Version string `json:"version"`
	// Commit is the full commit hash the binary was built from.
	Commit string `json:"commit,omitempty"`
	// Modified says the tree had uncommitted changes at build time.
	Modified bool `json:"modified,omitempty"`
	// BuildDate is when the binary was built (RFC3339), where the build said.
	BuildDate string `json:"build_date,omitempty"`
	// GoVersion is the toolchain that compiled it ("go1.26.8").
	GoVersion string `json:"go_version,omitempty"`
}

// Window is the analysed period and the zone its local times are shown in.
type Window struct {
	// From and To bound the window (RFC3339).
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// TZ is the IANA zone local times are shown in ("Asia/Seoul").
	TZ string `json:"tz"`
}

// Impact is what users saw. Counts cover the whole window; the PHP share covers
// [Start, End), the stretch the upstream_errors finding marks as failing.
type Impact struct {
	// Start and End bound the failing stretch (the worst incident's, placed
	// by when requests arrived), or the window when nothing failed beyond
	// the usual.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Onset is when the worst incident began: its first failing minute, or
	// the pool saturation that ran into it (zero when there is none).
	Onset time.Time `json:"onset,omitzero"`
	// StartKnown and EndKnown are written, as false, only when the access
	// log has no lines right before Start or right after End (its head or
	// tail is missing, a gap, a file cut short): the failures may have begun
	// earlier or gone on later, and Start or End is where the log begins or
	// stops, neither an onset nor a recovery. Absent: the log shows the edge.
	StartKnown *bool `json:"start_known,omitempty"`
	EndKnown   *bool `json:"end_known,omitempty"`
	// StartBound and EndBound go with an unknown edge: the stretch of the
	// access log without lines it runs into, and the source that bounds the
	// failing stretch instead, where one does ("metrics": php-fpm's pool
	// saturated until or from "at").
	StartBound *detect.Edge `json:"start_bound,omitempty"`
	EndBound   *detect.Edge `json:"end_bound,omitempty"`
	// Unlogged lists the stretches inside [Start, End) without access-log
	// lines: unknown minutes, not in the counts.
	Unlogged []sources.Stretch `json:"unlogged,omitempty"`
	// OtherStretches lists the window's other incidents, in time order:
	// separate stretches of failures, never merged into the worst.
	OtherStretches []detect.Incident `json:"other_stretches,omitempty"`
	// Baseline is what the counts were compared with: never a period that
	// holds the incident; source "none" when no usable baseline existed.
	Baseline *detect.Baseline `json:"baseline,omitempty"`
	// StatusCounts counts responses in the window by HTTP status ("503": 8001).
	StatusCounts map[string]int `json:"status_counts"`
	// Requests is the number of access-log lines in the window.
	Requests int `json:"requests"`
	// FailedRequests counts what reached no one: 5xx, 429, and 2xx/3xx logged
	// after the clients' timeout (LateRequests).
	FailedRequests int `json:"failed_requests"`
	// LateRequests counts successes logged after the clients' timeout.
	LateRequests int `json:"late_requests"`
	// PHPRequests counts requests in [Start, End) that needed PHP
	// (detect.Minute.NeededPHP): those PHP answered and the 502, 503 and 504
	// Caddy made in its place. A rate limit's 429 refused a request before
	// PHP: it is among FailedRequests, not here.
	PHPRequests int `json:"php_requests"`
	// PHPFailed counts the failed ones among PHPRequests
	// (detect.Minute.FailedPHP).
	PHPFailed int `json:"php_failed"`
	// PHPFailedShare is PHPFailed / PHPRequests (0-1; 0 when nothing needed PHP).
	PHPFailedShare float64 `json:"php_failed_share"`
	// Caveats say what the counts leave out (English; rendered per language).
	Caveats []string `json:"caveats"`

	caveats []phrase
}

// Moment is one timeline row.
type Moment struct {
	// Time is when it happened (RFC3339 in UTC, as every time of
	// report.json; the prose renders it in the window's zone).
	Time time.Time `json:"time"`
	// Text says what happened, in English.
	Text string `json:"text"`
	// Finding is the id of the finding whose evidence shows the moment.
	Finding string `json:"finding"`
	// Event names the kind of moment for tools: burst_onset, saturation,
	// self_call, queue_old_cap, queue_peak, queue_cap, queue_deep,
	// health_starved, failures_start, failure_peak, last_failure, burst_end,
	// pinning, config_change, deploy.
	Event detect.Event `json:"event"`

	texts phrase
}

// Cause is a ranked explanation that points at a finding.
type Cause struct {
	// Finding is the id of the finding explained.
	Finding string `json:"finding"`
	// Kind is that finding's kind.
	Kind detect.Kind `json:"kind"`
	// Rank orders causes from 1 (the trigger when there is one).
	Rank int `json:"rank"`
	// Role is trigger, enabler, mechanism or symptom.
	Role detect.Role `json:"role"`
	// Explanation tells the finding's part in the story with its numbers (English).
	Explanation string `json:"explanation"`

	texts phrase
}

// text returns the moment's text in lang (English when not assembled in lang).
func (m Moment) text(lang string) string {
	if s := m.texts.in(lang); s != "" {
		return s
	}
	return m.Text
}

func (c Cause) text(lang string) string {
	if s := c.texts.in(lang); s != "" {
		return s
	}
	return c.Explanation
}

// location loads the report's zone.
func (r *Report) location() (*time.Location, error) {
	if r.Window.TZ == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(r.Window.TZ)
	if err != nil {
		return nil, fmt.Errorf("report: time zone %q: %w", r.Window.TZ, err)
	}
	return loc, nil
}

// incidentDay is the day the report's prose dates its times against: the
// impact's start, else the window's.
func (r *Report) incidentDay() time.Time {
	if r.Impact.Start.IsZero() {
		return r.Window.From
	}
	return r.Impact.Start
}

// Assemble derives the impact, the timeline and the ranked causes from the
// findings and the evidence summary, their texts in the languages Build was
// given. Build calls it; call it again after changing Findings or Evidence
// by hand.
func (r *Report) Assemble() error {
	loc, err := r.location()
	if err != nil {
		return err
	}
	r.proseErr, r.printers = nil, nil
	r.Impact = assembleImpact(r, loc)
	r.Timeline = assembleTimeline(r, loc)
	r.Causes = assembleCauses(r, loc)
	r.printers = nil
	if r.proseErr != nil {
		return fmt.Errorf("report: %w", r.proseErr)
	}
	return nil
}

// normalize makes every list non-null so consumers can iterate without checks.
func (r *Report) normalize() {
	r.Schema = Schema
	if r.Findings == nil {
		r.Findings = []detect.Finding{}
	}
	if r.Checks == nil {
		r.Checks = []detect.Check{}
	}
	if r.Timeline == nil {
		r.Timeline = []Moment{}
	}
	if r.Causes == nil {
		r.Causes = []Cause{}
	}
	if r.Rules == nil {
		r.Rules = []rule.Rule{}
	}
	if r.Recommendations == nil {
		r.Recommendations = []rule.Recommendation{}
	}
	if r.DataQuality == nil {
		r.DataQuality = []sources.QualityNote{}
	}
	if r.Coverage == nil {
		r.Coverage = []sources.Coverage{}
	}
	if r.Changes == nil {
		r.Changes = []sources.Change{}
	}
	if r.Impact.StatusCounts == nil {
		r.Impact.StatusCounts = map[string]int{}
	}
	if r.Impact.Caveats == nil {
		r.Impact.Caveats = []string{}
	}
	r.Evidence.normalize()
	r.utcTimes()
}

// utcTimes writes every time of report.json in UTC ("Z"), the rule the
// findings, the impact and the evidence already follow (detect states its
// times in UTC); window.tz names the zone the prose prints them in. The
// changes keep the offset their source wrote (a changes.yaml in +09:00, a
// commit's author date), so they, the findings' copies of them and the
// timeline moments taken from them are converted here, at the one place
// report.json is written from.
func (r *Report) utcTimes() {
	for i := range r.Timeline {
		r.Timeline[i].Time = r.Timeline[i].Time.UTC()
	}
	for i := range r.Changes {
		r.Changes[i].Time = r.Changes[i].Time.UTC()
	}
	for i := range r.Findings {
		if c := r.Findings[i].Change; c != nil && c.Time.Location() != time.UTC {
			utc := *c
			utc.Time = c.Time.UTC()
			r.Findings[i].Change = &utc
		}
	}
}

// RulesPlacement is where analyze placed the rules' zones in the Caddyfile
// of the configuration repository in the evidence (as rules --caddyfile
// does), or why it did not.
type RulesPlacement struct {
	// Caddyfile is the Caddyfile found, named from its repository's
	// directory ("" when none was found).
	Caddyfile string `json:"caddyfile,omitempty"`
	// Site is the site block the zones went into, its address(es) as
	// written, and Line the line of its "{" in Caddyfile; Why says why that
	// site block served the logged requests.
	Site string `json:"site,omitempty"`
	Line int    `json:"line,omitempty"`
	Why  string `json:"why,omitempty"`
	// Placed and Diff name the files written beside the rules file: the
	// Caddyfile with the zones placed (accepted by Caddy's adapter) and the
	// change as a unified diff.
	Placed string `json:"placed,omitempty"`
	Diff   string `json:"diff,omitempty"`
	// NotPlaced says why the zones were not placed ("" when they were);
	// NotPlacedText says it in the report's language (a Caddyfile's error
	// from Caddy or the file system reads as written).
	NotPlaced     string     `json:"not_placed,omitempty"`
	NotPlacedText prose.Text `json:"-"`
	// CaddyWarnings are what Caddy's adapter warned about the placed
	// Caddyfile (a deprecated option, formatting): the site's own file, not
	// the zones, but worth fixing while it is open.
	CaddyWarnings []string `json:"caddy_warnings,omitempty"`
}
