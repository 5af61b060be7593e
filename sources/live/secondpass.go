package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/loki"
)

// A pushdown reads raw lines only where something stood out, so what an
// analysis finds may begin or end in minutes that were only counted: a
// finding's start there is the first minute read, not the first minute it
// happened, and Loki counts a failed line by the time it was logged, while the
// detectors place it when its request arrived (its duration earlier). The
// second pass pulls the counted minutes next to such an edge and the analysis
// runs again. It is bounded: at most MaxSecondPasses passes of at most
// maxSecondPassMinutes minutes, each reaching secondPassReach from an edge.
const (
	MaxSecondPasses      = 2
	maxSecondPassMinutes = 120
	secondPassReach      = 30 * time.Minute
)

// ErrSecondPassFailed is wrapped by SecondPass's error when its pull failed:
// nothing was pulled, but bundle.yaml records the failed pass, which an
// analysis of the bundle must tell.
var ErrSecondPassFailed = errors.New("pushdown's second pass failed")

// Edges are the times an analysis found something to start or end at: a
// finding's start, a failing stretch's onset and end.
type Edges struct {
	Starts, Ends []time.Time
}

// secondPassFile is the access log of the second pass after n earlier ones
// (n counts from 0; the file names count from 1).
func secondPassFile(n int) string {
	return filepath.Join(bundle.AccessDir, fmt.Sprintf("loki-pass%d.log.gz", n+1))
}

// touchedMinutes are the counted (not pulled) minutes an edge touches: the
// counted minutes right before a start (and the start's own, when counted) and
// right after an end, up to secondPassReach from it, at most limit in all,
// sorted.
func touchedMinutes(minutes []Minute, edges Edges, limit int) []time.Time {
	index := make(map[int64]int, len(minutes))
	for i, m := range minutes {
		index[m.T.Unix()/60] = i
	}
	reach := int64(secondPassReach / time.Minute)
	picked := map[int64]bool{}
	walk := func(from int64, step int64) {
		for k := int64(0); k < reach; k++ {
			m := from + k*step
			i, ok := index[m]
			if !ok || minutes[i].Pulled {
				return
			}
			picked[m] = true
		}
	}
	for _, s := range edges.Starts {
		m := s.Unix() / 60
		if i, ok := index[m]; ok && minutes[i].Pulled {
			m-- // the start was read: what may come before it was not
		}
		walk(m, -1)
	}
	for _, e := range edges.Ends {
		walk((e.Unix()+59)/60, 1)
	}
	if len(picked) == 0 {
		return nil
	}
	ms := slices.Sorted(maps.Keys(picked))
	if len(ms) > limit {
		ms = ms[:limit]
	}
	out := make([]time.Time, len(ms))
	for i, m := range ms {
		out[i] = time.Unix(m*60, 0).UTC()
	}
	return out
}

// SecondPass pulls, into the pushed-down bundle at dir, the counted minutes
// that edges touch (touchedMinutes), and rewrites the bundle so that an
// analysis reads them as it reads every pulled minute: their lines in
// access/loki-pass<n>.log.gz (without the client families pulled across the
// range, which the bundle holds already), their counts gone from
// access/minute-status.csv, minute-counts.csv marking them pulled, and
// bundle.yaml recording the pull and its cost. It returns how many minutes it
// pulled: 0 when the bundle was not pushed down, the passes are used up, or no
// edge touches a counted minute. A pull that fails keeps nothing (the minutes
// stay counted), and bundle.yaml says so: the error then wraps
// ErrSecondPassFailed, which tells the caller the bundle changed all the same.
func SecondPass(ctx context.Context, cfg *Config, dir string, edges Edges) (int, error) {
	m, err := bundle.ReadManifest(filepath.Join(dir, bundle.ManifestFile))
	if err != nil {
		return 0, err
	}
	pd := m.Pushdown
	if pd == nil || len(pd.SecondPasses) >= MaxSecondPasses || cfg.Loki == nil {
		return 0, nil
	}
	countsPath := filepath.Join(dir, MinuteCountsFile)
	minutes, err := ReadMinuteCounts(countsPath)
	if err != nil {
		return 0, err
	}
	pull := touchedMinutes(minutes, edges, maxSecondPassMinutes)
	if len(pull) == 0 {
		return 0, nil
	}
	lc, err := cfg.Loki.clientConfig()
	if err != nil {
		return 0, err
	}
	c, err := loki.New(lc)
	if err != nil {
		return 0, err
	}
	n := len(pd.SecondPasses)
	file := secondPassFile(n)
	// The selector and the configured pipeline only: the families' lines,
	// which the bundle holds already, are told and dropped here
	// (notFamilies), not by a parser in Loki.
	query := joinQuery(cfg.Loki.Selector, cfg.Loki.Pipeline)
	// The record's window, when the pull leaves it out, is the minutes asked for.
	f := &fetcher{cfg: cfg, dir: dir, start: pull[0], to: pull[len(pull)-1].Add(time.Minute), manifest: m}
	note := fmt.Sprintf("; pushdown's second pass %d: %d counted minutes next to where a finding or failing stretch starts or ends", n+1, len(pull))
	var dropped droppedLines
	p, err := f.pullToFile(file, query, note, func(sink func(loki.Entry) error) (loki.Result, error) {
		// minute-counts.csv holds Loki's count of each minute's lines:
		// the pull is checked against it, not counted again.
		return c.PullMinutes(ctx, query, pull, countedMinutes(minutes), notFamilies(pd.Families, &dropped, sink))
	})
	if err != nil {
		return 0, err
	}
	if dropped.lines > 0 {
		p.rec.Lines -= dropped.lines
		p.rec.Bytes -= dropped.bytes
		p.rec.Note += fmt.Sprintf("; %d lines (%d bytes) of the client families %s dropped: %s holds them", dropped.lines, dropped.bytes, strings.Join(pd.Families, ", "), FamiliesFile)
	}
	res, perr := p.res, p.err
	pass := bundle.SecondPass{Minutes: len(pull), Lines: p.rec.Lines, Bytes: p.rec.Bytes, Requests: int64(res.Requests())}
	if perr == nil && !res.Complete() {
		perr = errors.New("incomplete pull")
	}
	if perr != nil {
		// Nothing is kept: the counts of those minutes stay, and a partial
		// pull beside them would count its lines twice.
		if err := os.Remove(filepath.Join(dir, file)); err != nil {
			return 0, fmt.Errorf("second pass: %w", err)
		}
		pass.Failed = perr.Error()
		pd.SecondPasses = append(pd.SecondPasses, pass)
		pd.Requests += pass.Requests
		if err := bundle.WriteManifest(dir, m); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: %v", ErrSecondPassFailed, perr)
	}
	pulled := map[int64]bool{}
	for _, t := range pull {
		pulled[t.Unix()/60] = true
	}
	for i := range minutes {
		if pulled[minutes[i].T.Unix()/60] {
			minutes[i].Pulled, minutes[i].Reason = true, ReasonSecondPass
		}
	}
	if err := writeFileWith(countsPath, func(w io.Writer) error { return WriteMinuteCounts(w, minutes) }); err != nil {
		return 0, err
	}
	statusPath := filepath.Join(dir, bundle.MinuteStatusFile)
	if rows, err := bundle.ReadMinuteStatus(statusPath); err == nil {
		kept := rows[:0]
		for _, r := range rows {
			if !pulled[r.Minute.Unix()/60] {
				kept = append(kept, r)
			}
		}
		if err := writeFileWith(statusPath, func(w io.Writer) error { return bundle.WriteMinuteStatus(w, kept) }); err != nil {
			return 0, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	f.record(p.rec)
	pd.PullFailed = pullFailedStretches(minutes)
	pd.SecondPasses = append(pd.SecondPasses, pass)
	pd.PulledLines += pass.Lines
	pd.PulledBytes += pass.Bytes
	pd.Requests += pass.Requests
	pd.ResponseBytes += res.WireBytes()
	_, decoded := c.ResponseBytes()
	pd.ResponseDecodedBytes += decoded
	pd.LokiBytesProcessed += c.BytesProcessed()
	return len(pull), bundle.WriteManifest(dir, m)
}
