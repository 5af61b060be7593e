package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
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

// edgesOf analyzes the bundle and returns where its failing stretches begin
// (their onset and first failing minute) and end, and where each crawler
// whose start is estimated (its lines were read only in some minutes)
// starts: what a minute only counted could have moved.
func edgesOf(ctx context.Context, b *bundle.Bundle) (live.Edges, error) {
	var edges live.Edges
	loc := time.UTC
	if tz := b.Manifest.Timezone; tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return edges, fmt.Errorf("time zone %q: %w", tz, err)
		}
		loc = l
	}
	loaded, err := ingest.Load(ctx, ingest.FromBundle(b), loc, detect.NewAggregate)
	if err != nil {
		return edges, err
	}
	defer loaded.Close()
	ev := detect.EvidenceOf(loaded)
	res, err := detect.Run(ctx, ev, detect.Detectors())
	if err != nil {
		return edges, err
	}
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
