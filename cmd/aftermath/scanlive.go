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

	"github.com/aftermath-forensics/aftermath/detect/scan"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/live"
)

// liveScan is the evidence of a scan fetched from live sources.
type liveScan struct {
	inputs evidence.Inputs
	// notes are the fetches' data-quality notes.
	notes []sources.QualityNote
	// windowComplete is true when every source answered in full for the window.
	windowComplete bool
	// fetchedSlots are the baseline slots fetched raw (not from the cache).
	fetchedSlots []scan.Range
	cleanup      func()
}

// fetchScan fetches what a scan at now reads from the live sources of cfg:
// the window with the detectors' lookback before it, and each baseline slot
// the profile cache does not hold (cached), each into its own bundle in a
// temporary directory; never the days between them. Each range is pulled raw
// (pushdown is for one long window, and a slot is as long as the window);
// bundle.yaml's records of every range tell the scan which stretches of
// access log are complete.
func fetchScan(ctx context.Context, cfg *live.Config, sc scan.Config, now time.Time, cached func(scan.Range) bool, stderr io.Writer, progress bool) (*liveScan, error) {
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
		if !cached(s) {
			ranges = append(ranges, fetchRange{name: fmt.Sprintf("slot-%d", i+1), from: s.From, to: s.To})
			ls.fetchedSlots = append(ls.fetchedSlots, s)
		}
	}
	prog := newProgressPrinter(stderr, progress)
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
		in := evidence.FromBundle(b)
		if i == 0 {
			ls.inputs = in
			ls.windowComplete = !incomplete(notes)
			continue
		}
		ls.inputs.Manifest.Queries = append(ls.inputs.Manifest.Queries, m.Queries...)
		ls.inputs.Access = append(ls.inputs.Access, in.Access...)
		ls.inputs.Metrics = append(ls.inputs.Metrics, in.Metrics...)
		ls.inputs.Logs = append(ls.inputs.Logs, in.Logs...)
	}
	return ls, nil
}

// profileCache is a live scan's use of a scan.ProfileCache: the baseline slots
// it holds, and what could not be read or stored.
type profileCache struct {
	cache  scan.ProfileCache
	held   map[int64]*scan.Profile // by From
	notes  []sources.QualityNote
	active bool
}

// openProfileCache looks up the slots of a scan in dir ("" for no cache). A
// damaged entry is noted and its slot fetched raw.
func openProfileCache(dir string, slots []scan.Range) *profileCache {
	pc := &profileCache{cache: scan.ProfileCache{Dir: dir}, held: map[int64]*scan.Profile{}, active: dir != ""}
	if !pc.active {
		return pc
	}
	for _, r := range slots {
		p, ok, err := pc.cache.Load(r)
		if err != nil {
			pc.note(err.Error() + ": the slot is fetched instead")
			continue
		}
		if ok {
			pc.held[r.From.UnixNano()] = p
		}
	}
	return pc
}

func (pc *profileCache) note(msg string) {
	pc.notes = append(pc.notes, sources.QualityNote{Source: "scan", Severity: sources.SeverityWarning, Message: msg})
}

func (pc *profileCache) holds(r scan.Range) bool {
	p := pc.held[r.From.UnixNano()]
	return p != nil && p.To.Equal(r.To)
}

// use puts the cached slots in the set.
func (pc *profileCache) use(set *scan.Set) {
	for _, p := range pc.held {
		set.UseProfile(p)
	}
}

// store saves the profiles this scan built from lines (the window when it was
// fetched in full, the slots it fetched), and drops the entries no later scan
// reaches back to.
func (pc *profileCache) store(set *scan.Set, ls *liveScan, sc scan.Config, now time.Time) {
	if !pc.active {
		return
	}
	ranges := ls.fetchedSlots
	if ls.windowComplete {
		ranges = append([]scan.Range{sc.Window(now)}, ranges...)
	}
	for _, r := range ranges {
		if p := set.Profile(r); p != nil && p.Covered {
			if err := pc.cache.Save(p); err != nil {
				pc.note(err.Error())
			}
		}
	}
	// A day of margin for the shifts of daylight saving time.
	if err := pc.cache.Prune(now.Add(-sc.Baseline - sc.Since - 24*time.Hour)); err != nil {
		pc.note(err.Error())
	}
}
