package loki

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/httpauth"
	"github.com/aftermath-forensics/aftermath/sources/httpretry"
	"github.com/aftermath-forensics/aftermath/sources/redact"
)

// Loki's HTTP API paths (docs: "Loki HTTP API", query endpoints).
const (
	pathQuery      = "/loki/api/v1/query"
	pathQueryRange = "/loki/api/v1/query_range"
	pathLabels     = "/loki/api/v1/labels"
	pathSeries     = "/loki/api/v1/series"
)

// Retry bounds: the first backoff wait is at most retryBase, later ones at most
// retryMax; a request and its retries, Retry-After waits included, end within
// retryBudget, so one sub-range cannot hold a worker for long.
const (
	retryBase   = 500 * time.Millisecond
	retryMax    = 30 * time.Second
	retryBudget = 10 * time.Minute
	errBodyMax  = 4 << 10
)

// Client talks to one Loki (one tenant). It is safe for concurrent use.
type Client struct {
	cfg     Config
	base    *url.URL
	hc      *http.Client
	secrets []string

	// limit is the per-call line limit in force; lowered when the server says its
	// max_entries_limit_per_query is smaller.
	limit atomic.Int64

	// limits are Loki's query limits learned from its 400 answers.
	limits queryLimits

	// unreachable is set when a request failed after every retry, and
	// cleared by the next success: until then requests are tried once, so a
	// dead Loki costs one retry budget per source, not one per pull and
	// sub-range.
	unreachable atomic.Bool

	// traffic is every answer's size, on the wire and unpacked.
	traffic trafficTotals

	// retry is the policy of every request (tests give it a Sleep that
	// records the waits instead of waiting).
	retry httpretry.Policy
}

// New validates cfg and returns a client. It fails on a missing or malformed
// address, conflicting credentials or unreadable TLS files.
func New(cfg Config) (*Client, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, err
	}
	base, err := url.Parse(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("loki: address: %w", err)
	}
	hs, err := cfg.httpSettings()
	if err != nil {
		return nil, err
	}
	// Credentials, TLS, proxy and headers: Prometheus' HTTP client
	// settings build the transport. Answers are asked for gzipped and
	// unpacked in try, so that both sizes are known.
	rt, err := httpauth.RoundTripper(hs, Source)
	if err != nil {
		return nil, fmt.Errorf("loki: %w", err)
	}
	c := &Client{
		cfg:  cfg,
		base: base,
		hc:   &http.Client{Transport: rt, CheckRedirect: httpauth.NoRedirects(hs)},
		retry: httpretry.Policy{
			Attempts: cfg.Retries + 1,
			Base:     retryBase,
			Max:      retryMax,
			Budget:   retryBudget,
		},
	}
	user, pass := httpauth.Basic(hs)
	c.secrets = redact.Secrets(user, pass, "", httpauth.Secrets(hs)...)
	c.limit.Store(int64(cfg.Limit))
	return c, nil
}

// Unreachable reports whether the last request to Loki failed after every
// retry (refused, reset, timed out, or 429/5xx throughout), with no request
// answered since.
func (c *Client) Unreachable() bool { return c.unreachable.Load() }

// Limit is the per-call line limit in force (lowered if the server refused more).
func (c *Client) Limit() int { return int(c.limit.Load()) }

// APIError is a non-2xx answer from Loki. Message is Loki's own error text
// (its error bodies are plain text; a JSON {"error": ...} body is unwrapped).
type APIError struct {
	StatusCode int
	Message    string
	// Attempts is how many requests were made (more than one when retried).
	Attempts int
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	s := fmt.Sprintf("loki answered %d: %s", e.StatusCode, msg)
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

// Retryable reports whether the status is worth retrying: 429 and 5xx.
func (e *APIError) Retryable() bool {
	return httpretry.RetryableStatus(e.StatusCode)
}

// limitError is Loki's 400 for a limit above max_entries_limit_per_query.
type limitError struct {
	requested, max int
	api            *APIError
}

func (e *limitError) Error() string { return e.api.Error() }
func (e *limitError) Unwrap() error { return e.api }

// Loki has written both "max_entries_limit" and "max_entries_limit_per_query".
var limitRE = regexp.MustCompile(`max entries limit per query exceeded, limit > max_entries_limit(?:_per_query)? \((\d+) > (\d+)\)`)

func asLimitError(e *APIError) error {
	if e.StatusCode != http.StatusBadRequest {
		return e
	}
	if m := limitRE.FindStringSubmatch(e.Message); m != nil {
		req, _ := strconv.Atoi(m[1])
		mx, _ := strconv.Atoi(m[2])
		return &limitError{requested: req, max: mx, api: e}
	}
	if strings.Contains(e.Message, "max entries limit per query exceeded") {
		return &limitError{api: e}
	}
	return e
}

// meter counts requests and response bytes for one piece of work, and adds them
// to the run's totals (read concurrently by progress reporting).
type meter struct {
	requests int
	wire     int64
	run      *runTotals
	// noValueSplit: a sum refused for its series is not split by its
	// grouping's values (MinuteValuesWhole).
	noValueSplit bool
}

type runTotals struct {
	requests atomic.Int64
	wire     atomic.Int64
}

func (m *meter) add(requests int, wire int64) {
	if m == nil {
		return
	}
	m.requests += requests
	m.wire += wire
	if m.run != nil {
		m.run.requests.Add(int64(requests))
		m.run.wire.Add(wire)
	}
}

// envelope is the shape of every Loki query answer: {"status": ..., "data": ...}.
// Data holds the caller's pointer, so data is decoded in the same pass.
type envelope struct {
	Status    string `json:"status"`
	Data      any    `json:"data"`
	ErrorType string `json:"errorType,omitempty"`
	Error     string `json:"error,omitempty"`
}

// get calls path with params and decodes the envelope's data into out, retrying
// 429, 5xx, timeouts and broken connections under the client's retry policy
// (full jitter, honouring Retry-After). Other errors (400 above all: a bad
// query stays bad) return at once.
func (c *Client) get(ctx context.Context, path string, params url.Values, out any, m *meter) error {
	u := *c.base
	u.Path += path
	u.RawQuery = params.Encode()
	var retried bool
	policy := c.retry
	gaveUp := c.unreachable.Load()
	if gaveUp {
		policy.Attempts = 1
	}
	attempts, err := policy.Do(ctx, func(ctx context.Context) error {
		retry, wait, err := c.try(ctx, u.String(), out, m)
		retried = retry
		if retry {
			return httpretry.Retryable(err, wait)
		}
		return err
	})
	if err == nil {
		c.unreachable.Store(false)
		return nil
	}
	if retried && ctx.Err() == nil {
		// The last answer was still worth retrying: the retries ran out.
		c.unreachable.Store(true)
	}
	var ae *APIError
	if errors.As(err, &ae) {
		ae.Attempts = attempts
	} else if retried && attempts > 1 {
		err = fmt.Errorf("%w (after %d attempts)", err, attempts)
	}
	if gaveUp && retried {
		err = fmt.Errorf("%w (not retried: an earlier request to this Loki already failed after every retry)", err)
	}
	return err
}

// IsQueryError reports whether err is Loki refusing a query it cannot parse
// (HTTP 400 "parse error ..."), or this client refusing it first: a mistake in the configured selector or
// pipeline, not evidence that is missing.
func IsQueryError(err error) bool {
	var mq malformedQuery
	if errors.As(err, &mq) {
		return true
	}
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest {
		return false
	}
	return strings.HasPrefix(ae.Message, "parse error") || strings.Contains(ae.Message, "failed to parse the log query")
}

// try makes one request. It reports whether a failure is worth retrying and how
// long the server asked to wait.
func (c *Client) try(ctx context.Context, u string, out any, m *meter) (retry bool, wait time.Duration, err error) {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return false, 0, err
	}
	c.authorize(req)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := c.hc.Do(req)
	if err != nil {
		m.add(1, 0)
		if ctx.Err() != nil {
			return false, 0, ctx.Err()
		}
		return transient(err), 0, fmt.Errorf("request failed: %w", unwrapURLError(err))
	}
	defer resp.Body.Close()
	// The answer is asked for gzipped (as Loki's frontend sends it) and
	// unpacked here, so both sizes are known: wire is what crossed the
	// network, decoded what was read.
	wire := &countingReader{r: resp.Body}
	var body io.Reader = wire
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(wire)
		if err != nil {
			m.add(1, wire.n)
			c.traffic.add(wire.n, 0)
			return true, 0, fmt.Errorf("reading response: %w", err)
		}
		defer zr.Close()
		body = zr
	}
	decoded := &countingReader{r: body}
	defer func() {
		m.add(1, wire.n)
		c.traffic.add(wire.n, decoded.n)
	}()

	// Read what is left (bounded) so the connection can be reused.
	defer func() { _, _ = io.Copy(io.Discard, io.LimitReader(wire, 64<<10)) }()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(decoded, errBodyMax))
		ae := &APIError{StatusCode: resp.StatusCode, Message: errorText(b)}
		if ae.Retryable() {
			return true, httpretry.RetryAfter(resp.Header.Get("Retry-After"), time.Now()), ae
		}
		if err := asLimitError(ae); err != ae {
			return false, 0, err
		}
		return false, 0, asQueryLimitError(ae)
	}
	if out == nil {
		out = new(json.RawMessage)
	}
	env := envelope{Data: out}
	var into any = &env
	if b, ok := out.(bareAnswer); ok {
		// An answer without the status envelope (index/stats).
		env.Status, into = "success", b.v
	}
	if err := json.NewDecoder(decoded).Decode(into); err != nil {
		if ctx.Err() != nil {
			return false, 0, ctx.Err()
		}
		// A body cut short (connection reset, per-request timeout) is transient;
		// a body that is not JSON, or not Loki's shape, is not.
		cut := errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || transient(err)
		return cut, 0, fmt.Errorf("reading response: %w", err)
	}
	if env.Status != "success" {
		return false, 0, fmt.Errorf("loki answered status %q: %s", env.Status, env.Error)
	}
	return false, 0, nil
}

// authorize adds the tenant; credentials are the transport's
// (httpauth.RoundTripper).
func (c *Client) authorize(req *http.Request) {
	if c.cfg.OrgID != "" {
		req.Header.Set("X-Scope-OrgID", c.cfg.OrgID)
	}
}

// errorText extracts Loki's message from an error body: plain text as Loki
// writes it, or the "error"/"message" field of a JSON body from a proxy.
func errorText(b []byte) string {
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, "{") {
		var j struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		if json.Unmarshal(b, &j) == nil {
			if j.Error != "" {
				return j.Error
			}
			if j.Message != "" {
				return j.Message
			}
		}
	}
	return s
}

// transient reports whether a transport error may go away on retry: timeouts,
// refused or reset connections, and connections closed mid-answer.
func transient(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// unwrapURLError drops the *url.Error wrapper: its text repeats the whole URL,
// and the query is already named by the caller.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// trafficTotals are the response bytes of every request of a client.
type trafficTotals struct {
	wire, decoded atomic.Int64
	// processed sums Loki's own data.stats.summary.totalBytesProcessed:
	// what it read to answer, as opposed to what it sent.
	processed atomic.Int64
}

// processedBy adds an answer's statistics (nil when Loki sent none).
func (t *trafficTotals) processedBy(s *Stats) {
	if s != nil {
		t.processed.Add(s.Summary.TotalBytesProcessed)
	}
}

// BytesProcessed is what Loki says it read to answer this client's queries
// so far (the stats block of its answers): the work a query cost Loki.
func (c *Client) BytesProcessed() int64 { return c.traffic.processed.Load() }

func (t *trafficTotals) add(wire, decoded int64) {
	t.wire.Add(wire)
	t.decoded.Add(decoded)
}

// ResponseBytes is what every answer so far weighed: on the wire (gzip, as
// sent) and unpacked (what Loki's JSON is without compression).
func (c *Client) ResponseBytes() (wire, decoded int64) {
	return c.traffic.wire.Load(), c.traffic.decoded.Load()
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// scrub makes sure no secret appears in an error's text.
func (c *Client) scrub(err error) error { return redact.Error(err, c.secrets) }

// QueryError is an error of one LogQL query: the reason first, then the
// query, once (a query is often hundreds of characters):
//
//	loki answered 400: parse error ...; loki query: {job="caddy"} | json | ...
type QueryError struct {
	Query string
	Err   error
}

func (e *QueryError) Error() string { return e.Err.Error() + queryMark + e.Query }
func (e *QueryError) Unwrap() error { return e.Err }

// queryMark introduces the query after the reason in errors and notes.
const queryMark = "; loki query: "

// queryErr names the query that failed (QueryError). An error that names
// its query already keeps it: that is the query Loki refused (the count of
// a pull, say), and naming the pull's too would print LogQL twice.
func (c *Client) queryErr(q string, err error) error {
	if err == nil {
		return nil
	}
	var qe *QueryError
	if errors.As(err, &qe) {
		return c.scrub(err)
	}
	return c.scrub(&QueryError{Query: q, Err: err})
}

// lowerLimit caps the per-call limit after the server refused `requested`
// lines: at the server's maximum when its message names it, else at half. It
// returns the limit now in force (0 if it cannot go lower) and, when this call
// lowered it, a sentence for the data-quality notes.
func (c *Client) lowerLimit(le *limitError, requested int) (int, string) {
	target := le.max
	if target <= 0 || target >= requested {
		target = requested / 2
	}
	if target <= 0 {
		return 0, ""
	}
	for {
		cur := c.limit.Load()
		if cur <= int64(target) {
			return int(cur), ""
		}
		if c.limit.CompareAndSwap(cur, int64(target)) {
			return target, fmt.Sprintf("per-call line limit lowered from %d to %d: Loki said %q", cur, target, le.api.Message)
		}
	}
}
