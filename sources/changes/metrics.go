package changes

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// SourceMetrics is the Source of changes inferred from metric steps.
const SourceMetrics = "metrics"

// Metric names FromMetrics reads (php-fpm's status page and the common exporter).
const (
	MetricListenQueueLength = "phpfpm_listen_queue_length"
	MetricTotalProcesses    = "phpfpm_total_processes"
	MetricStartSince        = "phpfpm_start_since"
)

// KeyRestart is the key of a change that is a php-fpm restart (or reload) seen
// in phpfpm_start_since: not a setting, but the moment settings take effect.
const KeyRestart = "restart"

// Point is one sample of a metric.
type Point struct {
	T time.Time
	V float64
}

// Series is one metric series: its label set as text (e.g. `{instance="web1:9180",pool="www"}`,
// used only to tell series apart and to name the evidence) and its samples.
type Series struct {
	Labels string
	Points []Point
}

// FromMetrics infers changes from php-fpm's own metrics, for when no change log
// or repository tells (or to date a commit's deploy):
//   - a step in phpfpm_listen_queue_length, the backlog in force (as the kernel
//     applied it, so capped by net.core.somaxconn): key listen.backlog;
//   - a step in the pool size, the maximum of phpfpm_total_processes between
//     restarts (pm.max_children for a static pool, a lower bound for a dynamic
//     one): key pm.max_children;
//   - a restart, phpfpm_start_since going back: key "restart", at the moment
//     the process started (sample time minus its uptime).
//
// A change's Time is the first sample that shows the new value (the change
// happened since the sample before; the Note gives both). Ref names the series.
func FromMetrics(queueLength, totalProcesses, startSince []Series) []sources.Change {
	var out []sources.Change
	for _, s := range queueLength {
		out = append(out, levelSteps(MetricListenQueueLength, s, "listen.backlog",
			"the backlog in force (as the kernel applied it, capped by net.core.somaxconn)", backlogHold)...)
	}
	restarts := map[string][]time.Time{}
	var allRestarts []time.Time
	for _, s := range startSince {
		for _, c := range restartsOf(s) {
			out = append(out, c)
			restarts[s.Labels] = append(restarts[s.Labels], c.Time)
			allRestarts = append(allRestarts, c.Time)
		}
	}
	sort.Slice(allRestarts, func(i, j int) bool { return allRestarts[i].Before(allRestarts[j]) })
	for _, s := range totalProcesses {
		rs, ok := restarts[s.Labels]
		if !ok {
			// Pool series and the master's start_since often carry different
			// labels (pool=...): without an exact match, any restart counts.
			rs = allRestarts
		}
		switch {
		case len(rs) > 0:
			out = append(out, poolSteps(s, rs)...)
		case len(startSince) == 0:
			// No restart data: only a static pool's flat plateaus are read.
			out = append(out, levelSteps(MetricTotalProcesses, s, "pm.max_children",
				"the pool size (a static pool: the process count held steady before and after)", poolHold)...)
		}
		// Restart data without a restart: the pool size cannot have changed
		// (php-fpm applies pm.max_children only when it starts or reloads),
		// whatever a dynamic pool's process count did.
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// hold says how steady a level must be to count as a setting.
type hold struct {
	// before and after: consecutive samples at the old and the new value.
	before, after int
	// lastCounts accepts a new value seen only on the last sample.
	lastCounts bool
}

var (
	// The backlog metric is the setting itself: two samples confirm a step.
	backlogHold = hold{before: 1, after: 2, lastCounts: true}
	// A process count also moves with load: both sides must be plateaus.
	poolHold = hold{before: 3, after: 3}
)

// minHold is how many samples a pool segment needs between restarts.
const minHold = 2

// levelSteps finds the moments a series moves from one steady value to another.
func levelSteps(metric string, s Series, key, what string, h hold) []sources.Change {
	pts := clean(s.Points)
	var out []sources.Change
	if len(pts) == 0 {
		return nil
	}
	level, run := pts[0].V, 1 // run: samples at level just before i
	for i := 1; i < len(pts); i++ {
		v := pts[i].V
		if v == level {
			run++
			continue
		}
		held := 1
		for j := i + 1; j < len(pts) && pts[j].V == v && held < h.after; j++ {
			held++
		}
		steady := held >= h.after || (h.lastCounts && i+held == len(pts))
		if !steady || run < h.before {
			if steady {
				level, run = v, 1 // a new plateau starts here, unconfirmed
			} else {
				run = 0
			}
			continue
		}
		out = append(out, sources.Change{
			Time: pts[i].T, Source: SourceMetrics, Ref: metric + s.Labels, Key: key,
			Old: num(level), New: num(v),
			Note: fmt.Sprintf("%s%s stepped from %s to %s between %s and %s: %s",
				metric, s.Labels, num(level), num(v), pts[i-1].T.UTC().Format(time.RFC3339), pts[i].T.UTC().Format(time.RFC3339), what),
		})
		level, run = v, 1
	}
	return out
}

// restartsOf finds resets of phpfpm_start_since (seconds since php-fpm started).
// Between samples uptime must grow by the elapsed time; growing less (by more
// than scrape jitter) means a restart happened in between.
func restartsOf(s Series) []sources.Change {
	pts := clean(s.Points)
	var out []sources.Change
	for i := 1; i < len(pts); i++ {
		prev, cur := pts[i-1], pts[i]
		dt := cur.T.Sub(prev.T).Seconds()
		slack := math.Max(5, 0.1*dt)
		if cur.V >= prev.V+dt-slack {
			continue
		}
		started := cur.T.Add(-time.Duration(cur.V * float64(time.Second)))
		if started.Before(prev.T) {
			started = prev.T // clocks disagree: the restart is at least after the last sample
		}
		out = append(out, sources.Change{
			Time: started, Source: SourceMetrics, Ref: MetricStartSince + s.Labels, Key: KeyRestart,
			Note: fmt.Sprintf("php-fpm restarted at %s (%s%s went from %s s to %s s): settings changed in files take effect here",
				started.UTC().Format(time.RFC3339), MetricStartSince, s.Labels, num(prev.V), num(cur.V)),
		})
	}
	return out
}

// poolSteps compares the largest process count between consecutive restarts.
func poolSteps(s Series, restarts []time.Time) []sources.Change {
	pts := clean(s.Points)
	if len(pts) == 0 {
		return nil
	}
	type segment struct {
		start    time.Time
		min, max float64
		n        int
	}
	var segs []segment
	ri := 0
	for _, p := range pts {
		newSeg := len(segs) == 0
		for ri < len(restarts) && !p.T.Before(restarts[ri]) {
			if len(segs) > 0 {
				newSeg = true
			}
			ri++
		}
		if newSeg {
			start := p.T
			if ri > 0 && len(segs) > 0 {
				start = restarts[ri-1]
			}
			segs = append(segs, segment{start: start, min: p.V, max: p.V})
		}
		sg := &segs[len(segs)-1]
		sg.max = math.Max(sg.max, p.V)
		sg.min = math.Min(sg.min, p.V)
		sg.n++
	}
	var out []sources.Change
	for i := 1; i < len(segs); i++ {
		a, b := segs[i-1], segs[i]
		if a.max == b.max || a.n < minHold || b.n < minHold {
			continue
		}
		// Only a static pool's process count is its pm.max_children; a dynamic
		// pool's largest count is whatever load it happened to see, so a
		// different maximum after a restart says nothing about the setting.
		if a.min != a.max || b.min != b.max {
			continue
		}
		out = append(out, sources.Change{
			Time: b.start, Source: SourceMetrics, Ref: MetricTotalProcesses + s.Labels, Key: "pm.max_children",
			Old: num(a.max), New: num(b.max),
			Note: fmt.Sprintf("the largest %s%s was %s before the restart at %s and %s after: pm.max_children of a static pool",
				MetricTotalProcesses, s.Labels, num(a.max), b.start.UTC().Format(time.RFC3339), num(b.max)),
		})
	}
	return out
}

// clean drops NaN samples and sorts by time.
func clean(in []Point) []Point {
	out := make([]Point, 0, len(in))
	for _, p := range in {
		if !math.IsNaN(p.V) && !math.IsInf(p.V, 0) {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].T.Before(out[j].T) })
	return out
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
