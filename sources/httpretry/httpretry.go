// Package httpretry is the one retry policy of aftermath's HTTP clients (Loki,
// Prometheus, the scan webhook): which answers are worth another attempt (429
// and 5xx by status code, broken connections), how long to wait (the server's
// Retry-After, as seconds or an HTTP date, or exponential backoff with full
// jitter), and when to give up (attempts, a time budget, the caller's context).
package httpretry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Policy says how often and how long to retry. The zero value makes one
// attempt.
type Policy struct {
	// Attempts is how many times to try in all (at least 1).
	Attempts int
	// Base caps the first backoff wait; each further wait's cap doubles, up
	// to Max. The wait is drawn uniformly below the cap ("full jitter"), so
	// clients throttled together do not come back together.
	Base, Max time.Duration
	// Budget bounds the time all attempts and waits may take together (0: no
	// bound). A wait that would pass it, a server's Retry-After included,
	// ends the retries with the last error.
	Budget time.Duration
	// Sleep waits d or until ctx ends; nil means a timer. Tests record the
	// waits here instead of waiting.
	Sleep func(ctx context.Context, d time.Duration) error
}

// retryable is an error the operation marked as worth another attempt.
type retryable struct {
	err  error
	wait time.Duration
}

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// Retryable marks err as worth another attempt, after wait if the server
// asked for one (0: the policy's backoff). Errors not marked are final.
func Retryable(err error, wait time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryable{err: err, wait: wait}
}

// RetryableStatus reports whether an HTTP status may pass on a later
// attempt: 429 (throttled) and every 5xx. Other 4xx (a bad query, revoked
// credentials) stay as they are.
func RetryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500 && code <= 599
}

// RetryAfter is the wait a Retry-After header asks for, given as
// delay-seconds or as an HTTP date (RFC 9110 10.2.3); 0 when the header is
// absent, unparsable or in the past.
func RetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		if secs > int64(365*24*time.Hour/time.Second) { // beyond any budget; avoids overflow
			secs = int64(365 * 24 * time.Hour / time.Second)
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	}
	return max(d, 0)
}

// Response marks err retryable when resp's status is (429 or 5xx), with the
// wait its Retry-After header asks for. A nil resp leaves err as it is.
func Response(resp *http.Response, err error) error {
	if resp == nil || err == nil || !RetryableStatus(resp.StatusCode) {
		return err
	}
	return Retryable(err, RetryAfter(resp.Header.Get("Retry-After"), time.Now()))
}

// Do calls op until it succeeds, returns an error not marked Retryable, the
// attempts or the budget run out, or ctx ends. It returns how many attempts
// it made and op's last error, unwrapped from its Retryable mark.
func (p Policy) Do(ctx context.Context, op func(ctx context.Context) error) (int, error) {
	attempts := max(p.Attempts, 1)
	sleep := p.Sleep
	if sleep == nil {
		sleep = timerSleep
	}
	// The library's exponential curve with a randomization factor of 1 draws
	// from [0, 2i] around an interval i that starts at Base/2 and doubles up
	// to Max/2: full jitter below a cap that starts at Base and ends at Max.
	curve := &backoff.ExponentialBackOff{
		InitialInterval:     max(p.Base/2, 1),
		RandomizationFactor: 1,
		Multiplier:          2,
		MaxInterval:         max(p.Max/2, p.Base/2, 1),
	}
	curve.Reset()
	var spent time.Duration
	for attempt := 1; ; attempt++ {
		start := time.Now()
		err := op(ctx)
		spent += time.Since(start)
		if err == nil {
			return attempt, nil
		}
		var r *retryable
		if !errors.As(err, &r) {
			return attempt, err
		}
		last := r.err
		if ctx.Err() != nil {
			return attempt, last
		}
		if attempt >= attempts {
			return attempt, last
		}
		wait := r.wait
		if wait <= 0 {
			wait = min(curve.NextBackOff(), max(p.Max, p.Base))
		}
		if p.Budget > 0 && spent+wait > p.Budget {
			if r.wait > 0 {
				return attempt, fmt.Errorf("%w (the server asked to wait %s: beyond the retry budget of %s)", last, wait, p.Budget)
			}
			return attempt, fmt.Errorf("%w (retry budget of %s spent)", last, p.Budget)
		}
		if err := sleep(ctx, wait); err != nil {
			return attempt, fmt.Errorf("%w (while waiting to retry after: %w)", err, last)
		}
		spent += wait
	}
}

func timerSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
