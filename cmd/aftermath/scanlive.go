package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/scan"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/live"
)

// liveScan is the evidence of a scan fetched from live sources.
type liveScan struct {
	inputs detect.Inputs
	// notes are the fetches' data-quality notes.
	notes   []sources.QualityNote
	cleanup func()
}

// fetchScan fetches what a scan at now reads from the live sources of cfg:
// the window with the detectors' lookback before it, and each baseline slot,
// each into its own bundle in a temporary directory; never the days between
// them. Each range is pulled raw (pushdown is for one long window, and a
// slot is as long as the window); bundle.yaml's records of every range tell
// the scan which stretches of access log are complete.
func fetchScan(ctx context.Context, cfg *live.Config, sc scan.Config, now time.Time, stderr io.Writer) (*liveScan, error) {
	dir, err := os.MkdirTemp("", "aftermath-scan-")
	if err != nil {
		return nil, err
	}
	ls := &liveScan{cleanup: func() { os.RemoveAll(dir) }}
	sctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	type fetchRange struct {
		name     string
		from, to time.Time
		before   time.Duration // raw lines before from, for the detectors
	}
	w := sc.Window(now)
	ranges := []fetchRange{{name: "window", from: w.From, to: w.To, before: sc.Lookback}}
	for i, s := range sc.Slots(now) {
		ranges = append(ranges, fetchRange{name: fmt.Sprintf("slot-%d", i+1), from: s.From, to: s.To})
	}
	prog := newProgressPrinter(stderr, true)
	defer prog.close()
	for i, r := range ranges {
		rc := *cfg
		before := live.Duration(r.before)
		rc.Baseline = &before
		// Never pushed down: scan windows and slots are at most a day long.
		rawUpTo := live.Duration(r.to.Sub(r.from) + r.before)
		rc.PushdownAfter = &rawUpTo
		if i > 0 {
			// Configuration changes are the window's business only.
			rc.Changes = live.Changes{}
		}
		out := filepath.Join(dir, r.name)
		m, notes, err := live.Fetch(sctx, &rc, r.from, r.to, out, prog.report)
		for _, n := range notes {
			n.Message = r.name + " " + r.from.Format(time.RFC3339) + ": " + n.Message
			ls.notes = append(ls.notes, n)
		}
		if err != nil {
			ls.cleanup()
			if errors.Is(err, context.Canceled) {
				return nil, &exitError{code: exitIncomplete, err: err}
			}
			return nil, &exitError{code: exitUsage, err: err}
		}
		b, err := bundle.Open(out)
		if err != nil {
			ls.cleanup()
			return nil, &exitError{code: exitUsage, err: err}
		}
		in := detect.InputsFromBundle(b)
		if i == 0 {
			ls.inputs = in
			continue
		}
		ls.inputs.Manifest.Queries = append(ls.inputs.Manifest.Queries, m.Queries...)
		ls.inputs.Access = append(ls.inputs.Access, in.Access...)
		ls.inputs.Metrics = append(ls.inputs.Metrics, in.Metrics...)
		ls.inputs.Logs = append(ls.inputs.Logs, in.Logs...)
	}
	return ls, nil
}
