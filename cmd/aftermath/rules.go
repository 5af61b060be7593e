package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aftermath-forensics/aftermath/analysis"
	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/cloudwatch"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/prometheus"
)

type rulesFlags struct {
	quiet        bool
	bundle       string
	access       []string
	metrics      []string
	from, to     string
	baselineDays float64
	validate     bool
	tz           string
	durFmt       durationFormat
	logTZ        logZone
	out          string
	caddyfile    string
	site         string
	lang         string
}

// newRulesCmd is `aftermath rules`: generate caddy-ratelimit zones for the
// crawler bursts in the evidence, backtest them on the recorded requests and
// print them with the config advice.
func newRulesCmd() *cobra.Command {
	var f rulesFlags
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "Generate and backtest Caddy rate-limit rules",
		Long: `Rules finds the crawler bursts in the evidence (a bundle, or access logs with
--from/--to), generates caddy-ratelimit v0.1.0 zones that would have stopped
them, replays the recorded requests through them, and prints the rate_limit
block, the backtest and the php-fpm/Caddy config advice.

The zones are sized on a baseline: the bundle's, the --baseline-days before the
window, or else the data before the window (or before the crawler's onset).

Standard output carries the rules file alone (a comment saying what the block
needs, where it goes and what it would have refused, then the block) unless it
is a terminal: the backtest tables, the advice and the notes then follow it
there, and otherwise go to standard error. So "aftermath rules ... > rules.caddy"
gives a usable file, as does --out FILE.

With --caddyfile PATH the block is placed in a copy of that Caddyfile, as the
rules file's header says to (the global option "` + rules.OrderOption + `",
the block at the top of the site's block), the copy is adapted by Caddy's own
Caddyfile adapter with caddy-ratelimit, written to PATH.rate_limit, and the
diff is printed instead of the rules file. The original is never changed.

Exit codes: 0 done; 1 done, but the access logs or the crawler detection had
problems (skipped lines, gaps), which the notes name; 2 usage or input error.
Missing metrics only limit the config advice and do not change the exit code.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := f.inputs()
			if err != nil {
				return err
			}
			in.Progress = newProgressPrinter(cmd.ErrOrStderr(), !f.quiet)
			defer endProgress(*in)
			return runRules(cmd, in, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.bundle, "bundle", "", "evidence bundle directory")
	fl.StringSliceVar(&f.access, "access", nil, "Caddy JSON access log (plain or .gz); repeatable")
	fl.StringSliceVar(&f.metrics, "metrics", nil, "OpenMetrics file with timestamps, for the config advice; repeatable")
	fl.StringVar(&f.from, "from", "", "window start, RFC3339 (required with --access)")
	fl.StringVar(&f.to, "to", "", "window end, RFC3339 (required with --access)")
	fl.Float64Var(&f.baselineDays, "baseline-days", 0, "size the zones on the N days before the window (default: the bundle's baseline, else the data before the window)")
	fl.BoolVar(&f.validate, "validate", false, "also print Caddy's verdict on the printed block (it is always validated before it is printed)")
	fl.StringVar(&f.tz, "tz", "", "time zone for local times (default: the bundle's, else UTC)")
	fl.StringVar(&f.out, "out", "", "write the rules file (header comment and rate_limit block) to FILE")
	fl.StringVar(&f.caddyfile, "caddyfile", "", "place the block in a copy of this Caddyfile (PATH.rate_limit), check it with Caddy's adapter and print the diff")
	fl.StringVar(&f.site, "site", "", "with --caddyfile: the site address whose block gets the zones (default: the site block that served the logged requests; with two candidates, rules names both and asks for this)")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress on stderr (it is drawn only on a terminal)")
	fl.StringVar(&f.lang, "lang", "en", "language of the rules file's comments (its header, or why no zone was proposed): en or ko")
	f.durFmt.register(fl)
	f.logTZ.register(fl)
	return cmd
}

func (f *rulesFlags) inputs() (*evidence.Inputs, error) {
	switch {
	case f.bundle != "": // the bundle holds the window
	case len(f.access) == 0:
		return nil, usageErrorf("nothing to read: give --bundle DIR, or --access FILE with --from and --to")
	case f.from == "" || f.to == "":
		return nil, usageErrorf("--from and --to are required with --access (RFC3339, e.g. 2026-10-03T02:00:00+09:00)")
	}
	in, err := openEvidence(f.bundle, f.access, f.metrics, nil, f.from, f.to, f.tz)
	if err != nil {
		return nil, err
	}
	if f.baselineDays < 0 {
		return nil, usageErrorf("--baseline-days %v: must be positive", f.baselineDays)
	}
	if f.baselineDays > 0 {
		from := in.Manifest.Window.From
		in.Manifest.Baseline = &bundle.Window{From: from.Add(-time.Duration(f.baselineDays * 24 * float64(time.Hour))), To: from}
	}
	if f.tz != "" {
		in.Manifest.Timezone = f.tz
	}
	in.DurationFormat = string(f.durFmt)
	if err := f.logTZ.apply(in, f.bundle); err != nil {
		return nil, err
	}
	if len(in.Access) == 0 {
		return nil, usageErrorf("no access log to generate rules from")
	}
	return in, nil
}

func runRules(cmd *cobra.Command, in *evidence.Inputs, f rulesFlags) error {
	if !slices.Contains(report.Langs, f.lang) {
		return usageErrorf("--lang %q: one of %s", f.lang, strings.Join(report.Langs, ", "))
	}
	if f.site != "" && f.caddyfile == "" {
		return usageErrorf("--site names a site of the --caddyfile: give --caddyfile PATH too")
	}
	var userCaddyfile []byte
	if f.caddyfile != "" {
		var err error
		if userCaddyfile, err = os.ReadFile(f.caddyfile); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("--caddyfile: %w", err)}
		}
	}
	ctx := cmd.Context()
	d, err := analysis.Detect(ctx, *in)
	if err != nil {
		return &exitError{code: exitUsage, err: pipelineError(*in, err)}
	}
	defer d.Close()
	loaded, res, loc := d.Loaded, d.Result, d.Loc
	stage(*in, "proposing and backtesting rules")
	prop, err := d.Propose(ctx, *in)
	endProgress(*in)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	// The rules file (or the diff) is the command's output; the tables and
	// notes are for a person, so they share stdout only with a terminal.
	out := cmd.OutOrStdout()
	human := cmd.ErrOrStderr()
	if isTerminal(out) {
		human = out
	}
	file := rules.NoProposalComment(f.lang, true)
	if prop.Caddyfile != "" {
		if file, err = prop.CaddyfileIn(f.lang); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
	}
	if f.out != "" {
		if err := os.WriteFile(f.out, []byte(file), 0o644); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("--out: %w", err)}
		}
		fmt.Fprintln(human, "wrote", report.TerminalSafe(f.out))
	}
	if f.validate && prop.Block != "" {
		if err := rules.Validate(prop.Block); err != nil {
			fmt.Fprintln(human, "validation FAILED:", err)
			return &exitError{code: exitUsage, err: err}
		}
		fmt.Fprintln(human, "validated: adapted by Caddy v2.11.9 with caddy-ratelimit v0.1.0; every subdirective survives")
	}
	switch {
	case f.caddyfile != "":
		if prop.Block == "" {
			fmt.Fprintln(human, "no rate limit proposed: nothing to place in", report.TerminalSafe(f.caddyfile))
			break
		}
		pl, err := d.PlaceZones(ctx, prop, userCaddyfile, f.caddyfile, f.site)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		copyPath := f.caddyfile + ".rate_limit"
		if err := os.WriteFile(copyPath, []byte(pl.Caddyfile), 0o644); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("--caddyfile: %w", err)}
		}
		fmt.Fprint(out, rules.UnifiedDiff(f.caddyfile, copyPath, string(userCaddyfile), pl.Caddyfile))
		chosen := "named by --site"
		if pl.Why != "--site" {
			chosen = "chosen because " + pl.Why
		}
		fmt.Fprintf(human, "wrote %s: the zones are in the site block %s (%s; server %s, handlers in order: %s); Caddy's adapter accepts it.\n",
			report.TerminalSafe(copyPath), report.TerminalSafe(pl.Site), report.TerminalSafe(chosen), report.TerminalSafe(pl.Check.Server), strings.Join(pl.Check.Handlers, ", "))
		for _, w := range pl.Check.Warnings {
			fmt.Fprintln(human, "caddy warning:", report.TerminalSafe(w))
		}
		fmt.Fprintln(human, "check with the Caddy you will run (built with "+rules.Module+"): caddy validate --config", report.TerminalSafe(copyPath))
	case f.out == "":
		fmt.Fprint(out, file)
	}
	if prop.Block != "" {
		fmt.Fprintln(human)
		printBacktest(human, prop, loc)
		for _, r := range prop.Rules {
			fmt.Fprintf(human, "\n%s: %s\n", r.Name, report.TerminalSafe(r.Why))
		}
	}
	if len(prop.Recommendations) > 0 {
		fmt.Fprintln(human)
		t := report.NewTable(human)
		t.Header("target", "key", "value")
		for _, r := range prop.Recommendations {
			_ = t.Append(r.Target, r.Key, report.TerminalSafe(r.Value))
		}
		_ = t.Render()
		for _, r := range prop.Recommendations {
			fmt.Fprintf(human, "\n%s %s = %s: %s\n", r.Target, r.Key, report.TerminalSafe(r.Value), report.TerminalSafe(r.Why))
		}
	}
	notes := append(append(append([]sources.QualityNote{}, loaded.DataQuality...), res.DataQuality...), prop.DataQuality...)
	if len(notes) > 0 {
		fmt.Fprintln(human)
	}
	for _, n := range notes {
		fmt.Fprintf(human, "%s (%s): %s\n", n.Severity, n.Source, report.TerminalSafe(n.Message))
	}
	if problems := rulesProblems(loaded.DataQuality, res.DataQuality, prop); len(problems) > 0 {
		return &exitError{code: exitIncomplete, err: fmt.Errorf("done, but the rules rest on incomplete evidence: %s", report.TerminalSafe(problems[0].Message))}
	}
	return nil
}

// rulesProblems keeps the problems of what the rules are made from: the
// access logs (however fetched), the crawler detection, and the rules' own
// generation and backtest. Metrics, changes and the other logs only feed the
// config advice or the postmortem, so their gaps do not make the rules
// incomplete; a note from a source not named here counts, to be safe.
func rulesProblems(loadNotes, detectNotes []sources.QualityNote, prop *rules.Proposal) []sources.QualityNote {
	notNeeded := map[string]bool{"metrics": true, prometheus.Source: true, cloudwatch.Source: true, "git": true, "changes": true, "logs": true}
	var out []sources.QualityNote
	for _, n := range sources.Problems(loadNotes) {
		if !notNeeded[n.Source] {
			out = append(out, n)
		}
	}
	for _, n := range sources.Problems(detectNotes) {
		if n.Source == string(detect.KindCrawlerBurst) {
			out = append(out, n)
		}
	}
	return append(out, prop.RulesProblems()...)
}

// printBacktest prints one row per zone and one for the block as a whole.
func printBacktest(w io.Writer, prop *rules.Proposal, loc *time.Location) {
	t := report.NewTable(w)
	t.Header("zone", "window", "events", "crawler refused", "crawler PHP s saved", "other logged-out refused", "logged-in refused", "clients with a 429", "baseline refused", "readers sharing the fingerprint refused", "first refusal")
	row := func(name, window, events string, b rules.Backtest) {
		first := "-"
		if !b.FirstRefusal.IsZero() {
			first = b.FirstRefusal.In(loc).Format("15:04:05")
		}
		_ = t.Append(name, window, events,
			fmt.Sprintf("%d of %d (%.1f%%)", b.CrawlerRefused, b.CrawlerRequests, 100*b.CrawlerRefusedShare),
			fmt.Sprintf("%.0f", b.CrawlerPHPSecondsSaved),
			fmt.Sprintf("%d of %d (%.2f%%)", b.OtherLoggedOutRefused, b.OtherLoggedOutRequests, 100*b.OtherLoggedOutRefusedShare),
			fmt.Sprintf("%d of %d", b.LoggedInRefused, b.LoggedInRequests),
			fmt.Sprint(b.LegitimateClientsRefused),
			fmt.Sprintf("%d of %d", b.BaselineRefused, b.BaselineRequests),
			fmt.Sprintf("%d of %d", b.FingerprintReaderRefused, b.FingerprintReaderRequests),
			first)
	}
	for _, r := range prop.Rules {
		row(r.Name, r.Window, fmt.Sprint(r.Events), r.Backtest)
	}
	if prop.Backtest != nil && len(prop.Rules) > 1 {
		row("(all zones)", "", "", *prop.Backtest)
	}
	_ = t.Render()
}
