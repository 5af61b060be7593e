package detect

import (
	"maps"
	"math"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources/failure"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// Summary is what the window's evidence amounts to once the detectors have
// run: each minute's answers (its goodput split between ordinary clients and
// the crawlers found), the busiest fingerprints, the metric series a minute at
// a time, and each crawler's volume. Run computes it once, after the
// detectors, so that it reflects what detection settled (the estimated client
// timeout's late answers, the crawlers' joined actors); the report states
// these numbers and computes none of them.
type Summary struct {
	// From and To bound the window summarized (Evidence.From, To).
	From, To time.Time
	// Minutes are the access log's minutes that start in the window, in order.
	Minutes []MinuteSummary
	// Clusters are the window's busiest fingerprints, at most
	// SummaryClusters, busiest first.
	Clusters []ClusterSummary
	// Series are the Pool's series present, one point a minute over the window.
	Series []MinuteSeries
	// Crawlers holds, for each crawler_burst finding, its cluster's requests
	// per minute in the window.
	Crawlers []CrawlerVolume
}

// MinuteSummary is one minute of the access log.
type MinuteSummary struct {
	Start    time.Time
	Requests int
	// Status counts the responses by status code.
	Status map[int]int
	// ProxyMade counts 5xx the proxy answered itself, without PHP.
	ProxyMade int
	// PHP counts responses PHP produced, whatever their status.
	PHP int
	// Goodput counts ordinary clients' 2xx PHP answered within the clients'
	// timeout (ordinaryGoodput); CrawlerGoodput the crawler_burst findings'
	// own, so that the two add up to the minute's.
	Goodput, CrawlerGoodput int
	// Late counts 2xx/3xx logged after the clients' timeout: they reached nobody.
	Late int
	// NeededPHP counts the requests that needed PHP (Minute.NeededPHP),
	// FailedPHP the failed ones among them (Minute.FailedPHP).
	NeededPHP, FailedPHP int
}

// SummaryClusters bounds the fingerprints a Summary lists: the long tail is
// one reader each.
const SummaryClusters = 10

// ClusterSummary is one client fingerprint in the window (the Traffic's
// window, where it keeps each client's detail).
type ClusterSummary struct {
	// Fingerprint names the cluster (ClusterKey.String; attacker-controlled text).
	Fingerprint string
	// FingerprintText is Fingerprint as a sentence names it, in the
	// report's language.
	FingerprintText prose.Text
	Requests        int
	DistinctIPs     int
	// Clients counts the addresses as hosts (ClientOf).
	Clients             int
	DistinctPrefixes    int
	RequestsPerIPMedian float64
	Classes             map[request.PathClass]int
	PHPSeconds          float64
}

// The ids of the series a Summary carries: what the charts and the timeline
// look for.
const (
	SeriesActive  = "active"
	SeriesTotal   = "total"
	SeriesQueue   = "queue"
	SeriesBacklog = "backlog"
	SeriesHealthy = "healthy"
	SeriesCPU     = "cpu"
)

// MinuteSeries is one metric over the window at one point a minute.
type MinuteSeries struct {
	// ID is one of the Series ids; Name says it in words.
	ID, Name string
	// Query is the PromQL the series came from.
	Query string
	// Agg says how a minute's samples were reduced: max, min or mean.
	Agg    string
	Points []metrics.Point
	// Max is the highest point, MaxAt the first minute it was reached.
	Max   float64
	MaxAt time.Time
}

// CrawlerVolume is one crawler cluster's requests per minute against its baseline.
type CrawlerVolume struct {
	// Finding is the crawler_burst finding's id.
	Finding string
	// Fingerprint names the cluster (attacker-controlled text).
	Fingerprint string
	// FingerprintText is Fingerprint as a sentence names it.
	FingerprintText prose.Text
	// BaselinePerMin is the cluster's usual requests per minute.
	BaselinePerMin float64
	Points         []metrics.Point
}

// summarize is the Summary of ev over its window, with the findings made.
func summarize(ev *Evidence, pool *Pool, findings []Finding) *Summary {
	s := &Summary{From: ev.From, To: ev.To}
	if pool != nil {
		s.Series = poolMinuteSeries(pool, ev.From, ev.To)
	}
	if ev.Traffic != nil {
		s.Minutes = minuteSummaries(ev, findings)
		s.Clusters = clusterSummaries(ev.Traffic)
		s.Crawlers = crawlerVolumes(ev.Traffic, findings, ev.From, ev.To)
	}
	return s
}

// minuteSummaries are the access log's minutes that start in ev's window,
// their goodput split by ordinaryGoodput.
func minuteSummaries(ev *Evidence, findings []Finding) []MinuteSummary {
	crawlers := crawlerClusters(ev, findings)
	var out []MinuteSummary
	for _, m := range ev.Traffic.minutesInOrder() {
		if m.Start.Before(ev.From.Truncate(time.Minute)) || !m.Start.Before(ev.To) {
			continue
		}
		good := ev.ordinaryGoodput(m, crawlers)
		row := MinuteSummary{Start: m.Start, Requests: m.Requests, Status: maps.Clone(m.Status), PHP: m.PHPDone,
			Goodput: good, CrawlerGoodput: m.Goodput - good, Late: m.Late, NeededPHP: m.NeededPHP(), FailedPHP: m.FailedPHP()}
		for s, n := range m.ProxyStatus {
			if failure.ServerError(s) {
				row.ProxyMade += n
			}
		}
		out = append(out, row)
	}
	return out
}

// clusterSummaries are t's SummaryClusters busiest fingerprints.
func clusterSummaries(t *Traffic) []ClusterSummary {
	var out []ClusterSummary
	for i, c := range t.Clusters() {
		if i == SummaryClusters {
			break
		}
		perIP := make([]int, 0, len(c.IPs))
		for _, n := range c.IPs {
			perIP = append(perIP, n.Requests)
		}
		nets := c.networks()
		out = append(out, ClusterSummary{
			Fingerprint: c.Key.String(), FingerprintText: sayKey(c.Key), Requests: c.Requests, DistinctIPs: len(c.IPs), Clients: nets.clients,
			DistinctPrefixes: nets.prefixes(), RequestsPerIPMedian: Median(perIP), Classes: maps.Clone(c.Classes), PHPSeconds: c.PHPSeconds,
		})
	}
	return out
}

// crawlerVolumes are each crawler cluster's requests per minute in the
// window, its readers left out as in its rates (Cluster.CrawlerPerMinute).
func crawlerVolumes(t *Traffic, findings []Finding, from, to time.Time) []CrawlerVolume {
	var out []CrawlerVolume
	for i := range findings {
		f := &findings[i]
		if f.Kind != KindCrawlerBurst || f.Cluster == nil {
			continue
		}
		// ClusterOf: an actor joined over several fingerprints is charted whole.
		if c := t.ClusterOf(*f.Cluster); c != nil {
			v := CrawlerVolume{Finding: f.ID, Fingerprint: c.Key.String(), FingerprintText: sayKey(c.Key), BaselinePerMin: FactsOf[CrawlerBurstFacts](f).BaselinePer10m.V / 10}
			perMinute := c.CrawlerPerMinute()
			for m := from.Truncate(time.Minute); m.Before(to); m = m.Add(time.Minute) {
				v.Points = append(v.Points, metrics.Point{T: m.UTC(), V: float64(perMinute[m.Unix()/60])})
			}
			out = append(out, v)
		}
	}
	return out
}

// minuteSeriesOfPool are the series a Summary shows, with the PromQL LoadPool
// runs for each and how a minute's samples are reduced: the maximum for
// depths and counts, so a short spike is not averaged away; the minimum for
// the health gauge, so a minute with any unhealthy sample shows it; the mean
// for CPU.
var minuteSeriesOfPool = []struct {
	id, name, query, agg string
	get                  func(*Pool) []metrics.Point
}{
	{SeriesActive, "php-fpm active", QueryActive, "max", func(p *Pool) []metrics.Point { return p.Active }},
	{SeriesTotal, "php-fpm total", QueryTotal, "max", func(p *Pool) []metrics.Point { return p.Total }},
	{SeriesQueue, "listen queue", QueryQueue, "max", func(p *Pool) []metrics.Point { return p.Queue }},
	{SeriesBacklog, "backlog", QueryBacklog, "max", func(p *Pool) []metrics.Point { return p.Backlog }},
	{SeriesHealthy, "upstreams healthy", QueryHealthy, "min", func(p *Pool) []metrics.Point { return p.Healthy }},
	{SeriesCPU, "CPU %", "", "mean", func(p *Pool) []metrics.Point { return p.CPU }},
}

// poolMinuteSeries reduces the Pool's grid to one point a minute over [from, to).
func poolMinuteSeries(p *Pool, from, to time.Time) []MinuteSeries {
	var out []MinuteSeries
	for _, ps := range minuteSeriesOfPool {
		pts := ps.get(p)
		if len(pts) == 0 {
			continue
		}
		s := MinuteSeries{ID: ps.id, Name: ps.name, Query: ps.query, Agg: ps.agg}
		if ps.id == SeriesCPU {
			s.Query = p.CPUSource
		}
		s.Points = reducePerMinute(pts, from, to, ps.agg)
		if ps.id == SeriesQueue {
			raiseToPeak(s.Points, p.QueuePeak(from, to))
		}
		if len(s.Points) == 0 {
			continue
		}
		for i, pt := range s.Points {
			if i == 0 || pt.V > s.Max {
				s.Max, s.MaxAt = pt.V, pt.T
			}
		}
		out = append(out, s)
	}
	return out
}

// raiseToPeak lifts the minute of the queue's peak to it: php-fpm's
// high-water mark can pass every scrape, and the chart, the timeline and the
// texts then state the one peak QueuePeak measured (a minute's value is its
// highest anyway).
func raiseToPeak(mins []metrics.Point, pk metrics.Point) {
	m := pk.T.Truncate(time.Minute)
	for i := range mins {
		if mins[i].T.Equal(m) {
			mins[i].V = math.Max(mins[i].V, pk.V)
			return
		}
	}
}

// reducePerMinute reduces points in [from truncated to the minute, to) to one a
// minute, by agg: max, min or mean.
func reducePerMinute(pts []metrics.Point, from, to time.Time, agg string) []metrics.Point {
	start := from.Truncate(time.Minute)
	var out []metrics.Point
	var sum float64
	var n int
	flush := func() {
		if n == 0 {
			return
		}
		if agg == "mean" {
			out[len(out)-1].V = sum / float64(n)
		}
		sum, n = 0, 0
	}
	for _, pt := range pts {
		if pt.T.Before(start) || !pt.T.Before(to) || math.IsNaN(pt.V) {
			continue
		}
		m := pt.T.Truncate(time.Minute)
		if len(out) == 0 || !out[len(out)-1].T.Equal(m) {
			flush()
			out = append(out, metrics.Point{T: m.UTC(), V: pt.V})
		}
		last := &out[len(out)-1]
		switch agg {
		case "max":
			last.V = math.Max(last.V, pt.V)
		case "min":
			last.V = math.Min(last.V, pt.V)
		}
		sum += pt.V
		n++
	}
	flush()
	return out
}
