package loki

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/duration"
)

// Loki refuses a query over a longer time range than its max_query_length
// (pkg/util/validation ErrQueryTooLong, HTTP 400):
//
//	the query time range exceeds the limit (query length: 25h30m0s, limit: 12h)
//
// The limit is written as a Prometheus duration ("12h", "30d1h").
var queryLengthRE = regexp.MustCompile(`the query time range exceeds the limit \(query length: [^,]*, limit: ([0-9a-z.]+)\)`)

// Loki refuses a metric query whose answer holds more series than its
// max_query_series (HTTP 400), in these words since grafana/loki#18176 (2025)
// and as "maximum of series (500) reached for a single query" before:
//
//	maximum number of series (500) reached for a single query; consider reducing ...
var seriesLimitRE = regexp.MustCompile(`maximum (?:number )?of series \((\d+)\) reached for a single query`)

// Loki refuses a query whose estimated bytes (from its index, before any
// filter) exceed max_query_bytes_read, or whose share on one querier (a
// piece of split_queries_by_interval) exceeds max_querier_bytes_read
// (HTTP 400, sizes as go-humanize writes them):
//
//	the query would read too many bytes (query: 150 MB, limit: 100 MB); consider ...
//	query too large to execute on a single querier: (query: 5GB, limit: 1GB); consider ...
var bytesLimitRE = regexp.MustCompile(`(the query would read too many bytes|query too large to execute on a single querier:) \(query: ([^,]+), limit: ([^)]+)\)`)

// bytesLimitError is Loki's 400 for a query reading more bytes than its
// max_query_bytes_read or max_querier_bytes_read.
type bytesLimitError struct {
	query, limit int64 // 0 when unreadable
	api          *APIError
}

func (e *bytesLimitError) Error() string { return e.api.Error() }
func (e *bytesLimitError) Unwrap() error { return e.api }

// parseSize reads a size as go-humanize writes it ("150 MB", "1.0 MiB", "5GB").
func parseSize(s string) int64 {
	m := regexp.MustCompile(`^\s*([0-9.]+)\s*([kKMGTP]?i?B)\s*$`).FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	x, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	unit := strings.ToUpper(m[2])
	base := 1000.0
	if strings.Contains(unit, "I") {
		base = 1024
	}
	exp := strings.Index("BKMGTP", unit[:1])
	for range exp {
		x *= base
	}
	return int64(x)
}

// queryLengthError is Loki's 400 for a time range above max_query_length.
type queryLengthError struct {
	max time.Duration // 0 when the limit could not be read
	api *APIError
}

func (e *queryLengthError) Error() string { return e.api.Error() }
func (e *queryLengthError) Unwrap() error { return e.api }

// seriesLimitError is Loki's 400 for an answer above max_query_series.
type seriesLimitError struct {
	max int
	api *APIError
}

func (e *seriesLimitError) Error() string { return e.api.Error() }
func (e *seriesLimitError) Unwrap() error { return e.api }

// asQueryLimitError recognises Loki's query-length and series-limit 400s.
func asQueryLimitError(e *APIError) error {
	if e.StatusCode != http.StatusBadRequest {
		return e
	}
	if m := queryLengthRE.FindStringSubmatch(e.Message); m != nil {
		d, err := duration.Parse(m[1])
		if err != nil || d <= 0 {
			d = 0
		}
		return &queryLengthError{max: d, api: e}
	}
	if m := bytesLimitRE.FindStringSubmatch(e.Message); m != nil {
		return &bytesLimitError{query: parseSize(m[2]), limit: parseSize(m[3]), api: e}
	}
	if m := seriesLimitRE.FindStringSubmatch(e.Message); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &seriesLimitError{max: n, api: e}
	}
	return e
}

// queryLimits holds what Loki said about its limits, so every later request
// of the client follows them and the notes can say what was learned.
type queryLimits struct {
	mu sync.Mutex
	// length is the longest time range one request may span (0: not known).
	length time.Duration
	// bytesSpan is the longest range a request may span to stay under
	// Loki's bytes limits (0: none met).
	bytesSpan time.Duration
	// learned lists one sentence per limit learned, for data-quality notes.
	learned []string
}

// spanLimit is the longest range one request may cover (0: no known limit).
func (c *Client) spanLimit() time.Duration {
	c.limits.mu.Lock()
	defer c.limits.mu.Unlock()
	return c.limits.length
}

// learnQueryLength records Loki's max_query_length from its refusal of a
// request spanning asked. It reports whether requests must now be shorter
// than asked (false: nothing shorter would help, the error stands).
func (c *Client) learnQueryLength(qe *queryLengthError, asked time.Duration) bool {
	limit := qe.max
	if limit <= 0 || limit >= asked {
		// Unreadable limit, or one the request already kept: halve instead.
		limit = asked / 2
	}
	if limit < time.Minute {
		return false
	}
	c.limits.mu.Lock()
	defer c.limits.mu.Unlock()
	if c.limits.length == 0 || limit < c.limits.length {
		c.limits.length = limit
		c.limits.learned = append(c.limits.learned, fmt.Sprintf("queries split into ranges of at most %s: Loki said %q", duration.Format(limit), qe.api.Message))
	}
	return true
}

// bytesSpanLimit is the longest range one request may cover under Loki's
// bytes limits (0: none met).
func (c *Client) bytesSpanLimit() time.Duration {
	c.limits.mu.Lock()
	defer c.limits.mu.Unlock()
	return c.limits.bytesSpan
}

// learnBytesLimit narrows requests after Loki refused one spanning asked
// for the bytes it would read: to the share of asked that fits (with a
// tenth to spare), on the grid of step (a minute at least), never below
// one step. It reports false when asked is that already: nothing shorter
// would help, the error stands.
func (c *Client) learnBytesLimit(be *bytesLimitError, asked, step time.Duration) bool {
	if step < time.Minute {
		step = time.Minute
	}
	if asked <= step {
		return false
	}
	span := asked / 2
	if be.query > 0 && be.limit > 0 && be.limit < be.query {
		span = time.Duration(float64(asked) * 0.9 * float64(be.limit) / float64(be.query))
	}
	span = max(span/step*step, step)
	c.limits.mu.Lock()
	defer c.limits.mu.Unlock()
	if c.limits.bytesSpan == 0 || span < c.limits.bytesSpan {
		c.limits.bytesSpan = span
		c.limits.learned = append(c.limits.learned, fmt.Sprintf("queries split into ranges of at most %s for the bytes they read: Loki said %q", duration.Format(span), be.api.Message))
	}
	return true
}

func bytesLimitOf(err error) *bytesLimitError {
	var be *bytesLimitError
	if errors.As(err, &be) {
		return be
	}
	return nil
}

// noteSeriesLimit records that a metric query was split further because Loki
// refused its series count.
func (c *Client) noteSeriesLimit(se *seriesLimitError, span time.Duration) {
	c.limits.mu.Lock()
	defer c.limits.mu.Unlock()
	msg := fmt.Sprintf("metric queries split into ranges of %s: Loki said %q", duration.Format(span), se.api.Message)
	for _, l := range c.limits.learned {
		if l == msg {
			return
		}
	}
	c.limits.learned = append(c.limits.learned, msg)
}

// LimitsLearned lists, one sentence each, the Loki limits this client learned
// from refusals and now follows (query length, series per query). The
// per-call line limit is reported by each pull (Result.LimitChanges).
func (c *Client) LimitsLearned() []string {
	c.limits.mu.Lock()
	defer c.limits.mu.Unlock()
	return append([]string(nil), c.limits.learned...)
}

// chunkEnd is the end of the chunk of [start, to] beginning at start: at most
// span long (0: unbounded), on the step grid from start, never past to.
func chunkEnd(start, to time.Time, span, step time.Duration) time.Time {
	end := to
	if span > 0 {
		if step > 0 {
			span = span / step * step
		}
		if e := start.Add(span); e.Before(end) {
			end = e
		}
	}
	return end
}

// queryLengthOf and seriesLimitOf find the two limit errors in err's chain.
func queryLengthOf(err error) *queryLengthError {
	var qe *queryLengthError
	if errors.As(err, &qe) {
		return qe
	}
	return nil
}

func seriesLimitOf(err error) *seriesLimitError {
	var se *seriesLimitError
	if errors.As(err, &se) {
		return se
	}
	return nil
}

// subRangeLength is the length raw pulls are cut into: the configured split,
// shorter if Loki's max_query_length is shorter.
func (c *Client) subRangeLength() time.Duration {
	if l := c.spanLimit(); l > 0 && l < c.cfg.SplitBy {
		return l
	}
	return c.cfg.SplitBy
}
