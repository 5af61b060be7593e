package replay

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/rules/replay/replayreport"
)

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
func NewReport(in ReportInput) *replayreport.Report {
	p, o, res := in.Plan, in.Options, in.Result
	r := &replayreport.Report{Schema: replayreport.Schema, Target: o.Target.Redacted(), Speed: p.Speed, Only: string(p.Only),
		ClientTimeoutS: o.ClientTimeout.Seconds(), LateWindowS: o.LateWindow.Seconds(),
		Scheduled: len(p.Shots), HealthChecksLeftOut: p.HealthChecks, ExcludedByOnly: p.Excluded, OverRequestLimit: p.OverLimit,
		Unsent: res.Unsent, Stopped: res.Stopped, Classes: map[string]*replayreport.ClassSummary{}, Notes: append([]string{}, in.Notes...),
		Started: res.Started, Ended: res.Ended, Environment: res.Environment}
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

	var all replayreport.Counts
	for c := replayreport.Class(0); c < replayreport.NumClasses; c++ {
		r.Classes[c.String()] = replayreport.Summarize(&res.Classes[c])
		all.Merge(&res.Classes[c])
	}
	r.Classes["all"] = replayreport.Summarize(&all)
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
func series(p *Plan, res *Result, step int) []replayreport.SeriesRow {
	var rows []replayreport.SeriesRow
	n := max(len(res.Seconds), len(res.Goodput))
	lag := make([]time.Duration, n)
	for i := range p.Shots {
		if k := int(p.Shots[i].Offset / time.Second); k < n && i < len(res.Lags) {
			lag[k] = max(lag[k], res.Lags[i])
		}
	}
	for s := 0; s < n; s += step {
		row := replayreport.SeriesRow{Start: float64(s), IncidentTime: p.From.Add(time.Duration(float64(s) * p.Speed * float64(time.Second))).UTC(), Classes: map[string]*replayreport.ClassSummary{}}
		var cs [replayreport.NumClasses]replayreport.Counts
		for k := s; k < s+step && k < n; k++ {
			if k < len(res.Seconds) {
				for c := range cs {
					cs[c].Merge(&res.Seconds[k].Classes[c])
				}
				row.InFlightHigh = max(row.InFlightHigh, res.Seconds[k].InFlightHigh)
			}
			row.WorstLagMS = max(row.WorstLagMS, ms(lag[k]))
			if k < len(res.Goodput) {
				row.Goodput += res.Goodput[k]
			}
		}
		for c := replayreport.Class(0); c < replayreport.NumClasses; c++ {
			if cs[c].Sent > 0 || cs[c].Unsendable > 0 {
				row.Classes[c.String()] = replayreport.Summarize(&cs[c])
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// compare sets the replay's 429 share of each class beside the backtest's
// refused share and names the classes more than AgreementPoints apart.
func compare(in ReportInput, classes map[string]*replayreport.ClassSummary) *replayreport.Comparison {
	b := in.Backtest
	cmp := &replayreport.Comparison{Rule: in.RuleName, RuleFile: in.RuleFile, ScaledRuleFile: in.ScaledRuleFile, Agree: true, Disagreements: []string{}}
	type bt struct {
		class          replayreport.Class
		requests, refd int
	}
	rows := []bt{{replayreport.ClassCrawler, b.CrawlerRequests, b.CrawlerRefused}, {replayreport.ClassOtherLoggedOut, b.OtherLoggedOutRequests, b.OtherLoggedOutRefused},
		{replayreport.ClassLoggedIn, b.LoggedInRequests, b.LoggedInRefused}}
	for _, x := range rows {
		if (in.Plan.Only == OnlyCrawler && x.class != replayreport.ClassCrawler) || (in.Plan.Only == OnlyOthers && x.class == replayreport.ClassCrawler) {
			continue
		}
		s := classes[x.class.String()]
		if x.requests == 0 && s.Judged() == 0 {
			continue // nothing of this class in the range: nothing to compare
		}
		row := replayreport.ComparisonRow{Class: x.class.String(), BacktestRequests: x.requests, BacktestRefused: x.refd, BacktestRefusedShare: replayreport.Share(x.refd, x.requests),
			ReplayJudged: s.Judged(), ReplayRefused: s.RateLimited, ReplayRefusedShare: s.RefusedShare, ReplayFailedShare: s.FailedShare}
		row.DifferencePoints = math.Round((row.ReplayRefusedShare-row.BacktestRefusedShare)*1000) / 10
		if math.Abs(row.DifferencePoints) > replayreport.AgreementPoints {
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
