package replay

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/aftermath-forensics/aftermath/rules"
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
	result      *Result
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

// ReportInput is what NewReport sets side by side.
type ReportInput struct {
	Plan    *Plan
	Options Options
	Result  *Result
	// Backtest is the proposed block's backtest over the same range (nil: no rule).
	Backtest                 *rules.Backtest
	RuleName                 string
	RuleFile, ScaledRuleFile string
	Notes                    []string
}

// NewReport builds the report.
func NewReport(in ReportInput) *Report {
	p, o, res := in.Plan, in.Options, in.Result
	r := &Report{Schema: Schema, Target: o.Target.Redacted(), Speed: p.Speed, Only: string(p.Only),
		ClientTimeoutS: o.ClientTimeout.Seconds(), LateWindowS: o.LateWindow.Seconds(),
		Scheduled: len(p.Shots), HealthChecksLeftOut: p.HealthChecks, ExcludedByOnly: p.Excluded, OverRequestLimit: p.OverLimit,
		Unsent: res.Unsent, Stopped: res.Stopped, Classes: map[string]*ClassSummary{}, Notes: append([]string{}, in.Notes...),
		Started: res.Started, Ended: res.Ended, Environment: res.Environment, result: res}
	r.Window.From, r.Window.To = p.From, p.To
	for _, k := range p.CrawlerKeys {
		r.CrawlerFingerprints = append(r.CrawlerFingerprints, k.String())
	}
	if o.Loopback {
		r.Addressing = fmt.Sprintf("loopback: each of the %d recorded client addresses sent from its own source address in 127.0.0.0/8 (%d distinct; clients of one /24 or /64 share a /24)",
			p.ClientsByPlan, res.Sources)
	} else {
		r.ForwardedHeader = o.ForwardedHeader
		r.Addressing = fmt.Sprintf("header %s: every request came from this machine, with the recorded client address in %s; the target's Caddy must list this machine in trusted_proxies (and client_ip_headers %s) or every client is one address to its rate limits",
			o.ForwardedHeader, o.ForwardedHeader, o.ForwardedHeader)
	}
	if res.MergedSources > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d recorded clients shared a source address with another (loopback holds 65,280 /24s of 254 hosts)", res.MergedSources))
	}
	g := &r.Generator
	g.WorstLagMS, g.WorstLagAtS, g.MaxLagMS = ms(res.WorstLag), res.WorstLagAt.Seconds(), ms(o.MaxLag)
	g.MedianLagMS, g.P99LagMS, g.OverMaxLag = lagStats(res, o.MaxLag)
	g.InFlightHigh, g.OpenHigh = res.InFlightHigh, res.OpenHigh
	g.InFlightBound = inFlightBound(p, o.ClientTimeout)
	g.SourceAddrs, g.MergedSources, g.ErrorSamples = res.Sources, res.MergedSources, res.ErrorSamples
	g.Valid = res.WorstLag <= o.MaxLag
	if !g.Valid {
		g.Invalid = fmt.Sprintf("the generator's worst scheduling lag was %.0f ms (at %.1f s), over the %.0f ms bound: it did not keep the schedule, so what this run measured is partly the generator, not the server",
			g.WorstLagMS, g.WorstLagAtS, g.MaxLagMS)
	}

	var all Counts
	for c := Class(0); c < numClasses; c++ {
		r.Classes[c.String()] = summarize(&res.Classes[c])
		all.merge(&res.Classes[c])
	}
	r.Classes["all"] = summarize(&all)
	if all.Timeout > 0 && g.InFlightBound > 0 && float64(g.InFlightHigh) < 0.5*float64(g.InFlightBound) && all.Timeout*10 > all.Judged() {
		r.Notes = append(r.Notes, fmt.Sprintf("clients timed out, yet at most %d requests were in flight of the %d the schedule allows: the generator may have throttled itself",
			g.InFlightHigh, g.InFlightBound))
	}
	r.Seconds = series(p, res, 1)
	r.Minutes = series(p, res, 60)
	if in.Backtest != nil {
		r.Backtest = compare(in, r.Classes)
	}
	return r
}

// lagStats returns the median and 99th percentile lag of the fired
// requests, and how many were later than bound.
func lagStats(res *Result, bound time.Duration) (median, p99 float64, over int) {
	lags := make([]time.Duration, 0, len(res.Lags))
	for i, l := range res.Lags {
		if i < len(res.Lags)-res.Unsent {
			lags = append(lags, l)
		}
		if l > bound {
			over++
		}
	}
	if len(lags) == 0 {
		return 0, 0, 0
	}
	slices.Sort(lags)
	return ms(lags[len(lags)/2]), ms(lags[min(len(lags)-1, len(lags)*99/100)]), over
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }

func summarize(c *Counts) *ClassSummary {
	s := &ClassSummary{Counts: *c, Goodput: c.Goodput(), RateLimited: c.RateLimited(), ProxyErrors: c.ProxyErrors(), Failed: c.Failed()}
	s.RefusedShare = share(s.RateLimited, c.Judged())
	s.FailedShare = share(s.Failed, c.Judged())
	return s
}

func share(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return math.Round(float64(n)/float64(of)*10000) / 10000
}

// inFlightBound is the most shots scheduled within any client-timeout-long
// stretch of replay time.
func inFlightBound(p *Plan, timeout time.Duration) int {
	best, lo := 0, 0
	for hi := range p.Shots {
		for p.Shots[hi].Offset-p.Shots[lo].Offset >= timeout {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// series folds the per-second counts into rows of step seconds.
func series(p *Plan, res *Result, step int) []SeriesRow {
	var rows []SeriesRow
	n := max(len(res.Seconds), len(res.Goodput))
	lag := make([]time.Duration, n)
	for i := range p.Shots {
		if k := int(p.Shots[i].Offset / time.Second); k < n && i < len(res.Lags) {
			lag[k] = max(lag[k], res.Lags[i])
		}
	}
	for s := 0; s < n; s += step {
		row := SeriesRow{Start: float64(s), IncidentTime: p.From.Add(time.Duration(float64(s) * p.Speed * float64(time.Second))).UTC(), Classes: map[string]*ClassSummary{}}
		var cs [numClasses]Counts
		for k := s; k < s+step && k < n; k++ {
			if k < len(res.Seconds) {
				for c := range cs {
					cs[c].merge(&res.Seconds[k].Classes[c])
				}
				row.InFlightHigh = max(row.InFlightHigh, res.Seconds[k].InFlightHigh)
			}
			row.WorstLagMS = max(row.WorstLagMS, ms(lag[k]))
			if k < len(res.Goodput) {
				row.Goodput += res.Goodput[k]
			}
		}
		for c := Class(0); c < numClasses; c++ {
			if cs[c].Sent > 0 || cs[c].Unsendable > 0 {
				row.Classes[c.String()] = summarize(&cs[c])
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// compare sets the replay's 429 share of each class beside the backtest's
// refused share and names the classes more than AgreementPoints apart.
func compare(in ReportInput, classes map[string]*ClassSummary) *Comparison {
	b := in.Backtest
	cmp := &Comparison{Rule: in.RuleName, RuleFile: in.RuleFile, ScaledRuleFile: in.ScaledRuleFile, Agree: true, Disagreements: []string{}}
	type bt struct {
		class          Class
		requests, refd int
	}
	rows := []bt{{ClassCrawler, b.CrawlerRequests, b.CrawlerRefused}, {ClassOtherLoggedOut, b.OtherLoggedOutRequests, b.OtherLoggedOutRefused},
		{ClassLoggedIn, b.LoggedInRequests, b.LoggedInRefused}}
	for _, x := range rows {
		if (in.Plan.Only == OnlyCrawler && x.class != ClassCrawler) || (in.Plan.Only == OnlyOthers && x.class == ClassCrawler) {
			continue
		}
		s := classes[x.class.String()]
		if x.requests == 0 && s.Judged() == 0 {
			continue // nothing of this class in the range: nothing to compare
		}
		row := ComparisonRow{Class: x.class.String(), BacktestRequests: x.requests, BacktestRefused: x.refd, BacktestRefusedShare: share(x.refd, x.requests),
			ReplayJudged: s.Judged(), ReplayRefused: s.RateLimited, ReplayRefusedShare: s.RefusedShare, ReplayFailedShare: s.FailedShare}
		row.DifferencePoints = math.Round((row.ReplayRefusedShare-row.BacktestRefusedShare)*1000) / 10
		if math.Abs(row.DifferencePoints) > AgreementPoints {
			cmp.Agree = false
			cmp.Disagreements = append(cmp.Disagreements, fmt.Sprintf("%s: the target refused %.1f%% (%d of %d), the backtest %.1f%% (%d of %d): %+.1f points",
				row.Class, 100*row.ReplayRefusedShare, row.ReplayRefused, row.ReplayJudged, 100*row.BacktestRefusedShare, x.refd, x.requests, row.DifferencePoints))
		}
		if x.requests > 0 && math.Abs(float64(s.Judged()-x.requests)) > 0.02*float64(x.requests)+5 {
			cmp.Disagreements = append(cmp.Disagreements, fmt.Sprintf("%s: the backtest counted %d requests in the range, the replay judged %d (unsent, stopped or unsendable requests, or a different range)",
				row.Class, x.requests, s.Judged()))
		}
		cmp.Rows = append(cmp.Rows, row)
	}
	return cmp
}

// JSON renders the report as aftermath.replay/v1.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("replay report: %w", err)
	}
	return append(b, '\n'), nil
}
