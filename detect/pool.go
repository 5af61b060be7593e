package detect

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// Pool is the php-fpm pool, proxy and host as the metrics show them, on one
// time grid. A nil slice means the series was absent.
type Pool struct {
	Step time.Duration
	// Active, Total: busy and existing php-fpm workers.
	Active, Total []metrics.Point
	// Queue is the listen queue depth; Backlog its cap (listen.backlog in force).
	Queue, Backlog []metrics.Point
	// MaxQueue is php-fpm's own high-water mark of the queue since it started:
	// it catches peaks between two scrapes.
	MaxQueue []metrics.Point
	// MaxChildrenReached is php-fpm's counter of "reached pm.max_children".
	MaxChildrenReached []metrics.Point
	// Accepted is the rate of connections php-fpm accepted, per second: its
	// completion rate when saturated.
	Accepted []metrics.Point
	// StartSince is seconds since php-fpm started (a drop is a restart).
	StartSince []metrics.Point
	// CPU is host CPU utilisation in percent (CloudWatch, else node exporter).
	CPU []metrics.Point
	// CPUSource names the query CPU came from.
	CPUSource string
	// Healthy is the minimum of Caddy's upstream health gauges (0 = none healthy).
	Healthy []metrics.Point
	// Processes are php-fpm's own CPU and memory per process and the host's
	// cores and memory (poolresources.go).
	Processes ProcessSeries
}

// The PromQL of each Pool series, defined here only: the scan's pool profile
// runs the same queries and the report names them under its charts.
const (
	QueryActive             = "sum(phpfpm_active_processes)"
	QueryTotal              = "sum(phpfpm_total_processes)"
	QueryQueue              = "sum(phpfpm_listen_queue)"
	QueryBacklog            = "max(phpfpm_listen_queue_length)"
	QueryMaxQueue           = "sum(phpfpm_max_listen_queue)"
	QueryMaxChildrenReached = "sum(phpfpm_max_children_reached)"
	QueryAccepted           = "sum(rate(phpfpm_accepted_connections[1m]))"
	QueryStartSince         = "min(phpfpm_start_since)"
	QueryHealthy            = "min(caddy_reverse_proxy_upstreams_healthy)"
)

// poolQueries maps each Pool series to the PromQL that fills it. The same
// queries run against a live Prometheus and against a bundle's files.
var poolQueries = []struct {
	query string
	dst   func(*Pool) *[]metrics.Point
}{
	{QueryActive, func(p *Pool) *[]metrics.Point { return &p.Active }},
	{QueryTotal, func(p *Pool) *[]metrics.Point { return &p.Total }},
	{QueryQueue, func(p *Pool) *[]metrics.Point { return &p.Queue }},
	{QueryBacklog, func(p *Pool) *[]metrics.Point { return &p.Backlog }},
	{QueryMaxQueue, func(p *Pool) *[]metrics.Point { return &p.MaxQueue }},
	{QueryMaxChildrenReached, func(p *Pool) *[]metrics.Point { return &p.MaxChildrenReached }},
	{QueryAccepted, func(p *Pool) *[]metrics.Point { return &p.Accepted }},
	{QueryStartSince, func(p *Pool) *[]metrics.Point { return &p.StartSince }},
	{QueryHealthy, func(p *Pool) *[]metrics.Point { return &p.Healthy }},
}

// CPUQueries are tried in order: CloudWatch's EC2 metric is what the reference
// team looked at; node exporter's is the fallback. The scan's pool profile
// tries the same.
var CPUQueries = []string{
	"avg(aws_ec2_cpuutilization_average)",
	`100 * (1 - avg(rate(node_cpu_seconds_total{mode="idle"}[1m])))`,
}

// poolStep picks a grid fine enough for minute-level milestones and coarse
// enough to keep a day under ~10k points a series.
func poolStep(from, to time.Time) time.Duration {
	step := to.Sub(from) / 10000
	if step < 5*time.Second {
		return 5 * time.Second
	}
	return step.Round(5 * time.Second)
}

// LoadPool queries the pool series over [from, to].
func LoadPool(ctx context.Context, q metrics.Querier, from, to time.Time) (*Pool, error) {
	p := &Pool{Step: poolStep(from, to)}
	for _, pq := range poolQueries {
		s, err := q.QueryRange(ctx, RateQuery(q, pq.query), from, to, p.Step)
		if err != nil {
			return nil, err
		}
		if len(s) > 0 {
			*pq.dst(p) = s[0].Points
		}
	}
	for _, cq := range CPUQueries {
		cq = RateQuery(q, cq)
		s, err := q.QueryRange(ctx, cq, from, to, p.Step)
		if err != nil {
			return nil, err
		}
		if len(s) > 0 && len(s[0].Points) > 0 {
			p.CPU, p.CPUSource = s[0].Points, cq
			break
		}
	}
	ps, err := loadProcessSeries(ctx, q, from, to, p.Step)
	if err != nil {
		return nil, err
	}
	p.Processes = ps
	return p, nil
}

// between returns the points with from <= T < to: a view of ps, read only
// by every caller (quantileOf sorts a copy of the values), its capacity cut
// so that an append cannot write over ps.
func between(ps []metrics.Point, from, to time.Time) []metrics.Point {
	i, j := span(ps, from, to)
	if i == j {
		return nil
	}
	return ps[i:j:j]
}

// span returns the bounds [i, j) of the points of ps with from <= T < to.
// The points of a series are in time order (QueryRange evaluates at every
// step from start to end), so both are binary searches: the per-minute
// look-ups of a scan (queueFreeMinute, completionRate) went through every
// point of the day for each minute.
func span(ps []metrics.Point, from, to time.Time) (int, int) {
	i := sort.Search(len(ps), func(k int) bool { return !ps[k].T.Before(from) })
	j := i + sort.Search(len(ps)-i, func(k int) bool { return !ps[i+k].T.Before(to) })
	return i, j
}

// peak returns the largest point (zero Point if none).
func peak(ps []metrics.Point) metrics.Point {
	var best metrics.Point
	for i, p := range ps {
		if i == 0 || p.V > best.V {
			best = p
		}
	}
	return best
}

// mean of the values of ps in [from, to); NaN if none.
func meanBetween(ps []metrics.Point, from, to time.Time) float64 {
	sum, n := 0.0, 0
	i, j := span(ps, from, to)
	for _, p := range ps[i:j] {
		sum += p.V
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// valueAt returns the value of the last point at or before t (NaN if none).
func valueAt(ps []metrics.Point, t time.Time) float64 {
	i := sort.Search(len(ps), func(k int) bool { return ps[k].T.After(t) })
	if i == 0 {
		return math.NaN()
	}
	return ps[i-1].V
}

// firstAtLeast returns the time of the first point in [from, to) whose value is
// at least v, and whether there is one.
func firstAtLeast(ps []metrics.Point, v float64, from, to time.Time) (time.Time, bool) {
	i, j := span(ps, from, to)
	for _, p := range ps[i:j] {
		if p.V >= v {
			return p.T, true
		}
	}
	return time.Time{}, false
}

// run is a stretch of consecutive grid points that satisfy a condition.
type run struct {
	Start, End time.Time
	Points     int
}

// runs finds the stretches of ps in [from, to) where cond holds, merging
// stretches separated by at most gap.
func runs(ps []metrics.Point, from, to time.Time, gap time.Duration, cond func(metrics.Point) bool) []run {
	var out []run
	for _, p := range between(ps, from, to) {
		if !cond(p) {
			continue
		}
		if n := len(out); n > 0 && p.T.Sub(out[n-1].End) <= gap {
			out[n-1].End = p.T
			out[n-1].Points++
			continue
		}
		out = append(out, run{Start: p.T, End: p.T, Points: 1})
	}
	return out
}

// queuePeak is the deepest the queue got in [from, to): the scraped maximum, or
// php-fpm's high-water mark when it rose inside the window (a peak between scrapes).
func (p *Pool) queuePeak(from, to time.Time) metrics.Point {
	pk := peak(between(p.Queue, from, to))
	hw := between(p.MaxQueue, from, to)
	if len(hw) > 1 && hw[len(hw)-1].V > hw[0].V && hw[len(hw)-1].V > pk.V {
		last := hw[len(hw)-1]
		at, _ := firstAtLeast(hw, last.V, from, to)
		return metrics.Point{T: at, V: last.V}
	}
	return pk
}

// QueuePeak is the deepest the listen queue got in [from, to), with when: the
// scraped maximum, or php-fpm's high-water mark when that went higher between
// two scrapes. Every text and chart that states the queue's peak reads it.
func (p *Pool) QueuePeak(from, to time.Time) metrics.Point { return p.queuePeak(from, to) }
