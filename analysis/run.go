package analysis

import (
	"context"
	"runtime"

	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

// Analysis is what an analysis produces: the report and the rules file's text.
type Analysis struct {
	Report *report.Report
	// Caddyfile is every proposed zone in one rate_limit block ("" if none).
	Caddyfile string
	// Proposal is what the rules proposed, whose CaddyfileIn says
	// Caddyfile's header in the report's language.
	Proposal *rules.Proposal
	// Placed is the configuration repository's Caddyfile with that block
	// placed in it, and PlacedDiff the change ("" when not placed:
	// Report.RulesPlacement says why).
	Placed, PlacedDiff string
}

// Options are what an analysis is run with beyond its inputs.
type Options struct {
	// Generator, when set, names the program that wrote the report.
	Generator *report.Generator
	// Langs are the languages the report will be rendered in (Markdown,
	// HTML, the terminal's summary) besides report.json's English: the
	// report's texts are said in those only. Empty means every language.
	Langs []string
}

// Run runs the whole pipeline on in: it loads and detects (Detect), then
// builds the report and proposes the rules (Finish).
func Run(ctx context.Context, in evidence.Inputs, o Options) (*Analysis, error) {
	d, err := Detect(ctx, in)
	if err != nil {
		return nil, err
	}
	return d.Finish(ctx, in, o)
}

// Finish builds the report of d and proposes and backtests the rules for its
// findings, then closes d. in is what d was detected from (Detect, or the last
// of SecondPasses).
func (d *Detected) Finish(ctx context.Context, in evidence.Inputs, o Options) (*Analysis, error) {
	defer d.Close()
	stage(in, "writing the report")
	rep, err := report.Build(ctx, d.Loaded, d.Result, d.TZ, o.Langs...)
	if err != nil {
		return nil, err
	}
	// The report is built: of the detectors' aggregates, the rules need only
	// the findings (they read the requests again, from the spill). The
	// aggregates are let go before the rules' passes and Caddy's matchers
	// allocate, rather than held under them (d is closed on return anyway).
	// A collection now sets the heap's next goal from what is left, not
	// from the aggregates: otherwise the rules' garbage would fill the heap
	// up to twice their size first.
	d.Evidence.Traffic, d.Loaded.Traffic = nil, nil
	runtime.GC()
	stage(in, "proposing and backtesting rules")
	prop, err := d.Propose(ctx, in)
	if err != nil {
		return nil, err
	}
	rep.Generator = o.Generator
	rep.Rules = prop.Rules
	rep.Recommendations = prop.Recommendations
	rep.DataQuality = append(rep.DataQuality, prop.DataQuality...)
	placement, placed, diff := d.placeInConfigRepo(ctx, prop)
	rep.RulesPlacement = placement
	return &Analysis{Report: rep, Caddyfile: prop.Caddyfile, Proposal: prop, Placed: placed, PlacedDiff: diff}, nil
}

// Propose generates and backtests the rate-limit rules for d's findings over
// its window.
func (d *Detected) Propose(ctx context.Context, in evidence.Inputs) (*rules.Proposal, error) {
	ev := d.Evidence
	// The zones are sized on the baseline the detectors compared with: the
	// given one, or the data before the incident's onset, never the incident.
	bFrom, bTo := ev.BaselineFrom, ev.BaselineTo
	if inc := d.Result.Incidents; inc != nil && inc.Baseline.Usable() {
		bFrom, bTo = inc.Baseline.From, inc.Baseline.To
	}
	return rules.Propose(ctx, rules.Input{Findings: d.Result.Findings, Access: in.Access, Requests: d.Loaded.Requests, Site: ev.Site, DurationFormat: in.DurationFormat, Zone: in.LogZone,
		From: ev.From, To: ev.To, BaselineFrom: bFrom, BaselineTo: bTo})
}
