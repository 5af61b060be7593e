// Package ingest reads the evidence files of one analysis (access logs,
// metrics, changes, Caddy's and php-fpm's own logs), each in one pass, and
// says what they cover and what was skipped. The access log streams into an
// Aggregate the caller gives (detect's Traffic): ingestion stays on the
// sources side of the pipeline and never imports detect.
//
// The types it fills (evidence.Inputs, evidence.Loaded) live in package
// evidence, so that their readers (detect, report, scan) do not link what
// loading takes: Prometheus' TSDB (promstore) and Caddy's Caddyfile parser
// (configrepo).
package ingest

import (
	"cmp"
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
	"github.com/aftermath-forensics/aftermath/sources/configrepo"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/fpmlog"
	"github.com/aftermath-forensics/aftermath/sources/metrics/promstore"
)

// A TaggingAggregate is an Aggregate that also derives a small code from
// each request it observes (detect's Traffic: the path class), which the
// request spill keeps beside the request so that a later pass over the
// spill (the rules') need not derive it again. TagScope is what the codes
// depend on besides the request, recorded in the spill for the reader to
// check.
type TaggingAggregate interface {
	evidence.Aggregate
	ObserveTagged(r *sources.Request) uint8 // r's target lent as to Observe
	TagScope() string
}

// A readingAhead Aggregate is told of a batch before it observes the
// batch's requests in order (detect's Traffic reads its memo's slots of
// them at once).
type readingAhead interface {
	ReadAhead(batch []sources.Request)
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
func Load(ctx context.Context, in evidence.Inputs, loc *time.Location, newAggregate evidence.NewAggregate) (_ *evidence.Loaded, err error) {
	m := in.Manifest
	l := &evidence.Loaded{From: m.Window.From, To: m.Window.To, Site: m.Site, Loc: loc, LogZone: in.LogZone, Pushdown: cmp.Or(m.Pushdown, m.FullPull)}
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
	tagger, _ := traffic.(TaggingAggregate)
	ahead, _ := traffic.(readingAhead)
	if tagger != nil && l.Requests != nil {
		l.Requests.SetTagScope(tagger.TagScope())
	}
	var tags []uint8
	// The batch's targets are borrowed (valid until the callback returns):
	// the Aggregate copies what it keeps of one (Aggregate.Observe), the
	// coverage meter reads times and the spill copies the bytes.
	stats, err := accesslog.Read(ctx, in.Access, accesslog.Options{LoggedInCookie: m.Site.LoggedInCookie, Zone: in.LogZone, ZoneWhy: in.LogZoneWhy, DurationFormat: in.DurationFormat, OnRead: onRead, BorrowTargets: true}, &skips,
		func(batch []sources.Request) error {
			tags = tags[:0]
			if ahead != nil {
				ahead.ReadAhead(batch)
			}
			for i := range batch {
				if tagger != nil {
					tags = append(tags, tagger.ObserveTagged(&batch[i]))
				} else {
					traffic.Observe(&batch[i])
				}
				accessCoverage.Observe(batch[i].Time, 1)
				if batch[i].HasCookie {
					withCookie++
				}
			}
			if l.Requests != nil {
				var spilled []uint8
				if tagger != nil {
					spilled = tags
				}
				if err := l.Requests.WriteTagged(batch, spilled); err != nil {
					dropSpill(err)
				}
			}
			return nil
		})
	if err != nil {
		if l.Requests != nil {
			l.Requests.Close() // the analysis stops here: nothing reads it
		}
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
	var store *promstore.Store
	if len(in.Metrics) == 0 {
		sayNote(l, "metrics", sources.SeverityWarning, Messages.Say("metrics.not_given", nil))
	} else {
		if store, err = promstore.Open(); err != nil {
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
			names[i] = in.Name(p)
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
		if l.TempDir, err = os.MkdirTemp("", "aftermath-config-"); err != nil {
			return nil, err
		}
		unpacked, err := bundle.UnpackConfigArchives(in.ConfigArchives, l.TempDir)
		if err != nil {
			return nil, err
		}
		repos = append(repos, unpacked...)
	}
	l.ConfigRepos = repos
	for _, repo := range repos {
		cs, notes, err := configrepo.FromGit(ctx, repo, l.From.Add(-changes.Lookback), l.To)
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
func windowFromSpan(l *evidence.Loaded, traffic evidence.Aggregate, store *promstore.Store) {
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
func readLogs(l *evidence.Loaded, in evidence.Inputs) error {
	fpmZone := in.LogZone
	if fpmZone == nil {
		fpmZone = time.UTC
	}
	for _, f := range in.Logs {
		if holdsNothing(f) {
			// Decompressed: an empty gzipped log is gzip's header on disk.
			sayNote(l, "logs", sources.SeverityInfo, Messages.Say("logs.empty", in.Name(f)))
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
		sayNote(l, "logs", sources.SeverityInfo, Messages.Say("logs.unknown", in.Name(f)))
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
