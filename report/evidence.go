package report

import (
	"strconv"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// Evidence summarises what was read, before any detector speaks: enough for a
// human to see the incident's shape (design.md: the demo's evidence summary).
type Evidence struct {
	AccessFiles   int          `json:"access_files"`
	Lines         int64        `json:"lines"`
	Requests      int64        `json:"requests"`
	Bytes         int64        `json:"bytes"`
	SkippedLines  int          `json:"skipped_lines"`
	MetricFiles   int          `json:"metric_files"`
	MetricSamples int64        `json:"metric_samples"`
	Minutes       []MinuteRow  `json:"minutes"`
	Clusters      []ClusterRow `json:"clusters"`
	Series        []SeriesRow  `json:"series"`
	// Crawlers holds, for each crawler_burst finding, its cluster's requests per
	// minute in the window: the crawler chart.
	Crawlers []CrawlerRow `json:"crawlers"`
	// Pushdown is what a pushed-down fetch pulled of the access log against
	// a full pull; when the fetch's cost model chose the full pull instead,
	// what that pull cost, with both estimates (estimate.chosen says
	// which); absent when no cost model ran (the access log read whole
	// from files, or a window up to pushdown_after).
	Pushdown *bundle.PushdownCost `json:"pushdown,omitempty"`
}

// CrawlerRow is one crawler cluster's volume per minute against its baseline.
type CrawlerRow struct {
	// Finding is the crawler_burst finding's id.
	Finding string `json:"finding"`
	// Fingerprint names the cluster (attacker-controlled text).
	Fingerprint string `json:"fingerprint"`
	// FingerprintText is Fingerprint as a sentence names it, for the
	// report to say in its language.
	FingerprintText prose.Text `json:"-"`
	// BaselinePerMin is the cluster's usual requests per minute.
	BaselinePerMin float64 `json:"baseline_per_min"`
	Points         []Point `json:"points"`
}

// MinuteRow is one minute of the window's access log.
type MinuteRow struct {
	Time     time.Time      `json:"time"`
	Requests int            `json:"requests"`
	Status   map[string]int `json:"status"`
	// ProxyMade counts 5xx Caddy answered itself, without PHP.
	ProxyMade int `json:"proxy_made"`
	// PHP counts responses PHP produced, whatever their status.
	PHP int `json:"php"`
	// Goodput counts ordinary clients' 2xx PHP answered within the clients'
	// timeout: the crawler_burst findings' own are in CrawlerGoodput, so
	// that the chart plots what the text calls goodput.
	Goodput int `json:"goodput"`
	// CrawlerGoodput counts the crawlers' own 2xx PHP answered in time.
	CrawlerGoodput int `json:"crawler_goodput,omitempty"`
	// Late counts 2xx/3xx logged after the clients' timeout: they reached nobody.
	Late int `json:"late"`
	// NeededPHP counts the requests that needed PHP, FailedPHP the failed
	// ones among them: detect's definitions (detect.Minute.NeededPHP,
	// FailedPHP), which Impact's PHP counts sum.
	NeededPHP int `json:"-"`
	FailedPHP int `json:"-"`
}

// ClusterRow is one client fingerprint in the window.
type ClusterRow struct {
	Fingerprint string `json:"fingerprint"`
	// FingerprintText is Fingerprint as a sentence names it, for the
	// report to say in its language ("logged out", "로그아웃").
	FingerprintText prose.Text `json:"-"`
	Requests        int        `json:"requests"`
	DistinctIPs     int        `json:"distinct_ips"`
	// Clients counts the addresses as hosts: an IPv4 address each, an
	// IPv6 /64 each (detect.ClientOf).
	Clients             int            `json:"clients"`
	DistinctPrefixes    int            `json:"distinct_prefixes"`
	RequestsPerIPMedian float64        `json:"requests_per_ip_median"`
	Classes             map[string]int `json:"classes"`
	PHPSeconds          float64        `json:"php_seconds"`
}

// Series ids: what the charts and the timeline look for (detect's).
const (
	SeriesActive  = detect.SeriesActive
	SeriesTotal   = detect.SeriesTotal
	SeriesQueue   = detect.SeriesQueue
	SeriesBacklog = detect.SeriesBacklog
	SeriesHealthy = detect.SeriesHealthy
	SeriesCPU     = detect.SeriesCPU
)

// SeriesRow is one metric over the window at one-minute resolution.
type SeriesRow struct {
	// ID is a stable name: active, total, queue, backlog, healthy, cpu.
	ID    string `json:"id"`
	Name  string `json:"name"`
	Query string `json:"query"`
	// Agg says how the minute's samples were reduced: max, min or mean.
	Agg    string    `json:"agg"`
	Points []Point   `json:"points"`
	Max    float64   `json:"max"`
	MaxAt  time.Time `json:"max_at"`
}

// Point is a time and value.
type Point struct {
	T time.Time `json:"t"`
	V float64   `json:"v"`
}

// fillFrom copies detect's Summary of the window into the evidence's rows.
func (e *Evidence) fillFrom(s *detect.Summary) {
	for _, m := range s.Minutes {
		row := MinuteRow{Time: m.Start, Requests: m.Requests, Status: make(map[string]int, len(m.Status)), ProxyMade: m.ProxyMade, PHP: m.PHP,
			Goodput: m.Goodput, CrawlerGoodput: m.CrawlerGoodput, Late: m.Late, NeededPHP: m.NeededPHP, FailedPHP: m.FailedPHP}
		for code, n := range m.Status {
			row.Status[strconv.Itoa(code)] = n
		}
		e.Minutes = append(e.Minutes, row)
	}
	for _, c := range s.Clusters {
		row := ClusterRow{Fingerprint: c.Fingerprint, FingerprintText: c.FingerprintText, Requests: c.Requests, DistinctIPs: c.DistinctIPs, Clients: c.Clients,
			DistinctPrefixes: c.DistinctPrefixes, RequestsPerIPMedian: c.RequestsPerIPMedian, Classes: make(map[string]int, len(c.Classes)), PHPSeconds: c.PHPSeconds}
		for cl, n := range c.Classes {
			row.Classes[string(cl)] = n
		}
		e.Clusters = append(e.Clusters, row)
	}
	for _, ms := range s.Series {
		e.Series = append(e.Series, SeriesRow{ID: ms.ID, Name: ms.Name, Query: ms.Query, Agg: ms.Agg, Points: points(ms.Points), Max: ms.Max, MaxAt: ms.MaxAt})
	}
	for _, c := range s.Crawlers {
		e.Crawlers = append(e.Crawlers, CrawlerRow{Finding: c.Finding, Fingerprint: c.Fingerprint, FingerprintText: c.FingerprintText, BaselinePerMin: c.BaselinePerMin, Points: points(c.Points)})
	}
}

// points are pts as the report writes them.
func points(pts []metrics.Point) []Point {
	out := make([]Point, len(pts))
	for i, p := range pts {
		out[i] = Point(p)
	}
	return out
}

func (e *Evidence) normalize() {
	if e.Minutes == nil {
		e.Minutes = []MinuteRow{}
	}
	if e.Clusters == nil {
		e.Clusters = []ClusterRow{}
	}
	if e.Series == nil {
		e.Series = []SeriesRow{}
	}
	if e.Crawlers == nil {
		e.Crawlers = []CrawlerRow{}
	}
	for i := range e.Series {
		if e.Series[i].Points == nil {
			e.Series[i].Points = []Point{}
		}
	}
	for i := range e.Crawlers {
		if e.Crawlers[i].Points == nil {
			e.Crawlers[i].Points = []Point{}
		}
	}
}

// series returns the row with id, or nil.
func (e *Evidence) series(id string) *SeriesRow {
	for i := range e.Series {
		if e.Series[i].ID == id {
			return &e.Series[i]
		}
	}
	return nil
}

// failed counts what reached no one in a minute by detect's definition
// (detect.Minute.Failed), from the row's statuses written as text: the row
// may have been read back from report.json, without the minute it came from.
func (m *MinuteRow) failed() int {
	dm := detect.Minute{Status: make(map[int]int, len(m.Status)), Late: m.Late}
	for s, c := range m.Status {
		if code, err := strconv.Atoi(s); err == nil {
			dm.Status[code] += c
		}
	}
	return dm.Failed()
}

// failedStatus is detect's definition (detect.FailedStatus) for a status
// written as text.
func failedStatus(s string) bool {
	code, err := strconv.Atoi(s)
	return err == nil && detect.FailedStatus(code)
}
