package evidence

import (
	"os"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
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

// Name is what messages call the input at path.
func (in *Inputs) Name(path string) string {
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
	// Observe adds one request. r's Path and Query are valid only during
	// the call (ingest reads with accesslog.Options.BorrowTargets): an
	// Aggregate that keeps one, or a part of one, copies it.
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
	// Pushdown is what a pushed-down fetch pulled against a full pull, or
	// what a fetch whose cost model chose the full pull pulled against its
	// estimates (Manifest.FullPull: Estimate.Chosen says which); nil when
	// no cost model ran (a window up to pushdown_after, files).
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
	// TempDir is where the loader unpacked the configuration archives
	// (ConfigRepos); Close removes it.
	TempDir string
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
	if l.TempDir != "" {
		os.RemoveAll(l.TempDir)
	}
	if l.Metrics != nil {
		return l.Metrics.Close()
	}
	return nil
}
