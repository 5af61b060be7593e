package scan

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
)

// Measure is one site-wide quantity of the window against its baseline: the
// table a reader checks when a scan stays quiet ("was it close?").
type Measure struct {
	// Name says what is measured, with its unit.
	Name     string   `json:"name"`
	Observed float64  `json:"observed"`
	Baseline Baseline `json:"baseline"`
	Score    float64  `json:"score"`
	// Anomalous is true when the measure alone passed every gate.
	Anomalous bool `json:"anomalous"`
}

// How each measure is judged (see the package doc). Volumes are per hour of
// window and scale with Config.Since.
var (
	// A fingerprint: requests, distinct addresses or networks, at least 3x.
	clusterMeasure = measure{count: true, relFloor: 0.1, ratio: 3}
	// A path class rising without a fingerprint to blame.
	classMeasure = measure{count: true, relFloor: 0.1, ratio: 3}
	// Requests of people: twice the usual is news.
	surgeMeasure = measure{count: true, relFloor: 0.1, ratio: 2}
	// Failed responses: three times the usual, ten an hour at least.
	errorMeasure = measure{count: true, relFloor: 0.1, ratio: 3}
	// PHP latency over successes, seconds: twice the usual and a quarter of
	// a second more at least.
	latencyMeasure = measure{relFloor: 0.25, absFloor: 0.05, ratio: 2, minExcess: 0.25}
	// Minutes with every worker busy: three more than usual at least.
	saturatedMeasure = measure{relFloor: 0.25, absFloor: 1, ratio: 2, minExcess: 3}
	// The listen queue's peak: more waiting than there are workers.
	queueMeasure = measure{relFloor: 0.25, absFloor: 1, ratio: 5}
	// Mean CPU in percent: 20 points above the usual at least.
	cpuMeasure = measure{relFloor: 0.1, absFloor: 3, ratio: 1.5, minExcess: 20}
)

// Volume floors per hour of window.
const (
	// minClusterPerHour: a fingerprint needs this many extra requests an hour.
	minClusterPerHour = 60
	// minClusterShare: and this share of the window's requests (detect's own
	// minimum for a crawler).
	minClusterShare = 0.02
	// minClassShare: a path class needs this share of the window's requests.
	minClassShare = 0.05
	// minSurgePerHour: a surge needs this many extra requests an hour.
	minSurgePerHour = 120
	// minFailedPerHour: failed responses need this many extra an hour, and
	// minFailedShare of the window's requests.
	minFailedPerHour = 10
	minFailedShare   = 0.01
	// criticalFailedShare: more failed than this share of requests is critical.
	criticalFailedShare = 0.05
	// minLatencySamples: fewer PHP successes in a slot and its percentiles
	// say nothing.
	minLatencySamples = 50
	minLatencySlot    = 20
	// criticalSaturatedMinutes: every worker busy this long is critical.
	criticalSaturatedMinutes = 10
)

// judge scores one scan.
type judge struct {
	cfg     Config
	site    sources.Site
	recent  *Profile
	base    []*Profile
	traffic *detect.Traffic
	res     *detect.Result
	hours   float64
	// seasonal is false when too few baseline slots are covered.
	seasonal bool

	anomalies []*Anomaly
	measures  []Measure
	notes     []sources.QualityNote
}

func (j *judge) run() {
	j.hours = j.cfg.Since.Hours()
	if j.seasonal {
		auto, humans := j.clusters()
		j.surge(auto, humans)
		j.classes()
		j.errors()
		j.latency()
		j.saturation()
	}
	j.findings()
	j.escalate()
	j.dropIdleChanges()
	sort.SliceStable(j.anomalies, func(a, b int) bool {
		x, y := j.anomalies[a], j.anomalies[b]
		if SeverityRank(x.Severity) != SeverityRank(y.Severity) {
			return SeverityRank(x.Severity) > SeverityRank(y.Severity)
		}
		return x.Score > y.Score
	})
}

// baselineOf collects one value per covered slot (ok false skips the slot).
func (j *judge) baselineOf(f func(*Profile) (float64, bool)) Baseline {
	var xs []float64
	for _, p := range j.base {
		if v, ok := f(p); ok {
			xs = append(xs, v)
		}
	}
	return robust(xs)
}

// measureSite records a site-wide measure and reports whether it rose.
func (j *judge) measureSite(name string, o float64, b Baseline, m measure) bool {
	return j.measureSiteAt(name, o, o, b, m)
}

// measureSiteAt records a measure shown as o but judged on g (a conservative
// estimate of it).
func (j *judge) measureSiteAt(name string, o, g float64, b Baseline, m measure) bool {
	up := m.rises(g, b, j.cfg.Z)
	j.measures = append(j.measures, Measure{Name: name, Observed: round(o, 3), Baseline: b, Score: round(m.score(g, b), 1), Anomalous: up})
	return up
}

// lowerQuantile is the low end of a quantile's 3-sigma confidence interval
// from its sample size (order statistics: the rank q*n varies by
// sqrt(n*q*(1-q))).
func lowerQuantile(h *detect.Histogram, q float64) float64 {
	lo := q - 3*math.Sqrt(q*(1-q)/float64(max(h.N, 1)))
	return h.Quantile(math.Max(lo, 0.01))
}

// rise is one fingerprint's rise.
type rise struct {
	key     detect.ClusterKey
	c       *ClusterProfile
	metric  string
	o       float64
	b       Baseline
	score   float64
	reason  string
	minutes *detect.Cluster
	// requests and ips are the baselines of the fingerprint's requests and
	// addresses, whichever measure rose.
	requests, ips Baseline
}

// clusters finds the fingerprints that rose and sorts them into automated
// ones (crawler_burst anomalies) and human ones (for the surge).
func (j *judge) clusters() (auto, humans []rise) {
	window := map[detect.ClusterKey]*detect.Cluster{}
	if j.traffic != nil {
		for _, c := range j.traffic.Clusters() {
			window[c.Key] = c
		}
	}
	flagged := map[detect.ClusterKey]bool{}
	for _, f := range j.res.Findings {
		if f.Kind == detect.KindCrawlerBurst && f.Cluster != nil {
			flagged[*f.Cluster] = true
		}
	}
	keys := make([]detect.ClusterKey, 0, len(j.recent.Clusters))
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
		for _, q := range []struct {
			metric string
			get    func(*ClusterProfile) int
		}{
			{"requests", func(c *ClusterProfile) int { return c.Requests }},
			{"distinct addresses", func(c *ClusterProfile) int { return c.IPs }},
			{"distinct networks", func(c *ClusterProfile) int { return c.Prefixes }},
		} {
			b := j.baselineOf(func(p *Profile) (float64, bool) {
				if bc := p.Clusters[k]; bc != nil {
					return float64(q.get(bc)), true
				}
				return 0, true
			})
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
		of := func(get func(*ClusterProfile) int) Baseline {
			return j.baselineOf(func(p *Profile) (float64, bool) {
				if bc := p.Clusters[k]; bc != nil {
					return float64(get(bc)), true
				}
				return 0, true
			})
		}
		best.requests = of(func(c *ClusterProfile) int { return c.Requests })
		best.ips = of(func(c *ClusterProfile) int { return c.IPs })
		best.minutes = window[k]
		var isAuto bool
		best.reason, isAuto = automated(k, c, flagged[k])
		if isAuto {
			auto = append(auto, *best)
			j.anomalies = append(j.anomalies, j.crawlerAnomaly(*best))
		} else {
			humans = append(humans, *best)
		}
	}
	return auto, humans
}

// automated judges a fingerprint by detect's test (detect.Automated), and
// says why in the scan's words.
func automated(k detect.ClusterKey, c *ClusterProfile, flagged bool) (string, bool) {
	assets := share(c.Assets, c.Requests)
	tools := share(c.Uncacheable, c.Requests-c.Assets)
	if flagged {
		return "the crawler detector flagged it", true
	}
	if _, auto := detect.Automated(k, assets, tools); !auto {
		return fmt.Sprintf("%s of its requests were assets and %s of its pages uncacheable, as people browsing", pct(assets), pct(tools)), false
	}
	switch {
	case !detect.IsBrowser(k.UA):
		return fmt.Sprintf("its user agent (%s) is not a browser", k.UA), true
	case k.NoClientHints:
		return "a Chromium user agent without client hints (forged)", true
	}
	return fmt.Sprintf("it fetched %s assets and %s of its pages were uncacheable tools", pct(assets), pct(tools)), true
}

// crawlerAnomaly reports an automated fingerprint's rise. Its observed value
// is the busiest 10 minutes of the window against the usual 10 minutes at this
// hour: a burst shows there first, while the hour's total still lags.
func (j *judge) crawlerAnomaly(r rise) *Anomaly {
	c := r.c
	fp := &detect.Fingerprint{UserAgent: r.key.UA, AcceptLanguage: r.key.Lang, LoggedIn: r.key.LoggedIn.String()}
	if r.key.NoClientHints {
		fp.SecChUa = "absent"
	}
	w := j.cfg.Window(j.recent.To)
	usual10 := r.requests.Median * 10 / j.cfg.Since.Minutes()
	peak10, peakAt := float64(c.Requests), w.From
	if r.minutes != nil {
		fp.Paths = topLabels(r.minutes.Labels, 5)
		peak10, peakAt = peakPer10(r.minutes.PerMinute, w)
	}
	a := &Anomaly{
		Kind: detect.KindCrawlerBurst, Severity: SeverityWarning, Key: r.key.String(),
		Start:  j.onset(r.minutes, r.requests),
		Metric: "requests per 10 minutes at the peak", Observed: peak10, Baseline: round(usual10, 1), Score: round(r.score, 1),
		Fingerprint: fp,
		Facts: map[string]float64{
			"requests": float64(c.Requests), "requests_usual": r.requests.Median,
			"distinct_ips": float64(c.IPs), "distinct_prefixes": float64(c.Prefixes),
			"peak_per_10m": peak10, "peak_at": float64(peakAt.Unix()), "usual_per_10m": round(usual10, 1),
			"asset_share": round(share(c.Assets, c.Requests), 3), "uncacheable_share": round(share(c.Uncacheable, c.Requests-c.Assets), 3),
			"baseline_slots": float64(r.b.N), "distinct_ips_usual": r.ips.Median,
		},
	}
	a.Summary = fmt.Sprintf("%s sent %s requests from %s addresses in %s networks %s, up to %s in 10 minutes; at this hour it usually sends %s requests from %s addresses (median of %d days). It looks automated: %s.",
		r.key, count(c.Requests), count(c.IPs), count(c.Prefixes), j.span(), num(peak10), num(r.requests.Median), num(r.ips.Median), r.b.N, r.reason)
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
	perMin := b.Median / j.cfg.Since.Minutes()
	level := perMin + 3*math.Sqrt(perMin+1)
	above := func(m int64) bool { return float64(c.PerMinute[m]) >= level }
	for m := w.From.Unix() / 60; m < w.To.Unix()/60; m++ {
		if above(m) && above(m+1) && above(m+2) {
			return time.Unix(m*60, 0).UTC()
		}
	}
	return w.From
}

// surge judges the requests of people: the window's requests less those of
// the automated fingerprints that rose, against the usual requests.
func (j *judge) surge(auto, humans []rise) {
	autoReq := 0
	for _, r := range auto {
		autoReq += r.c.Requests
	}
	o := float64(j.recent.Requests - autoReq)
	b := j.baselineOf(func(p *Profile) (float64, bool) { return float64(p.Requests), true })
	m := surgeMeasure
	m.minExcess = minSurgePerHour * j.hours
	if !j.measureSite("client requests (automated rises excluded)", o, b, m) {
		return
	}
	autoKeys := map[detect.ClusterKey]bool{}
	for _, r := range auto {
		autoKeys[r.key] = true
	}
	var req, assets, cookies int
	langs := map[string]bool{}
	for k, c := range j.recent.Clusters {
		if autoKeys[k] {
			continue
		}
		req += c.Requests
		assets += c.Assets
		cookies += c.Cookies
		if k.Lang != "" && c.Requests >= 10 {
			langs[k.Lang] = true
		}
	}
	sort.Slice(humans, func(a, b int) bool { return humans[a].o-humans[a].b.Median > humans[b].o-humans[b].b.Median })
	var names []string
	for i, h := range humans {
		if i == 3 {
			break
		}
		names = append(names, fmt.Sprintf("%s (%s, usually %s)", h.key, count(h.c.Requests), num(h.b.Median)))
	}
	who := ""
	if len(names) > 0 {
		who = "; the fingerprints that rose most: " + strings.Join(names, ", ")
	}
	start := j.cfg.Window(j.recent.To).From
	if j.traffic != nil {
		perMin := b.Median / j.cfg.Since.Minutes()
		level := perMin + 3*math.Sqrt(perMin+1)
		start = firstMinute(j.traffic, j.cfg.Window(j.recent.To), func(m *detect.Minute) bool { return float64(m.Requests) >= level })
	}
	j.anomalies = append(j.anomalies, &Anomaly{
		Kind: KindSurge, Severity: SeverityInfo, Start: start,
		Metric: "client requests in the window", Observed: o, Baseline: b.Median, Score: round(surgeMeasure.score(o, b), 1),
		Facts: map[string]float64{"asset_share": round(share(assets, req), 3), "cookie_share": round(share(cookies, req), 3),
			"languages": float64(len(langs)), "fingerprints_rising": float64(len(humans)), "baseline_slots": float64(b.N)},
		Summary: fmt.Sprintf("Requests rose to %s %s against a usual %s at this hour (median of %d days), and the rise behaves like people: %s of requests were assets fetched after pages, %s carried cookies, %d languages%s. A surge (a flash crowd), not an attack.",
			num(o), j.span(), num(b.Median), b.N, pct(share(assets, req)), pct(share(cookies, req)), len(langs), who),
	})
}

// classes flags uncacheable requests that rose while no fingerprint explains
// it (a crawler rotating user agents and languages stays under every
// fingerprint's floor but not under its path class's).
func (j *judge) classes() {
	for _, a := range j.anomalies {
		if a.Kind == detect.KindCrawlerBurst {
			return
		}
	}
	m := classMeasure
	m.minExcess = math.Max(minClusterPerHour*j.hours, minClassShare*float64(j.recent.Requests))
	for _, class := range []detect.PathClass{detect.ClassTool, detect.ClassSpecial, detect.ClassAPI} {
		o := float64(j.recent.Classes[class])
		b := j.baselineOf(func(p *Profile) (float64, bool) { return float64(p.Classes[class]), true })
		if !m.rises(o, b, j.cfg.Z) {
			continue
		}
		j.anomalies = append(j.anomalies, &Anomaly{
			Kind: KindRequestRate, Severity: SeverityWarning, Key: string(class), Start: j.cfg.Window(j.recent.To).From,
			Metric: string(class) + " requests in the window", Observed: o, Baseline: b.Median, Score: round(m.score(o, b), 1),
			Facts: map[string]float64{"baseline_slots": float64(b.N)},
			Summary: fmt.Sprintf("Uncacheable %s requests rose to %s %s against a usual %s at this hour (median of %d days), spread over fingerprints none of which stands out on its own.",
				class, num(o), j.span(), num(b.Median), b.N),
		})
	}
}

// errors judges failed responses and the proxy's own 503s.
func (j *judge) errors() {
	r := j.recent
	floor := math.Max(minFailedPerHour*j.hours, minFailedShare*float64(r.Requests))
	m := errorMeasure
	m.minExcess = floor
	b := j.baselineOf(func(p *Profile) (float64, bool) { return float64(p.Failed), true })
	failedUp := j.measureSite("failed responses (5xx, 429, late)", float64(r.Failed), b, m)
	p := errorMeasure
	p.minExcess = minFailedPerHour * j.hours
	pb := j.baselineOf(func(p *Profile) (float64, bool) { return float64(p.Proxy503), true })
	proxyUp := j.measureSite("503s made by the proxy", float64(r.Proxy503), pb, p)
	if !failedUp && !proxyUp {
		return
	}
	failedShare := share(r.Failed, r.Lines)
	sev := SeverityWarning
	if proxyUp || failedShare >= criticalFailedShare {
		sev = SeverityCritical
	}
	start := j.cfg.Window(r.To).From
	if j.traffic != nil {
		perMin := b.Median / j.cfg.Since.Minutes()
		level := perMin + 3*math.Sqrt(perMin+1)
		start = firstMinute(j.traffic, j.cfg.Window(r.To), func(m *detect.Minute) bool { return float64(m.Failed()) > level })
	}
	proxy := ""
	if r.Proxy503 > 0 {
		proxy = fmt.Sprintf(" (%s of them 503s Caddy made itself: it had marked PHP down)", count(r.Proxy503))
	}
	j.anomalies = append(j.anomalies, &Anomaly{
		Kind: KindErrorRate, Severity: sev, Start: start,
		Metric: "failed responses in the window", Observed: float64(r.Failed), Baseline: b.Median, Score: round(m.score(float64(r.Failed), b), 1),
		Facts: map[string]float64{"status_5xx": float64(r.Server5xx), "status_429": float64(r.Status429), "proxy_503": float64(r.Proxy503),
			"late": float64(r.Late), "failed_share": round(failedShare, 4), "baseline_slots": float64(b.N), "proxy_503_usual": pb.Median},
		Summary: fmt.Sprintf("%s responses failed %s, %s of all: %s 5xx%s, %s 429 and %s successes logged after the clients gave up; usually %s at this hour (median of %d days).",
			count(r.Failed), j.span(), pct(failedShare), count(r.Server5xx), proxy, count(r.Status429), count(r.Late), num(b.Median), b.N),
	})
}

// latency judges PHP's response time over successes (p95, and p50).
func (j *judge) latency() {
	r := j.recent
	if r.Latency.N < minLatencySamples {
		return
	}
	q := func(p *Profile, quant float64) (float64, bool) {
		if p.Latency.N < minLatencySlot {
			return 0, false
		}
		return p.Latency.Quantile(quant), true
	}
	o95, _ := q(r, 0.95)
	o50, _ := q(r, 0.5)
	// The window is judged on the low end of its quantiles' confidence
	// interval: a quiet hour's p95 rests on a dozen requests, and a few slow
	// edits must not pass for PHP slowing down.
	g95, g50 := lowerQuantile(&r.Latency, 0.95), lowerQuantile(&r.Latency, 0.5)
	b95 := j.baselineOf(func(p *Profile) (float64, bool) { return q(p, 0.95) })
	b50 := j.baselineOf(func(p *Profile) (float64, bool) { return q(p, 0.5) })
	if b95.N < j.cfg.MinBaselineDays {
		return
	}
	up95 := j.measureSiteAt("PHP success latency p95 (s)", o95, g95, b95, latencyMeasure)
	up50 := j.measureSiteAt("PHP success latency p50 (s)", o50, g50, b50, latencyMeasure)
	if !up95 && !up50 {
		return
	}
	sev := SeverityWarning
	if j.site.ClientTimeoutS > 0 && o95 >= j.site.ClientTimeoutS {
		sev = SeverityCritical
	}
	metric, o, g, b := "PHP success latency p95 (s)", o95, g95, b95
	if !up95 || latencyMeasure.score(g50, b50) > latencyMeasure.score(g95, b95) {
		metric, o, g, b = "PHP success latency p50 (s)", o50, g50, b50
	}
	start := j.cfg.Window(r.To).From
	if j.traffic != nil {
		level := b95.Median * latencyMeasure.ratio
		start = firstMinute(j.traffic, j.cfg.Window(r.To), func(m *detect.Minute) bool {
			return m.Latency.N >= 5 && m.Latency.Quantile(0.95) >= level
		})
	}
	j.anomalies = append(j.anomalies, &Anomaly{
		Kind: KindLatency, Severity: sev, Start: start,
		Metric: metric, Observed: round(o, 3), Baseline: round(b.Median, 3), Score: round(latencyMeasure.score(g, b), 1),
		Facts: map[string]float64{"p95_s": round(o95, 3), "p50_s": round(o50, 3), "p95_usual_s": round(b95.Median, 3), "p50_usual_s": round(b50.Median, 3),
			"successes": float64(r.Latency.N), "baseline_slots": float64(b.N)},
		Summary: fmt.Sprintf("PHP answered its successes slower %s: 95th percentile %s (usually %s), median %s (usually %s), over %s successes.",
			j.span(), secs(o95), secs(b95.Median), secs(o50), secs(b50.Median), count(r.Latency.N)),
	})
}

// saturation judges busy workers, the listen queue and CPU.
func (j *judge) saturation() {
	p := j.recent.Pool
	if p == nil {
		return
	}
	pools := func(f func(*PoolProfile) (float64, bool)) Baseline {
		return j.baselineOf(func(s *Profile) (float64, bool) {
			if s.Pool == nil {
				return 0, false
			}
			return f(s.Pool)
		})
	}
	bSat := pools(func(p *PoolProfile) (float64, bool) { return p.SaturatedMinutes, true })
	bQueue := pools(func(p *PoolProfile) (float64, bool) { return p.QueuePeak, true })
	if bSat.N < j.cfg.MinBaselineDays {
		j.note(sources.SeverityInfo, fmt.Sprintf("metrics cover %d of the baseline slots: php-fpm and CPU are not compared with the baseline", bSat.N))
		return
	}
	qm := queueMeasure
	qm.minExcess = math.Max(p.Workers, 1)
	upSat := j.measureSite("minutes with every worker busy", p.SaturatedMinutes, bSat, saturatedMeasure)
	upQueue := j.measureSite("listen queue peak", p.QueuePeak, bQueue, qm)
	upCPU := false
	bCPU := pools(func(p *PoolProfile) (float64, bool) { return p.CPUMean, p.HasCPU })
	if p.HasCPU && bCPU.N >= j.cfg.MinBaselineDays {
		upCPU = j.measureSite("CPU mean (%)", p.CPUMean, bCPU, cpuMeasure)
	}
	if !upSat && !upQueue && !upCPU {
		return
	}
	sev := SeverityWarning
	if p.SaturatedMinutes >= criticalSaturatedMinutes || p.Backlog > 0 && p.QueuePeak >= 0.98*p.Backlog {
		sev = SeverityCritical
	}
	metric, o, b, s := "minutes with every worker busy", p.SaturatedMinutes, bSat, saturatedMeasure.score(p.SaturatedMinutes, bSat)
	if x := qm.score(p.QueuePeak, bQueue); upQueue && (!upSat || x > s) {
		metric, o, b, s = "listen queue peak", p.QueuePeak, bQueue, x
	}
	if !upSat && !upQueue {
		metric, o, b, s = "CPU mean (%)", p.CPUMean, bCPU, cpuMeasure.score(p.CPUMean, bCPU)
	}
	start := j.cfg.Window(j.recent.To).From
	if !p.FirstSaturated.IsZero() {
		start = p.FirstSaturated
	}
	cpu := "no CPU series"
	facts := map[string]float64{"workers": p.Workers, "saturated_minutes": p.SaturatedMinutes, "saturated_minutes_usual": bSat.Median,
		"queue_peak": p.QueuePeak, "queue_peak_usual": bQueue.Median, "baseline_slots": float64(b.N)}
	if p.Backlog > 0 {
		facts["backlog"] = p.Backlog
	}
	if p.HasCPU {
		cpu = fmt.Sprintf("CPU averaged %.0f%% (usually %.0f%%)", p.CPUMean, bCPU.Median)
		facts["cpu_mean_pct"], facts["cpu_mean_usual_pct"] = round(p.CPUMean, 1), round(bCPU.Median, 1)
	}
	j.anomalies = append(j.anomalies, &Anomaly{
		Kind: KindSaturation, Severity: sev, Start: start,
		Metric: metric, Observed: round(o, 2), Baseline: round(b.Median, 2), Score: round(s, 1), Facts: facts,
		Summary: fmt.Sprintf("All %s php-fpm workers were busy for %s minutes %s (usually %s); the listen queue peaked at %s (usually %s); %s.",
			num(p.Workers), num(p.SaturatedMinutes), j.span(), num(bSat.Median), num(p.QueuePeak), num(bQueue.Median), cpu),
	})
}

// scanMeasure is a kind's registered scan measure with its anomaly kind and
// severity resolved.
type scanMeasure struct {
	detect.ScanMeasure
	kind, severity string
}

// findingKind says what anomaly a detector's finding becomes, and how it is
// measured when no seasonal anomaly of its concern exists (the kind's spec).
func findingKind(kind string) scanMeasure {
	spec, _ := detect.SpecOf(kind)
	m := scanMeasure{ScanMeasure: spec.Scan, kind: spec.Scan.Anomaly, severity: spec.Scan.Severity}
	if m.kind == "" {
		m.kind = kind
	}
	if m.severity == "" {
		m.severity = SeverityWarning
	}
	return m
}

// findings turns the detectors' findings into anomalies, joining those of a
// concern the seasonal comparison already raised.
func (j *judge) findings() {
	for i := range j.res.Findings {
		f := &j.res.Findings[i]
		fk := findingKind(f.Kind)
		key := ""
		if f.Kind == detect.KindCrawlerBurst && f.Cluster != nil {
			key = f.Cluster.String()
		}
		sev, why := j.findingSeverity(f, fk.severity)
		if a := j.find(fk.kind, key); a != nil {
			a.Findings = append(a.Findings, f.ID)
			if f.Start.Before(a.Start) {
				a.Start = f.Start
			}
			if SeverityRank(sev) > SeverityRank(a.Severity) {
				a.Severity = sev
			}
			a.Summary += " " + f.Summary
			addMissingFacts(a.Facts, detect.FactMap(f.Facts))
			if a.Fingerprint == nil {
				a.Fingerprint = f.Fingerprint
			}
			continue
		}
		a := &Anomaly{Kind: fk.kind, Severity: sev, Key: key, Start: f.Start, Metric: fk.Metric,
			Summary: f.Summary + why, Findings: []string{f.ID}, Fingerprint: f.Fingerprint, Facts: detect.FactMap(f.Facts)}
		if fk.Observed != nil {
			a.Observed = fk.Observed(f)
		}
		if fk.Baseline == nil {
			// The detector measured against no baseline: claim none, and no
			// score computed from a made-up usual 0.
			a.NoBaseline = true
		} else {
			a.Baseline = fk.Baseline(f)
			if fk.Observed != nil {
				a.Score = round(measure{count: true}.score(a.Observed, Baseline{Median: a.Baseline, N: 1}), 1)
			}
		}
		j.anomalies = append(j.anomalies, a)
	}
}

// findingSeverity applies the scan's volume floors and critical rules to a
// finding: the detectors judge relative rises only, and a scan that runs every
// hour must not alarm on six slow requests.
func (j *judge) findingSeverity(f *detect.Finding, sev string) (string, string) {
	floor := func(v, min float64, what string) (string, string) {
		if v < min {
			return SeverityInfo, fmt.Sprintf(" (Below the scan's floor of %s %s: noted, not alarming.)", num(min), what)
		}
		return sev, ""
	}
	switch f.Kind {
	case detect.KindCrawlerBurst:
		return floor(float64(detect.FactsOf[detect.CrawlerBurstFacts](f).Requests), minClusterPerHour*j.hours, "requests")
	case detect.KindUpstreamErrors:
		ef := detect.FactsOf[detect.UpstreamErrorsFacts](f)
		if float64(ef.Proxy[503]) >= minFailedPerHour*j.hours || share(ef.FailedTotal, j.recent.Lines) >= criticalFailedShare {
			sev = SeverityCritical
		}
		return floor(float64(ef.FailedTotal), math.Max(minFailedPerHour*j.hours, minFailedShare*float64(j.recent.Lines)), "failed responses")
	case detect.KindClientAbandonedWork:
		return floor(float64(detect.FactsOf[detect.AbandonedWorkFacts](f).Requests), minFailedPerHour*j.hours, "abandoned requests")
	case detect.KindSelfAmplification:
		return floor(float64(detect.FactsOf[detect.SelfAmplificationFacts](f).SelfCalls), minFailedPerHour*j.hours, "self calls")
	case detect.KindWorkerSaturation:
		busy := detect.FactsOf[detect.WorkerSaturationFacts](f).SaturatedSeconds
		if busy >= criticalSaturatedMinutes*60 {
			sev = SeverityCritical
		}
		return floor(busy, saturatedMeasure.minExcess*60, "busy seconds")
	case detect.KindListenQueueOverflow:
		if detect.FactsOf[detect.ListenQueueFacts](f).ReachedCap.V {
			sev = SeverityCritical
		}
	}
	return sev, ""
}

func (j *judge) find(kind, key string) *Anomaly {
	for _, a := range j.anomalies {
		if a.Kind == kind && a.Key == key {
			return a
		}
	}
	return nil
}

// escalate makes a crawler critical when the site fails in the same window:
// it is then the likely trigger, not a curiosity.
func (j *judge) escalate() {
	failing := false
	for _, a := range j.anomalies {
		switch a.Kind {
		case KindErrorRate, KindSaturation, detect.KindHealthcheckStarved, detect.KindIdlePinning:
			failing = failing || a.Severity == SeverityCritical
		}
	}
	if !failing {
		return
	}
	for _, a := range j.anomalies {
		if a.Kind == detect.KindCrawlerBurst && a.Severity == SeverityWarning {
			a.Severity = SeverityCritical
		}
	}
}

// dropIdleChanges removes config_change anomalies when nothing alarming
// remains: a change explains a problem, and with none it is not news.
func (j *judge) dropIdleChanges() {
	for _, a := range j.anomalies {
		if a.Kind != detect.KindConfigChange && a.Alarming() {
			return
		}
	}
	kept := j.anomalies[:0]
	for _, a := range j.anomalies {
		if a.Kind != detect.KindConfigChange {
			kept = append(kept, a)
		}
	}
	j.anomalies = kept
}

func (j *judge) note(severity, msg string) {
	j.notes = append(j.notes, sources.QualityNote{Source: "scan", Severity: severity, Message: msg})
}

// span names the window in the site's zone ("between 02:00 and 03:00").
func (j *judge) span() string {
	w := j.cfg.Window(j.recent.To)
	return fmt.Sprintf("between %s and %s", w.From.In(j.cfg.Loc).Format("15:04"), w.To.In(j.cfg.Loc).Format("15:04"))
}

// firstMinute is the first minute of w whose counts satisfy cond (w.From if none).
func firstMinute(t *detect.Traffic, w Range, cond func(*detect.Minute) bool) time.Time {
	for m := w.From.Truncate(time.Minute); m.Before(w.To); m = m.Add(time.Minute) {
		if mm := t.Minute(m); mm != nil && cond(mm) {
			return m.UTC()
		}
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

// addMissingFacts adds to an anomaly's facts those of a joining finding it
// does not state yet: the first finding's numbers stand.
func addMissingFacts(into, from map[string]float64) {
	for k, v := range from {
		if _, ok := into[k]; !ok {
			into[k] = v
		}
	}
}

func share(part, whole int) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

func round(v float64, digits int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

func count(n int) string { return detect.FormatInt(int64(n)) }

// num prints a value that may be fractional (a median): whole numbers with
// thousands separators, others with one decimal.
func num(v float64) string {
	if v == math.Trunc(v) || math.Abs(v) >= 100 {
		return detect.FormatInt(int64(math.Round(v)))
	}
	return fmt.Sprintf("%.1f", v)
}

func pct(s float64) string { return fmt.Sprintf("%.0f%%", s*100) }

func secs(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f s", v)
	}
	return fmt.Sprintf("%.2g s", v)
}
