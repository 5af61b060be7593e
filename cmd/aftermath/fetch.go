package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/aftermath-forensics/aftermath/analysis"
	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/duration"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/live"
)

// defaultConfig is read when --config is not given and it exists.
const defaultConfig = "aftermath.yaml"

type fetchFlags struct {
	config string
	since  time.Duration
	from   string
	to     string
	out    string
	quiet  bool
}

func newFetchCmd() *cobra.Command {
	var f fetchFlags
	cmd := &cobra.Command{
		Use:   "fetch [--config F] (--since D | --from T --to T) --out BUNDLE",
		Short: "Pull live evidence from Loki, Prometheus and CloudWatch into a bundle",
		Long: `Fetch reads the sources of aftermath.yaml (Loki, Prometheus, CloudWatch) for
the window and the baseline before it, and writes an evidence bundle that
analyze --bundle reads. A window longer than pushdown_after is counted per
minute inside Loki and only the minutes that stand out (with a sample of the
baseline and the client families that rose) are pulled raw; where a finding
or failing stretch begins next to minutes only counted, a second pass pulls
them (at most 2 passes of 120 minutes).

Progress goes to stderr when it is a terminal (not with --quiet). Exit status:
0 when everything was fetched, 1 when the bundle is incomplete (a source
failed, was cut short or was interrupted: what was fetched is kept and
bundle.yaml says what is missing), 2 on a usage or configuration error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.out == "" {
				return usageErrorf("--out BUNDLE is required")
			}
			cfg, err := loadLiveConfig(f.config, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			from, to, err := liveWindow(f.since, f.from, f.to, time.Now(), configZone(cfg, ""))
			if err != nil {
				return err
			}
			if entries, err := os.ReadDir(f.out); err == nil && len(entries) > 0 {
				return usageErrorf("--out %s is not empty: a bundle is written into a new directory", f.out)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			stderr := cmd.ErrOrStderr()
			prog := newProgressPrinter(stderr, !f.quiet)
			m, notes, err := live.Fetch(ctx, cfg, from, to, f.out, prog.report)
			prog.close()
			printNotes(stderr, notes, f.quiet)
			if err == nil {
				if _, err = analysis.SecondPasses(ctx, cfg, f.out, evidence.FromBundle, false); err == nil {
					m, err = bundle.ReadManifest(filepath.Join(f.out, bundle.ManifestFile))
				}
			}
			switch {
			case err != nil && errors.Is(err, context.Canceled):
				return &exitError{code: exitIncomplete, err: fmt.Errorf("%w; partial bundle in %s", err, f.out)}
			case err != nil:
				return &exitError{code: exitUsage, err: err}
			}
			if nothing := fetchedNothing(m); nothing != "" {
				printFetchTotals(cmd.OutOrStdout(), m)
				return &exitError{code: exitUsage, err: fmt.Errorf("fetched nothing: %s; %s holds no evidence to analyze", nothing, f.out)}
			}
			printFetchSummary(cmd.OutOrStdout(), f.out, m)
			if where, ok := live.LokiUnreachable(*m); ok {
				return &exitError{code: exitIncomplete, err: fmt.Errorf("see the notes above and %s\n%s", filepath.Join(f.out, bundle.ManifestFile), unreachableLine(where))}
			}
			if incomplete(notes) {
				return &exitError{code: exitIncomplete, err: fmt.Errorf("evidence incomplete: see the notes above and %s", filepath.Join(f.out, bundle.ManifestFile))}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "aftermath.yaml (default: ./"+defaultConfig+")")
	fl.Var((*duration.Value)(&f.since), "since", "fetch the last DURATION, e.g. 2h or 7d")
	fl.StringVar(&f.from, "from", "", "window start, RFC3339")
	fl.StringVar(&f.to, "to", "", "window end, RFC3339")
	fl.StringVar(&f.out, "out", "", "bundle directory to write (new or empty)")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress and no informational notes on stderr")
	return cmd
}

// liveInputs fetches the window from the live sources of configPath into a
// temporary bundle and returns its inputs, exactly as `analyze --bundle`
// would read them, after adjust (may be nil: the caller's overrides). When
// the fetch was pushed down, its second passes analyze the bundle, and d is
// the analysis of the inputs returned (for analyzeInputs, which closes it);
// otherwise d is nil. cleanup removes the bundle; call it when the analysis
// is done. Progress and the fetch's warnings go to stderr (progress only when
// it is a terminal). A partial fetch is not an error: bundle.yaml marks what
// is incomplete and the analysis reports it.
func liveInputs(ctx context.Context, configPath string, since time.Duration, from, to, tz string, stderr io.Writer, adjust func(*evidence.Inputs)) (in *evidence.Inputs, d *analysis.Detected, cleanup func(), err error) {
	cfg, err := loadLiveConfig(configPath, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	fromT, toT, err := liveWindow(since, from, to, time.Now(), configZone(cfg, tz))
	if err != nil {
		return nil, nil, nil, err
	}
	dir, err := os.MkdirTemp("", "aftermath-live-")
	if err != nil {
		return nil, nil, nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	sctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	prog := newProgressPrinter(stderr, true)
	bdir := filepath.Join(dir, "bundle")
	_, notes, err := live.Fetch(sctx, cfg, fromT, toT, bdir, prog.report)
	prog.close()
	printNotes(stderr, notes, true)
	inputsOf := func(b *bundle.Bundle) evidence.Inputs {
		inputs := evidence.FromBundle(b)
		inputs.Notes = append(inputs.Notes, cfg.Warnings...)
		// The bundle is temporary: messages name what was fetched, not where.
		inputs.Names = map[string]string{}
		for _, q := range b.Manifest.Queries {
			if q.File != "" && q.Query != "" {
				inputs.Names[filepath.Join(b.Dir, q.File)] = q.Source + " " + q.Query
			}
		}
		if adjust != nil {
			adjust(&inputs)
		}
		return inputs
	}
	if err == nil {
		d, err = analysis.SecondPasses(sctx, cfg, bdir, inputsOf, true)
	}
	if err != nil {
		cleanup()
		if errors.Is(err, context.Canceled) {
			return nil, nil, nil, &exitError{code: exitIncomplete, err: err}
		}
		return nil, nil, nil, &exitError{code: exitUsage, err: err}
	}
	b, err := bundle.Open(bdir)
	if err != nil {
		d.Close()
		cleanup()
		return nil, nil, nil, &exitError{code: exitUsage, err: err}
	}
	inputs := inputsOf(b)
	return &inputs, d, cleanup, nil
}

// loadLiveConfig reads --config, or ./aftermath.yaml when it is not given.
// Every failure is a usage error (exit 2). What reading it left out (unknown
// keys) goes to stderr at once, where a fetch's user sees it; an analysis
// puts it in data_quality as well (cfg.Warnings).
func loadLiveConfig(path string, stderr io.Writer) (*live.Config, error) {
	if path == "" {
		if _, err := os.Stat(defaultConfig); err != nil {
			return nil, usageErrorf("no configuration: give --config FILE (aftermath.example.yaml documents every key)")
		}
		path = defaultConfig
	}
	cfg, err := live.Load(path)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	printNotes(stderr, cfg.Warnings, true)
	return cfg, nil
}

// configZone is where --from/--to without a zone are read in a live fetch:
// --tz (tz), else the configuration's timezone, else nowhere (nil: such a
// time is an error that says to give a zone).
func configZone(cfg *live.Config, tz string) *time.Location {
	if tz == "" {
		tz = cfg.Timezone
	}
	if tz == "" {
		return nil
	}
	loc, err := time.LoadLocation(tz) // checked when the flag and the file were read
	if err != nil {
		return nil
	}
	return loc
}

// liveWindow reads --since or --from/--to (a time without a zone in loc).
// --since ends the window now (to the second).
func liveWindow(since time.Duration, from, to string, now time.Time, loc *time.Location) (time.Time, time.Time, error) {
	switch {
	case since != 0 && (from != "" || to != ""):
		return time.Time{}, time.Time{}, usageErrorf("give --since, or --from and --to, not both")
	case since < 0:
		return time.Time{}, time.Time{}, usageErrorf("--since %s: must be positive", since)
	case since > 0:
		end := now.UTC().Truncate(time.Second)
		return end.Add(-since), end, nil
	case from == "" || to == "":
		return time.Time{}, time.Time{}, usageErrorf("give the window: --since 2h, or --from and --to (RFC3339, e.g. 2026-10-03T02:00:00+09:00)")
	}
	f, t, err := parseWindowIn(from, to, loc)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	return f.UTC(), t.UTC(), nil
}

// printNotes writes the fetch's notes: warnings and errors always, the
// informational ones unless quiet.
func printNotes(w io.Writer, notes []sources.QualityNote, quiet bool) {
	for _, n := range notes {
		if quiet && n.Severity == sources.SeverityInfo {
			continue
		}
		fmt.Fprintf(w, "%s: %s: %s\n", n.Source, n.Severity, n.Message)
	}
}

func printFetchSummary(w io.Writer, dir string, m *bundle.Manifest) {
	printFetchTotals(w, m)
	fmt.Fprintf(w, "wrote %s (analyze it with: aftermath analyze --bundle %s)\n", dir, dir)
}

// fetchedNothing says, when a fetch got not one access-log line nor one
// metric series, which sources failed and why ("" when something was
// fetched): such a bundle holds nothing to analyze.
func fetchedNothing(m *bundle.Manifest) string {
	var failed []string
	for _, q := range m.Queries {
		if q.Lines > 0 || q.Series > 0 {
			return ""
		}
		if q.HasFailed() {
			what := q.Source + " failed"
			if q.Note != "" {
				what += " (" + q.Note + ")"
			}
			if !slices.Contains(failed, what) {
				failed = append(failed, what)
			}
		}
	}
	if len(failed) == 0 {
		return "every source answered with no line and no series for the window"
	}
	return strings.Join(failed, "; ")
}

// printFetchTotals writes the window and what the fetch got.
func printFetchTotals(w io.Writer, m *bundle.Manifest) {
	var lines, bytes int64
	var series, incompleteQueries int
	for _, q := range m.Queries {
		if live.IsPulledAccess(q) {
			lines += q.Lines
			bytes += q.Bytes
		}
		if strings.HasPrefix(q.File, bundle.MetricsDir+"/") {
			series += q.Series
		}
		if !q.Complete {
			incompleteQueries++
		}
	}
	fmt.Fprintf(w, "window %s to %s", m.Window.From.Format(time.RFC3339), m.Window.To.Format(time.RFC3339))
	if m.Baseline != nil {
		fmt.Fprintf(w, " (baseline from %s)", m.Baseline.From.Format(time.RFC3339))
	}
	fmt.Fprintf(w, ": %s access-log lines (%s), %s metric series, %d queries (%d incomplete)\n",
		detect.FormatInt(lines), formatBytes(bytes), detect.FormatInt(int64(series)), len(m.Queries), incompleteQueries)
}

// formatProgress renders a progress report:
// "loki access log: 12,345 lines, 3.1 MB, 40 requests, sub-ranges 3/27, ETA 1m20s".
func formatProgress(p live.Progress, now time.Time) string {
	var b strings.Builder
	b.WriteString(p.Source)
	if p.Phase != "" {
		b.WriteString(" " + p.Phase)
	}
	b.WriteString(": " + detect.FormatInt(p.Count) + " " + p.Unit)
	if p.Bytes > 0 {
		b.WriteString(", " + formatBytes(p.Bytes))
	}
	if p.Requests > 0 {
		fmt.Fprintf(&b, ", %s requests", detect.FormatInt(p.Requests))
	}
	if p.Total > 0 {
		unit := "queries"
		switch p.Source {
		case "loki":
			unit = "sub-ranges"
		case "cloudwatch":
			unit = "calls"
		}
		fmt.Fprintf(&b, ", %s %d/%d", unit, p.Done, p.Total)
	}
	switch {
	case p.Finished:
		if !p.Started.IsZero() {
			fmt.Fprintf(&b, ", done in %s", now.Sub(p.Started).Round(100*time.Millisecond))
		}
	default:
		if eta, ok := p.ETA(now); ok {
			fmt.Fprintf(&b, ", ETA %s", eta.Round(time.Second))
		}
	}
	return b.String()
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
