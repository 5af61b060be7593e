package prometheus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/httpauth"
	"github.com/aftermath-forensics/aftermath/sources/httpretry"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
	"github.com/aftermath-forensics/aftermath/sources/redact"
)

// Source is the name this package gives its data-quality notes and bundle
// query records.
const Source = "prometheus"

// Range query limits.
const (
	// MaxPoints is the most steps Prometheus evaluates for one range query
	// (its API refuses more than 11,000 per series).
	MaxPoints = 11000
	// MinStep is the smallest step Step chooses: about one scrape interval,
	// below which a range query only repeats samples.
	MinStep = 15 * time.Second
)

// maxNotes bounds the warnings a Client keeps; later ones are counted only.
const maxNotes = 50

// niceSteps are the steps Step chooses from: round values that keep the grids
// of different windows aligned with each other and with the minute.
var niceSteps = []time.Duration{
	15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute,
	10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour,
	3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// Step returns a step for a range query over [from, to]: the smallest of 15s,
// 30s, 1m, 2m, 5m, ... 24h that keeps the query under MaxPoints points per
// series (so a day gets 15 s, a week 1 m), or for longer windows the window
// divided by MaxPoints, rounded up to the smallest whole second that fits.
func Step(from, to time.Time) time.Duration {
	w := to.Sub(from)
	if w <= 0 {
		return MinStep
	}
	for _, s := range niceSteps {
		if fits(w, s) {
			return s
		}
	}
	s := (w / MaxPoints).Truncate(time.Second)
	for !fits(w, s) { // at most a few seconds more
		s += time.Second
	}
	return s
}

// fits reports whether a range query of window w and step s has at most
// MaxPoints points per series.
func fits(w, s time.Duration) bool {
	return int64(w/s)+1 <= MaxPoints
}

// Result is one query's answer with what the server said beside it.
type Result struct {
	// Series are sorted by their label string, as metrics.Store sorts them.
	Series []metrics.Series
	// Warnings are the API's warnings (e.g. a partial answer from a
	// federated store); Infos its info annotations.
	Warnings, Infos []string
}

// Client queries a live Prometheus. It implements metrics.Querier and is safe
// for concurrent use.
type Client struct {
	cfg Config
	api v1.API
	// secrets are scrubbed from every error: a server or proxy may echo a
	// credential header back in its answer.
	secrets []string

	// retry is the policy of every call; its Attempts come from cfg.Retries
	// (tests give it a Sleep that records the waits instead of waiting).
	retry httpretry.Policy

	mu      sync.Mutex
	notes   []sources.QualityNote
	seen    map[string]bool
	dropped int
}

// New returns a client of the server cfg describes. It does not contact the
// server.
func New(cfg Config) (*Client, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, err
	}
	rt, hc, err := cfg.transport()
	if err != nil {
		return nil, err
	}
	c, err := api.NewClient(api.Config{Address: cfg.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	headerValues := make([]string, 0, len(cfg.Headers))
	for _, v := range cfg.Headers {
		headerValues = append(headerValues, v)
	}
	// The transport reads credential files per request; read them once here
	// too, so that an error echoing them is scrubbed. A file that cannot be
	// read fails the request instead, with nothing to scrub.
	user, password := httpauth.Basic(hc)
	return &Client{cfg: cfg, api: v1.NewAPI(answerRecorder{c}), seen: map[string]bool{},
		retry:   httpretry.Policy{Base: retryBase, Max: retryMax, Budget: retryBudget},
		secrets: redact.Secrets(user, password, "", append(headerValues, httpauth.Secrets(hc)...)...)}, nil
}

// String describes the client without credentials.
func (c *Client) String() string { return "prometheus.Client{" + c.cfg.String() + "}" }

// QueryRange evaluates q at every step from start to end, like
// /api/v1/query_range; warnings go to Notes. See RangeQuery.
func (c *Client) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]metrics.Series, error) {
	r, err := c.RangeQuery(ctx, q, start, end, step)
	if err != nil {
		return nil, err
	}
	c.note(q, r.Warnings)
	return r.Series, nil
}

// Query evaluates q at one instant, like /api/v1/query; warnings go to Notes.
// See InstantQuery.
func (c *Client) Query(ctx context.Context, q string, at time.Time) ([]metrics.Series, error) {
	r, err := c.InstantQuery(ctx, q, at)
	if err != nil {
		return nil, err
	}
	c.note(q, r.Warnings)
	return r.Series, nil
}

// RangeQuery evaluates q at start, start+step, ... up to end. A range of more
// than MaxPoints steps is split into consecutive sub-ranges on the same grid
// and the answers joined, so any step may be asked for. Errors name the query.
func (c *Client) RangeQuery(ctx context.Context, q string, start, end time.Time, step time.Duration) (Result, error) {
	if step <= 0 {
		return Result{}, fmt.Errorf("prometheus query %q: step %v must be positive", q, step)
	}
	if end.Before(start) {
		return Result{}, fmt.Errorf("prometheus query %q: end %s before start %s", q, end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	var (
		out   Result
		order []string
		byKey = map[string]*metrics.Series{}
	)
	// Split only when needed: step*(MaxPoints-1) is the span of MaxPoints
	// points, and computing it for a huge step would overflow.
	chunk := end.Sub(start)
	if step < chunk/(MaxPoints-1) {
		chunk = step * (MaxPoints - 1)
	}
	for from := start; !from.After(end); from = from.Add(chunk + step) {
		to := from.Add(chunk)
		if to.After(end) {
			to = end
		}
		var (
			v          model.Value
			warn, info []string
		)
		err := c.do(ctx, func(ctx context.Context) (err error) {
			v, warn, info, err = c.api.QueryRange(ctx, q, v1.Range{Start: from, End: to, Step: step}, v1.WithTimeout(c.cfg.Timeout))
			return err
		})
		out.Warnings, out.Infos = append(out.Warnings, warn...), append(out.Infos, info...)
		if err != nil {
			return out, redact.Error(fmt.Errorf("prometheus query %q: %w", q, err), c.secrets)
		}
		part, err := convert(v)
		if err != nil {
			return out, redact.Error(fmt.Errorf("prometheus query %q: %w", q, err), c.secrets)
		}
		for _, p := range part {
			if s := byKey[p.key]; s != nil {
				s.Points = append(s.Points, p.s.Points...)
				continue
			}
			s := p.s
			byKey[p.key] = &s
			order = append(order, p.key)
		}
	}
	sort.Strings(order)
	out.Series = make([]metrics.Series, len(order))
	for i, k := range order {
		out.Series[i] = *byKey[k]
	}
	return out, nil
}

// InstantQuery evaluates q at one instant. Each element of an instant vector
// becomes a Series of one Point; a scalar one Series without labels; a range
// vector (q = "selector[5m]") a Series per series with its raw samples.
// Errors name the query.
func (c *Client) InstantQuery(ctx context.Context, q string, at time.Time) (Result, error) {
	var (
		v          model.Value
		warn, info []string
	)
	err := c.do(ctx, func(ctx context.Context) (err error) {
		v, warn, info, err = c.api.Query(ctx, q, at, v1.WithTimeout(c.cfg.Timeout))
		return err
	})
	out := Result{Warnings: warn, Infos: info}
	if err != nil {
		return out, redact.Error(fmt.Errorf("prometheus query %q: %w", q, err), c.secrets)
	}
	part, err := convert(v)
	if err != nil {
		return out, redact.Error(fmt.Errorf("prometheus query %q: %w", q, err), c.secrets)
	}
	out.Series = make([]metrics.Series, len(part))
	for i, p := range part {
		out.Series[i] = p.s
	}
	return out, nil
}

// Retry bounds: backoff waits start below retryBase and grow to at most
// retryMax; a query and its retries, Retry-After waits included, end within
// retryBudget (a query may itself take DefaultTimeout).
const (
	retryBase   = 500 * time.Millisecond
	retryMax    = 30 * time.Second
	retryBudget = 5 * time.Minute
)

// do runs one API call under the configured timeout, retrying 429s, server
// errors and broken connections under the client's retry policy.
func (c *Client) do(ctx context.Context, call func(context.Context) error) error {
	p := c.retry
	p.Attempts = c.cfg.Retries + 1
	_, err := p.Do(ctx, func(ctx context.Context) error {
		var a answer
		cctx, cancel := context.WithTimeout(context.WithValue(ctx, answerKey{}, &a), c.cfg.Timeout)
		defer cancel()
		err := explain(call(cctx))
		if err != nil && retryable(ctx, err, a) {
			return httpretry.Retryable(err, httpretry.RetryAfter(a.retryAfter, time.Now()))
		}
		return err
	})
	return err
}

// answer is what the last HTTP response of one call said beside its body:
// client_golang's errors keep the status only as text ("client error: 429").
type answer struct {
	status     int
	retryAfter string
}

type answerKey struct{}

// answerRecorder is the api.Client under v1.API: it notes each response's
// status and Retry-After in the call's answer, when the context carries one.
type answerRecorder struct{ api.Client }

func (r answerRecorder) Do(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	resp, body, err := r.Client.Do(ctx, req)
	if a, ok := ctx.Value(answerKey{}).(*answer); ok && resp != nil {
		a.status, a.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
	}
	return resp, body, err
}

// explain replaces client_golang's "server error: 503" by the server's own
// error when the body carries one: Prometheus answers a query timeout with 503
// and {"errorType":"timeout","error":"query timed out in ..."}, which
// client_golang only keeps in Detail.
func explain(err error) error {
	var apiErr *v1.Error
	if !errors.As(err, &apiErr) || apiErr.Detail == "" {
		return err
	}
	var body struct {
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
	}
	if json.Unmarshal([]byte(apiErr.Detail), &body) != nil || body.Error == "" {
		return err
	}
	typ := v1.ErrorType(body.ErrorType)
	if typ == "" {
		typ = apiErr.Type
	}
	return &v1.Error{Type: typ, Msg: body.Error + " (" + apiErr.Msg + ")", Detail: apiErr.Detail}
}

// retryable reports whether err may pass on a second try: a 429 or 5xx by its
// status code (httpretry's set), except a 5xx that carries an error type of
// Prometheus' own (its timeouts and evaluation errors would fail again); or,
// with no error status, a network error that is not the caller's deadline.
// Bad queries (400, 422) are never retried.
func retryable(ctx context.Context, err error, a answer) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if a.status >= 400 {
		if !httpretry.RetryableStatus(a.status) {
			return false
		}
		var apiErr *v1.Error
		return a.status == http.StatusTooManyRequests || !errors.As(err, &apiErr) || apiErr.Type == v1.ErrServer
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, net.ErrClosed)
}

// note keeps the warnings of query q as data-quality notes.
func (c *Client) note(q string, warnings []string) {
	if len(warnings) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range warnings {
		msg := fmt.Sprintf("query %q: server warning: %s", q, w)
		if c.seen[msg] {
			continue
		}
		c.seen[msg] = true
		if len(c.notes) >= maxNotes {
			c.dropped++
			continue
		}
		c.notes = append(c.notes, sources.QualityNote{Source: Source, Severity: sources.SeverityWarning, Message: msg})
	}
}

// Notes returns the distinct warnings the server gave with the answers of
// QueryRange and Query so far, one note each (at most 50, then a count).
func (c *Client) Notes() []sources.QualityNote {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]sources.QualityNote(nil), c.notes...)
	if c.dropped > 0 {
		out = append(out, sources.QualityNote{Source: Source, Severity: sources.SeverityWarning,
			Message: fmt.Sprintf("%d more server warnings not listed", c.dropped)})
	}
	return out
}

// keyed is a converted series with its sort key.
type keyed struct {
	key string
	s   metrics.Series
}

// convert turns an API value into series sorted by the label string
// metrics.Store sorts by. Native histogram samples are dropped, as Store
// drops them.
func convert(v model.Value) ([]keyed, error) {
	var out []keyed
	add := func(m model.Metric, pts []metrics.Point) {
		lm := make(map[string]string, len(m))
		for k, val := range m {
			lm[string(k)] = string(val)
		}
		out = append(out, keyed{key: labels.FromMap(lm).String(), s: metrics.Series{Labels: lm, Points: pts}})
	}
	switch v := v.(type) {
	case nil:
		return nil, nil
	case model.Matrix:
		for _, ss := range v {
			if len(ss.Values) == 0 {
				continue // a series of native histograms only
			}
			pts := make([]metrics.Point, len(ss.Values))
			for i, p := range ss.Values {
				pts[i] = metrics.Point{T: msTime(p.Timestamp), V: float64(p.Value)}
			}
			add(ss.Metric, pts)
		}
	case model.Vector:
		for _, s := range v {
			if s.Histogram != nil {
				continue
			}
			add(s.Metric, []metrics.Point{{T: msTime(s.Timestamp), V: float64(s.Value)}})
		}
	case *model.Scalar:
		add(nil, []metrics.Point{{T: msTime(v.Timestamp), V: float64(v.Value)}})
	default:
		return nil, fmt.Errorf("result of type %s is not supported", v.Type())
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out, nil
}

func msTime(t model.Time) time.Time {
	return time.UnixMilli(int64(t)).UTC()
}

var _ metrics.Querier = (*Client)(nil)
