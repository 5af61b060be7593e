package main

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/aftermath-forensics/aftermath/analysis"
	"github.com/aftermath-forensics/aftermath/report/replayview"
	"github.com/aftermath-forensics/aftermath/rules/replay"
	"github.com/aftermath-forensics/aftermath/rules/replay/replayreport"
)

type replayFlags struct {
	quiet                                                bool
	bundle, target, from, to, only, out, forwardedHeader string
	speed                                                float64
	targetIsMine                                         bool
	clientTimeout, maxDuration, maxLag                   time.Duration
	maxRequests                                          int
	logTZ                                                logZone
}

// defaultClientTimeout is the clients' patience when the site facts do not say.
const defaultClientTimeout = 10 * time.Second

// newReplayCmd is `aftermath replay`: send the recorded incident, open-loop,
// at a staging copy of the site and report what comes back beside the
// rule's backtest.
func newReplayCmd() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay --bundle DIR --target URL",
		Short: "Send the recorded incident open-loop at a staging stack and compare with the backtest",
		Long: `Replay sends the window's recorded requests at a staging copy of the site, each at its
recorded instant (compressed by --speed), on its own goroutine, whatever is still in
flight, and classifies what comes back per client class: answered in time by status,
late, 429, 502/503/504, timeout, connection refused, reset, EOF. It sets the refused
shares beside the proposed rule's backtest over the same range.

With --speed X the rule's windows must shrink by X too: replay writes the rule
(rules.caddy) and the rule to put in front of the target (rules-speed-Xx.caddy).

Safety: a target off loopback is refused unless --target-is-mine; the run is bounded
by --max-requests and --max-duration; Ctrl-C stops it and still writes the report.
On loopback each recorded client sends from its own 127.0.0.0/8 address; elsewhere
the client address travels in --forwarded-header, which the target's Caddy must trust.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runReplay(cmd, f) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.quiet, "quiet", false, "no progress on stderr (it is drawn only on a terminal)")
	fl.StringVar(&f.bundle, "bundle", "", "evidence bundle directory (required)")
	f.logTZ.register(fl)
	fl.StringVar(&f.target, "target", "", "staging site, http(s)://host:port (required)")
	fl.StringVar(&f.from, "from", "", "start of the range to replay, RFC3339 (default: the bundle's window)")
	fl.StringVar(&f.to, "to", "", "end of the range to replay, RFC3339 (default: the bundle's window)")
	fl.Float64Var(&f.speed, "speed", 1, "compress time by this factor (the rule's windows are divided by it)")
	fl.StringVar(&f.only, "only", "", "send only the crawler's requests (crawler) or only the others (others)")
	fl.StringVar(&f.out, "out", "replay", "directory for replay.md, replay.html, replay.json and the rule files")
	fl.BoolVar(&f.targetIsMine, "target-is-mine", false, "allow a target off loopback: you own it and may load it")
	fl.StringVar(&f.forwardedHeader, "forwarded-header", "X-Forwarded-For", "header carrying the client address to a target off loopback")
	fl.DurationVar(&f.clientTimeout, "client-timeout", 0, "how long a client waits (default: the site's client_timeout_s, else 10s)")
	fl.IntVar(&f.maxRequests, "max-requests", 200000, "send at most this many requests (the earliest)")
	fl.DurationVar(&f.maxDuration, "max-duration", time.Hour, "stop the run after this long")
	fl.DurationVar(&f.maxLag, "max-lag", 100*time.Millisecond, "mark the run invalid when the generator falls this far behind its schedule")
	return cmd
}

func runReplay(cmd *cobra.Command, f replayFlags) error {
	if f.bundle == "" || f.target == "" {
		return usageErrorf("--bundle and --target are required")
	}
	only := replay.Only(f.only)
	if only != replay.OnlyAll && only != replay.OnlyCrawler && only != replay.OnlyOthers {
		return usageErrorf("--only %q: want crawler or others", f.only)
	}
	if f.speed <= 0 || f.maxRequests <= 0 || f.maxDuration <= 0 || f.maxLag <= 0 || f.clientTimeout < 0 {
		return usageErrorf("--speed, --max-requests, --max-duration and --max-lag must be positive")
	}
	target, err := url.Parse(f.target)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return usageErrorf("--target %q: want http://host:port or https://host:port", f.target)
	}
	loopback, v4 := loopbackTarget(target)
	if !loopback && !f.targetIsMine {
		return usageErrorf("--target %s is not on loopback: replay sends an incident's load; give --target-is-mine if you own it", target.Host)
	}
	if strings.TrimSpace(f.forwardedHeader) == "" {
		return usageErrorf("--forwarded-header must name a header")
	}

	in, err := openEvidence(f.bundle, nil, nil, nil, "", "", "")
	if err != nil {
		return err
	}
	if len(in.Access) == 0 {
		return usageErrorf("bundle %s holds no access log to replay", f.bundle)
	}
	// The requests are sent at the instants they were logged: zone-less
	// times are read where analyze reads them (--log-tz, the bundle's
	// Caddyfile), or the replay would shift by the zone's offset.
	if err := f.logTZ.apply(in, f.bundle); err != nil {
		return err
	}
	from, to := in.Manifest.Window.From, in.Manifest.Window.To
	if f.from != "" || f.to != "" {
		if f.from == "" || f.to == "" {
			return usageErrorf("give both --from and --to, or neither")
		}
		if from, to, err = parseWindow(f.from, f.to); err != nil {
			return err
		}
	}
	ctx := cmd.Context()
	in.Progress = newProgressPrinter(cmd.ErrOrStderr(), !f.quiet)
	defer endProgress(*in)
	d, err := analysis.Detect(ctx, *in)
	if err != nil {
		return &exitError{code: exitUsage, err: pipelineError(*in, err)}
	}
	defer d.Close()
	plan, prop, err := d.PrepareReplay(ctx, *in,
		replay.PlanOptions{From: from, To: to, Speed: f.speed, Only: only, MaxRequests: f.maxRequests})
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	endProgress(*in)
	if len(plan.Shots) == 0 {
		return usageErrorf("no request arrived between %s and %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}

	var notes []string
	timeout := f.clientTimeout
	switch {
	case timeout > 0:
		notes = append(notes, fmt.Sprintf("client timeout %s from --client-timeout", timeout))
	case d.Evidence.Site.ClientTimeoutS > 0:
		timeout = time.Duration(d.Evidence.Site.ClientTimeoutS * float64(time.Second))
		notes = append(notes, fmt.Sprintf("client timeout %s from the site facts (client_timeout_s)", timeout))
	default:
		timeout = defaultClientTimeout
		notes = append(notes, fmt.Sprintf("the site facts give no client timeout: %s assumed", timeout))
	}
	if f.speed != 1 {
		notes = append(notes, fmt.Sprintf("at speed %g the arrivals are %g times denser but the target's service times are its own: the client timeout is not compressed", f.speed, f.speed))
	}
	if loopback && !v4 {
		notes = append(notes, "the target is on IPv6 loopback (::1 only): clients cannot each have a source address there, so the client address travels in "+f.forwardedHeader)
	}
	if plan.Duration() > f.maxDuration {
		notes = append(notes, fmt.Sprintf("the schedule lasts %s, longer than --max-duration %s: the run stops at the bound", plan.Duration().Round(time.Second), f.maxDuration))
	}
	if in.MinuteStatus != "" {
		notes = append(notes, "the bundle counts some minutes without their lines (pulled as per-minute counts): their requests cannot be replayed, only the lines the bundle holds are sent")
	}
	notes = append(notes, "methods are kept but no request body is sent (the access log holds none); each client's connection is its own and is closed after its answer")

	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("replay: %w", err)}
	}
	w := cmd.ErrOrStderr()
	var ruleFile, scaledFile, ruleName string
	if prop.Caddyfile != "" {
		ruleFile = filepath.Join(f.out, rulesFile)
		if err := os.WriteFile(ruleFile, []byte(prop.Caddyfile), 0o644); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		var names []string
		for _, r := range prop.Rules {
			names = append(names, r.Name)
		}
		ruleName = strings.Join(names, ", ")
		if f.speed != 1 {
			scaled, err := replay.ScaleRule(prop.Caddyfile, f.speed)
			if err != nil {
				return fmt.Errorf("replay: %w", err)
			}
			scaledFile = filepath.Join(f.out, "rules-speed-"+strconv.FormatFloat(f.speed, 'f', -1, 64)+"x.caddy")
			if err := os.WriteFile(scaledFile, []byte(scaled), 0o644); err != nil {
				return fmt.Errorf("replay: %w", err)
			}
			fmt.Fprintf(w, "replay: at speed %g the target must run %s (the rule with every window divided by %g), not %s\n", f.speed, scaledFile, f.speed, ruleFile)
		} else {
			fmt.Fprintf(w, "replay: the target must run %s\n", ruleFile)
		}
	} else {
		fmt.Fprintln(w, "replay: no rule was proposed for this range; the replay measures the target as it is")
	}
	fmt.Fprintf(w, "replay: sending %d requests over %s at %s (Ctrl-C stops and still writes the report)\n", len(plan.Shots), plan.Duration().Round(time.Millisecond), target.Redacted())

	opt := replay.Options{Target: target, Loopback: loopback && v4, ForwardedHeader: f.forwardedHeader, ClientTimeout: timeout, LateWindow: timeout,
		MaxLag: f.maxLag, MaxDuration: f.maxDuration}
	sigCtx, stop := signal.NotifyContext(context.WithoutCancel(ctx), os.Interrupt, syscall.SIGTERM)
	res, err := replay.Run(sigCtx, plan, opt)
	stop()
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	rep := replay.NewReport(replay.ReportInput{Plan: plan, Options: opt, Result: res, Backtest: prop.Backtest, RuleName: ruleName,
		RuleFile: ruleFile, ScaledRuleFile: scaledFile, Notes: notes})
	js, err := rep.JSON()
	if err != nil {
		return err
	}
	page, err := replayview.HTML(rep)
	if err != nil {
		return err
	}
	jsPath, mdPath, htmlPath := filepath.Join(f.out, "replay.json"), filepath.Join(f.out, "replay.md"), filepath.Join(f.out, "replay.html")
	if err := os.WriteFile(jsPath, js, 0o644); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if err := os.WriteFile(mdPath, replayview.Markdown(rep), 0o644); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if err := os.WriteFile(htmlPath, page, 0o644); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	printReplaySummary(cmd, rep, mdPath, htmlPath, jsPath)
	switch {
	case !rep.Generator.Valid:
		return &exitError{code: exitIncomplete, err: fmt.Errorf("the run is invalid: %s", rep.Generator.Invalid)}
	case rep.Stopped != "":
		return &exitError{code: exitIncomplete, err: fmt.Errorf("the run stopped early (%s)", rep.Stopped)}
	}
	return nil
}

// loopbackTarget reports whether the target's host is a loopback address
// (or localhost), and whether it is IPv4 (where each client can have a
// source address of its own).
func loopbackTarget(u *url.URL) (loopback, v4 bool) {
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true, true
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		// A name: only what it resolves to counts, and a name may resolve
		// elsewhere tomorrow; treat it as off loopback.
		return false, false
	}
	a = a.Unmap()
	return a.IsLoopback(), a.Is4()
}

func printReplaySummary(cmd *cobra.Command, r *replayreport.Report, paths ...string) {
	w := cmd.OutOrStdout()
	g := r.Generator
	valid := "valid"
	if !g.Valid {
		valid = "INVALID"
	}
	fmt.Fprintf(w, "replay %s: worst lag %.1f ms, in flight at most %d (schedule allows %d)\n", valid, g.WorstLagMS, g.InFlightHigh, g.InFlightBound)
	for _, name := range []string{"crawler", "other_logged_out", "logged_in"} {
		s := r.Classes[name]
		fmt.Fprintf(w, "  %-17s sent %6d  goodput %6d  429 %6d  5xx %5d  late %5d  timeout %5d  refused %4d  reset %4d  EOF %4d\n",
			name, s.Sent, s.Goodput, s.RateLimited, s.ProxyErrors, s.LateTotal(), s.Timeout, s.Refused, s.Reset, s.EOF)
	}
	if c := r.Backtest; c != nil {
		for _, row := range c.Rows {
			fmt.Fprintf(w, "  %-17s refused: backtest %5.1f%%  replay %5.1f%%  (%+.1f points)\n", row.Class, 100*row.BacktestRefusedShare, 100*row.ReplayRefusedShare, row.DifferencePoints)
		}
		for _, d := range c.Disagreements {
			fmt.Fprintln(w, "  disagreement:", d)
		}
	}
	for _, p := range paths {
		fmt.Fprintln(w, "wrote", p)
	}
}
