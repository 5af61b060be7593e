package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/ingest"
	"github.com/aftermath-forensics/aftermath/sources/live"
)

// secondPasses completes a pushed-down bundle at dir where the analysis
// needs it: it runs the detectors on the bundle and, while a failing
// stretch's edge or the start of a crawler whose lines were not all read
// lies next to minutes that were only counted, pulls those minutes
// (live.SecondPass, bounded) and looks again. A bundle that was not pushed
// down is left alone.
func secondPasses(ctx context.Context, cfg *live.Config, dir string) error {
	for range live.MaxSecondPasses {
		b, err := bundle.Open(dir)
		if err != nil {
			return err
		}
		if b.Manifest.Pushdown == nil {
			return nil
		}
		edges, err := edgesOf(ctx, b)
		if err != nil {
			return err
		}
		n, err := live.SecondPass(ctx, cfg, dir, edges)
		if err != nil {
			return fmt.Errorf("pushdown's second pass: %w", err)
		}
		if n == 0 {
			return nil
		}
	}
	return nil
}

// edgesOf analyzes the bundle as analyze would (detectInputs) and returns
// where its failing stretches begin (their onset and first failing minute)
// and end, and where each crawler whose start is estimated (its lines were
// read only in some minutes) starts: what a minute only counted could have
// moved. A bundle analyze would refuse (a source given but unusable) has no
// edges: no second pass can make it usable.
func edgesOf(ctx context.Context, b *bundle.Bundle) (live.Edges, error) {
	var edges live.Edges
	d, err := detectInputs(ctx, ingest.FromBundle(b))
	if errors.As(err, new(unusableEvidence)) {
		return edges, nil
	}
	if err != nil {
		return edges, err
	}
	defer d.loaded.Close()
	res := d.res
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
	return edges, nil
}
