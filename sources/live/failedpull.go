package live

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/loki"
)

// A pushdown knows, before it pulls a line, what Loki counted in every
// minute: lines, failed lines, and (for the minutes it will not pull) the
// requests per status, origin and lateness. When the raw pull of some
// minutes then fails, those minutes are treated as counted ones: their
// partial lines are dropped from the access file, their counts go to
// access/minute-status.csv, and minute-counts.csv marks them not pulled
// (ReasonPullFailed). Requests, failures and the failing stretch then still
// cover the whole window; what needs the lines (addresses, fingerprints,
// latencies) is missing for those minutes, and the detectors mark what they
// estimate from counted minutes as they do for any counted minute.

// ReasonPullFailed: the minute was to be pulled but its raw pull failed, so
// its counts stand in for its lines.
const ReasonPullFailed = "pull failed"

// pullFailedStretches are the runs of minutes marked ReasonPullFailed
// (bundle.yaml's pushdown.pull_failed), in order.
func pullFailedStretches(minutes []Minute) []bundle.Window {
	var out []bundle.Window
	for _, m := range minutes {
		if m.Pulled || m.Reason != ReasonPullFailed {
			continue
		}
		end := m.T.Add(time.Minute)
		if n := len(out); n > 0 && out[n-1].To.Equal(m.T) {
			out[n-1].To = end
			continue
		}
		out = append(out, bundle.Window{From: m.T, To: end})
	}
	return out
}

// lineMinutes is the minute (Unix seconds / 60) of every line written to an
// access file, in the order written.
type lineMinutes []int64

// record wraps sink so that each line's minute is noted; a line holding
// newlines is written as several and noted as many times.
func (lm *lineMinutes) record(sink func(loki.Entry) error) func(loki.Entry) error {
	return func(e loki.Entry) error {
		m := e.T.Unix() / 60
		for range 1 + strings.Count(strings.TrimRight(e.Line, "\r\n"), "\n") {
			*lm = append(*lm, m)
		}
		return sink(e)
	}
}

// failedMinutes are the minutes of pulled whose sub-range of res is
// incomplete; every one of them when res has no sub-range (the pull failed
// before paging).
func failedMinutes(res loki.Result, pulled []time.Time) map[int64]bool {
	out := map[int64]bool{}
	for _, m := range pulled {
		failed := len(res.SubRanges) == 0
		for _, s := range res.SubRanges {
			if !s.Complete && !m.Before(s.From) && m.Before(s.To) {
				failed = true
				break
			}
		}
		if failed {
			out[m.Unix()/60] = true
		}
	}
	return out
}

// countFailedPull replaces the minutes whose raw pull failed with their
// counts (see above). It needs the status counts of those minutes: those of
// the pushdown when it made them, else it asks Loki now; when that fails
// too, the minutes stay as pulled (partial), and an error note says that
// the totals are short.
func (f *fetcher) countFailedPull(ctx context.Context, c *loki.Client, plan *pushdownPlan, res loki.Result, written lineMinutes, cost *Progress) error {
	failed := failedMinutes(res, plan.minutes)
	if len(failed) == 0 || len(plan.rows) == 0 {
		return nil
	}
	var failedRows []int
	for i, r := range plan.rows {
		if failed[r.T.Unix()/60] {
			failedRows = append(failedRows, i)
		}
	}
	if plan.status == nil || !plan.status.covers(failedRows) {
		sc, err := f.countStatus(ctx, c, plan.statusLines, plan.rows,
			fmt.Sprintf("per-minute counts computed in Loki for the %d minutes whose raw pull failed", len(failed)), plan.statusCounted(), nil, cost)
		if err != nil {
			f.note(loki.Source, sources.SeverityError, fmt.Sprintf(
				"the raw lines of %d minutes could not be pulled, and their per-status counts failed too, so requests, statuses and failures of those minutes are short: %v",
				len(failed), err))
			return nil
		}
		plan.status = sc
	}
	dropped, err := dropLines(filepath.Join(f.dir, AccessFile), written, failed)
	if err != nil {
		return err
	}
	var which []int
	var lines, failedLines int64
	for i := range plan.rows {
		r := &plan.rows[i]
		if failed[r.T.Unix()/60] {
			r.Pulled, r.Reason = false, ReasonPullFailed
			which = append(which, i)
			lines += r.Lines
			failedLines += max(r.Failed, 0)
		}
	}
	plan.minutes = slices.DeleteFunc(plan.minutes, func(t time.Time) bool { return failed[t.Unix()/60] })
	if err := writeFileWith(filepath.Join(f.dir, MinuteCountsFile), func(w io.Writer) error { return WriteMinuteCounts(w, plan.rows) }); err != nil {
		return err
	}
	statusPath := filepath.Join(f.dir, bundle.MinuteStatusFile)
	rows, err := bundle.ReadMinuteStatus(statusPath)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	rows = append(rows, plan.status.rows(plan.rows, which)...)
	slices.SortStableFunc(rows, func(a, b bundle.MinuteStatus) int { return a.Minute.Compare(b.Minute) })
	if err := writeFileWith(statusPath, func(w io.Writer) error { return bundle.WriteMinuteStatus(w, rows) }); err != nil {
		return err
	}
	f.note(loki.Source, sources.SeverityError, fmt.Sprintf(
		"the raw lines of %d minutes could not be pulled (%d partial lines of them dropped): Loki's per-minute counts stand in for them (%d requests, %d failed, in %s and %s), so requests, failures and the failing stretch cover the window, but addresses, fingerprints and latencies of those minutes are missing and figures resting on them are estimated",
		len(failed), dropped, lines, failedLines, bundle.MinuteStatusFile, MinuteCountsFile))
	return nil
}

// dropLines rewrites the gzip file at path without the lines whose minute
// (written, in file order) is in drop, and returns how many it dropped.
func dropLines(path string, written lineMinutes, drop map[int64]bool) (int64, error) {
	in, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("fetch: %w", err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		// Nothing was written (an empty file is no gzip stream).
		if st, serr := in.Stat(); serr == nil && st.Size() == 0 {
			return 0, nil
		}
		return 0, fmt.Errorf("fetch: reading %s: %w", path, err)
	}
	tmp := path + ".tmp"
	out, err := createGz(tmp)
	if err != nil {
		return 0, err
	}
	br := bufio.NewReaderSize(zr, 256<<10)
	var n, dropped int64
	for i := 0; ; i++ {
		line, rerr := br.ReadString('\n')
		if line != "" {
			if i < len(written) && drop[written[i]] {
				dropped++
			} else if _, err := io.WriteString(out, line); err != nil {
				out.Close()
				return 0, fmt.Errorf("fetch: writing %s: %w", tmp, err)
			}
			n++
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Close()
			return 0, fmt.Errorf("fetch: reading %s: %w", path, rerr)
		}
	}
	if err := out.Close(); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return 0, fmt.Errorf("fetch: %w", err)
	}
	return dropped, nil
}

// countFailedFamilies replaces a failed pull of the client families' lines
// (FamiliesFile) with Loki's per-minute status counts of those lines in
// every minute not pulled whole (AccessFile holds them in the others): the
// file is emptied (a partial file beside the counts would
// count its lines twice) and the families are no longer recorded as pulled
// across the range, so no analysis takes their clients as read whole and a
// second pass reads their lines with the rest of its minutes. When the
// counts fail too, the partial file stays and an error note says what is
// short.
func (f *fetcher) countFailedFamilies(ctx context.Context, c *loki.Client, query string, plan *pushdownPlan, perr error) error {
	fams := strings.Join(plan.families, ", ")
	if perr == nil {
		perr = fmt.Errorf("incomplete pull")
	}
	if len(plan.rows) == 0 {
		return nil
	}
	var counted *lineCounts
	if plan.familyStatus != nil {
		counted = plan.familyStatus.counts(plan.families, true)
	}
	sc, err := f.countStatus(ctx, c, statusLines{query, familyFilter(plan.families, true)}, plan.rows,
		fmt.Sprintf("per-minute counts computed in Loki of the client families %s, whose pull failed", fams), counted, nil, &Progress{})
	if err != nil {
		f.note(loki.Source, sources.SeverityError, fmt.Sprintf(
			"%s: the lines of the client families %s were not all pulled, and their per-minute counts failed too, so their addresses and fingerprints, and the requests of the minutes not pulled whole, are short: %v; counts: %v",
			FamiliesFile, fams, perr, err))
		return nil
	}
	empty, err := createGz(filepath.Join(f.dir, FamiliesFile))
	if err != nil {
		return err
	}
	if err := empty.Close(); err != nil {
		return err
	}
	var notPulled []int
	for i, r := range plan.rows {
		if !r.Pulled {
			notPulled = append(notPulled, i)
		}
	}
	statusPath := filepath.Join(f.dir, bundle.MinuteStatusFile)
	rows, err := bundle.ReadMinuteStatus(statusPath)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	added := sc.rows(plan.rows, notPulled)
	rows = append(rows, added...)
	slices.SortStableFunc(rows, func(a, b bundle.MinuteStatus) int { return a.Minute.Compare(b.Minute) })
	if err := writeFileWith(statusPath, func(w io.Writer) error { return bundle.WriteMinuteStatus(w, rows) }); err != nil {
		return err
	}
	var requests int64
	for _, r := range added {
		requests += r.Requests
	}
	for i := range f.manifest.Queries {
		if q := &f.manifest.Queries[i]; q.File == FamiliesFile {
			q.Lines, q.Bytes = 0, 0
			q.Note += "; the partial lines were dropped: per-minute counts stand in for them in " + bundle.MinuteStatusFile
		}
	}
	f.note(loki.Source, sources.SeverityError, fmt.Sprintf(
		"%s: the lines of the client families %s could not be pulled (%v): Loki's per-minute counts stand in for them (%d requests, in %s), so requests and failures cover the window, but those clients' addresses and fingerprints are missing and figures resting on them are estimated",
		FamiliesFile, fams, perr, requests, bundle.MinuteStatusFile))
	plan.families, plan.familySpans = nil, nil
	return nil
}
