package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

type analyzeFlags struct {
	config  string
	since   time.Duration
	from    string
	to      string
	bundle  string
	access  []string
	metrics []string
	changes []string
	out     string
	format  []string
	lang    string
	tz      string
}

func newAnalyzeCmd() *cobra.Command {
	var f analyzeFlags
	cmd := &cobra.Command{
		Use:   "analyze",
		Short: "Analyze an incident window and write the postmortem",
		Long: `Analyze reads the evidence of an incident window (a bundle written by fetch or
simulate, or access logs and metrics named with --access and --metrics) and writes
postmortem.md and report.json into --out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			in, cleanup, err := f.inputs(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer cleanup()
			return analyzeAndWrite(cmd, in, f.out, f.format, f.lang)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "aftermath.yaml: live sources (Loki, Prometheus, CloudWatch) and site facts")
	fl.DurationVar(&f.since, "since", 0, "fetch and analyze the last DURATION from the live sources")
	fl.StringVar(&f.from, "from", "", "window start, RFC3339")
	fl.StringVar(&f.to, "to", "", "window end, RFC3339")
	fl.StringVar(&f.bundle, "bundle", "", "evidence bundle directory")
	fl.StringSliceVar(&f.access, "access", nil, "Caddy JSON access log (plain or .gz); repeatable")
	fl.StringSliceVar(&f.metrics, "metrics", nil, "OpenMetrics file with timestamps (plain or .gz); repeatable")
	fl.StringSliceVar(&f.changes, "changes", nil, "changes.yaml; repeatable")
	fl.StringVar(&f.out, "out", "aftermath-report", "output directory")
	fl.StringSliceVar(&f.format, "format", report.Formats, "outputs to write: md, html, json")
	fl.StringVar(&f.lang, "lang", "en", "language of the postmortem and the HTML report: en or ko")
	fl.StringVar(&f.tz, "tz", "", "time zone for local times (default: the bundle's, else UTC)")
	return cmd
}

// inputs resolves the flags into evidence: a bundle, files, or a live fetch into
// a temporary bundle (cleanup removes it).
func (f *analyzeFlags) inputs(ctx context.Context, stderr io.Writer) (*detect.Inputs, func(), error) {
	if !slices.Contains(report.Langs, f.lang) {
		return nil, nil, usageErrorf("--lang %q: one of %s", f.lang, strings.Join(report.Langs, ", "))
	}
	for _, format := range f.format {
		if !slices.Contains(report.Formats, format) {
			return nil, nil, usageErrorf("--format %q: one of %s", format, strings.Join(report.Formats, ", "))
		}
	}
	if f.tz != "" {
		if _, err := time.LoadLocation(f.tz); err != nil {
			return nil, nil, usageErrorf("--tz: %v", err)
		}
	}
	offline := f.bundle != "" || len(f.access) > 0 || len(f.metrics) > 0
	if f.config != "" || f.since != 0 || (!offline && f.from != "") {
		if offline {
			return nil, nil, usageErrorf("--config/--since fetch live evidence: not with --bundle, --access or --metrics")
		}
		in, cleanup, err := liveInputs(ctx, f.config, f.since, f.from, f.to, stderr)
		if err != nil {
			return nil, nil, err
		}
		in.Changes = append(in.Changes, f.changes...)
		if f.tz != "" {
			in.Manifest.Timezone = f.tz
		}
		return in, cleanup, nil
	}
	in, err := f.offlineInputs()
	return in, func() {}, err
}

// offlineInputs reads a bundle or the files named on the command line.
func (f *analyzeFlags) offlineInputs() (*detect.Inputs, error) {
	if f.bundle == "" {
		if len(f.access) == 0 && len(f.metrics) == 0 {
			return nil, usageErrorf("nothing to analyze: give --bundle DIR, or --access/--metrics files")
		}
		if f.from == "" || f.to == "" {
			return nil, usageErrorf("--from and --to are required with --access/--metrics (RFC3339, e.g. 2026-10-03T02:00:00+09:00)")
		}
	}
	in, err := openEvidence(f.bundle, f.access, f.metrics, f.changes, f.from, f.to)
	if err != nil {
		return nil, err
	}
	if f.tz != "" {
		in.Manifest.Timezone = f.tz
	}
	return in, nil
}

// openEvidence reads the evidence named on the command line: the bundle in dir
// (when given) plus the access logs, metrics and changes files (each must
// exist), with the window --from/--to when either is given.
func openEvidence(dir string, access, metrics, changes []string, from, to string) (*detect.Inputs, error) {
	in := &detect.Inputs{}
	if dir != "" {
		b, err := bundle.Open(dir)
		if err != nil {
			return nil, &exitError{code: exitUsage, err: err}
		}
		*in = detect.InputsFromBundle(b)
	}
	in.Access = append(in.Access, access...)
	in.Metrics = append(in.Metrics, metrics...)
	in.Changes = append(in.Changes, changes...)
	for _, p := range slices.Concat(access, metrics, changes) {
		if _, err := os.Stat(p); err != nil {
			return nil, usageErrorf("%v", err)
		}
	}
	if from != "" || to != "" {
		f, t, err := parseWindow(from, to)
		if err != nil {
			return nil, err
		}
		in.Manifest.Window = bundle.Window{From: f, To: t}
	}
	return in, nil
}

// parseWindow reads --from and --to (RFC3339); --to must be after --from.
// Errors are usage errors.
func parseWindow(from, to string) (time.Time, time.Time, error) {
	f, err := time.Parse(time.RFC3339, from)
	if err != nil {
		return time.Time{}, time.Time{}, usageErrorf("--from: %v", err)
	}
	t, err := time.Parse(time.RFC3339, to)
	if err != nil {
		return time.Time{}, time.Time{}, usageErrorf("--to: %v", err)
	}
	if !t.After(f) {
		return time.Time{}, time.Time{}, usageErrorf("--to %s is not after --from %s", to, from)
	}
	return f, t, nil
}

// analyzeAndWrite runs the pipeline, writes the outputs into out and prints a
// summary. The error carries exit code 1 when the evidence was incomplete.
func analyzeAndWrite(cmd *cobra.Command, in *detect.Inputs, out string, formats []string, lang string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	a, err := analyzeInputs(cmd.Context(), *in)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return &exitError{code: exitUsage, err: err}
	}
	rep := a.report
	paths, err := report.WriteAll(out, rep, formats, lang)
	if err != nil {
		return err
	}
	dataQuality := dataQualityPath(out, paths)
	rulesPath, err := writeRules(out, a)
	if err != nil {
		return err
	}
	paths = append(paths, rulesPath)
	report.PrintSummary(cmd.OutOrStdout(), rep, paths...)
	if incomplete(rep.DataQuality) {
		if dataQuality == "" {
			dataQuality = rulesPath
		}
		return &exitError{code: exitIncomplete, err: fmt.Errorf("evidence incomplete: see data_quality in %s", dataQuality)}
	}
	return nil
}

// dataQualityPath is the report file to read data_quality in: report.json
// when it is among the written paths, else the last report written ("" when
// none was).
func dataQualityPath(out string, written []string) string {
	jsonPath := filepath.Join(out, report.Files[report.FormatJSON])
	for _, p := range written {
		if p == jsonPath {
			return p
		}
	}
	if len(written) == 0 {
		return ""
	}
	return written[len(written)-1]
}

func incomplete(notes []sources.QualityNote) bool { return len(sources.Problems(notes)) > 0 }
