package scan

import (
	"math"
	"sort"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/prose"
)

// rise is one fingerprint's rise.
type rise struct {
	key     request.ClusterKey
	c       *ClusterProfile
	metric  string
	o       float64
	b       Baseline
	score   float64
	reason  prose.Text
	minutes *detect.Cluster
	// requests and ips are the baselines of the fingerprint's requests and
	// addresses, whichever measure rose.
	requests, ips Baseline
}

// clusters finds the fingerprints that rose and sorts them into automated
// ones (crawler_burst anomalies) and human ones (for the surge).
func (j *judge) clusters() (auto, humans []rise) {
	window := map[request.ClusterKey]*detect.Cluster{}
	if j.traffic != nil {
		for _, c := range j.traffic.Clusters() {
			window[c.Key] = c
		}
	}
	flagged := map[request.ClusterKey]bool{}
	for _, f := range j.res.Findings {
		if f.Kind == detect.KindCrawlerBurst && f.Cluster != nil {
			flagged[*f.Cluster] = true
		}
	}
	keys := make([]request.ClusterKey, 0, len(j.recent.Clusters))
	for k := range j.recent.Clusters {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return keys[a].String() < keys[b].String() })
	m := clusterMeasure
	m.minExcess = math.Max(minClusterPerHour*j.hours, minClusterShare*float64(j.recent.Requests))
	for _, k := range keys {
		c := j.recent.Clusters[k]
		if float64(c.Requests) < minClusterShare*float64(j.recent.Requests) {
			continue
		}
		var best *rise
		// of is the baseline of one of the cluster's counts.
		of := func(get func(*ClusterProfile) int) Baseline {
			return j.baselineOf(func(p *Profile) (float64, bool) {
				if bc := p.Clusters[k]; bc != nil {
					return float64(get(bc)), true
				}
				return 0, true
			})
		}
		for _, q := range []struct {
			metric string
			get    func(*ClusterProfile) int
		}{
			{"requests", func(c *ClusterProfile) int { return c.Requests }},
			{"distinct addresses", func(c *ClusterProfile) int { return c.IPs }},
			{"distinct networks", func(c *ClusterProfile) int { return c.Prefixes }},
		} {
			b := of(q.get)
			o := float64(q.get(c))
			if !m.rises(o, b, j.cfg.Z) {
				continue
			}
			if s := m.score(o, b); best == nil || s > best.score {
				best = &rise{key: k, c: c, metric: q.metric, o: o, b: b, score: s}
			}
		}
		if best == nil {
			continue
		}
		best.requests = of(func(c *ClusterProfile) int { return c.Requests })
		best.ips = of(func(c *ClusterProfile) int { return c.IPs })
		best.minutes = window[k]
		var isAuto bool
		r, measured := j.readings[k]
		best.reason, isAuto = automated(k, r, measured, flagged[k])
		if isAuto {
			auto = append(auto, *best)
			j.anomalies = append(j.anomalies, j.crawlerAnomaly(*best))
		} else {
			humans = append(humans, *best)
		}
	}
	return auto, humans
}

// automated judges a fingerprint by detect's test (detect.JudgeAutomation)
// on how detect measured it reading the window (its assets, and the routes
// PHP's measured cost calls expensive: not path names), and says the test
// that decided in the scan's words. A fingerprint detect did not measure is
// not called automated.
func automated(k request.ClusterKey, r detect.Reading, measured, flagged bool) (prose.Text, bool) {
	read := struct{ Assets, Tools float64 }{r.AssetShare, r.ExpensiveShare}
	if flagged {
		return Messages.Say("reason.flagged", nil), true
	}
	if !measured {
		return Messages.Say("reason.unmeasured", nil), false
	}
	why := detect.JudgeAutomation(k, read.Assets, read.Tools)
	return sayAutomation(why, k, read), why.Automated()
}

// sayAutomation says why, detect's reason for calling a fingerprint of user
// agent k.UA automated or human, in the scan's words (read is how it read).
func sayAutomation(why detect.Automation, k request.ClusterKey, read struct{ Assets, Tools float64 }) prose.Text {
	switch why {
	case detect.FetchedAssets, detect.ReadCheapPages:
		return Messages.Say("reason.browsing", read)
	case detect.DeclaredTool:
		return Messages.Say("reason.not_browser", k.UA)
	case detect.ForgedBrowser:
		return Messages.Say("reason.forged", nil)
	}
	return Messages.Say("reason.automated", read)
}

func init() {
	registerConcern(Concern{Kind: detect.KindCrawlerBurst, NewFacts: func() detect.Facts { return &CrawlerRiseFacts{} }})
}

// CrawlerRiseFacts are the numbers behind a crawler_burst the scan measured
// itself: an automated fingerprint's rise against its seasonal baseline. The
// crawler detector's finding of the same fingerprint joins it with its own
// facts (detect.CrawlerBurstFacts).
type CrawlerRiseFacts struct {
	// Requests, DistinctIPs and DistinctPrefixes are the fingerprint's
	// window; RequestsUsual and DistinctIPsUsual their baseline medians.
	Requests         int     `json:"requests"`
	RequestsUsual    float64 `json:"requests_usual"`
	DistinctIPs      int     `json:"distinct_ips"`
	DistinctIPsUsual float64 `json:"distinct_ips_usual"`
	DistinctPrefixes int     `json:"distinct_prefixes"`
	// PeakPer10m is its busiest 10 minutes, starting at PeakAt (Unix
	// seconds); UsualPer10m the usual 10 minutes at this hour.
	PeakPer10m  float64 `json:"peak_per_10m"`
	PeakAt      int64   `json:"peak_at"`
	UsualPer10m float64 `json:"usual_per_10m"`
	// AssetShare and UncacheableShare are how it read the site
	// (detect.Reading).
	AssetShare       float64 `json:"asset_share"`
	UncacheableShare float64 `json:"uncacheable_share"`
	// BaselineSlots counts the baseline's covered slots.
	BaselineSlots int `json:"baseline_slots"`
}

// FindingKind implements detect.Facts.
func (*CrawlerRiseFacts) FindingKind() detect.Kind { return detect.KindCrawlerBurst }

// crawlerAnomaly reports an automated fingerprint's rise. Its observed value
// is the busiest 10 minutes of the window against the usual 10 minutes at this
// hour: a burst shows there first, while the hour's total still lags.
func (j *judge) crawlerAnomaly(r rise) *Anomaly {
	c := r.c
	fp := detect.FingerprintOf(r.key)
	w := j.cfg.Window(j.recent.To)
	usual10 := r.requests.Median * 10 / j.cfg.Since.Minutes()
	peak10, peakAt := float64(c.Requests), w.From
	if r.minutes != nil {
		fp.Paths = topLabels(r.minutes.Labels(), 5)
		peak10, peakAt = peakPer10(r.minutes.PerMinute(), w)
	}
	a := &Anomaly{
		Kind: detect.KindCrawlerBurst, Severity: SeverityWarning, Key: r.key.String(), KeyText: detect.SayKey(r.key),
		Start:    j.onset(r.minutes, r.requests),
		Observed: peak10, Baseline: round(usual10, 1), Score: round(r.score, 1),
		Fingerprint: fp,
		Facts: &CrawlerRiseFacts{
			Requests: c.Requests, RequestsUsual: r.requests.Median,
			DistinctIPs: c.IPs, DistinctPrefixes: c.Prefixes,
			PeakPer10m: peak10, PeakAt: peakAt.Unix(), UsualPer10m: round(usual10, 1),
			AssetShare: round(j.readings[r.key].AssetShare, 3), UncacheableShare: round(j.readings[r.key].ExpensiveShare, 3),
			BaselineSlots: r.b.N, DistinctIPsUsual: r.ips.Median,
		},
	}
	a.measured(metricPeak10)
	a.summarize(Messages.Say("crawler_burst.summary", struct {
		Key, Span, Reason             prose.Text
		Requests, IPs, Prefixes, Days int
		Peak, Usual, UsualIPs         float64
	}{detect.SayKey(r.key), j.span(), r.reason, c.Requests, c.IPs, c.Prefixes, r.b.N, peak10, r.requests.Median, r.ips.Median}))
	return a
}

// peakPer10 is the busiest 10 consecutive minutes of w and where they start.
func peakPer10(perMinute map[int64]int, w Range) (float64, time.Time) {
	start, end := w.From.Unix()/60, w.To.Unix()/60
	best, bestAt, sum := 0, start, 0
	for m := start; m < end; m++ {
		sum += perMinute[m]
		if m-start >= 10 {
			sum -= perMinute[m-10]
		}
		if sum > best {
			best, bestAt = sum, max(start, m-9)
		}
	}
	return float64(best), time.Unix(bestAt*60, 0).UTC()
}

// onset is the first minute of the window from which a fingerprint stayed
// clearly above its usual rate for three minutes; the window's start when the
// rise was there from the beginning or is not in the per-minute counts.
func (j *judge) onset(c *detect.Cluster, b Baseline) time.Time {
	w := j.cfg.Window(j.recent.To)
	if c == nil {
		return w.From
	}
	level := detect.RiseLevel(b.Median/j.cfg.Since.Minutes(), standOutZ)
	if m, ok := detect.SustainedOnset(c.PerMinute(), level, w.From.Unix()/60, w.To.Unix()/60); ok {
		return time.Unix(m*60, 0).UTC()
	}
	return w.From
}

func topLabels(labels map[string]int, n int) []string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if labels[keys[a]] != labels[keys[b]] {
			return labels[keys[a]] > labels[keys[b]]
		}
		return keys[a] < keys[b]
	})
	if len(keys) > n {
		keys = keys[:n]
	}
	return keys
}
