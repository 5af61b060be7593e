// Package bundle reads and writes evidence bundles: a directory with bundle.yaml,
// access/, metrics/, changes/ and logs/ (design.md, "Evidence bundle"). A bundle is
// what `aftermath fetch` and `aftermath simulate` write and `analyze --bundle` reads.
package bundle

import (
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// ManifestFile is the name of the manifest inside a bundle directory.
const ManifestFile = "bundle.yaml"

// Window is a half-open time range [From, To).
type Window struct {
	From time.Time `yaml:"from" json:"from"`
	To   time.Time `yaml:"to" json:"to"`
}

// Query records one query a source ran to fill the bundle, and what it returned.
type Query struct {
	// Source is "loki", "prometheus", "cloudwatch" or "simulate".
	Source string `yaml:"source"`
	// Query is the exact query text (LogQL, PromQL, a CloudWatch metric spec).
	Query string    `yaml:"query"`
	From  time.Time `yaml:"from"`
	To    time.Time `yaml:"to"`
	// File is where the result went, relative to the bundle.
	File string `yaml:"file,omitempty"`
	// Lines, Series and Bytes count what the query returned.
	Lines  int64 `yaml:"lines,omitempty"`
	Series int   `yaml:"series,omitempty"`
	Bytes  int64 `yaml:"bytes,omitempty"`
	// Complete is false when the source truncated or a sub-range failed.
	Complete bool `yaml:"complete"`
	// Failed is true when the query, or a part of it, failed with an error or
	// was not run at all (cancelled, a client that could not be made), as
	// opposed to a query that was answered but incomplete (truncated, server
	// warnings, an unverified count). A failed record is never Complete. Read
	// it through HasFailed, which also understands bundles written before the
	// field existed.
	Failed bool   `yaml:"failed,omitempty"`
	Note   string `yaml:"note,omitempty"`
}

// legacyFailurePhrases are what the fetchers wrote into Note for a failed or
// unfetched query before the Failed field existed.
var legacyFailurePhrases = []string{"failed: ", "not fetched: ", "failed after"}

// HasFailed reports whether q failed or was not run: an error, where an
// incomplete record that is not failed is a warning. It reads Failed. A
// bundle written before that field (or by hand without it) said so only in
// the free text of Note, so for an incomplete record without Failed the
// phrases the fetchers used to write there ("failed: ", "not fetched: ",
// "failed after") are looked for as well; that fallback is for such bundles
// only, and nothing new should rely on it.
func (q Query) HasFailed() bool {
	if q.Failed {
		return true
	}
	if q.Complete {
		return false
	}
	for _, p := range legacyFailurePhrases {
		if strings.Contains(q.Note, p) {
			return true
		}
	}
	return false
}

// Manifest is bundle.yaml.
type Manifest struct {
	// Window is the incident window the bundle was made for.
	Window Window `yaml:"window"`
	// Baseline, when set, is the period to compare against (defaults to the data
	// before Window.From).
	Baseline *Window `yaml:"baseline,omitempty"`
	// Timezone is an IANA zone name for rendering local times, e.g. "Asia/Seoul".
	Timezone string `yaml:"timezone,omitempty"`
	// Site holds what is known of the site's configuration.
	Site sources.Site `yaml:"site,omitempty"`
	// ConfigRepo is a path (relative to the bundle or absolute) of a git repository
	// of configuration, when it is not under changes/.
	ConfigRepo string `yaml:"config_repo,omitempty"`
	// Queries lists what each source ran and returned.
	Queries []Query `yaml:"queries,omitempty"`
	// Pushdown, when a fetch pushed its window down, is what it pulled of the
	// access log against what a full pull would have pulled.
	Pushdown *PushdownCost `yaml:"pushdown,omitempty"`
	// FullPull, when a fetch's window was long enough to push down but its
	// cost model chose the full pull (Estimate.Chosen is ChosenFull), is
	// what that pull cost against the estimates, in the same form: the
	// pulled lines and bytes are the full pull's. It is not Pushdown: no
	// minute was counted in place of its lines, so no second pass applies.
	FullPull *PushdownCost `yaml:"full_pull,omitempty"`
	// LokiLimitsLearned are Loki's limits the fetch met and followed
	// (max_query_length, max_query_series, max_query_bytes_read,
	// max_querier_bytes_read: how it split its queries, with Loki's own
	// words), one sentence each, whether or not it pushed down; the
	// analysis lists them as info notes. Absent when none was met.
	LokiLimitsLearned []string `yaml:"loki_limits_learned,omitempty"`
	// Generator says what wrote the bundle (e.g. "aftermath simulate crawler-backlog seed=1").
	Generator string `yaml:"generator,omitempty"`
	// Note is free text for the humans who assembled the bundle (what it is,
	// where the files came from); aftermath does not read it.
	Note string `yaml:"note,omitempty"`
}

// Choices of PullEstimate.Chosen.
const (
	ChosenPushdown = "pushdown"
	ChosenFull     = "full pull"
)

// Bases of PullEstimate.Basis: what the pushdown's estimate knew of the
// minutes and clients it would pull.
const (
	// EstimateFromLineCounts: the line counts per minute alone (no
	// parser): every line's and, once counted, the failed lines' (a line
	// filter on the raw JSON). The minutes whose volume or failed lines
	// stand out, their margins and the baseline's sample. A lower bound of
	// the pushdown: the client families that rose are not known yet.
	EstimateFromLineCounts = "line counts"
	// EstimateFromFamilies: the counts per client family and status too
	// (one | json pass): every minute and family the pushdown would pull.
	EstimateFromFamilies = "counts per family and status"
)

// Sources of PullEstimate.BytesFrom: how the bytes per minute were known.
const (
	// BytesFromIndex: each minute's line count times the mean line of
	// Loki's index statistics (index/stats: no line read).
	BytesFromIndex = "index statistics"
	// BytesFromBytesOverTime: Loki's bytes_over_time per minute (a pass
	// over the range), where the index knew no line.
	BytesFromBytesOverTime = "bytes_over_time"
)

// PullEstimate is the cost model a fetch ran before pulling a window longer
// than pushdown_after: what a full pull and a pushdown would still pull (raw
// bytes per minute, BytesFrom) and have Loki read (its totalBytesProcessed,
// estimated), and which was chosen. It is made first from the line counts
// alone, before any query parses a line (Basis EstimateFromLineCounts): a
// full pull chosen there runs no parser in Loki; else again once the counts
// per family and status are known (EstimateFromFamilies).
type PullEstimate struct {
	Basis             string `yaml:"basis,omitempty" json:"basis,omitempty"`
	BytesFrom         string `yaml:"bytes_from,omitempty" json:"bytes_from,omitempty"`
	FullBytes         int64  `yaml:"full_bytes" json:"full_bytes"`
	FullLokiBytes     int64  `yaml:"full_loki_bytes" json:"full_loki_bytes"`
	PushdownBytes     int64  `yaml:"pushdown_bytes" json:"pushdown_bytes"`
	PushdownLokiBytes int64  `yaml:"pushdown_loki_bytes" json:"pushdown_loki_bytes"`
	// LineCountsPushdownBytes is, when Basis is EstimateFromFamilies, what
	// the line counts alone said the pushdown would pull (the lower bound
	// that let the counts per family and status run); 0 otherwise.
	LineCountsPushdownBytes int64 `yaml:"line_counts_pushdown_bytes,omitempty" json:"line_counts_pushdown_bytes,omitempty"`
	// MaxShare is the bar (pushdown.max_share): a pushdown is chosen when it
	// pulls less than this share of FullBytes.
	MaxShare float64 `yaml:"max_share" json:"max_share"`
	Chosen   string  `yaml:"chosen" json:"chosen"`
}

// PushdownCost is what a pushed-down fetch pulled of the access log from Loki,
// and what a full pull of the same window and baseline would have pulled.
type PushdownCost struct {
	// PulledLines and PulledBytes are the raw access-log lines pulled and
	// their bytes (without line ends).
	PulledLines int64 `yaml:"pulled_lines" json:"pulled_lines"`
	PulledBytes int64 `yaml:"pulled_bytes" json:"pulled_bytes"`
	// Requests and ResponseBytes are the HTTP requests made to Loki for the
	// access log (counts and pulls, retries included) and their response
	// bytes as they crossed the network (gzip when Loki compressed them;
	// bundles fetched before response_decoded_bytes existed counted them
	// unpacked). ResponseDecodedBytes are the same answers unpacked.
	Requests             int64 `yaml:"requests" json:"requests"`
	ResponseBytes        int64 `yaml:"response_bytes" json:"response_bytes"`
	ResponseDecodedBytes int64 `yaml:"response_decoded_bytes,omitempty" json:"response_decoded_bytes,omitempty"`
	// LokiBytesProcessed is what Loki said it read to answer those
	// requests (the stats.summary.totalBytesProcessed of its answers): the
	// work the access log cost Loki, not the network. 0 when Loki sent no
	// statistics.
	LokiBytesProcessed int64 `yaml:"loki_bytes_processed,omitempty" json:"loki_bytes_processed,omitempty"`
	// FullLines and FullBytes are what a full pull would have pulled, as Loki
	// counted them: the lines by count_over_time, the bytes by
	// bytes_over_time or, when the index knew the range's lines, the lines
	// times the mean line of Loki's index statistics (Estimate.BytesFrom).
	// -1 when Loki could not say.
	FullLines int64 `yaml:"full_lines" json:"full_lines"`
	FullBytes int64 `yaml:"full_bytes" json:"full_bytes"`
	// Estimate is the cost model that chose the pushdown, with both
	// estimates (absent when the bytes per minute were not known, and from
	// bundles fetched before it existed). When it chooses the full pull
	// there is no pushdown section but a full_pull section of this form
	// (Manifest.FullPull), with both estimates, and a note says so.
	Estimate *PullEstimate `yaml:"estimate,omitempty" json:"estimate,omitempty"`
	// Families are the client families (agent/language) whose lines were
	// pulled across the whole window.
	Families []string `yaml:"families,omitempty" json:"families,omitempty"`
	// BaselineMinutes is the baseline's length in minutes, BaselineSampled
	// how many of them were pulled raw (the rest were counted in Loki).
	BaselineMinutes int `yaml:"baseline_minutes" json:"baseline_minutes"`
	BaselineSampled int `yaml:"baseline_sampled_minutes" json:"baseline_sampled_minutes"`
	// BaselineSampleBlocks and BaselineSampleBlockMinutes are how the sample
	// was taken (the fetch's pushdown.baseline_sample_blocks and
	// baseline_sample_block): that many stretches of that many minutes,
	// spread over the baseline; absent from bundles fetched before the
	// setting existed (which took 3 of 10).
	BaselineSampleBlocks       int `yaml:"baseline_sample_blocks,omitempty" json:"baseline_sample_blocks,omitempty"`
	BaselineSampleBlockMinutes int `yaml:"baseline_sample_block_minutes,omitempty" json:"baseline_sample_block_minutes,omitempty"`
	// SecondPassMaxPasses and SecondPassMaxMinutes bound the second passes:
	// how many an analysis may make and how many minutes each may pull.
	SecondPassMaxPasses  int `yaml:"second_pass_max_passes" json:"second_pass_max_passes"`
	SecondPassMaxMinutes int `yaml:"second_pass_max_minutes" json:"second_pass_max_minutes"`
	// SecondPasses are the pulls an analysis made when a finding's start or
	// a failing stretch's edge touched minutes that were only counted; their
	// lines, bytes and requests are in the totals above too.
	SecondPasses []SecondPass `yaml:"second_passes,omitempty" json:"second_passes,omitempty"`
	// PullFailed are the stretches of minutes whose raw lines were to be
	// pulled (they stood out, or were the baseline's sample) but whose pull
	// failed: Loki's per-minute counts stand in for them, so requests,
	// statuses and failures are whole there while what only a line tells
	// (addresses, routes, fingerprints, latencies) is missing. Unlike a
	// minute counted because it did not stand out, nothing says such a
	// minute was ordinary. A second pass that pulls one takes it out.
	PullFailed []Window `yaml:"pull_failed,omitempty" json:"pull_failed,omitempty"`
	// LimitsLearned are Loki's limits the fetch met and followed, one
	// sentence each with Loki's own words (max_query_length,
	// max_query_series, max_query_bytes_read, max_querier_bytes_read; the
	// lines per call are in each pull's record): absent when none was met.
	LimitsLearned []string `yaml:"limits_learned,omitempty" json:"limits_learned,omitempty"`
}

// SecondPass is one second pass of a pushdown: the minutes it pulled raw and
// what that cost, or why it failed (then nothing of it was kept, and the
// minutes stay counted).
type SecondPass struct {
	Minutes  int    `yaml:"minutes" json:"minutes"`
	Lines    int64  `yaml:"lines" json:"lines"`
	Bytes    int64  `yaml:"bytes" json:"bytes"`
	Requests int64  `yaml:"requests" json:"requests"`
	Failed   string `yaml:"failed,omitempty" json:"failed,omitempty"`
}
