package report

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/ingest"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// poolSeries are the php-fpm, proxy and host series the report shows per
// minute, with the PromQL detect.LoadPool runs for each (named in "Where the
// numbers come from") and how a minute's samples are reduced: the maximum for
// depths and counts, so a short spike is not averaged away; the minimum for the
// health gauge, so a minute with any unhealthy sample shows it; the mean for CPU.
var poolSeries = []struct {
	id, name, query, agg string
	get                  func(*detect.Pool) []metrics.Point
}{
	{SeriesActive, "php-fpm active", detect.QueryActive, "max", func(p *detect.Pool) []metrics.Point { return p.Active }},
	{SeriesTotal, "php-fpm total", detect.QueryTotal, "max", func(p *detect.Pool) []metrics.Point { return p.Total }},
	{SeriesQueue, "listen queue", detect.QueryQueue, "max", func(p *detect.Pool) []metrics.Point { return p.Queue }},
	{SeriesBacklog, "backlog", detect.QueryBacklog, "max", func(p *detect.Pool) []metrics.Point { return p.Backlog }},
	{SeriesHealthy, "upstreams healthy", detect.QueryHealthy, "min", func(p *detect.Pool) []metrics.Point { return p.Healthy }},
	{SeriesCPU, "CPU %", "", "mean", func(p *detect.Pool) []metrics.Point { return p.CPU }},
}

// Build assembles the report from loaded evidence (l: what was read and what
// it cost; ev: the detectors' view of it, detect.EvidenceOf(l) as detect.Run
// left it) and the detectors' result: the evidence summary, then (Assemble) impact, timeline and causes. Rules and
// Recommendations are left for the caller to set. tz names the zone local times
// are shown in. The metric series come from res.Pool, which detect.Run loads
// whenever the evidence has metrics; Build queries nothing itself.
func Build(_ context.Context, l *ingest.Loaded, ev *detect.Evidence, res *detect.Result, tz string) (*Report, error) {
	r := &Report{Schema: Schema, Window: Window{From: ev.From, To: ev.To, TZ: tz}}
	r.Evidence.AccessFiles = int(l.Access.Files)
	r.Evidence.Lines = l.Access.Lines
	r.Evidence.Requests = l.Access.Requests
	r.Evidence.Bytes = l.Access.Bytes
	r.Evidence.MetricSamples = l.MetricSamples
	r.Evidence.Pushdown = l.Pushdown
	r.DataQuality = append(r.DataQuality, l.DataQuality...)
	r.Coverage = append(r.Coverage, l.Coverage...)
	r.Evidence.SkippedLines = l.SkippedLines
	r.Evidence.MetricFiles = l.MetricFiles
	if ev.Traffic != nil {
		r.Evidence.SummarizeTraffic(ev.Traffic, ev.From, ev.To)
	}
	if res != nil {
		if res.Pool != nil {
			r.Evidence.Series = seriesFromPool(res.Pool, ev.From, ev.To)
		}
		r.Findings = res.Findings
		r.Checks = res.Checks
		r.incidents = res.Incidents
		r.DataQuality = append(r.DataQuality, res.DataQuality...)
		if ev.Traffic != nil {
			r.Evidence.Crawlers = crawlerRows(res.Findings, ev.Traffic, ev.From, ev.To)
			r.Evidence.splitGoodput(ev, res.Findings)
		}
	}
	r.Changes = append([]sources.Change(nil), ev.Changes...)
	sort.SliceStable(r.Changes, func(i, j int) bool { return r.Changes[i].Time.Before(r.Changes[j].Time) })
	if err := r.Assemble(); err != nil {
		return nil, err
	}
	return r, nil
}

func (s *SeriesRow) add(t time.Time, v float64) {
	s.Points = append(s.Points, Point{T: t, V: v})
	if len(s.Points) == 1 || v > s.Max {
		s.Max, s.MaxAt = v, t
	}
}

// seriesFromPool reduces the Pool's grid to one point a minute over the window.
func seriesFromPool(p *detect.Pool, from, to time.Time) []SeriesRow {
	var out []SeriesRow
	for _, ps := range poolSeries {
		pts := ps.get(p)
		if len(pts) == 0 {
			continue
		}
		row := SeriesRow{ID: ps.id, Name: ps.name, Query: ps.query, Agg: ps.agg}
		if ps.id == SeriesCPU {
			row.Query = p.CPUSource
		}
		mins := perMinute(pts, from, to, ps.agg)
		if ps.id == SeriesQueue {
			raiseToPeak(mins, p.QueuePeak(from, to))
		}
		for _, pt := range mins {
			row.add(pt.T, pt.V)
		}
		if len(row.Points) > 0 {
			out = append(out, row)
		}
	}
	return out
}

// raiseToPeak lifts the minute of the queue's peak to it: php-fpm's
// high-water mark can pass every scrape, and the chart, the timeline and the
// texts then state the one peak detect measured (a minute's value is its
// highest anyway).
func raiseToPeak(mins []Point, pk metrics.Point) {
	m := pk.T.Truncate(time.Minute)
	for i := range mins {
		if mins[i].T.Equal(m) {
			mins[i].V = math.Max(mins[i].V, pk.V)
			return
		}
	}
}

// perMinute reduces points in [from truncated to the minute, to) to one a minute.
func perMinute(pts []metrics.Point, from, to time.Time, agg string) []Point {
	start := from.Truncate(time.Minute)
	var out []Point
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
			out = append(out, Point{T: m.UTC(), V: pt.V})
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

// crawlerRows extracts each crawler cluster's requests per minute in the
// window, its readers left out as in its rates (Cluster.CrawlerPerMinute).
func crawlerRows(fs []detect.Finding, t *detect.Traffic, from, to time.Time) []CrawlerRow {
	var out []CrawlerRow
	for _, f := range fs {
		if f.Kind != detect.KindCrawlerBurst || f.Cluster == nil {
			continue
		}
		// ClusterOf: an actor joined over several fingerprints is charted whole.
		if c := t.ClusterOf(*f.Cluster); c != nil {
			row := CrawlerRow{Finding: f.ID, Fingerprint: c.Key.String(), FingerprintText: detect.SayKey(c.Key), BaselinePerMin: detect.FactsOf[detect.CrawlerBurstFacts](&f).BaselinePer10m.V / 10}
			perMinute := c.CrawlerPerMinute()
			for m := from.Truncate(time.Minute); m.Before(to); m = m.Add(time.Minute) {
				row.Points = append(row.Points, Point{T: m.UTC(), V: float64(perMinute[m.Unix()/60])})
			}
			out = append(out, row)
		}
	}
	return out
}
