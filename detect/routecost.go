package detect

import (
	"math"
	"sort"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
)

// What makes a route template "expensive and uncacheable" is measured, never
// read from its name: PHP answered most of its requests, and each of them
// took PHP well over the site's typical request.
const (
	// expensiveFactor: a template is expensive when its mean PHP time per
	// request is at least this many times the site's typical PHP request
	// over the same minutes. Twice the typical request is far outside a page
	// template's own spread (skewed durations put a template's mean at
	// ~1.1-1.3x its median) yet catches searches, comment trees and special
	// pages, which cost several ordinary pages each on the PHP sites we know.
	expensiveFactor = 2.0
	// uncacheableShare: at least this share of the template's answered
	// requests came from PHP, not from a file or a cache in front of it.
	uncacheableShare = 0.5
	// materialShare: the site's typical PHP request is the cheapest route
	// template carrying at least this share of PHP's answers over the
	// measured minutes: its ordinary page render. Not the median: the median
	// (any request-weighted quantile) belongs to whoever sent most PHP
	// requests, and a crawler that walked its pages before its burst makes
	// its own cost "typical" (the simulated reference wiki: 0.3 s, the
	// crawler's edit and history pages, against 0.11 s for an article), so
	// that nothing looks expensive. A client can lower the typical cost only
	// by sending cheap requests, which are then rightly not expensive.
	materialShare = 0.02
	// minCostSamples: fewer answers than this (PHP's, or a file's or a
	// cache's) measure nothing; fewer PHP answers no PHP time.
	minCostSamples = 5
)

// Where a template's cost was measured, best first.
const (
	MeasuredBaseline  = "baseline"                // the baseline before the incident (minutes without a queue when the queue is known)
	MeasuredQueueFree = "minutes without a queue" // anywhere in the data, only minutes in which PHP's queue stayed empty
	MeasuredAll       = "all data"                // every minute, the incident's queueing included
)

// RouteCost is one route template as a client used it and as the site's
// data says it costs.
type RouteCost struct {
	Template string `json:"template"`
	// Requests are the client's requests for it in the window.
	Requests int `json:"requests"`
	// PHPShare is the share of the template's answered requests (site-wide,
	// over MeasuredOver) that PHP produced; the rest came from files or caches
	// (a response whose cache headers say a cache answered it counts as the
	// cache's, whatever PHP headers the cache replayed).
	PHPShare float64 `json:"php_share"`
	// CacheHitShare is the share of the template's answers whose cache
	// headers (Cache-Status, X-Cache, Age) said a cache answered, of those
	// whose headers said hit or miss; nil where no answer's headers said.
	CacheHitShare *float64 `json:"cache_hit_share,omitempty"`
	// PHPPerRequest is PHP's mean time per PHP answer of the template (s),
	// SiteTypical the site's typical PHP request over the same minutes
	// (materialShare says which).
	PHPPerRequest float64 `json:"php_s_per_request"`
	SiteTypical   float64 `json:"site_typical_php_s"`
	// PHPAnswers is how many PHP answers the measure rests on.
	PHPAnswers   int    `json:"php_answers"`
	MeasuredOver string `json:"measured_over,omitempty"`
	Expensive    bool   `json:"expensive"`
	// Costly is set on the routes of a crawl nobody was seen reading
	// (crawler.go, automation) that PHP answered itself at
	// noReaderCostFactor times the site's typical request or more, under
	// the expensive bar: the routes its verdict rests on, which its rule
	// names beside the expensive ones.
	Costly bool `json:"costly,omitempty"`
}

// routeCosts is every template's measured cost, by canonical template.
type routeCosts map[string]RouteCost

// measureRoutes measures each route template over the best stretch that has
// enough of its PHP answers: the baseline, else minutes without a queue, else
// all data (where queueing inflates every duration, the site median's too).
func (ev *Evidence) measureRoutes() routeCosts {
	out := routeCosts{}
	if ev.Traffic == nil || ev.Traffic.routes == nil {
		return out
	}
	bFrom, bTo, none := ev.baselineRange()
	quiet := ev.queueFreeMinute()
	levels := []struct {
		name string
		in   func(m int64) bool
	}{
		{MeasuredBaseline, func(m int64) bool {
			t := time.Unix(m*60, 0)
			return !none && !t.Before(bFrom) && t.Before(bTo) && (quiet == nil || quiet(m))
		}},
		{MeasuredQueueFree, func(m int64) bool { return quiet != nil && quiet(m) }},
		{MeasuredAll, func(int64) bool { return true }},
	}
	// A template's minutes are added to its canonical one's sums where
	// they are, not merged into one series first: only the sums are read.
	table := ev.Traffic.routes
	sums := make(map[string][]routeMinute, len(table.records))
	for tpl, rec := range table.records {
		c := table.canonical(tpl)
		if c == OtherRoute {
			continue
		}
		ls := sums[c]
		if ls == nil {
			ls = make([]routeMinute, len(levels))
			sums[c] = ls
		}
		for _, chunk := range rec.chunks {
			for j := range chunk {
				rm := chunk[j].counts()
				for i, l := range levels {
					if l.in(int64(chunk[j].minute)) {
						ls[i].add(&rm)
					}
				}
			}
		}
	}
	perLevel := make([][]weighted, len(levels))
	for _, ls := range sums {
		for i := range levels {
			if ls[i].PHP >= minCostSamples {
				perLevel[i] = append(perLevel[i], weighted{ls[i].PHPSeconds / float64(ls[i].PHP), ls[i].PHP})
			}
		}
	}
	medians := make([]float64, len(levels))
	for i := range levels {
		medians[i] = cheapestMaterial(perLevel[i], materialShare)
	}
	for tpl, ls := range sums {
		for i, l := range levels {
			// Answers from a file or a cache measure a template too: as cheap.
			sum := ls[i]
			if sum.PHP+sum.Static < minCostSamples {
				continue
			}
			c := RouteCost{Template: tpl, PHPAnswers: sum.PHP, MeasuredOver: l.name,
				PHPShare: round(float64(sum.PHP)/float64(sum.PHP+sum.Static), 3)}
			if !math.IsNaN(medians[i]) { // NaN: no template PHP answered often enough to say what is typical
				c.SiteTypical = round(medians[i], 3)
			}
			if sum.PHP > 0 {
				c.PHPPerRequest = round(sum.PHPSeconds/float64(sum.PHP), 3)
			}
			if said := sum.CacheHits + sum.CacheMisses; said > 0 {
				share := round(float64(sum.CacheHits)/float64(said), 3)
				c.CacheHitShare = &share
			}
			c.Expensive = sum.PHP >= minCostSamples && c.PHPShare >= uncacheableShare && c.SiteTypical > 0 &&
				sum.PHPSeconds/float64(sum.PHP) >= expensiveFactor*medians[i]
			out[tpl] = c
			break
		}
	}
	return out
}

// queueFreeMinute reports, per minute (unix seconds / 60), whether PHP's
// queue stayed under one waiting request from the minute before to its end:
// durations logged then are PHP's own time. Nil without a queue series.
func (ev *Evidence) queueFreeMinute() func(m int64) bool {
	if ev.Pool == nil || len(ev.Pool.Queue) == 0 {
		return nil
	}
	cache := map[int64]bool{}
	return func(m int64) bool {
		if v, ok := cache[m]; ok {
			return v
		}
		t := time.Unix(m*60, 0).UTC()
		q := meanBetween(ev.Pool.Queue, t.Add(-time.Minute), t.Add(time.Minute))
		v := !math.IsNaN(q) && q < 1
		cache[m] = v
		return v
	}
}

// routesEstimate says why the measured costs of routes are estimated, ""
// when they are not. A cost is measured from the lines read, so where a
// pushdown only counted some minutes of the stretch a route was measured
// over, its cost rests on the others: on the baseline's sample
// (EstimateBaselineSample) for a route measured over the baseline, on the
// minutes read (EstimateReadMinutes) for one measured anywhere else.
func (ev *Evidence) routesEstimate(routes []RouteCost) string {
	if ev.Traffic == nil || !ev.Traffic.counted {
		return ""
	}
	bFrom, bTo, _ := ev.baselineRange()
	reason := ""
	for _, r := range routes {
		switch r.MeasuredOver {
		case "":
			// Not measured at all: clientRoutes' unmeasured share says so.
		case MeasuredBaseline:
			if reason == "" && ev.countedIn(bFrom, bTo) {
				reason = EstimateBaselineSample
			}
		default:
			return EstimateReadMinutes
		}
	}
	return reason
}

// clientRoutes lists a cluster's route templates in the window with their
// measured cost (costedRoutes): the whole fingerprint's, as the scan reads
// it.
func (ev *Evidence) clientRoutes(c *Cluster, costs routeCosts) (routes []RouteCost, expensiveShare, unmeasuredShare float64) {
	counts := map[string]int{}
	for tpl, n := range c.Routes {
		counts[ev.Traffic.routes.canonical(tpl)] += n
	}
	return costedRoutes(counts, c.Requests, c.Classes[request.ClassAsset], costs)
}

// costedRoutes lists route templates (as the table folds them at the end)
// with their requests, counts, and their measured cost, most requested
// first; the share of the page requests (requests less assets) that went
// to expensive ones, and the share that went to templates whose cost could
// not be measured (too few PHP answers anywhere).
func costedRoutes(counts map[string]int, requests, assets int, costs routeCosts) (routes []RouteCost, expensiveShare, unmeasuredShare float64) {
	expensive, unmeasured := 0, 0
	for tpl, n := range counts {
		rc, ok := costs[tpl]
		if !ok {
			rc = RouteCost{Template: tpl}
			unmeasured += n
		}
		rc.Requests = n
		if rc.Expensive {
			expensive += n
		}
		routes = append(routes, rc)
	}
	sortRoutes(routes)
	if pages := requests - assets; pages > 0 {
		expensiveShare = clampUnit(float64(expensive) / float64(pages))
		// Assets are never measured (no PHP): they are not pages either.
		unmeasuredShare = clampUnit(float64(unmeasured-assets) / float64(pages))
	}
	return routes, expensiveShare, unmeasuredShare
}

// sortRoutes orders routes by requests, most first (ties by template).
func sortRoutes(rs []RouteCost) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Requests != rs[j].Requests {
			return rs[i].Requests > rs[j].Requests
		}
		return rs[i].Template < rs[j].Template
	})
}

// weighted is a value with its weight (a template's mean with its PHP answers).
type weighted struct {
	v float64
	w int
}

// cheapestMaterial is the lowest value among those whose weight is at least
// share of the total (NaN when there are none).
func cheapestMaterial(xs []weighted, share float64) float64 {
	total := 0
	for _, x := range xs {
		total += x.w
	}
	low := math.NaN()
	for _, x := range xs {
		if total > 0 && float64(x.w) >= share*float64(total) && (math.IsNaN(low) || x.v < low) {
			low = x.v
		}
	}
	return low
}
