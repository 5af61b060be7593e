package detect

import (
	"context"
	"fmt"
	"os"
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
	Metrics  []string
	Changes  []string
	Logs     []string
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
	// Names says what to call an input path in messages when the path is
	// not the user's: a temporary copy of standard input, or a file of the
	// temporary bundle a live analysis fetches into (gone once it ends) is
	// named after what the user gave ("standard input", the Loki selector).
	// A path not in it is named as it is.
	Names map[string]string
	// Notes are what reading the inputs' descriptions left out (unknown keys
	// in bundle.yaml or in the site section of a configuration): Load puts
	// them in data_quality.
	Notes []sources.QualityNote
}

// name is what messages call the input at path.
func (in *Inputs) name(path string) string {
	if n, ok := in.Names[path]; ok {
		return n
	}
	return path
}

// InputsFromBundle lists a bundle's evidence.
func InputsFromBundle(b *bundle.Bundle) Inputs {
	return Inputs{Manifest: b.Manifest, Access: b.Access, Metrics: b.Metrics, Changes: b.ChangeLogs, Logs: b.Logs, ConfigRepos: b.ConfigRepos,
		ConfigArchives: b.ConfigArchives, MinuteStatus: b.MinuteStatus, Notes: b.Warnings}
}

// Loaded is evidence read into memory (aggregated) and what reading it cost.
type Loaded struct {
	Evidence      *Evidence
	Access        accesslog.Stats
	SkippedLines  int
	MetricFiles   int
	MetricSamples int64
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
	store    *metrics.Store
	tempDir  string
}

// Close releases the metric store and unpacked archives.
func (l *Loaded) Close() error {
	if l.Requests != nil {
		l.Requests.Close()
	}
	if l.tempDir != "" {
		os.RemoveAll(l.tempDir)
	}
	if l.store != nil {
		return l.store.Close()
	}
	return nil
}

// Load reads every input in one pass each: access logs stream into Traffic,
// metrics into Prometheus' storage, Caddy's own log into health events.
//
// A manifest without a window (analyze --access with no --from/--to) has
// the evidence's own span as its window: the access logs' first to last
// minute, else the metrics'.
func Load(ctx context.Context, in Inputs, loc *time.Location) (*Loaded, error) {
	m := in.Manifest
	ev := &Evidence{From: m.Window.From, To: m.Window.To, Site: m.Site, Loc: loc}
	if m.Baseline != nil {
		ev.BaselineFrom, ev.BaselineTo = m.Baseline.From, m.Baseline.To
	}
	l := &Loaded{Evidence: ev}
	l.DataQuality = append(l.DataQuality, in.Notes...)
	spanWindow := m.Window.From.IsZero() && m.Window.To.IsZero()
	trafficFrom, trafficTo := m.Window.From, m.Window.To
	if spanWindow {
		// Every request is inside the window still to be measured.
		trafficFrom, trafficTo = time.Unix(0, 0), time.Unix(1<<40, 0)
	}

	var skips sources.Skips
	accessCoverage := sources.NewCoverageMeter(time.Minute)
	traffic := NewTraffic(m.Site, trafficFrom, trafficTo)
	// Keeping the requests only spares a later parse: when the spill cannot
	// be written (a full temporary directory), the analysis goes on without it.
	dropSpill := func(err error) {
		if l.Requests != nil {
			l.Requests.Close()
			l.Requests = nil
		}
		l.DataQuality = append(l.DataQuality, sources.QualityNote{Source: "access", Severity: sources.SeverityInfo,
			Message: fmt.Sprintf("the requests could not be kept for the rules, which parse the logs again instead: %v", err)})
	}
	if in.KeepRequests && len(in.Access) > 0 {
		if spill, err := accesslog.NewSpill(""); err != nil {
			dropSpill(err)
		} else {
			l.Requests = spill
		}
	}
	stats, err := accesslog.Read(ctx, in.Access, accesslog.Options{LoggedInCookie: m.Site.LoggedInCookie, Zone: loc, DurationFormat: in.DurationFormat}, &skips,
		func(batch []sources.Request) error {
			for i := range batch {
				traffic.Observe(&batch[i])
				accessCoverage.Observe(batch[i].Time, 1)
			}
			if l.Requests != nil {
				if err := l.Requests.Write(batch); err != nil {
					dropSpill(err)
				}
			}
			return nil
		})
	if err != nil {
		l.Close()
		return nil, err
	}
	if l.Requests != nil {
		if err := l.Requests.Flush(); err != nil {
			dropSpill(err)
		}
	}
	l.Access = stats
	l.SkippedLines = skips.Count("")
	if in.MinuteStatus != "" {
		rows, err := bundle.ReadMinuteStatus(in.MinuteStatus)
		if err != nil {
			return nil, err
		}
		added, overlapping := traffic.AddMinuteStatus(rows)
		for _, r := range rows {
			accessCoverage.Observe(r.Minute, int(r.Requests))
		}
		if added > 0 {
			l.DataQuality = append(l.DataQuality, sources.QualityNote{Source: "access", Severity: sources.SeverityInfo, Message: fmt.Sprintf(
				"requests, statuses and PHP time of the minutes whose lines were not pulled come from per-minute counts (%s, %d rows): totals cover the whole window, fingerprints, addresses and latencies only the pulled minutes",
				bundle.MinuteStatusFile, added)})
		}
		if overlapping > 0 {
			l.note("access", fmt.Sprintf("%s: %d rows are for minutes whose lines were read as well and were left out so as not to count them twice",
				in.MinuteStatus, overlapping))
		}
	}
	l.MetricFiles = len(in.Metrics)
	l.DataQuality = append(l.DataQuality, stats.Notes...)
	l.DataQuality = append(l.DataQuality, skips.Notes("access", "lines")...)

	if len(in.Metrics) == 0 {
		l.note("metrics", "no metrics given: php-fpm workers, listen queue and CPU are unknown")
	} else {
		store, err := metrics.Open()
		if err != nil {
			return nil, err
		}
		l.store = store
		var metricSkips sources.Skips
		for _, f := range in.Metrics {
			ls, err := store.LoadFile(f, &metricSkips)
			if err != nil {
				l.Close()
				return nil, err
			}
			l.MetricSamples += ls.Samples
		}
		l.DataQuality = append(l.DataQuality, metricSkips.Notes("metrics", "samples")...)
		ev.Metrics = store
		if l.MetricSamples == 0 {
			l.NoEvidence = append(l.NoEvidence, fmt.Sprintf("no usable sample in the metrics files (%s)%s: aftermath reads Prometheus or OpenMetrics text with a timestamp on every sample",
				strings.Join(in.Metrics, ", "), skipSummary(&metricSkips, "samples")))
		}
	}
	if spanWindow {
		l.windowFromSpan(traffic)
	}
	switch {
	case len(in.Access) == 0:
		if in.MinuteStatus == "" {
			l.note("access", "no access log given: requests, statuses and client fingerprints are unknown")
		} else {
			ev.Traffic = traffic
		}
	case stats.Requests == 0:
		names := make([]string, len(in.Access))
		for i, p := range in.Access {
			names[i] = in.name(p)
		}
		l.NoEvidence = append(l.NoEvidence, noAccessMessage(names, stats, &skips))
	default:
		ev.Traffic = traffic
		if first, last := traffic.Span(); last.Before(ev.From) || !first.Before(ev.To) {
			l.NoEvidence = append(l.NoEvidence, fmt.Sprintf("cannot judge: no access-log lines from %s to %s (the logs span %s to %s): give the logs of that window, or a window inside the logs' span",
				ev.From.Format(time.RFC3339), ev.To.Format(time.RFC3339), first.Format(time.RFC3339), last.Format(time.RFC3339)))
		}
	}

	for _, f := range in.Changes {
		cs, warnings, err := changes.ReadIn(f, loc)
		if err != nil {
			l.Close()
			return nil, err
		}
		l.DataQuality = append(l.DataQuality, warnings...)
		ev.Changes = append(ev.Changes, cs...)
	}
	repos := in.ConfigRepos
	if len(in.ConfigArchives) > 0 {
		if l.tempDir, err = os.MkdirTemp("", "aftermath-config-"); err != nil {
			l.Close()
			return nil, err
		}
		unpacked, err := bundle.UnpackConfigArchives(in.ConfigArchives, l.tempDir)
		if err != nil {
			l.Close()
			return nil, err
		}
		repos = append(repos, unpacked...)
	}
	for _, repo := range repos {
		cs, notes, err := changes.FromGit(ctx, repo, ev.From.Add(-ChangeLookback), ev.To)
		if err != nil {
			l.Close()
			return nil, err
		}
		ev.Changes = append(ev.Changes, cs...)
		l.DataQuality = append(l.DataQuality, notes...)
	}
	if err := l.readLogs(in, loc); err != nil {
		l.Close()
		return nil, err
	}
	l.measureCoverage(in, accessCoverage, truncatedFiles(&skips), l.store)
	return l, nil
}

// windowFromSpan sets the window to the evidence's own span, in whole
// minutes: the access logs', else the metrics'. It says so in data_quality.
func (l *Loaded) windowFromSpan(traffic *Traffic) {
	ev := l.Evidence
	first, last := traffic.Span()
	what := "access logs"
	if traffic.Total() == 0 && l.store != nil {
		first, last = l.store.Range()
		what = "metrics"
	}
	if first.IsZero() {
		return
	}
	ev.From = first.UTC().Truncate(time.Minute)
	ev.To = last.UTC().Truncate(time.Minute).Add(time.Minute)
	l.DataQuality = append(l.DataQuality, sources.QualityNote{Source: "window", Severity: sources.SeverityInfo,
		Message: fmt.Sprintf("no window was given: the %s' own span, %s to %s, was analyzed", what,
			ev.From.Format(time.RFC3339), ev.To.Format(time.RFC3339))})
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

func (l *Loaded) note(source, msg string) {
	l.DataQuality = append(l.DataQuality, sources.QualityNote{Source: source, Severity: sources.SeverityWarning, Message: msg})
}

// readLogs reads the other logs of a bundle, each by the shape it turns out to
// have: Caddy's own JSON log, or php-fpm's. Anything else is noted, not
// guessed at; an empty log is said to be empty.
func (l *Loaded) readLogs(in Inputs, loc *time.Location) error {
	ev := l.Evidence
	for _, f := range in.Logs {
		if st, err := os.Stat(f); err == nil && st.Size() == 0 {
			l.DataQuality = append(l.DataQuality, sources.QualityNote{Source: "logs", Severity: sources.SeverityInfo,
				Message: fmt.Sprintf("%s is empty: not one line of it to read", in.name(f))})
			continue
		}
		var skips sources.Skips
		events, isCaddy, err := caddylog.ReadFile(f, &skips)
		if err != nil {
			return err
		}
		if isCaddy {
			ev.HealthLogGiven = true
			ev.Health = append(ev.Health, events...)
			l.DataQuality = append(l.DataQuality, skips.Notes("caddy log", "lines")...)
			continue
		}
		fpm, isFPM, err := fpmlog.ReadFile(f, loc)
		if err != nil {
			return err
		}
		if isFPM {
			ev.FPMLogGiven = true
			ev.FPM = append(ev.FPM, fpm...)
			continue
		}
		l.DataQuality = append(l.DataQuality, sources.QualityNote{Source: "logs", Severity: sources.SeverityInfo,
			Message: fmt.Sprintf("%s is neither Caddy's JSON log nor php-fpm's log: not read", in.name(f))})
	}
	return nil
}
