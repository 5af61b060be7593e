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

	"github.com/aftermath-forensics/aftermath/analysis"
	"github.com/aftermath-forensics/aftermath/detect/scan"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/report/notify"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/duration"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/live"
)

// webhookEnv names the environment variable --webhook falls back to: a
// webhook URL is a secret, and the environment keeps it out of crontabs,
// unit files and the process list.
const webhookEnv = "AFTERMATH_WEBHOOK_URL"

// webhookBackoff is the wait after a failed delivery, doubled at each retry.
var webhookBackoff = 2 * time.Second

type scanFlags struct {
	quiet     bool
	config    string
	bundle    string
	now       string
	since     duration.Value
	baseline  duration.Value
	out       string
	webhook   string
	state     string
	profiles  string
	reportURL string
	tz        string
	durFmt    durationFormat
	logTZ     logZone
	attempts  int
	timeout   time.Duration
	lang      string
}

func newScanCmd() *cobra.Command {
	f := scanFlags{since: duration.Value(scan.DefaultSince), baseline: duration.Value(scan.DefaultBaseline)}
	cmd := &cobra.Command{
		Use:   "scan (--bundle DIR [--now T] | --config F) [--since 1h] [--baseline 7d]",
		Short: "Scheduled anomaly report over a recent window",
		Long: `Scan judges the last --since (1h) against the same hours of the previous days
(--baseline 7d; the same weekday from 14d on) with robust statistics, runs the
detectors of analyze over the window, and writes scan.md and scan.json into --out.
It exits 0 when nothing is anomalous (observations of severity info do not count),
1 when something is, 2 on error (a webhook that could not be reached included).

With --webhook (or $` + webhookEnv + `) it posts a Slack-compatible message when an
anomaly starts, worsens or ends; --state FILE remembers what was announced between
runs, so that an ongoing anomaly is announced once. --bundle with --now replays a
schedule over recorded evidence (--now defaults to the end of the bundle's window).
--config reads the live sources of aftermath.yaml instead: the window with the
detectors' 3h of lookback and each baseline slot are fetched raw, never the hours
between them; a source that fails leaves the scan judging what was fetched, with
exit 1. With --profiles DIR each scan keeps its window's profile (counts per
fingerprint, status, latency bucket), which is a baseline slot of the scans at the
same time on the following days: once the cache is warm, a scan fetches its
window and lookback only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runScan(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.quiet, "quiet", false, "no progress on stderr (it is drawn only on a terminal)")
	fl.StringVar(&f.config, "config", "", "aftermath.yaml (live sources)")
	fl.StringVar(&f.bundle, "bundle", "", "evidence bundle directory")
	fl.StringVar(&f.now, "now", "", "end of the window, RFC3339 (default: the end of the bundle's window, or the current minute with --config)")
	fl.Var(&f.since, "since", "length of the window judged: 1h, 30m, ... (at most 24h)")
	fl.Var(&f.baseline, "baseline", "how far back the baseline reaches, in days: 7d, 14d, 28d")
	fl.StringVar(&f.out, "out", "aftermath-scan", "output directory for scan.md and scan.json")
	fl.StringVar(&f.webhook, "webhook", "", "Slack-compatible incoming webhook URL (default $"+webhookEnv+")")
	fl.StringVar(&f.state, "state", "", "state file (JSON) remembering what was announced")
	fl.StringVar(&f.profiles, "profiles", "", "with --config: directory keeping each scanned hour's profile, so later scans read their baseline from it instead of fetching it")
	fl.StringVar(&f.reportURL, "report-url", "", "URL the message links to (default: the path of scan.md)")
	fl.StringVar(&f.tz, "tz", "", "time zone of the site's clock (default: the bundle's, else UTC)")
	fl.IntVar(&f.attempts, "webhook-attempts", 4, "tries before a delivery is given up")
	f.timeout = 10 * time.Second
	fl.Var((*duration.Value)(&f.timeout), "webhook-timeout", "timeout of one webhook request")
	fl.StringVar(&f.lang, "lang", "en", "language of scan.md and of what the scan prints: en or ko (scan.json stays English)")
	f.durFmt.register(fl)
	f.logTZ.register(fl)
	return cmd
}

func runScan(cmd *cobra.Command, f *scanFlags) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if !slices.Contains(report.Langs, f.lang) {
		return usageErrorf("--lang %q: one of %s", f.lang, strings.Join(report.Langs, ", "))
	}
	var liveCfg *live.Config
	if f.config != "" {
		if f.bundle != "" {
			return usageErrorf("give --bundle DIR or --config FILE, not both")
		}
		var err error
		if liveCfg, err = loadLiveConfig(f.config, cmd.ErrOrStderr()); err != nil {
			return err
		}
	}
	in, now, tz, err := f.inputs(liveCfg)
	if err != nil {
		return err
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return usageErrorf("--tz %q: %v", tz, err)
	}
	cfg := scan.Config{Since: time.Duration(f.since), Baseline: time.Duration(f.baseline), Loc: loc}.Defaults()
	if err := cfg.Validate(); err != nil {
		return usageErrorf("%v", err)
	}
	var fetchNotes []sources.QualityNote
	var ls *liveScan
	var cache *profileCache
	if liveCfg != nil {
		cache = openProfileCache(f.profiles, cfg.Slots(now))
		if ls, err = fetchScan(ctx, liveCfg, cfg, now, cache.holds, cmd.ErrOrStderr(), !f.quiet); err != nil {
			return err
		}
		defer ls.cleanup()
		in, fetchNotes = &ls.inputs, ls.notes
		in.DurationFormat = string(f.durFmt)
		_ = f.logTZ.apply(in, "") // checked when the flag was parsed
		printNotes(cmd.ErrOrStderr(), fetchNotes, true)
	} else if f.profiles != "" {
		return usageErrorf("--profiles keeps the profiles of live scans: it needs --config")
	}
	webhook := f.webhook
	if webhook == "" {
		webhook = os.Getenv(webhookEnv)
	}

	in.Progress = newProgressPrinter(cmd.ErrOrStderr(), !f.quiet)
	set, err := analysis.LoadScans(ctx, *in, cfg, now)
	endProgress(*in)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	defer set.Close()
	if cache != nil {
		cache.use(set)
	}
	res, err := analysis.Scan(ctx, set, now)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	res.DataQuality = append(res.DataQuality, sources.Problems(fetchNotes)...)
	if liveCfg != nil {
		res.DataQuality = append(res.DataQuality, liveCfg.Warnings...)
	}
	if cache != nil {
		cache.store(set, ls, cfg, now)
		res.DataQuality = append(res.DataQuality, cache.notes...)
	}
	doc := report.BuildScan(res, tz)
	if res.Recent == nil || res.Recent.Lines == 0 {
		// A window without one access-log line is not a quiet hour: the
		// scan cannot judge it, announces nothing and says why.
		note := report.ScanNoLinesNote(res.Window.From, res.Window.To)
		doc.DataQuality = append(doc.DataQuality, note)
		if _, err := report.WriteScan(f.out, doc, f.lang); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		return &exitError{code: exitUsage, err: report.ScanNoLinesError(f.lang, note)}
	}
	if err := proposeForScan(ctx, *in, cfg, res, doc); err != nil {
		return err
	}
	// The report goes to disk first: whatever happens to the delivery, the
	// scan is not lost.
	paths, err := report.WriteScan(f.out, doc, f.lang)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	var deliveryErr error
	if !doc.Judged && !doc.Anomalous && (webhook != "" || f.state != "") {
		// A window that could not be judged ends no anomaly: announcing
		// nothing keeps the state, so an open one is not closed as over.
		doc.DataQuality = append(doc.DataQuality, report.ScanNotAnnouncedNote(doc))
		if paths, err = report.WriteScan(f.out, doc, f.lang); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
	} else if webhook != "" || f.state != "" {
		deliveryErr = f.announce(ctx, cmd.OutOrStdout(), webhook, res, doc, loc, paths)
		if deliveryErr != nil {
			doc.DataQuality = append(doc.DataQuality, report.ScanNotDeliveredNote(deliveryErr))
		}
		if doc.Delivery != nil || deliveryErr != nil {
			if paths, err = report.WriteScan(f.out, doc, f.lang); err != nil {
				return &exitError{code: exitUsage, err: err}
			}
		}
	}
	report.PrintScanSummary(cmd.OutOrStdout(), doc, f.lang, paths...)
	if deliveryErr != nil {
		return &exitError{code: exitUsage, err: deliveryErr}
	}
	if line := report.ScanExitLine(f.lang, doc, paths[len(paths)-1], incomplete(fetchNotes)); line != "" {
		return &exitError{code: exitIncomplete, err: errors.New(line)}
	}
	return nil
}

// inputs resolves the evidence, the scan's now and the site's zone. With
// live sources (cfg) the evidence is fetched later, once the scan's ranges are
// known: inputs returns nil for it.
func (f *scanFlags) inputs(cfg *live.Config) (*evidence.Inputs, time.Time, string, error) {
	if cfg != nil {
		now := time.Now().UTC().Truncate(time.Minute)
		if f.now != "" {
			t, err := time.Parse(time.RFC3339, f.now)
			if err != nil {
				return nil, time.Time{}, "", usageErrorf("--now: %v", err)
			}
			now = t
		}
		tz := f.tz
		if tz == "" {
			tz = cfg.Timezone
		}
		if tz == "" {
			tz = "UTC"
		}
		return nil, now.UTC(), tz, nil
	}
	if f.bundle == "" {
		return nil, time.Time{}, "", usageErrorf("nothing to scan: give --bundle DIR [--now T] or --config FILE")
	}
	var tzLoc *time.Location
	if f.tz != "" {
		var err error
		if tzLoc, err = time.LoadLocation(f.tz); err != nil {
			return nil, time.Time{}, "", usageErrorf("--tz %q: %v", f.tz, err)
		}
	}
	b, err := bundle.OpenIn(f.bundle, tzLoc)
	if err != nil {
		return nil, time.Time{}, "", &exitError{code: exitUsage, err: err}
	}
	in := evidence.FromBundle(b)
	in.DurationFormat = string(f.durFmt)
	if err := f.logTZ.apply(&in, f.bundle); err != nil {
		return nil, time.Time{}, "", err
	}
	now := b.Manifest.Window.To
	if f.now != "" {
		if now, err = time.Parse(time.RFC3339, f.now); err != nil {
			return nil, time.Time{}, "", usageErrorf("--now: %v", err)
		}
	}
	tz := f.tz
	if tz == "" {
		tz = b.Manifest.Timezone
	}
	if tz == "" {
		tz = "UTC"
	}
	return &in, now.UTC(), tz, nil
}

// announce compares the scan with the state, posts what changed to the
// webhook (when one is given) and saves the state once delivered. A failed
// delivery leaves the state as it was.
func (f *scanFlags) announce(ctx context.Context, stdout io.Writer, webhook string, res *scan.Result, doc *report.Scan,
	loc *time.Location, paths []string) error {
	st := notify.NewState()
	if f.state != "" {
		var err error
		if st, err = notify.LoadState(f.state); err != nil {
			return err
		}
		if st.Updated.After(res.Now) {
			fmt.Fprintf(stdout, "state %s was saved by a scan at %s, after this one: replaying out of order\n",
				f.state, st.Updated.Format(time.RFC3339))
		}
	}
	events, next := notify.Diff(st, res.Anomalies, res.Now, notify.Policy{UpdateAfter: res.Window.To.Sub(res.Window.From), CloseAfter: res.Window.To.Sub(res.Window.From)})
	names := make([]string, len(events))
	for i, e := range events {
		names[i] = e.String()
	}
	save := func() error {
		if f.state == "" {
			return nil
		}
		return next.Save(f.state)
	}
	if webhook == "" {
		for _, n := range names {
			fmt.Fprintln(stdout, "state:", n)
		}
		return save()
	}
	wh := &notify.Webhook{URL: webhook, Attempts: f.attempts, Timeout: f.timeout, Backoff: webhookBackoff}
	doc.Delivery = &report.Delivery{Target: wh.Target(), Events: names}
	if len(events) == 0 {
		return save()
	}
	ref := f.reportURL
	if ref == "" {
		ref = paths[len(paths)-1] // scan.md
		if abs, err := filepath.Abs(ref); err == nil {
			ref = abs
		}
	}
	attempts, err := wh.Send(ctx, notify.Compose(events, res.Window, loc, ref))
	doc.Delivery.Attempts = attempts
	if err != nil {
		doc.Delivery.Error = err.Error()
		return err
	}
	doc.Delivery.Sent = true
	return save()
}

// proposeForScan adds the next step of each crawler anomaly to doc: a
// rate-limit zone for its crawler_burst finding (analysis.ProposeForScan). A
// scan without a crawler_burst finding proposes nothing. Zones Propose
// rejected are named in data_quality.
func proposeForScan(ctx context.Context, in evidence.Inputs, cfg scan.Config, res *scan.Result, doc *report.Scan) error {
	prop, err := analysis.ProposeForScan(ctx, in, cfg, res)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if prop == nil {
		return nil
	}
	doc.Rules = prop.Rules
	if len(prop.Rules) > 0 {
		doc.Caddyfile = prop.Caddyfile
	}
	doc.DataQuality = append(doc.DataQuality, prop.DataQuality...)
	return nil
}
