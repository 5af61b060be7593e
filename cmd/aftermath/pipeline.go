package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources/ingest"
	"github.com/aftermath-forensics/aftermath/sources/live"
)

// analysis is what analyze produces: the report and the rules file's text.
type analysis struct {
	report *report.Report
	// caddyfile is every proposed zone in one rate_limit block ("" if none).
	caddyfile string
}

// analyzeInputs runs the pipeline sources -> detect -> (rules, report) on in.
// d, when not nil, is in already loaded and detected (loadAndDetect: the last
// analysis of a live fetch's second passes), which is not done again;
// analyzeInputs closes it.
func analyzeInputs(ctx context.Context, in ingest.Inputs, d *detected) (*analysis, error) {
	if d == nil {
		var err error
		if d, err = loadAndDetect(ctx, in); err != nil {
			return nil, err
		}
	}
	defer d.loaded.Close()
	stage(in, "writing the report")
	rep, err := report.Build(ctx, d.loaded, d.ev, d.res, d.tz)
	if err != nil {
		return nil, err
	}
	stage(in, "proposing and backtesting rules")
	prop, err := d.propose(ctx, in)
	if err != nil {
		return nil, err
	}
	gen := buildInfo()
	rep.Generator = &gen
	rep.Rules = prop.Rules
	rep.Recommendations = prop.Recommendations
	rep.DataQuality = append(rep.DataQuality, prop.DataQuality...)
	return &analysis{report: rep, caddyfile: prop.Caddyfile}, nil
}

// detected is the half of the pipeline analyze and rules share: the evidence
// loaded and the detectors run on it.
type detected struct {
	tz     string // the time zone's name: in.Manifest.Timezone, else "UTC"
	loc    *time.Location
	loaded *ingest.Loaded // the caller closes it
	ev     *detect.Evidence
	res    *detect.Result
}

// close releases what d loaded; a nil d holds nothing.
func (d *detected) close() {
	if d != nil {
		d.loaded.Close()
	}
}

// loadAndDetect loads in (keeping the requests for the rules, which read them
// again) and runs every detector on it (detectInputs). The caller closes
// d.loaded.
func loadAndDetect(ctx context.Context, in ingest.Inputs) (*detected, error) {
	// The rules read the requests again: kept in a spill, they are not parsed twice.
	in.KeepRequests = true
	return detectInputs(ctx, in)
}

// runDetectors is detect.Run; a test counts the runs through it.
var runDetectors = detect.Run

// unusableEvidence lists the sources given but unusable
// (ingest.Loaded.NoEvidence), one message each.
type unusableEvidence []string

func (u unusableEvidence) Error() string { return strings.Join(u, "\n") }

// detectInputs loads in in the bundle's time zone, adds the notes a live
// bundle's manifest carries, and runs every detector. A source given but
// unusable is not a quiet site: no detector runs, and the error (an
// unusableEvidence) makes the caller exit 2 with what was read. The caller
// closes d.loaded.
func detectInputs(ctx context.Context, in ingest.Inputs) (*detected, error) {
	tz := in.Manifest.Timezone
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", tz, err)
	}
	loaded, err := ingest.Load(ctx, in, loc, detect.NewAggregate)
	if err != nil {
		return nil, err
	}
	if len(loaded.NoEvidence) > 0 {
		loaded.Close()
		if where, ok := live.LokiUnreachable(in.Manifest); ok {
			if nothing := fetchedNothing(&in.Manifest); nothing != "" {
				// No source gave anything: there is nothing to analyze, as
				// for a fetch of nothing, and the sources are named.
				return nil, &exitError{code: exitUsage, err: fmt.Errorf("%w\nnothing to analyze: %s is unreachable; %s", unusableEvidence(loaded.NoEvidence), where, nothing)}
			}
			// Not the logs' fault, nor the user's: the same exit and last
			// line as when a pushdown's counts found Loki unreachable.
			return nil, &exitError{code: exitIncomplete, err: fmt.Errorf("%w\n%s", unusableEvidence(loaded.NoEvidence), unreachableLine(where))}
		}
		return nil, &exitError{code: exitUsage, err: unusableEvidence(loaded.NoEvidence)}
	}
	// A bundle fetched live says in its manifest which queries were partial.
	loaded.DataQuality = append(loaded.DataQuality, live.ManifestNotes(in.Manifest)...)
	ev := detect.EvidenceOf(loaded)
	stage(in, "detecting")
	res, err := runDetectors(ctx, ev, detect.Detectors())
	if err != nil {
		loaded.Close()
		return nil, err
	}
	return &detected{tz: tz, loc: loc, loaded: loaded, ev: ev, res: res}, nil
}

// propose generates and backtests the rate-limit rules for the findings.
func (d *detected) propose(ctx context.Context, in ingest.Inputs) (*rules.Proposal, error) {
	ev := d.ev
	// The zones are sized on the baseline the detectors compared with: the
	// given one, or the data before the incident's onset, never the incident.
	bFrom, bTo := ev.BaselineFrom, ev.BaselineTo
	if inc := d.res.Incidents; inc != nil && inc.Baseline.Usable() {
		bFrom, bTo = inc.Baseline.From, inc.Baseline.To
	}
	return rules.Propose(ctx, rules.Input{Findings: d.res.Findings, Access: in.Access, Requests: d.loaded.Requests, Site: ev.Site, DurationFormat: in.DurationFormat, Zone: in.LogZone,
		From: ev.From, To: ev.To, BaselineFrom: bFrom, BaselineTo: bTo})
}

// rulesFile is where analyze writes the proposed rate_limit block.
const rulesFile = "rules.caddy"

// writeRules writes the Caddyfile snippet, or a comment saying why there is none.
func writeRules(dir string, a *analysis) (string, error) {
	text := a.caddyfile
	if text == "" {
		text = "# aftermath proposed no rate_limit zone for this incident: no crawler_burst finding\n# justified one (see report.json: rules, checks and data_quality).\n"
	}
	p := filepath.Join(dir, rulesFile)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		return "", fmt.Errorf("rules: %w", err)
	}
	return p, nil
}

// unreachableLine is the last line of a command whose live fetch found Loki
// unreachable (live.LokiUnreachable), in every fetch mode.
func unreachableLine(where string) string {
	return "evidence incomplete: " + where + " is unreachable, so no access-log line could be fetched"
}
