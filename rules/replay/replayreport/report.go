package replayreport

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Schema names the JSON report's format.
const Schema = "aftermath.replay/v1"

// AgreementPoints is how far, in percentage points, the replay's refused
// share of a class may sit from the backtest's before the report names the
// disagreement: the replay's limiter starts empty where the backtest's is
// warmed, and the two count a handful of requests differently at the edges.
const AgreementPoints = 5.0

// Report is a replay's result set beside the rule's backtest.
type Report struct {
	Schema string `json:"schema"`
	// Window is the incident range replayed (recorded arrival times).
	Window struct {
		From time.Time `json:"from"`
		To   time.Time `json:"to"`
	} `json:"window"`
	// Target is the staging URL with any password redacted.
	Target         string  `json:"target"`
	Speed          float64 `json:"speed"`
	Only           string  `json:"only,omitempty"`
	ClientTimeoutS float64 `json:"client_timeout_s"`
	LateWindowS    float64 `json:"late_window_s"`
	// Addressing says how clients were told apart at the target.
	Addressing      string `json:"addressing"`
	ForwardedHeader string `json:"forwarded_header,omitempty"`
	// CrawlerFingerprints are the crawler_burst fingerprints counted as the crawler.
	CrawlerFingerprints []string  `json:"crawler_fingerprints"`
	Scheduled           int       `json:"scheduled"`
	HealthChecksLeftOut int       `json:"health_checks_left_out"`
	ExcludedByOnly      int       `json:"excluded_by_only"`
	OverRequestLimit    int       `json:"over_request_limit"`
	Unsent              int       `json:"unsent"`
	Stopped             string    `json:"stopped,omitempty"`
	Generator           Generator `json:"generator"`
	// Classes holds the taxonomy per class over the whole run.
	Classes map[string]*ClassSummary `json:"classes"`
	// Seconds and Minutes are per second and per minute of replay time, by
	// the instant each request was scheduled; Goodput per second by completion.
	Seconds []SeriesRow `json:"seconds"`
	Minutes []SeriesRow `json:"minutes"`
	// Backtest sets the replay beside the rule's backtest ("" rule: none proposed).
	Backtest    *Comparison `json:"backtest,omitempty"`
	Notes       []string    `json:"notes"`
	Started     time.Time   `json:"started"`
	Ended       time.Time   `json:"ended"`
	Environment Environment `json:"environment"`
}

// Generator is what the generator says about itself: a run is only the
// server's measurement if the generator kept its schedule.
type Generator struct {
	WorstLagMS  float64 `json:"worst_lag_ms"`
	WorstLagAtS float64 `json:"worst_lag_at_s"`
	MaxLagMS    float64 `json:"max_lag_ms"`
	// MedianLagMS and P99LagMS describe the lag of the fired requests;
	// OverMaxLag counts those later than the bound.
	MedianLagMS  float64 `json:"median_lag_ms"`
	P99LagMS     float64 `json:"p99_lag_ms"`
	OverMaxLag   int     `json:"over_max_lag"`
	InFlightHigh int     `json:"in_flight_high_water"`
	OpenHigh     int     `json:"open_high_water"`
	// InFlightBound is the most requests that could have been waiting at
	// once: the busiest client-timeout-long stretch of the schedule (rate x
	// timeout). A high-water mark far below it while clients time out means
	// the generator throttled itself.
	InFlightBound int    `json:"in_flight_bound"`
	Valid         bool   `json:"valid"`
	Invalid       string `json:"invalid_reason,omitempty"`
	SourceAddrs   int    `json:"source_addresses,omitempty"`
	MergedSources int    `json:"merged_sources,omitempty"`
	// ErrorSamples holds the first transport error message of each kind.
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
}

// ClassSummary is one class's taxonomy and shares (of the requests judged:
// sent and not stopped).
type ClassSummary struct {
	Counts
	Goodput      int     `json:"goodput"`
	RateLimited  int     `json:"rate_limited_429"`
	ProxyErrors  int     `json:"proxy_5xx"`
	Failed       int     `json:"failed"`
	RefusedShare float64 `json:"refused_share"`
	FailedShare  float64 `json:"failed_share"`
}

// SeriesRow is one second or minute of replay time.
type SeriesRow struct {
	Start        float64   `json:"start_s"`
	IncidentTime time.Time `json:"incident_time"`
	InFlightHigh int       `json:"in_flight_high_water"`
	// WorstLagMS is the generator's worst scheduling lag of the requests
	// scheduled in the row: where it passes the bound, the row measured the
	// generator as much as the server.
	WorstLagMS float64                  `json:"worst_lag_ms"`
	Goodput    int                      `json:"goodput"`
	Classes    map[string]*ClassSummary `json:"classes"`
}

// Comparison sets the replay's refusals beside the backtest's, per class.
type Comparison struct {
	Rule string `json:"rule"`
	// RuleFile is the rule as proposed; ScaledRuleFile the one with windows
	// divided by the speed, which is what the target must run.
	RuleFile       string          `json:"rule_file,omitempty"`
	ScaledRuleFile string          `json:"scaled_rule_file,omitempty"`
	Rows           []ComparisonRow `json:"rows"`
	Disagreements  []string        `json:"disagreements"`
	Agree          bool            `json:"agree"`
}

// ComparisonRow is one class.
type ComparisonRow struct {
	Class                string  `json:"class"`
	BacktestRequests     int     `json:"backtest_requests"`
	BacktestRefused      int     `json:"backtest_refused"`
	BacktestRefusedShare float64 `json:"backtest_refused_share"`
	ReplayJudged         int     `json:"replay_judged"`
	ReplayRefused        int     `json:"replay_refused"`
	ReplayRefusedShare   float64 `json:"replay_refused_share"`
	ReplayFailedShare    float64 `json:"replay_failed_share"`
	DifferencePoints     float64 `json:"difference_points"`
}

// Environment is recorded beside each measurement, so that a wrong number
// can be explained.
type Environment struct {
	GoVersion  string `json:"go_version"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
}

// Summarize is a class's counts with their totals and shares of the judged
// requests, as the report states them.
func Summarize(c *Counts) *ClassSummary {
	s := &ClassSummary{Counts: *c, Goodput: c.Goodput(), RateLimited: c.RateLimited(), ProxyErrors: c.ProxyErrors(), Failed: c.Failed()}
	s.RefusedShare = Share(s.RateLimited, c.Judged())
	s.FailedShare = Share(s.Failed, c.Judged())
	return s
}

// Share is n of of, rounded to four places (0 when of is 0).
func Share(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return math.Round(float64(n)/float64(of)*10000) / 10000
}

// JSON renders the report as aftermath.replay/v1.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("replay report: %w", err)
	}
	return append(b, '\n'), nil
}
