// Package ingest reads the evidence files of one analysis (access logs,
// metrics, changes, Caddy's and php-fpm's own logs), each in one pass, and
// says what they cover and what was skipped. The access log streams into an
// Aggregate the caller gives (detect's Traffic): ingestion stays on the
// sources side of the pipeline and never imports detect.
package ingest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/caddylog"
	"github.com/aftermath-forensics/aftermath/sources/changes"
	"github.com/aftermath-forensics/aftermath/sources/fpmlog"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// Inputs names the evidence files of one analysis, from a bundle or the command line.
type Inputs struct {
	Manifest bundle.Manifest
	Access   []string
	// AccessSkipped names the files beside the access logs that were not
	// read (a bundle's access/ or --access DIR): coverage lists them.
	AccessSkipped []string
	Metrics       []string
	Changes       []string
	Logs          []string
	// ConfigRepos are git repositories of configuration to review for changes.
	ConfigRepos []string
	// ConfigArchives are tar archives of such repositories (changes/*.tar.gz).
	ConfigArchives []string
	// MinuteStatus is a bundle's per-minute counts of the minutes whose lines
	// were not pulled (bundle.MinuteStatusFile), "" when there is none.
	MinuteStatus string
	// KeepRequests has Load keep the requests it reads in a spill on disk
	// (Loaded.Requests), for a later stage that reads them again (the rules'
	// passes) without parsing the logs a second time.
	KeepRequests bool
	// DurationFormat is Caddy's duration_format of the access logs, as the
	// user gave it (accesslog.Options.DurationFormat): "" or "auto" detects
	// it per log, and the detection is stated in data_quality.
	DurationFormat string
	// LogZone is where the access log's times written without a zone are
	// read (bundle.LogZone), and php-fpm's log's, which never has one: nil
	// is UTC, what Caddy writes unless its configuration sets time_local.
	// Never the display zone by default.
	LogZone *time.Location
	// LogZoneWhy says where LogZone came from, for data_quality.
	LogZoneWhy string
	// Names says what to call an input path in messages when the path is
	// not the user's: a temporary copy of standard input, or a file of the
	// temporary bundle a live analysis fetches into (gone once it ends) is
	// named after what the user gave ("standard input", the Loki selector).
	// A path not in it is named as it is.
	Names map[string]string
	// Progress, when set, is told what Load is reading (for a person at a
	// terminal); nil says nothing.
	Progress Progress
	// Notes are what reading the inputs' descriptions left out (unknown keys
	// in bundle.yaml or in the site section of a configuration): Load puts
	// them in data_quality.
	Notes []sources.QualityNote
}

// Progress is told what Load is doing while it reads: the stage, its total
// bytes (0: unknown; below 0: a stage with nothing to count), and the bytes
// read. Read may be called from several goroutines.
type Progress interface {
	Stage(name string, totalBytes int64)
	Read(n int64)
}

// ReadStage tells in.Progress about a new stage of name over files (their
// sizes make its total; a file that cannot be measured, standard input,
// leaves it unknown; no files, a stage whose bytes are not counted), and returns what counts the stage's bytes (nil without
// Progress: accesslog.Options.OnRead then counts nothing).
func (in *Inputs) ReadStage(name string, files []string) func(int64) {
	if in.Progress == nil {
		return nil
	}
	total := int64(-1) // nothing to count
	if len(files) > 0 {
		total = 0
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil || !st.Mode().IsRegular() {
			total = 0
			break
		}
		total += st.Size()
	}
	in.Progress.Stage(name, total)
	return in.Progress.Read
}

// name is what messages call the input at path.
func (in *Inputs) name(path string) string {
	if n, ok := in.Names[path]; ok {
		return n
	}
	return path
}

// FromBundle lists a bundle's evidence.
func FromBundle(b *bundle.Bundle) Inputs {
	return Inputs{Manifest: b.Manifest, Access: b.Access, AccessSkipped: b.AccessSkipped, Metrics: b.Metrics, Changes: b.ChangeLogs, Logs: b.Logs, ConfigRepos: b.ConfigRepos,
		ConfigArchives: b.ConfigArchives, MinuteStatus: b.MinuteStatus, Notes: b.Warnings}
}

// Aggregate is what the access log streams into (detect's Traffic): every
// request read, and the per-minute counts of the minutes a bundle holds no
// lines of.
type Aggregate interface {
	Observe(r *sources.Request)
	// AddMinuteStatus adds per-minute counts of lines that were not read
	// (they never include a line read, so both add up) and returns how many
	// rows it added.
	AddMinuteStatus(rows []bundle.MinuteStatus) (added int)
	// Span is the first and the last request's time; Total how many were observed.
	Span() (first, last time.Time)
	Total() int
}

// NewAggregate makes the Aggregate of a site's requests, keeping the
// per-client detail of those in [from, to).
type NewAggregate func(site sources.Site, from, to time.Time) Aggregate

// Loaded is evidence read into memory (aggregated) and what reading it cost.
type Loaded struct {
	// From and To bound the window: the manifest's, or the evidence's own
	// span when it gave none.
	From, To time.Time
	// BaselineFrom and BaselineTo are the manifest's baseline (zero: none given).
	BaselineFrom, BaselineTo time.Time
	Site                     sources.Site
	Loc                      *time.Location
	// LogZone is Inputs.LogZone: where zone-less access-log times were
	// read, for a later pass over the same logs (the rules').
	LogZone *time.Location
	// Traffic holds the access log's requests (and per-minute counts), nil
	// when no access log was given or none of it was usable.
	Traffic Aggregate
	// Metrics answers PromQL over the metric samples (nil when no metrics
	// were given).
	Metrics MetricStore
	// Health lists the proxy's health-checker events, FPM php-fpm's own
	// warnings; the Given flags say such a log was read at all.
	Health         []sources.HealthEvent
	HealthLogGiven bool
	FPM            []fpmlog.Event
	FPMLogGiven    bool
	// Changes are the configuration changes read (changes.yaml, git).
	Changes []sources.Change
	// ConfigRepos are the working trees of the configuration repositories
	// read (a bundle's archives unpacked: they last until Close), where the
	// rules look for the Caddyfile to place their zones in.
	ConfigRepos []string

	Access        accesslog.Stats
	SkippedLines  int
	MetricFiles   int
	MetricSamples int64
	// Pushdown is what a pushed-down fetch pulled against a full pull (nil
	// when the access log was not pushed down).
	Pushdown *bundle.PushdownCost
	// DataQuality lists what was skipped or missing while reading.
	DataQuality []sources.QualityNote
	// Coverage is, for each source, the part of the window its evidence
	// really covers: the report shows it first.
	Coverage []sources.Coverage
	// NoEvidence says, for each source that was given but yielded nothing
	// usable (no line parsed, or none inside the window), what was read and
	// what to do. The analysis cannot judge without it: the CLI exits 2 with
	// these messages instead of writing a report of a quiet site.
	NoEvidence []string
	// Requests holds the requests read, when Inputs.KeepRequests asked for them.
	Requests *accesslog.Spill
	tempDir  string
}

// MetricStore is what holds the loaded metric samples: the queries detection
// runs, and Close. It is an interface so that the packages that read a Loaded
// (detect, report, scan) do not link the store's implementation (Prometheus'
// TSDB and everything its configuration pulls in); only the loader does.
type MetricStore interface {
	metrics.Querier
	Close() error
}

// Close releases the metric store and unpacked archives.
func (l *Loaded) Close() error {
	if l.Requests != nil {
		l.Requests.Close()
	}
	if l.tempDir != "" {
		os.RemoveAll(l.tempDir)
	}
	if l.Metrics != nil {
		return l.Metrics.Close()
	}
	return nil
}

// cookiesJudgedAfter is how many requests without one Cookie header say that
// the log omits the header (a log filter deleting it) rather than that no
// visitor had a cookie: sessions, consent and analytics give some of any
// site's visitors one long before.
const cookiesJudgedAfter = 500

// Load reads every input in one pass each: access logs stream into the
// Aggregate newAggregate makes, metrics into Prometheus' storage, Caddy's own
// log into health events. On an error nothing stays open.
//
// A manifest without a window (analyze --access with no --from/--to) has
// the evidence's own span as its window: the access logs' first to last
// minute, else the metrics'.
func Load(ctx context.Context, in Inputs, loc *time.Location, newAggregate NewAggregate) (_ *Loaded, err error) {
	m := in.Manifest
	l := &Loaded{From: m.Window.From, To: m.Window.To, Site: m.Site, Loc: loc, LogZone: in.LogZone, Pushdown: m.Pushdown}
	if m.Baseline != nil {
		l.BaselineFrom, l.BaselineTo = m.Baseline.From, m.Baseline.To
	}
	defer func() {
		if err != nil {
			// The spill, the metric store and unpacked archives are the
			// caller's only on success.
			l.Close()
		}
	}()
	l.DataQuality = append(l.DataQuality, in.Notes...)
	spanWindow := m.Window.From.IsZero() && m.Window.To.IsZero()
	trafficFrom, trafficTo := m.Window.From, m.Window.To
	if spanWindow {
		// Every request is inside the window still to be measured.
		trafficFrom, trafficTo = time.Unix(0, 0), time.Unix(1<<40, 0)
	}

	var skips sources.Skips
	accessCoverage := sources.NewCoverageMeter(time.Minute)
	traffic := newAggregate(m.Site, trafficFrom, trafficTo)
	// Keeping the requests only spares a later parse: when the spill cannot
	// be written (a full temporary directory), the analysis goes on without it.
	dropSpill := func(err error) {
		if l.Requests != nil {
			l.Requests.Close()
			l.Requests = nil
		}
		sayNote(l, "access", sources.SeverityInfo, Messages.Say("access.not_kept", err.Error()))
	}
	if in.KeepRequests && len(in.Access) > 0 {
		if spill, err := accesslog.NewSpill(""); err != nil {
			dropSpill(err)
		} else {
			l.Requests = spill
		}
	}
	onRead := in.ReadStage("reading the access log", in.Access)
	withCookie := 0
	stats, err := accesslog.Read(ctx, in.Access, accesslog.Options{LoggedInCookie: m.Site.LoggedInCookie, Zone: in.LogZone, ZoneWhy: in.LogZoneWhy, DurationFormat: in.DurationFormat, OnRead: onRead}, &skips,
		func(batch []sources.Request) error {
			for i := range batch {
				traffic.Observe(&batch[i])
				accessCoverage.Observe(batch[i].Time, 1)
				if batch[i].HasCookie {
					withCookie++
				}
			}
			if l.Requests != nil {
				if err := l.Requests.Write(batch); err != nil {
					dropSpill(err)
				}
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	if l.Requests != nil {
		if err := l.Requests.Flush(); err != nil {
			dropSpill(err)
		}
	}
	l.Access = stats
	l.SkippedLines = skips.Count("")
	if m.Site.LoggedInCookie != "" && stats.Requests >= cookiesJudgedAfter && withCookie == 0 {
		sayNote(l, "access", sources.SeverityInfo, Messages.Say("access.no_cookies", struct {
			Requests int64
			Pattern  string
		}{stats.Requests, m.Site.LoggedInCookie}))
	}
	countedRows := 0
	if in.MinuteStatus != "" {
		rows, err := bundle.ReadMinuteStatus(in.MinuteStatus)
		if err != nil {
			return nil, err
		}
		added := traffic.AddMinuteStatus(rows)
		countedRows = added
		// The client families pulled across the range were read whole: the
		// counts hold none of their lines.
		if pf, ok := traffic.(interface{ PulledFamilies([]string) }); ok && in.Manifest.Pushdown != nil {
			pf.PulledFamilies(in.Manifest.Pushdown.Families)
		}
		for _, r := range rows {
			accessCoverage.Observe(r.Minute, int(r.Requests))
		}
		switch {
		case added > 0 && accessPullFailed(in.Manifest):
			// A pull that failed is replaced by the counts of its minutes
			// where the fetch had them; whether it had them all, the
			// fetch's own notes say: the totals are not vouched for here.
			sayNote(l, "access", sources.SeverityInfo, Messages.Say("access.counts_failed", struct {
				File string
				Rows int
			}{bundle.MinuteStatusFile, added}))
		case added > 0:
			sayNote(l, "access", sources.SeverityInfo, Messages.Say("access.counts", struct {
				File string
				Rows int
			}{bundle.MinuteStatusFile, added}))
		}
	}
	l.MetricFiles = len(in.Metrics)
	l.DataQuality = append(l.DataQuality, stats.Notes...)
	l.DataQuality = append(l.DataQuality, skips.Notes("access", "lines")...)

	// store is the Store behind l.Metrics (nil when no metrics were given):
	// the loader reads its span and coverage, which Loaded's readers do not.
	var store *metrics.Store
	if len(in.Metrics) == 0 {
		sayNote(l, "metrics", sources.SeverityWarning, Messages.Say("metrics.not_given", nil))
	} else {
		if store, err = metrics.Open(); err != nil {
			return nil, err
		}
		l.Metrics = store
		in.ReadStage("reading metrics", nil)
		var metricSkips sources.Skips
		for _, f := range in.Metrics {
			ls, err := store.LoadFile(f, &metricSkips)
			if err != nil {
				return nil, err
			}
			l.MetricSamples += ls.Samples
		}
		l.DataQuality = append(l.DataQuality, metricSkips.Notes("metrics", "samples")...)
		if l.MetricSamples == 0 {
			if failed := failedFetches(in.Manifest.Queries, bundle.MetricsDir+"/"); failed != "" {
				l.NoEvidence = append(l.NoEvidence, "no metrics: "+failed)
			} else {
				l.NoEvidence = append(l.NoEvidence, fmt.Sprintf("no usable sample in the metrics files (%s)%s: aftermath reads Prometheus or OpenMetrics text with a timestamp on every sample",
					strings.Join(in.Metrics, ", "), skipSummary(&metricSkips, "samples")))
			}
		}
	}
	if spanWindow {
		windowFromSpan(l, traffic, store)
	}
	switch {
	case len(in.Access) == 0:
		if in.MinuteStatus == "" {
			sayNote(l, "access", sources.SeverityWarning, Messages.Say("access.not_given", nil))
		} else {
			l.Traffic = traffic
		}
	case stats.Requests == 0 && countedRows == 0:
		// Requests only counted (a pushdown whose raw pulls all failed)
		// are evidence still: not so a log with no line at all.
		names := make([]string, len(in.Access))
		for i, p := range in.Access {
			names[i] = in.name(p)
		}
		if failed := failedFetches(in.Manifest.Queries, bundle.AccessDir+"/"); failed != "" && stats.Lines == 0 {
			l.NoEvidence = append(l.NoEvidence, "no access log: "+failed)
		} else {
			l.NoEvidence = append(l.NoEvidence, noAccessMessage(names, stats, &skips))
		}
	default:
		l.Traffic = traffic
		if first, last := traffic.Span(); last.Before(l.From) || !first.Before(l.To) {
			l.NoEvidence = append(l.NoEvidence, fmt.Sprintf("cannot judge: no access-log lines from %s to %s (the logs span %s to %s): give the logs of that window, or a window inside the logs' span",
				l.From.Format(time.RFC3339), l.To.Format(time.RFC3339), first.Format(time.RFC3339), last.Format(time.RFC3339)))
		}
	}

	for _, f := range in.Changes {
		cs, warnings, err := changes.ReadIn(f, loc)
		if err != nil {
			return nil, err
		}
		l.DataQuality = append(l.DataQuality, warnings...)
		l.Changes = append(l.Changes, cs...)
	}
	repos := in.ConfigRepos
	if len(in.ConfigArchives) > 0 {
		if l.tempDir, err = os.MkdirTemp("", "aftermath-config-"); err != nil {
			return nil, err
		}
		unpacked, err := bundle.UnpackConfigArchives(in.ConfigArchives, l.tempDir)
		if err != nil {
			return nil, err
		}
		repos = append(repos, unpacked...)
	}
	l.ConfigRepos = repos
	for _, repo := range repos {
		cs, notes, err := changes.FromGit(ctx, repo, l.From.Add(-changes.Lookback), l.To)
		if err != nil {
			return nil, err
		}
		l.Changes = append(l.Changes, cs...)
		l.DataQuality = append(l.DataQuality, notes...)
	}
	if err := readLogs(l, in); err != nil {
		return nil, err
	}
	measureCoverage(l, in, accessCoverage, truncatedFiles(&skips), store)
	return l, nil
}

// accessPullFailed reports whether a fetch's pull of access-log lines
// failed (bundle.yaml records it).
func accessPullFailed(m bundle.Manifest) bool {
	for _, q := range m.Queries {
		if strings.HasPrefix(q.File, bundle.AccessDir+"/") && q.HasFailed() {
			return true
		}
	}
	return false
}

// windowFromSpan sets the window to the evidence's own span, in whole
// minutes: the access logs', else the metrics'. It says so in data_quality.
func windowFromSpan(l *Loaded, traffic Aggregate, store *metrics.Store) {
	first, last := traffic.Span()
	what := "access logs"
	if traffic.Total() == 0 && store != nil {
		first, last = store.Range()
		what = "metrics"
	}
	if first.IsZero() {
		return
	}
	l.From = first.UTC().Truncate(time.Minute)
	l.To = last.UTC().Truncate(time.Minute).Add(time.Minute)
	sayNote(l, "window", sources.SeverityInfo, Messages.Say("window.from_span", struct {
		Metrics  bool
		From, To string
	}{what == "metrics", l.From.Format(time.RFC3339), l.To.Format(time.RFC3339)}))
}

// noAccessMessage says that the access logs gave no usable line, what their
// lines were instead, and what aftermath reads.
func noAccessMessage(paths []string, stats accesslog.Stats, skips *sources.Skips) string {
	if stats.Lines == 0 {
		return fmt.Sprintf("the access logs (%s) are empty: aftermath needs Caddy's JSON access log of the window", strings.Join(paths, ", "))
	}
	return fmt.Sprintf("no usable line in the access logs (%s): %d lines read%s; aftermath reads Caddy's JSON access log (one JSON object a line, as Caddy writes it)",
		strings.Join(paths, ", "), stats.Lines, skipSummary(skips, "lines"))
}

// failedFetches names the queries of a fetched bundle that filled files
// under prefix and failed, with what their source said ("loki: ... failed:
// connection refused"): an empty file there is the source's failure, and the
// message names the source, not the file. "" when none failed.
func failedFetches(queries []bundle.Query, prefix string) string {
	var parts []string
	for _, q := range queries {
		if !strings.HasPrefix(q.File, prefix) || !q.HasFailed() {
			continue
		}
		part := q.Source + " could not be read"
		if q.Note != "" {
			part += " (" + q.Note + ")"
		}
		if !slices.Contains(parts, part) {
			parts = append(parts, part)
		}
	}
	return strings.Join(parts, "; ")
}

// skipSummary lists skips' reasons with their counts: ", 12 lines skipped:
// malformed JSON (first at a.log:1)".
func skipSummary(skips *sources.Skips, unit string) string {
	var parts []string
	for _, n := range skips.Notes("", unit) {
		parts = append(parts, n.Message)
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, "; ")
}

// readLogs reads the other logs of a bundle, each by the shape it turns out to
// have: Caddy's own JSON log, or php-fpm's. Anything else is noted, not
// guessed at; an empty log is said to be empty. php-fpm writes its times
// without a zone: they are read as the access log's zone-less times are
// (in.LogZone: UTC unless --log-tz or the Caddyfile's time_local says
// otherwise), never in the zone the report is shown in, which would move
// every event by the difference.
func readLogs(l *Loaded, in Inputs) error {
	fpmZone := in.LogZone
	if fpmZone == nil {
		fpmZone = time.UTC
	}
	for _, f := range in.Logs {
		if holdsNothing(f) {
			// Decompressed: an empty gzipped log is gzip's header on disk.
			sayNote(l, "logs", sources.SeverityInfo, Messages.Say("logs.empty", in.name(f)))
			continue
		}
		var skips sources.Skips
		events, isCaddy, err := caddylog.ReadFile(f, &skips)
		if err != nil {
			return err
		}
		if isCaddy {
			l.HealthLogGiven = true
			l.Health = append(l.Health, events...)
			l.DataQuality = append(l.DataQuality, skips.Notes("caddy log", "lines")...)
			continue
		}
		fpm, isFPM, err := fpmlog.ReadFile(f, fpmZone)
		if err != nil {
			return err
		}
		if isFPM {
			l.FPMLogGiven = true
			l.FPM = append(l.FPM, fpm...)
			continue
		}
		sayNote(l, "logs", sources.SeverityInfo, Messages.Say("logs.unknown", in.name(f)))
	}
	return nil
}

// holdsNothing reports whether a file, decompressed, has no byte at all.
func holdsNothing(path string) bool {
	r, err := sources.Open(path)
	if err != nil {
		return false
	}
	defer r.Close()
	n, _ := r.Read(make([]byte, 1))
	return n == 0
}
