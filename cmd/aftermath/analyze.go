package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/aftermath-forensics/aftermath/analysis"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/duration"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/live"
)

type analyzeFlags struct {
	quiet   bool
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
	site    siteFlags
	durFmt  durationFormat
	logTZ   logZone
}

// siteFlags are the site facts logs cannot tell, given on the command line;
// each overrides the bundle's or the configuration's when set.
type siteFlags struct {
	workers, backlog, healthFails int
	clientTimeout, healthTimeout  time.Duration
	healthInterval, readTimeout   time.Duration
	healthURI, loggedInCookie     string
}

func (s *siteFlags) register(fl *pflag.FlagSet) {
	fl.IntVar(&s.workers, "workers", 0, "site: php-fpm pm.max_children (the pool size)")
	fl.IntVar(&s.backlog, "backlog", 0, "site: php-fpm listen.backlog in force")
	fl.DurationVar(&s.clientTimeout, "client-timeout", 0, "site: how long a reader waits before giving up (e.g. 10s); a success logged later reached nobody")
	fl.StringVar(&s.healthURI, "health-uri", "", "site: path of the proxy's active health check (e.g. /healthz.php)")
	fl.DurationVar(&s.healthTimeout, "health-timeout", 0, "site: Caddy's health_timeout")
	fl.DurationVar(&s.healthInterval, "health-interval", 0, "site: Caddy's health_interval")
	fl.IntVar(&s.healthFails, "health-fails", 0, "site: Caddy's health_fails")
	fl.DurationVar(&s.readTimeout, "read-timeout", 0, "site: the php_fastcgi transport's read_timeout (none when not set)")
	fl.StringVar(&s.loggedInCookie, "logged-in-cookie", "", "site: a substring of the Cookie header that marks a logged-in user (e.g. wikiUserID=)")
}

// apply sets the facts given on the command line over site's.
func (s *siteFlags) apply(site *sources.Site) {
	override(&site.Workers, s.workers)
	override(&site.Backlog, s.backlog)
	override(&site.ClientTimeoutS, s.clientTimeout.Seconds())
	override(&site.HealthURI, s.healthURI)
	override(&site.HealthTimeoutS, s.healthTimeout.Seconds())
	override(&site.HealthIntervalS, s.healthInterval.Seconds())
	override(&site.HealthFails, s.healthFails)
	override(&site.ReadTimeoutS, s.readTimeout.Seconds())
	override(&site.LoggedInCookie, s.loggedInCookie)
}

// override sets *fact to flag when the flag was given: a positive number or
// a non-empty string (nothing is less than "", so v > zero says both).
func override[T cmp.Ordered](fact *T, flag T) {
	var zero T
	if flag > zero {
		*fact = flag
	}
}

// durationFormat is --duration-format: Caddy's duration_format of the access
// logs, overriding what the values suggest (checked when the flag is parsed).
type durationFormat string

func (d *durationFormat) String() string { return string(*d) }
func (d *durationFormat) Type() string   { return "s|ms|ns|string|auto" }
func (d *durationFormat) Set(s string) error {
	if err := accesslog.CheckDurationFormat(s); err != nil {
		return err
	}
	*d = durationFormat(s)
	return nil
}

func (d *durationFormat) register(fl *pflag.FlagSet) {
	fl.Var(d, "duration-format", "Caddy's duration_format of the access logs (default auto: detected from the values, and data_quality says so)")
}

func newAnalyzeCmd() *cobra.Command {
	var f analyzeFlags
	cmd := &cobra.Command{
		Use:   "analyze",
		Short: "Analyze an incident window and write the postmortem",
		Long: `Analyze reads the evidence of an incident window (a bundle written by fetch or
simulate, or access logs and metrics named with --access and --metrics) and writes
postmortem.md, report.html, report.json and rules.caddy into --out. When the
evidence holds a configuration repository with a Caddyfile, the rules' block is
also placed in it as "rules --caddyfile" does (the site block that served the
logged requests, checked by Caddy's adapter): ` + analysis.PlacedCaddyfile + ` and
` + analysis.PlacedDiff + ` beside rules.caddy, and the postmortem says where, or why not.

The window: --from/--to when given (a time without a zone is in --tz, else the
bundle's time zone); else a bundle's window; else, with --access/--metrics, the
evidence's own span (the access logs' first to last minute). With --config and
no --bundle/--access/--metrics, the live sources are fetched for --since or
--from/--to.

--access takes files (plain or .gz), a directory (its *.log, *.jsonl and *.json
files, plain or .gz, in name order) or - for standard input. The site's facts
(--workers, --client-timeout, --health-uri, ...) override a bundle's; with
--access, --config FILE reads them from the site section of aftermath.yaml
(and its timezone) without fetching anything.

Exit codes: 0 the evidence was complete; 1 done, but some evidence is missing
(listed in data_quality and at the top of the report); 2 usage error, or a
source given that holds no usable evidence (nothing parsed, or nothing inside
the window): no report is written then.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			stderr := cmd.ErrOrStderr()
			if f.quiet {
				// A live fetch's notes still print; its progress, drawn
				// only on a terminal, does not.
				stderr = struct{ io.Writer }{stderr}
			}
			in, d, cleanup, err := f.inputs(cmd.Context(), cmd.InOrStdin(), stderr)
			if err != nil {
				return err
			}
			defer cleanup()
			in.Progress = newProgressPrinter(cmd.ErrOrStderr(), !f.quiet)
			defer endProgress(*in)
			return analyzeAndWrite(cmd, in, d, f.out, f.format, f.lang)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "aftermath.yaml: live sources (Loki, Prometheus, CloudWatch) and site facts")
	fl.Var((*duration.Value)(&f.since), "since", "fetch and analyze the last DURATION from the live sources")
	fl.StringVar(&f.from, "from", "", "window start, RFC3339 (without a zone: in --tz or the bundle's zone); default: the bundle's window, else the logs' own span")
	fl.StringVar(&f.to, "to", "", "window end, like --from")
	fl.StringVar(&f.bundle, "bundle", "", "evidence bundle directory")
	fl.StringSliceVar(&f.access, "access", nil, "Caddy JSON access log (plain or .gz), a directory of them, or - for stdin; repeatable")
	fl.StringSliceVar(&f.metrics, "metrics", nil, "OpenMetrics file with timestamps (plain or .gz); repeatable")
	fl.StringSliceVar(&f.changes, "changes", nil, "changes.yaml; repeatable")
	fl.StringVar(&f.out, "out", "aftermath-report", "output directory")
	fl.StringSliceVar(&f.format, "format", report.Formats, "outputs to write: md, html, json")
	fl.StringVar(&f.lang, "lang", "en", "language of the postmortem and the HTML report: en or ko")
	fl.StringVar(&f.tz, "tz", "", "time zone for local times (default: the bundle's, else UTC)")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress on stderr (it is drawn only on a terminal)")
	f.site.register(fl)
	f.durFmt.register(fl)
	f.logTZ.register(fl)
	return cmd
}

// inputs resolves the flags into evidence: a bundle, files, or a live fetch into
// a temporary bundle (cleanup removes it; d is its analysis when its second
// passes made one, see liveInputs).
func (f *analyzeFlags) inputs(ctx context.Context, stdin io.Reader, stderr io.Writer) (*evidence.Inputs, *analysis.Detected, func(), error) {
	offlineInputs := func() (*evidence.Inputs, *analysis.Detected, func(), error) {
		in, cleanup, err := f.offlineInputs(stdin)
		return in, nil, cleanup, err
	}
	if !slices.Contains(report.Langs, f.lang) {
		return nil, nil, nil, usageErrorf("--lang %q: one of %s", f.lang, strings.Join(report.Langs, ", "))
	}
	for _, format := range f.format {
		if !slices.Contains(report.Formats, format) {
			return nil, nil, nil, usageErrorf("--format %q: one of %s", format, strings.Join(report.Formats, ", "))
		}
	}
	if f.tz != "" {
		if _, err := time.LoadLocation(f.tz); err != nil {
			return nil, nil, nil, usageErrorf("--tz: %v", err)
		}
	}
	offline := f.bundle != "" || len(f.access) > 0 || len(f.metrics) > 0
	if f.config != "" || f.since != 0 || (!offline && f.from != "") {
		if offline {
			if f.since != 0 {
				return nil, nil, nil, usageErrorf("--since fetches live evidence: not with --bundle, --access or --metrics (give --from and --to, or nothing for the logs' own span)")
			}
			return offlineInputs()
		}
		return liveInputs(ctx, f.config, f.since, f.from, f.to, f.tz, stderr, func(in *evidence.Inputs) {
			in.Changes = append(in.Changes, f.changes...)
			if f.tz != "" {
				in.Manifest.Timezone = f.tz
			}
			f.site.apply(&in.Manifest.Site)
			in.DurationFormat = string(f.durFmt)
			// Checked when the flag was parsed; a live fetch has no Caddyfile.
			_ = f.logTZ.apply(in, "")
		})
	}
	return offlineInputs()
}

// offlineInputs reads a bundle or the files named on the command line, with
// the site facts of --config's site section and of the flags. cleanup removes
// what standard input was copied to.
func (f *analyzeFlags) offlineInputs(stdin io.Reader) (*evidence.Inputs, func(), error) {
	if f.bundle == "" && len(f.access) == 0 && len(f.metrics) == 0 {
		return nil, nil, usageErrorf("nothing to analyze: give --bundle DIR, or --access/--metrics files")
	}
	if (f.from == "") != (f.to == "") {
		return nil, nil, usageErrorf("give both --from and --to, or neither (then the bundle's window, or the logs' own span, is analyzed)")
	}
	cleanup := func() {}
	access, skipped, stdinCopy, err := expandAccess(f.access, stdin)
	if stdinCopy != "" {
		cleanup = func() { os.Remove(stdinCopy) }
	}
	fail := func(err error) (*evidence.Inputs, func(), error) {
		cleanup()
		return nil, nil, err
	}
	if err != nil {
		return fail(err)
	}
	var site sources.Site
	var siteNotes []sources.QualityNote
	configTZ := ""
	if f.config != "" {
		if site, configTZ, siteNotes, err = readSiteConfig(f.config); err != nil {
			return fail(err)
		}
	}
	in, err := openEvidence(f.bundle, access, f.metrics, f.changes, "", "", f.tz)
	if err != nil {
		return fail(err)
	}
	if f.config != "" {
		in.Manifest.Site = site
		if configTZ != "" && in.Manifest.Timezone == "" {
			in.Manifest.Timezone = configTZ
		}
	}
	in.Notes = append(in.Notes, siteNotes...)
	in.Notes = append(in.Notes, bundle.SkippedNotes(skipped)...)
	in.AccessSkipped = append(in.AccessSkipped, skipped...)
	if f.tz != "" {
		in.Manifest.Timezone = f.tz
	}
	if f.from != "" {
		var loc *time.Location
		if in.Manifest.Timezone != "" {
			if loc, err = time.LoadLocation(in.Manifest.Timezone); err != nil {
				return fail(usageErrorf("time zone %q: %v", in.Manifest.Timezone, err))
			}
		}
		from, to, err := parseWindowIn(f.from, f.to, loc)
		if err != nil {
			return fail(err)
		}
		in.Manifest.Window = bundle.Window{From: from, To: to}
	}
	f.site.apply(&in.Manifest.Site)
	in.DurationFormat = string(f.durFmt)
	if err := f.logTZ.apply(in, f.bundle); err != nil {
		return fail(err)
	}
	if stdinCopy != "" {
		// The copy is removed when the analysis ends: messages name the input.
		in.Names = map[string]string{stdinCopy: "standard input"}
	}
	return in, cleanup, nil
}

// expandAccess resolves --access: a directory stands for the access logs in
// it, and - for standard input, copied to a temporary file (returned, for the
// caller to remove) because the rules read the requests a second time.
// skipped names the files of such a directory that are not read.
func expandAccess(args []string, stdin io.Reader) (paths, skipped []string, stdinCopy string, err error) {
	for _, a := range args {
		if a == "-" {
			if stdinCopy != "" {
				return nil, nil, stdinCopy, usageErrorf("--access -: standard input can be given once")
			}
			tmp, err := os.CreateTemp("", "aftermath-stdin-*.log")
			if err != nil {
				return nil, nil, "", fmt.Errorf("--access -: %w", err)
			}
			stdinCopy = tmp.Name()
			_, err = io.Copy(tmp, stdin)
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, nil, stdinCopy, fmt.Errorf("--access -: reading standard input: %w", err)
			}
			paths = append(paths, stdinCopy)
			continue
		}
		fi, err := os.Stat(a)
		if err != nil {
			return nil, nil, stdinCopy, usageErrorf("--access: %v", err)
		}
		if !fi.IsDir() {
			paths = append(paths, a)
			continue
		}
		logs, notRead, err := bundle.AccessLogs(a)
		if err != nil {
			return nil, nil, stdinCopy, usageErrorf("--access %s: %v", a, err)
		}
		if len(logs) == 0 {
			return nil, nil, stdinCopy, usageErrorf("--access %s: the directory holds no access log (*.log, *.jsonl or *.json, their rotations such as .1 or -20261119, plain or .gz)", a)
		}
		paths = append(paths, logs...)
		skipped = append(skipped, notRead...)
	}
	return paths, skipped, stdinCopy, nil
}

// readSiteConfig reads the site section and the timezone of aftermath.yaml
// for an offline analysis: the live sources the rest of the file configures
// are neither needed nor checked then. Unknown keys of the site section are
// warnings, with "did you mean".
func readSiteConfig(path string) (sources.Site, string, []sources.QualityNote, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return sources.Site{}, "", nil, usageErrorf("--config: %v", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return sources.Site{}, "", nil, usageErrorf("%s: not valid YAML: %v", path, err)
	}
	var doc struct {
		Timezone string       `yaml:"timezone"`
		Site     sources.Site `yaml:"site"`
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return doc.Site, "", nil, nil
	}
	top := root.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		switch k.Value {
		case "timezone":
			doc.Timezone = v.Value
		case "site":
			section, err := yaml.Marshal(v)
			if err != nil {
				return sources.Site{}, "", nil, fmt.Errorf("%s: %w", path, err)
			}
			// The section is decoded on its own, so its lines are offset
			// from the file's: messages are given the file's line back.
			notes, err := sources.DecodeYAML(path, section, &doc.Site, nil)
			for j := range notes {
				notes[j].Message = shiftLine(notes[j].Message, path, v.Line-1, "site")
			}
			if err != nil {
				return sources.Site{}, "", nil, usageErrorf("%s", shiftLine(err.Error(), path, v.Line-1, "site"))
			}
			return doc.Site, doc.Timezone, notes, nil
		}
	}
	return doc.Site, doc.Timezone, nil, nil
}

// shiftLine rewrites "path:N: " in msg (from decoding a section on its own)
// as the file's line N+offset, and names the section the keys are in.
func shiftLine(msg, path string, offset int, section string) string {
	var out []string
	for _, line := range strings.Split(msg, "\n") {
		if rest, ok := strings.CutPrefix(line, path+":"); ok {
			num, tail, _ := strings.Cut(rest, ":")
			if n, err := strconv.Atoi(num); err == nil {
				tail = strings.Replace(tail, ", ignored", " in "+section+", ignored", 1)
				if strings.HasPrefix(tail, " ") && !strings.Contains(tail, " in "+section) {
					tail = " " + section + "." + strings.TrimPrefix(tail, " ")
				}
				line = fmt.Sprintf("%s:%d:%s", path, n+offset, tail)
			}
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// openEvidence reads the evidence named on the command line: the bundle in dir
// (when given) plus the access logs, metrics and changes files (each must
// exist), with the window --from/--to when either is given.
//
// tz is --tz ("" when not given): the zone of times written without one in
// --from/--to, and in bundle.yaml when the bundle names no timezone of its
// own. The caller has checked that it loads.
func openEvidence(dir string, access, metrics, changes []string, from, to, tz string) (*evidence.Inputs, error) {
	in := &evidence.Inputs{}
	var tzLoc *time.Location
	if tz != "" {
		var err error
		if tzLoc, err = time.LoadLocation(tz); err != nil {
			return nil, usageErrorf("--tz: %v", err)
		}
	}
	if dir != "" {
		b, err := bundle.OpenIn(dir, tzLoc)
		if err != nil {
			return nil, &exitError{code: exitUsage, err: err}
		}
		*in = evidence.FromBundle(b)
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
		loc := tzLoc
		if loc == nil && in.Manifest.Timezone != "" {
			var err error
			if loc, err = time.LoadLocation(in.Manifest.Timezone); err != nil {
				return nil, usageErrorf("time zone %q: %v", in.Manifest.Timezone, err)
			}
		}
		f, t, err := parseWindowIn(from, to, loc)
		if err != nil {
			return nil, err
		}
		in.Manifest.Window = bundle.Window{From: f, To: t}
	}
	return in, nil
}

// parseWindow reads --from and --to (RFC3339); --to must be after --from.
// Errors are usage errors.
func parseWindow(from, to string) (time.Time, time.Time, error) { return parseWindowIn(from, to, nil) }

// parseWindowIn is parseWindow where a time without a zone is in loc (an
// error that says to give one when loc is nil).
func parseWindowIn(from, to string, loc *time.Location) (time.Time, time.Time, error) {
	f, err := sources.ParseTime(from, loc)
	if err != nil {
		return time.Time{}, time.Time{}, usageErrorf("--from: %v", err)
	}
	t, err := sources.ParseTime(to, loc)
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
func analyzeAndWrite(cmd *cobra.Command, in *evidence.Inputs, d *analysis.Detected, out string, formats []string, lang string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		d.Close()
		return &exitError{code: exitUsage, err: err}
	}
	a, err := analyzeInputs(cmd.Context(), *in, d, lang)
	endProgress(*in)
	if err != nil {
		return err
	}
	rep := a.Report
	paths, err := report.WriteAll(out, rep, formats, lang)
	if err != nil {
		return err
	}
	dataQuality := dataQualityPath(out, paths)
	rulesPath, err := writeRules(out, a, lang)
	if err != nil {
		return err
	}
	paths = append(paths, rulesPath)
	report.PrintSummary(cmd.OutOrStdout(), rep, lang, paths...)
	if incomplete(rep.DataQuality) {
		if dataQuality == "" {
			dataQuality = rulesPath
		}
		if where, ok := live.LokiUnreachable(in.Manifest); ok {
			return &exitError{code: exitIncomplete, err: fmt.Errorf("see data_quality in %s\n%s", dataQuality, unreachableLine(where))}
		}
		return &exitError{code: exitIncomplete, err: errors.New(report.IncompleteLine(lang, dataQuality))}
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
