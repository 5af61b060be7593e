package analysis

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/live"
)

// SecondPasses completes a pushed-down bundle at dir where the analysis
// needs it: it analyzes the bundle (the inputs inputsOf makes of it) and,
// while a failing stretch's edge or the start of a crawler whose lines were
// not all read lies next to minutes that were only counted, pulls those
// minutes (live.SecondPass, bounded) and analyzes again: each pass may move
// an edge onto minutes still counted, which only a new analysis shows. A
// bundle that was not pushed down is left alone.
//
// With final, the analysis of the bundle as the passes leave it is returned
// (loaded and detected as Detect does, for Finish): the last
// pass's own analysis when it pulled nothing and recorded nothing, so the
// detectors run once per state of the bundle, never twice on the same. A
// pass whose pull failed pulled nothing too, but bundle.yaml now says so
// (its minutes stay counted), and the report must warn of it: the bundle is
// analyzed once more, and no pass follows (it would ask for the same
// minutes). Without final (fetch, which analyzes nothing) it returns nil,
// and the bundle is not analyzed after the last pass. A nil result with
// final means the caller analyzes: the bundle was not pushed down, or
// analyze would refuse it.
func SecondPasses(ctx context.Context, cfg *live.Config, dir string, inputsOf func(*bundle.Bundle) evidence.Inputs, final bool) (*Detected, error) {
	failed := false // the last pass's pull failed: analyze once more, pass no more
	for pass := 0; ; pass++ {
		if pass == live.MaxSecondPasses && !final {
			return nil, nil
		}
		b, err := bundle.Open(dir)
		if err != nil {
			return nil, err
		}
		if b.Manifest.Pushdown == nil {
			return nil, nil
		}
		in := inputsOf(b)
		var d *Detected
		if final {
			d, err = Detect(ctx, in)
		} else {
			d, err = detectInputs(ctx, in)
		}
		if errors.As(err, new(UnusableEvidence)) {
			// No second pass can make it usable; analyze says why.
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if pass == live.MaxSecondPasses || failed {
			return d, nil
		}
		n, err := live.SecondPass(ctx, cfg, dir, edgesOf(d.Result))
		if errors.Is(err, live.ErrSecondPassFailed) {
			failed, err = true, nil
		}
		if err == nil && n == 0 && final && !failed {
			return d, nil
		}
		d.Close()
		if err != nil {
			return nil, fmt.Errorf("pushdown's second pass: %w", err)
		}
		if n == 0 && !(failed && final) {
			return nil, nil
		}
	}
}

// edgesOf returns where an analysis's failing stretches begin (their onset
// and first failing minute) and end, and where each crawler whose start is
// estimated (its lines were read only in some minutes) starts: what a minute
// only counted could have moved.
func edgesOf(res *detect.Result) live.Edges {
	var edges live.Edges
	if inc := res.Incidents; inc != nil {
		for _, in := range inc.List {
			edges.Starts = append(edges.Starts, in.Onset, in.Start)
			edges.Ends = append(edges.Ends, in.End)
		}
	}
	for _, f := range res.Findings {
		for _, e := range f.Estimated {
			if slices.Contains(e.Figures, "start") {
				edges.Starts = append(edges.Starts, f.Start)
			}
		}
	}
	return edges
}
