package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aftermath-forensics/aftermath/analysis"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/live"
)

// analyzeInputs runs the pipeline (analysis.Run) on in, the report naming
// this build. d, when not nil, is in already loaded and detected (the last
// analysis of a live fetch's second passes, analysis.SecondPasses), which is
// not done again; analyzeInputs closes it. The report's texts are said in
// langs (and report.json's English) only, every language when none is
// given. An error is an *exitError.
func analyzeInputs(ctx context.Context, in evidence.Inputs, d *analysis.Detected, langs ...string) (*analysis.Analysis, error) {
	gen := buildInfo()
	o := analysis.Options{Generator: &gen, Langs: langs}
	var a *analysis.Analysis
	var err error
	if d == nil {
		a, err = analysis.Run(ctx, in, o)
	} else {
		a, err = d.Finish(ctx, in, o)
	}
	if err != nil {
		return nil, pipelineError(in, err)
	}
	return a, nil
}

// pipelineError is err, an error of the pipeline on in, with the exit code it
// makes: a source given but unusable (analysis.UnusableEvidence) exits 2 with
// what was read, or 1 when Loki was unreachable; any other error exits 2.
func pipelineError(in evidence.Inputs, err error) error {
	var unusable analysis.UnusableEvidence
	if !errors.As(err, &unusable) {
		return &exitError{code: exitUsage, err: err}
	}
	if where, ok := live.LokiUnreachable(in.Manifest); ok {
		if nothing := fetchedNothing(&in.Manifest); nothing != "" {
			// No source gave anything: there is nothing to analyze, as
			// for a fetch of nothing, and the sources are named.
			return &exitError{code: exitUsage, err: fmt.Errorf("%w\nnothing to analyze: %s is unreachable; %s", err, where, nothing)}
		}
		// Not the logs' fault, nor the user's: the same exit and last
		// line as when a pushdown's counts found Loki unreachable.
		return &exitError{code: exitIncomplete, err: fmt.Errorf("%w\n%s", err, unreachableLine(where))}
	}
	return &exitError{code: exitUsage, err: err}
}

// rulesFile is where analyze writes the proposed rate_limit block.
const rulesFile = "rules.caddy"

// writeRules writes the Caddyfile snippet, or a comment saying why there is
// none, its comments in lang.
func writeRules(dir string, a *analysis.Analysis, lang string) (string, error) {
	text := rules.NoProposalComment(lang, false)
	if a.Caddyfile != "" {
		var err error
		if text, err = a.Proposal.CaddyfileIn(lang); err != nil {
			return "", err
		}
	}
	p := filepath.Join(dir, rulesFile)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		return "", fmt.Errorf("rules: %w", err)
	}
	// The configuration's Caddyfile with the zones placed, beside it
	// (report.json's rules_placement says where, or why not).
	if a.Placed != "" {
		for name, text := range map[string]string{analysis.PlacedCaddyfile: a.Placed, analysis.PlacedDiff: a.PlacedDiff} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				return "", fmt.Errorf("rules: %w", err)
			}
		}
	}
	return p, nil
}

// unreachableLine is the last line of a command whose live fetch found Loki
// unreachable (live.LokiUnreachable), in every fetch mode.
func unreachableLine(where string) string {
	return "evidence incomplete: " + where + " is unreachable, so no access-log line could be fetched"
}
