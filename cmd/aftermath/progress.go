package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/live"
)

// progressPrinter shows a long command's progress on a terminal: one line per
// stage (reading the access log, detecting, proposing rules; a fetch's
// phases), redrawn in place at most ten times a second, with the bytes read
// and the percent done where the total is known. It draws with
// schollz/progressbar; on anything but a terminal, or with --quiet, it prints
// nothing. Every command's stages go through it: it is ingest.Progress for
// reading evidence, and report for live.Fetch's phases.
type progressPrinter struct {
	w       io.Writer
	enabled bool
	mu      sync.Mutex
	bar     *progressbar.ProgressBar
	phase   string // the fetch phase the bar shows ("" for a stage)
}

var _ evidence.Progress = (*progressPrinter)(nil)

// progressThrottle is the least time between two redraws.
const progressThrottle = 100 * time.Millisecond

func newProgressPrinter(w io.Writer, enabled bool) *progressPrinter {
	return &progressPrinter{w: w, enabled: enabled && isTerminal(w)}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newBar starts a line: a bar to max (a spinner when max is unknown, <= 0).
// A counted stage's bar shows the bytes read, with their rate and the time
// left; a fetch phase's description holds its own counts and ETA
// (formatProgress); other stages show their name and the time spent.
func (p *progressPrinter) newBar(max int64, counted bool, desc string) {
	if max <= 0 {
		max = -1
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionThrottle(progressThrottle),
		progressbar.OptionSetWidth(24),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetRenderBlankState(true),
	}
	if counted {
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(max > 0))
	} else {
		opts = append(opts, progressbar.OptionSetPredictTime(false), progressbar.OptionSetElapsedTime(false))
	}
	p.bar = progressbar.NewOptions64(max, opts...)
}

// endLocked ends the line on screen, if any: a finished bar at 100%, any
// other as it stands (a stage ends when the next begins, a fetch phase
// cut short stays short).
func (p *progressPrinter) endLocked(finished bool) {
	if p.bar == nil {
		return
	}
	if finished && p.bar.GetMax64() > 0 {
		_ = p.bar.Finish()
	} else {
		_ = p.bar.RenderBlank() // the last state, unthrottled
	}
	_ = p.bar.Exit()
	fmt.Fprintln(p.w)
	p.bar, p.phase = nil, ""
}

// Stage starts a stage of name: totalBytes to read (0: unknown; below 0:
// nothing to count, e.g. "detecting").
func (p *progressPrinter) Stage(name string, totalBytes int64) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLocked(true)
	p.newBar(totalBytes, totalBytes >= 0, name)
}

// Read adds n bytes read to the current stage.
func (p *progressPrinter) Read(n int64) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Add64(n)
	}
}

// report shows a fetch's progress (live.Fetch's callback): one line per
// source and phase, its units done of the total where known.
func (p *progressPrinter) report(pr live.Progress) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	key := pr.Source + " " + pr.Phase
	desc := formatProgress(pr, time.Now())
	if p.bar == nil || p.phase != key {
		p.endLocked(false)
		p.newBar(int64(pr.Total), false, desc)
		p.phase = key
	}
	p.bar.Describe(desc)
	if pr.Total > 0 {
		_ = p.bar.Set(pr.Done)
	} else {
		_ = p.bar.Set64(pr.Count)
	}
	if pr.Finished {
		p.endLocked(true)
	}
}

// close ends the line on screen: what follows (a summary) starts on its own.
// A stage was done (the command moved on); a fetch phase not reported
// finished is left as it stands.
func (p *progressPrinter) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLocked(p.phase == "")
}

// stage tells in's Progress, when there is one, that a stage without bytes
// to count began.
func stage(in evidence.Inputs, name string) {
	if in.Progress != nil {
		in.Progress.Stage(name, -1)
	}
}

// endProgress ends in's progress line before a command prints its results.
func endProgress(in evidence.Inputs) {
	if p, ok := in.Progress.(*progressPrinter); ok {
		p.close()
	}
}
