package loki

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/internal/logql"
)

// Stats is the part of Loki's data.stats block this package keeps: what the
// server scanned to answer (as opposed to what it sent).
type Stats struct {
	Summary struct {
		TotalBytesProcessed int64   `json:"totalBytesProcessed"`
		TotalLinesProcessed int64   `json:"totalLinesProcessed"`
		ExecTime            float64 `json:"execTime"`
	} `json:"summary"`
}

// queryData is data of a query or query_range answer; Result is decoded by type.
type queryData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
	Stats      *Stats          `json:"stats"`
}

// streamResult is one <stream value>: {"stream": {labels}, "values": [[ts, line], ...]}.
// A value may carry a third element (structured metadata, newer Loki): decoding
// into a two-element array discards it.
type streamResult struct {
	Stream map[string]string `json:"stream"`
	Values [][2]string       `json:"values"`
}

// streamValue is one decoded log line of a page.
type streamValue struct {
	ts   int64
	line string
}

// MatrixSeries is one series of a metric query: its labels and its points,
// oldest first.
type MatrixSeries struct {
	Metric map[string]string
	Labels string // Metric rendered as {a="x", b="y"}
	Points []Point
}

// Point is one sample. Loki reports sample times in (millisecond-precision)
// seconds; T is that time.
type Point struct {
	T time.Time
	V float64
}

// Sample is one element of an instant vector.
type Sample struct {
	Metric map[string]string
	Labels string
	Point
}

// samplePair decodes [<number: second unix epoch>, "<string value>"].
type samplePair Point

func (p *samplePair) UnmarshalJSON(b []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	if len(parts) != 2 {
		return fmt.Errorf("sample %s: want [time, value]", truncate(b))
	}
	ts := string(bytes.Trim(parts[0], `"`))
	secs, err := strconv.ParseFloat(ts, 64)
	if err != nil {
		return fmt.Errorf("sample time %q: %w", ts, err)
	}
	var vs string
	if err := json.Unmarshal(parts[1], &vs); err != nil {
		return fmt.Errorf("sample value %s: %w", truncate(parts[1]), err)
	}
	v, err := strconv.ParseFloat(vs, 64)
	if err != nil {
		return fmt.Errorf("sample value %q: %w", vs, err)
	}
	p.T = time.UnixMilli(int64(math.Round(secs * 1000))).UTC()
	p.V = v
	return nil
}

type matrixResult struct {
	Metric map[string]string `json:"metric"`
	Values []samplePair      `json:"values"`
}

type vectorResult struct {
	Metric map[string]string `json:"metric"`
	Value  samplePair        `json:"value"`
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// Labels lists the label names Loki knows in [from, to), optionally only those
// of streams matching selector.
func (c *Client) Labels(ctx context.Context, from, to time.Time, selector string) ([]string, error) {
	p := url.Values{"start": {nanos(from)}, "end": {nanos(to)}}
	if selector != "" {
		p.Set("query", selector)
	}
	var out []string
	if err := c.get(ctx, pathLabels, p, &out, nil); err != nil {
		return nil, c.scrub(fmt.Errorf("loki labels %q: %w", selector, err))
	}
	sort.Strings(out)
	return out, nil
}

// LabelValues lists the values of label name in [from, to), optionally only
// those of streams matching selector.
func (c *Client) LabelValues(ctx context.Context, name string, from, to time.Time, selector string) ([]string, error) {
	p := url.Values{"start": {nanos(from)}, "end": {nanos(to)}}
	if selector != "" {
		p.Set("query", selector)
	}
	var out []string
	if err := c.get(ctx, "/loki/api/v1/label/"+url.PathEscape(name)+"/values", p, &out, nil); err != nil {
		return nil, c.scrub(fmt.Errorf("loki label values %q %q: %w", name, selector, err))
	}
	sort.Strings(out)
	return out, nil
}

// Series lists the streams (label sets) matching any of selectors in [from, to),
// sorted by their label string.
func (c *Client) Series(ctx context.Context, from, to time.Time, selectors ...string) ([]map[string]string, error) {
	out, err := c.series(ctx, from, to, selectors, nil)
	if err != nil {
		return nil, c.scrub(fmt.Errorf("loki series %q: %w", selectors, err))
	}
	return out, nil
}

func (c *Client) series(ctx context.Context, from, to time.Time, selectors []string, m *meter) ([]map[string]string, error) {
	if len(selectors) == 0 {
		return nil, errors.New("series needs at least one selector")
	}
	// A window longer than Loki's max_query_length is listed in pieces (the
	// limit is learned from Loki's refusal) and the pieces' streams merged.
	byKey := map[string]map[string]string{}
	for start := from; start.Before(to) || start.Equal(from); {
		end := chunkEnd(start, to, c.spanLimit(), 0)
		p := url.Values{"start": {nanos(start)}, "end": {nanos(end)}, "match[]": selectors}
		var out []map[string]string
		if err := c.get(ctx, pathSeries, p, &out, m); err != nil {
			if qe := queryLengthOf(err); qe != nil && c.learnQueryLength(qe, end.Sub(start)) {
				continue
			}
			return nil, err
		}
		for _, s := range out {
			byKey[logql.LabelsKey(s)] = s
		}
		if !end.Before(to) {
			break
		}
		start = end
	}
	out := make([]map[string]string, 0, len(byKey))
	for _, s := range byKey {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return logql.LabelsKey(out[i]) < logql.LabelsKey(out[j]) })
	return out, nil
}

// QueryMatrix runs a metric query (count_over_time, rate, sum by, ...) over
// [from, to] at step and returns its matrix. Windows with more steps than Loki
// accepts per call (11,000 points per series) are fetched in several calls.
// Loki evaluates a range query on the step's grid (from the Unix epoch; its
// frontend rounds the start down and the end up), so the steps are those of
// the grid from from rounded down to to rounded up.
func (c *Client) QueryMatrix(ctx context.Context, query string, from, to time.Time, step time.Duration) ([]MatrixSeries, error) {
	out, err := c.matrix(ctx, query, from, to, step, nil)
	return out, c.queryErr(query, err)
}

// maxPoints is below Loki's "exceeded maximum resolution of 11,000 points per
// timeseries".
const maxPoints = 10000

func (c *Client) matrix(ctx context.Context, query string, from, to time.Time, step time.Duration, m *meter) ([]MatrixSeries, error) {
	if step <= 0 {
		return nil, fmt.Errorf("step %v is not positive", step)
	}
	if to.Before(from) {
		return nil, fmt.Errorf("end %s is before start %s", to.Format(time.RFC3339Nano), from.Format(time.RFC3339Nano))
	}
	// The calls are made on the grid Loki evaluates on, each starting one
	// step after the last one ended: a call whose ends were off the grid
	// would be rounded outwards by Loki, and the grid point between two
	// calls evaluated (and counted) by both.
	from, to = alignToStep(from, to, step)
	bySeries := map[string]*MatrixSeries{}
	// seriesSpan bounds the chunks after Loki refused one for its series
	// count: fewer hours hold fewer streams when streams come and go.
	var seriesSpan time.Duration
	// valueParts are the parts of a sum's grouping values asked apart after
	// Loki refused the sum's series (matrixByValues).
	grouped, groupedOK := splitGroupedSum(query)
	groupedOK = groupedOK && (m == nil || !m.noValueSplit)
	var valueParts []valueGroup
	for start := from; !start.After(to); {
		span := step * (maxPoints - 1)
		if l := c.spanLimit(); l > 0 && l < span {
			span = l
		}
		if seriesSpan > 0 && seriesSpan < span {
			span = seriesSpan
		}
		if b := c.bytesSpanLimit(); b > 0 && b < span {
			span = b
		}
		end := chunkEnd(start, to, span, step)
		var res []matrixResult
		var err error
		if valueParts != nil {
			// Loki refused the query's series before: its parts.
			res, err = c.matrixByValues(ctx, grouped, start, end, step, m, &valueParts, nil)
		} else {
			res, err = c.matrixCall(ctx, query, start, end, step, m)
		}
		if se := seriesLimitOf(err); se != nil && valueParts == nil && groupedOK {
			res, err = c.matrixByValues(ctx, grouped, start, end, step, m, &valueParts, err)
		}
		if err != nil {
			if qe := queryLengthOf(err); qe != nil && c.learnQueryLength(qe, end.Sub(start)) {
				continue
			}
			if be := bytesLimitOf(err); be != nil {
				if c.learnBytesLimit(be, end.Sub(start), step) {
					continue
				}
				// One step still reads too much: fewer streams at a time.
				res, err = c.matrixSharded(ctx, query, start, end, step, m, err)
			}
		}
		if err != nil {
			if se := seriesLimitOf(err); se != nil && end.Sub(start) > c.cfg.SplitBy {
				seriesSpan = c.cfg.SplitBy
				c.noteSeriesLimit(se, seriesSpan)
				continue
			}
			return nil, err
		}
		for _, r := range res {
			k := logql.LabelsKey(r.Metric)
			s := bySeries[k]
			if s == nil {
				s = &MatrixSeries{Metric: r.Metric, Labels: k}
				bySeries[k] = s
			}
			for _, v := range r.Values {
				s.Points = append(s.Points, Point(v))
			}
		}
		start = end.Add(step)
	}
	out := make([]MatrixSeries, 0, len(bySeries))
	for _, s := range bySeries {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels < out[j].Labels })
	return out, nil
}

// matrixCall is one query_range call of a metric query over [start, end]
// at step.
func (c *Client) matrixCall(ctx context.Context, query string, start, end time.Time, step time.Duration, m *meter) ([]matrixResult, error) {
	p := url.Values{
		"query": {query},
		"start": {nanos(start)},
		"end":   {nanos(end)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	var d queryData
	if err := c.get(ctx, pathQueryRange, p, &d, m); err != nil {
		return nil, err
	}
	c.traffic.processedBy(d.Stats)
	if d.ResultType != "matrix" {
		return nil, fmt.Errorf("want a matrix, Loki answered resultType %q (is this a log query?)", d.ResultType)
	}
	var res []matrixResult
	if err := json.Unmarshal(d.Result, &res); err != nil {
		return nil, fmt.Errorf("decoding matrix: %w", err)
	}
	return res, nil
}

// alignToStep rounds from down and to up to multiples of step counted from
// the Unix epoch, as Loki's query frontend does before it splits and
// evaluates a metric query (queryrange's metricQuerySplitter.alignStartEnd).
// A step that is not whole milliseconds is left alone: Loki reads steps in
// milliseconds.
func alignToStep(from, to time.Time, step time.Duration) (time.Time, time.Time) {
	if step <= 0 || step%time.Millisecond != 0 {
		return from, to
	}
	floor := func(t time.Time) time.Time {
		ns := t.UnixNano()
		m := ns % int64(step)
		if m < 0 {
			m += int64(step)
		}
		return time.Unix(0, ns-m).UTC()
	}
	f := floor(to)
	if f.Before(to) {
		f = f.Add(step)
	}
	return floor(from), f
}

// QueryVector runs an instant metric query at t (Loki refuses log queries here).
func (c *Client) QueryVector(ctx context.Context, query string, t time.Time) ([]Sample, error) {
	out, err := c.vector(ctx, query, t, nil)
	return out, c.queryErr(query, err)
}

func (c *Client) vector(ctx context.Context, query string, t time.Time, m *meter) ([]Sample, error) {
	p := url.Values{"query": {query}, "time": {nanos(t)}}
	var d queryData
	if err := c.get(ctx, pathQuery, p, &d, m); err != nil {
		return nil, err
	}
	c.traffic.processedBy(d.Stats)
	if d.ResultType != "vector" {
		return nil, fmt.Errorf("want a vector, Loki answered resultType %q", d.ResultType)
	}
	var res []vectorResult
	if err := json.Unmarshal(d.Result, &res); err != nil {
		return nil, fmt.Errorf("decoding vector: %w", err)
	}
	out := make([]Sample, 0, len(res))
	for _, r := range res {
		out = append(out, Sample{Metric: r.Metric, Labels: logql.LabelsKey(r.Metric), Point: Point(r.Value)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels < out[j].Labels })
	return out, nil
}

// streamsData is data of a log query's answer. The lines are decoded straight
// into their final strings in the pass that reads the envelope: a page holds
// up to thousands of lines, and a raw copy of result parsed again afterwards
// scanned each of them twice more.
type streamsData struct {
	ResultType string         `json:"resultType"`
	Result     []streamResult `json:"result"`
	Stats      *Stats         `json:"stats"`
}

// logPage fetches one page of a log query: at most limit lines in [from, to),
// oldest first.
func (c *Client) logPage(ctx context.Context, query string, from, to time.Time, limit int, m *meter) ([]streamResult, *Stats, error) {
	p := url.Values{
		"query":     {query},
		"start":     {nanos(from)},
		"end":       {nanos(to)},
		"limit":     {strconv.Itoa(limit)},
		"direction": {"forward"},
	}
	var d streamsData
	if err := c.get(ctx, pathQueryRange, p, &d, m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && strings.HasPrefix(te.Field, "data.result") {
			// The answer is JSON but its result is not streams: a metric
			// query's matrix, or values of the wrong type.
			return nil, nil, wrongStreams(d.ResultType, te)
		}
		return nil, nil, err
	}
	c.traffic.processedBy(d.Stats)
	if d.ResultType != "streams" {
		return nil, nil, wrongStreams(d.ResultType, nil)
	}
	return d.Result, d.Stats, nil
}

// wrongStreams is the error of a log query's answer whose result did not
// decode as streams (te) or was not declared streams.
func wrongStreams(resultType string, te *json.UnmarshalTypeError) error {
	if resultType != "streams" {
		return fmt.Errorf("want streams, Loki answered resultType %q (is this a metric query?)", resultType)
	}
	return fmt.Errorf("decoding streams: %w", te)
}
