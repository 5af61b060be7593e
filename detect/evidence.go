package detect

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/fpmlog"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// Evidence is everything the detectors read. Any part may be missing; a detector
// that needs a missing part reports "could not run" instead of guessing.
type Evidence struct {
	// From and To bound the incident window.
	From, To time.Time
	// BaselineFrom and BaselineTo bound the period thresholds are relative to;
	// zero means "the data before From".
	BaselineFrom, BaselineTo time.Time
	Site                     sources.Site
	// Traffic is the access log, aggregated (nil when no log was given).
	Traffic *Traffic
	// Metrics answers PromQL over php-fpm, Caddy and CPU series (nil when none).
	Metrics metrics.Querier
	// Health lists the proxy's own health-checker events, if its log was given.
	Health []sources.HealthEvent
	// HealthLogGiven is true when a proxy log was read (even if it had no event).
	HealthLogGiven bool
	// FPM lists php-fpm's own overload warnings, if its log was given.
	FPM         []fpmlog.Event
	FPMLogGiven bool
	Changes     []sources.Change
	// Loc renders local times in summaries.
	Loc *time.Location
	// Pool holds the metric series; Run loads it from Metrics when nil.
	Pool *Pool
	// Incidents are the stretches of the window where clients were failed,
	// and the baseline before them; Run finds them when nil.
	Incidents *Incidents
	// Coverage is what each source really covers of the window (ingest
	// measures it): an incident's edge that runs into minutes the access
	// log has no lines for is unknown, never a recovery (Unlogged).
	Coverage []sources.Coverage
	// PullFailed are the minutes whose raw lines a pushed-down fetch
	// could not pull (bundle.yaml's pushdown.pull_failed): counted, not
	// read, and not because they were ordinary.
	PullFailed []bundle.Window
}

// NewAggregate is the ingest.NewAggregate the detectors read: the access log
// streams into a Traffic.
func NewAggregate(site sources.Site, from, to time.Time) evidence.Aggregate {
	return NewTraffic(site, from, to)
}

// EvidenceOf is the Evidence of what ingest.Load read with NewAggregate (its
// Traffic is nil when the access log was not read into one).
func EvidenceOf(l *evidence.Loaded) *Evidence {
	ev := &Evidence{From: l.From, To: l.To, BaselineFrom: l.BaselineFrom, BaselineTo: l.BaselineTo, Site: l.Site,
		Health: l.Health, HealthLogGiven: l.HealthLogGiven, FPM: l.FPM, FPMLogGiven: l.FPMLogGiven, Changes: l.Changes, Loc: l.Loc, Coverage: l.Coverage}
	if l.Metrics != nil {
		ev.Metrics = l.Metrics
	}
	if t, ok := l.Traffic.(*Traffic); ok {
		ev.Traffic = t
	}
	if l.Pushdown != nil {
		ev.PullFailed = l.Pushdown.PullFailed
	}
	return ev
}

// Detector is one named check of design.md's table.
type Detector interface {
	// Name is the finding kind the detector produces.
	Name() Kind
	// Detect examines the evidence and prior, the findings so far of the
	// kinds its Spec requires (none for a detector not registered). It
	// always returns a Check saying what it concluded.
	Detect(ctx context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error)
}

// Detectors lists every registered detector in the order they run (Specs):
// each after the kinds it requires.
func Detectors() []Detector {
	var out []Detector
	for _, s := range Specs() {
		out = append(out, s.New())
	}
	return out
}

// Result is the outcome of all detectors.
type Result struct {
	Findings    []Finding
	Checks      []Check
	DataQuality []sources.QualityNote
	Pool        *Pool
	// Incidents are the failing stretches the detectors were scoped by.
	Incidents *Incidents
	// Summary is what the window's evidence amounts to, with these findings.
	Summary *Summary
	// Unread, when set, is the part of the failing stretches whose raw
	// lines could not be pulled, and the checks it left unjudged or
	// estimated (pullfailed.go).
	Unread *UnreadStretch
}

// Run runs every detector over given and summarizes the window. given is not
// written: Run fills in what it lacks (Loc, Pool, Incidents) on its own copy.
// The access log's aggregate (Traffic) is shared with that copy and settled
// by detection in two places: finding the incidents counts late answers with
// an estimated client timeout when the site gives none (FindIncidents; once
// per Traffic, a later Run reuses it), and the crawler detector records the
// actors it joined over several fingerprints (ClusterOf); the Summary is
// taken after both.
func Run(ctx context.Context, given *Evidence, detectors []Detector) (*Result, error) {
	run := *given
	ev := &run
	if ev.Loc == nil {
		ev.Loc = time.UTC
	}
	res := &Result{}
	if ev.Pool == nil && ev.Metrics != nil {
		// The incident (and so the baseline) is not known yet: load from
		// the earliest a baseline can start.
		from := ev.From.Add(-recentBaseline)
		if !ev.BaselineFrom.IsZero() && ev.BaselineTo.After(ev.BaselineFrom) {
			if b := later(ev.BaselineFrom, ev.BaselineTo.Add(-recentBaseline)); b.Before(from) {
				from = b
			}
		}
		pool, err := LoadPool(ctx, ev.Metrics, from, ev.To)
		if err != nil {
			return nil, err
		}
		ev.Pool = pool
	}
	res.Pool = ev.Pool
	res.Incidents = ev.incidents()
	res.DataQuality = append(res.DataQuality, res.Incidents.Notes...)
	unread := ev.unreadStretch(res.Incidents)
	for _, d := range detectors {
		fs, check, err := d.Detect(ctx, ev, required(res.Findings, d.Name()))
		if err != nil {
			return nil, fmt.Errorf("detector %s: %w", d.Name(), err)
		}
		check.Name = d.Name()
		unread.judge(d.Name(), fs, &check)
		for i := range fs {
			fs[i].Start, fs[i].End = fs[i].Start.UTC(), fs[i].End.UTC()
			fs[i].ID = fmt.Sprintf("%s-%d", fs[i].Kind, countKind(res.Findings, fs[i].Kind)+1)
			res.Findings = append(res.Findings, fs[i])
			check.Findings = append(check.Findings, fs[i].ID)
		}
		if check.Outcome == "" {
			check.Outcome = OutcomeFound
			if len(fs) == 0 {
				check.Outcome = OutcomeNotInteresting
			}
		}
		if check.Outcome == OutcomeCouldNotRun {
			why := check.ReasonText
			if c, _, _ := why.Message(); c == nil {
				why = prose.Plainly(check.Reason)
			}
			res.DataQuality = append(res.DataQuality, sources.Note(string(d.Name()), sources.SeverityInfo, Messages.Say("check.could_not_run", why)))
		}
		res.Checks = append(res.Checks, check)
	}
	if n := unread.note(); n != nil {
		res.DataQuality = append(res.DataQuality, *n)
		res.Unread = unread
	}
	res.Summary = summarize(ev, res.Pool, res.Findings)
	return res, nil
}

// required are the findings of the kinds kind requires, in run order.
func required(fs []Finding, kind Kind) []Finding {
	reqs := Requirements(kind)
	var out []Finding
	for _, f := range fs {
		if slices.Contains(reqs, f.Kind) {
			out = append(out, f)
		}
	}
	return out
}

func countKind(fs []Finding, kind Kind) int {
	n := 0
	for _, f := range fs {
		if f.Kind == kind {
			n++
		}
	}
	return n
}

// first returns the first finding of kind, or nil.
func first(fs []Finding, kind Kind) *Finding {
	for i := range fs {
		if fs[i].Kind == kind {
			return &fs[i]
		}
	}
	return nil
}
