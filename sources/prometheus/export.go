package prometheus

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// DefaultSelectors are the series a bundle needs: php-fpm's pool (every
// phpfpm_* name the detectors and the change inference read, with
// php-fpm_exporter's per-child phpfpm_process_*), php-fpm's own processes as
// process-exporter groups them, Caddy's upstream health and request counts,
// node CPU, memory and listen overflows, and CloudWatch's EC2 CPU when an
// exporter (YACE uses this very name) already brings it into Prometheus.
var DefaultSelectors = []string{
	`{__name__=~"phpfpm_.*"}`,
	`{__name__=~"namedprocess_namegroup_(cpu_seconds_total|memory_bytes|num_procs)",groupname=~".*php-fpm.*"}`,
	`caddy_reverse_proxy_upstreams_healthy`,
	`caddy_http_requests_total`,
	`node_cpu_seconds_total`,
	`node_memory_MemAvailable_bytes`,
	`node_memory_MemTotal_bytes`,
	`node_netstat_TcpExt_ListenOverflows`,
	`aws_ec2_cpuutilization_average`,
}

// RawChunk is the span of one instant query of a raw export: short enough
// that a thousand series scraped every 5 s stay far below Prometheus'
// 50-million-sample limit, long enough that a day is 24 queries a selector.
const RawChunk = time.Hour

// resultQuerier is what Client adds to metrics.Querier: answers with the
// server's warnings.
type resultQuerier interface {
	RangeQuery(ctx context.Context, q string, start, end time.Time, step time.Duration) (Result, error)
	InstantQuery(ctx context.Context, q string, at time.Time) (Result, error)
}

// Export writes the series that selectors match over [from, to] to w, and
// returns one bundle record per selector (Source "prometheus", the selector
// as Query, the series written, and whether the answer was complete; the
// caller sets File). Each selector must be a plain series selector such as
// `phpfpm_listen_queue{pool="www"}` or `{__name__=~"phpfpm_.*"}`.
//
// With step > 0 each selector runs as a range query, which RESAMPLES: the
// point written at each step is the newest sample at most 5 minutes (the
// lookback) older than that instant, so peaks between two steps are lost,
// a series that stopped is carried on for up to 5 minutes, and timestamps are
// the grid's, not the scrapes'. Counters stay counters (rate() over the
// result works, at the step's resolution). Step(from, to) is a sensible step.
//
// With step == 0 the samples are exported as scraped, with their own
// timestamps: each selector runs as instant queries of `selector[1h]` (see
// RawChunk), which return stored samples unchanged. This is what a bundle
// should hold when the server allows it.
//
// A sample already written for the same series (by an earlier selector or
// chunk) is not written twice. A record is incomplete when its query failed
// (what came before the failure is written), the server returned warnings,
// or a series could not be written (a name OpenMetrics cannot hold). Export
// goes on with the next selector after a failure and returns the failures
// joined; after a cancellation the remaining selectors are recorded as not
// fetched.
func Export(ctx context.Context, q metrics.Querier, selectors []string, from, to time.Time, step time.Duration, w *metrics.Writer) ([]bundle.Query, error) {
	if to.Before(from) {
		return nil, fmt.Errorf("prometheus export: end %s before start %s", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	if step < 0 {
		return nil, fmt.Errorf("prometheus export: negative step %v", step)
	}
	e := &exporter{q: q, w: w, from: from, to: to, last: map[string]int64{}}
	recs := make([]bundle.Query, 0, len(selectors))
	var errs []error
	for _, sel := range selectors {
		rec := bundle.Query{Source: Source, Query: sel, From: from, To: to}
		if ctx.Err() != nil {
			rec.Failed = true
			rec.Note = "not fetched: " + ctx.Err().Error()
			recs = append(recs, rec)
			continue
		}
		st, err := e.selector(ctx, sel, step)
		rec.Series = st.series
		rec.Complete = err == nil && len(st.warnings) == 0 && st.invalid == 0
		rec.Failed = err != nil
		rec.Note = st.note(step, err)
		recs = append(recs, rec)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("prometheus export: %w", ctx.Err()))
	}
	return recs, errors.Join(errs...)
}

// exporter is the state of one Export call.
type exporter struct {
	q        metrics.Querier
	w        *metrics.Writer
	from, to time.Time
	// last is the newest sample written per series (label string, ms).
	last map[string]int64
}

// selStats is what one selector exported.
type selStats struct {
	series, samples int
	dup, invalid    int // samples already written; series that could not be
	warnings        []string
	firstInvalid    string
}

func (st *selStats) note(step time.Duration, err error) string {
	var parts []string
	if step > 0 {
		parts = append(parts, fmt.Sprintf("resampled by query_range every %s (each point is the newest sample within the 5m lookback)", step))
	} else {
		parts = append(parts, fmt.Sprintf("raw samples (instant queries of %s ranges)", RawChunk))
	}
	parts = append(parts, fmt.Sprintf("%d samples", st.samples))
	if st.dup > 0 {
		parts = append(parts, fmt.Sprintf("%d samples already written by an earlier selector", st.dup))
	}
	if st.invalid > 0 {
		parts = append(parts, fmt.Sprintf("%d series not written (%s)", st.invalid, st.firstInvalid))
	}
	if len(st.warnings) > 0 {
		parts = append(parts, "server warnings: "+strings.Join(st.warnings, "; "))
	}
	if err != nil {
		parts = append(parts, "failed: "+err.Error())
	}
	return strings.Join(parts, "; ")
}

// selectorParser checks selectors; the default options are a stock server's.
var selectorParser = parser.NewParser(parser.Options{})

func (e *exporter) selector(ctx context.Context, sel string, step time.Duration) (*selStats, error) {
	st := &selStats{}
	if _, err := selectorParser.ParseMetricSelector(sel); err != nil {
		return st, fmt.Errorf("prometheus export: %q is not a series selector: %w", sel, err)
	}
	seen := map[string]bool{}
	if step > 0 {
		series, warn, err := e.rangeQuery(ctx, sel, step)
		st.warnings = append(st.warnings, warn...)
		e.add(st, seen, series)
		return st, err
	}
	// Raw: consecutive ranges (t-chunk, t], the first one reaching back to
	// from - straddle; points outside [from, to] are dropped but for the
	// newest one before from (add).
	for start := e.from; ; start = start.Add(RawChunk) {
		end := start.Add(RawChunk)
		if end.After(e.to) {
			end = e.to
		}
		rng := end.Sub(start) + time.Millisecond // left-open in Prometheus 3: include start
		if start.Equal(e.from) {
			rng += straddle
		}
		series, warn, err := e.instantQuery(ctx, fmt.Sprintf("%s[%dms]", sel, rng.Milliseconds()), end)
		st.warnings = append(st.warnings, warn...)
		e.add(st, seen, series)
		if err != nil {
			return st, err
		}
		if !end.Before(e.to) {
			return st, nil
		}
	}
}

func (e *exporter) rangeQuery(ctx context.Context, q string, step time.Duration) ([]metrics.Series, []string, error) {
	if rq, ok := e.q.(resultQuerier); ok {
		r, err := rq.RangeQuery(ctx, q, e.from, e.to, step)
		return r.Series, r.Warnings, err
	}
	s, err := e.q.QueryRange(ctx, q, e.from, e.to, step)
	return s, nil, err
}

func (e *exporter) instantQuery(ctx context.Context, q string, at time.Time) ([]metrics.Series, []string, error) {
	if rq, ok := e.q.(resultQuerier); ok {
		r, err := rq.InstantQuery(ctx, q, at)
		return r.Series, r.Warnings, err
	}
	s, err := e.q.Query(ctx, q, at)
	return s, nil, err
}

// straddle is how far before from a raw export looks for the sample in
// force at from: Prometheus' lookback, the time a gauge's sample holds.
// Without it the first minutes of the range have no CPU value (a 60 s
// CloudWatch or node_exporter datapoint stamped just before from is the one
// that covers them) and a counter's first rate is lost.
const straddle = 5 * time.Minute

// add writes the points of series in [from, to] that are newer than what was
// written for the same series before, and the newest point of the straddle
// before from: the one in force at from.
func (e *exporter) add(st *selStats, seen map[string]bool, series []metrics.Series) {
	fromMs, toMs := e.from.UnixMilli(), e.to.UnixMilli()
	straddleMs := fromMs - straddle.Milliseconds()
	for _, s := range series {
		key := labels.FromMap(s.Labels).String()
		name := s.Labels[labels.MetricName]
		lbls := make(map[string]string, len(s.Labels))
		for k, v := range s.Labels {
			if k != labels.MetricName {
				lbls[k] = v
			}
		}
		pts := append([]metrics.Point(nil), s.Points...)
		sort.SliceStable(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })
		// Keep the newest point before from (pts is sorted: the last one
		// seen before the window) and the points of the window.
		kept := pts[:0]
		for i, p := range pts {
			ms := p.T.UnixMilli()
			inForce := ms < fromMs && ms >= straddleMs && (i+1 == len(pts) || pts[i+1].T.UnixMilli() >= fromMs)
			if inForce || (ms >= fromMs && ms <= toMs) {
				kept = append(kept, p)
			}
		}
		for _, p := range kept {
			ms := p.T.UnixMilli()
			if last, ok := e.last[key]; ok && ms <= last {
				if !seen[key] {
					st.dup++ // written by an earlier selector
				} // else: the overlap of two chunks of this selector
				continue
			}
			if err := e.w.Sample(name, lbls, p.T, p.V); err != nil {
				// The name or a label cannot be written (no __name__, or a
				// Prometheus 3 UTF-8 name): the whole series is skipped.
				if !seen[key] {
					seen[key] = true
					st.invalid++
					if st.firstInvalid == "" {
						st.firstInvalid = err.Error()
					}
				}
				break
			}
			e.last[key] = ms
			st.samples++
			if !seen[key] {
				seen[key] = true
				st.series++
			}
		}
	}
}
