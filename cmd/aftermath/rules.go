package main

import (
	"fmt"
	"io"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/spf13/cobra"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

type rulesFlags struct {
	bundle       string
	access       []string
	metrics      []string
	from, to     string
	baselineDays float64
	validate     bool
	tz           string
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
window, or else the data before the window (or before the crawler's onset).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := f.inputs()
			if err != nil {
				return err
			}
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
	return cmd
}

func (f *rulesFlags) inputs() (*detect.Inputs, error) {
	switch {
	case f.bundle != "": // the bundle holds the window
	case len(f.access) == 0:
		return nil, usageErrorf("nothing to read: give --bundle DIR, or --access FILE with --from and --to")
	case f.from == "" || f.to == "":
		return nil, usageErrorf("--from and --to are required with --access (RFC3339, e.g. 2026-10-03T02:00:00+09:00)")
	}
	in, err := openEvidence(f.bundle, f.access, f.metrics, nil, f.from, f.to)
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
	if len(in.Access) == 0 {
		return nil, usageErrorf("no access log to generate rules from")
	}
	return in, nil
}

func runRules(cmd *cobra.Command, in *detect.Inputs, f rulesFlags) error {
	ctx := cmd.Context()
	d, err := loadAndDetect(ctx, *in)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	defer d.loaded.Close()
	loaded, res, loc := d.loaded, d.res, d.loc
	prop, err := d.propose(ctx, *in)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	w := cmd.OutOrStdout()
	if prop.Caddyfile != "" {
		fmt.Fprintln(w, "# caddy-ratelimit v0.1.0: paste into the site block (rate_limit runs before basic_auth)")
		fmt.Fprint(w, prop.Caddyfile)
		if f.validate {
			if err := rules.Validate(prop.Caddyfile); err != nil {
				fmt.Fprintln(w, "# validation FAILED:", err)
				return &exitError{code: exitUsage, err: err}
			}
			fmt.Fprintln(w, "# validated: adapted by Caddy v2.11.9 with caddy-ratelimit v0.1.0; every subdirective survives")
		}
		fmt.Fprintln(w)
		printBacktest(w, prop, loc)
		for _, r := range prop.Rules {
			fmt.Fprintf(w, "\n%s: %s\n", r.Name, report.TerminalSafe(r.Why))
		}
	} else {
		fmt.Fprintln(w, "no rate limit proposed")
	}
	if len(prop.Recommendations) > 0 {
		fmt.Fprintln(w)
		t := tablewriter.NewWriter(w)
		t.Header("target", "key", "value")
		for _, r := range prop.Recommendations {
			_ = t.Append(r.Target, r.Key, report.TerminalSafe(r.Value))
		}
		_ = t.Render()
		for _, r := range prop.Recommendations {
			fmt.Fprintf(w, "\n%s %s = %s: %s\n", r.Target, r.Key, report.TerminalSafe(r.Value), report.TerminalSafe(r.Why))
		}
	}
	notes := append(append(append([]sources.QualityNote{}, loaded.DataQuality...), res.DataQuality...), prop.DataQuality...)
	if len(notes) > 0 {
		fmt.Fprintln(w)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "%s (%s): %s\n", n.Severity, n.Source, report.TerminalSafe(n.Message))
	}
	if incomplete(notes) {
		return &exitError{code: exitIncomplete, err: fmt.Errorf("done, but with caveats: see the notes above")}
	}
	return nil
}

// printBacktest prints one row per zone and one for the block as a whole.
func printBacktest(w io.Writer, prop *rules.Proposal, loc *time.Location) {
	t := tablewriter.NewWriter(w)
	t.Header("zone", "window", "events", "crawler refused", "crawler PHP s saved", "other logged-out refused", "logged-in refused", "clients with a 429", "baseline refused", "first refusal")
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
