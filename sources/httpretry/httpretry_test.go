package httpretry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder records the waits a policy asks for instead of waiting.
type recorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, d)
	return ctx.Err()
}

// server answers its first fails requests with status and header, then 200.
type server struct {
	status int
	header string
	fails  int
	mu     sync.Mutex
	calls  int
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls++
	fail := s.calls <= s.fails
	s.mu.Unlock()
	if !fail {
		io.WriteString(w, "ok")
		return
	}
	if s.header != "" {
		w.Header().Set("Retry-After", s.header)
	}
	http.Error(w, "busy", s.status)
}

// get is the operation the clients write: one request, its status judged
// by Response.
func get(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return Retryable(err, 0)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return Response(resp, fmt.Errorf("HTTP %d", resp.StatusCode))
		}
		return nil
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	tests := []struct {
		name     string
		header   func() string
		min, max time.Duration
	}{
		{"seconds", func() string { return "7" }, 7 * time.Second, 7 * time.Second},
		// A date has whole seconds: the wait is at most 90 s and more than 88 s.
		{"HTTP date", func() string { return time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat) }, 88 * time.Second, 90 * time.Second},
		// A date already past, or a header that is neither: the backoff applies.
		{"past date", func() string { return time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat) }, 0, time.Second},
		{"garbage", func() string { return "soon" }, 0, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &server{status: http.StatusTooManyRequests, header: tt.header(), fails: 1}
			srv := httptest.NewServer(s)
			defer srv.Close()
			rec := &recorder{}
			p := Policy{Attempts: 3, Base: time.Second, Max: 10 * time.Second, Sleep: rec.sleep}
			n, err := p.Do(context.Background(), get(srv.URL))
			if err != nil || n != 2 {
				t.Fatalf("attempts %d, err %v; want 2 and success", n, err)
			}
			if len(rec.waits) != 1 || rec.waits[0] < tt.min || rec.waits[0] > tt.max {
				t.Errorf("waits %v, want one in [%s, %s]", rec.waits, tt.min, tt.max)
			}
		})
	}
}

func TestWhichStatusesAreRetried(t *testing.T) {
	tests := []struct {
		status   int
		attempts int
	}{
		{http.StatusTooManyRequests, 4},
		{http.StatusInternalServerError, 4},
		{http.StatusBadGateway, 4},
		{http.StatusServiceUnavailable, 4},
		{http.StatusGatewayTimeout, 4},
		// A bad request, revoked credentials or a wrong path stay so.
		{http.StatusBadRequest, 1},
		{http.StatusUnauthorized, 1},
		{http.StatusNotFound, 1},
		// 422 is Prometheus' "bad query", 408 a client-side timeout some
		// proxies send: neither is in the retried set, whatever its text says.
		{http.StatusUnprocessableEntity, 1},
		{http.StatusRequestTimeout, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			s := &server{status: tt.status, fails: 99}
			srv := httptest.NewServer(s)
			defer srv.Close()
			rec := &recorder{}
			p := Policy{Attempts: 4, Base: time.Millisecond, Max: time.Second, Sleep: rec.sleep}
			n, err := p.Do(context.Background(), get(srv.URL))
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("HTTP %d", tt.status)) {
				t.Errorf("err %v, want the last answer's status", err)
			}
			if n != tt.attempts || s.calls != tt.attempts || len(rec.waits) != tt.attempts-1 {
				t.Errorf("attempts %d, server calls %d, waits %v; want %d attempts", n, s.calls, rec.waits, tt.attempts)
			}
			var r *retryable
			if errors.As(err, &r) {
				t.Errorf("the returned error still carries the retry mark: %v", err)
			}
		})
	}
}

func TestBrokenConnectionIsRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // connection refused from now on
	rec := &recorder{}
	p := Policy{Attempts: 3, Base: time.Millisecond, Max: time.Second, Sleep: rec.sleep}
	n, err := p.Do(context.Background(), get(url))
	if err == nil || n != 3 {
		t.Errorf("attempts %d, err %v; want 3 and an error", n, err)
	}
}

func TestContextCancelStopsTheWait(t *testing.T) {
	s := &server{status: http.StatusServiceUnavailable, fails: 99}
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	// Real waits of up to an hour: only the cancellation can end them.
	p := Policy{Attempts: 10, Base: time.Hour, Max: time.Hour}
	s.header = "3600"
	start := time.Now()
	n, err := p.Do(ctx, get(srv.URL))
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Do waited %s after its context ended", d)
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "HTTP 503") || n != 1 {
		t.Errorf("attempts %d, err %v; want 1 attempt, context.Canceled and the last answer", n, err)
	}
}

func TestBudget(t *testing.T) {
	t.Run("a Retry-After beyond it ends at once", func(t *testing.T) {
		s := &server{status: http.StatusTooManyRequests, header: "600", fails: 99}
		srv := httptest.NewServer(s)
		defer srv.Close()
		rec := &recorder{}
		p := Policy{Attempts: 5, Base: time.Second, Max: time.Minute, Budget: 2 * time.Minute, Sleep: rec.sleep}
		n, err := p.Do(context.Background(), get(srv.URL))
		if n != 1 || len(rec.waits) != 0 {
			t.Errorf("attempts %d, waits %v; want 1 and none", n, rec.waits)
		}
		if err == nil || !strings.Contains(err.Error(), "HTTP 429") || !strings.Contains(err.Error(), "asked to wait 10m0s") || !strings.Contains(err.Error(), "budget of 2m0s") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("backoff waits add up to it", func(t *testing.T) {
		s := &server{status: http.StatusBadGateway, header: "10", fails: 99}
		srv := httptest.NewServer(s)
		defer srv.Close()
		rec := &recorder{}
		p := Policy{Attempts: 100, Base: time.Second, Max: time.Minute, Budget: 35 * time.Second, Sleep: rec.sleep}
		n, err := p.Do(context.Background(), get(srv.URL))
		// Three waits of 10 s fit in 35 s (with the requests' own time); a fourth does not.
		if n != 4 || fmt.Sprint(rec.waits) != "[10s 10s 10s]" {
			t.Errorf("attempts %d, waits %v; want 4 and [10s 10s 10s]", n, rec.waits)
		}
		if err == nil || !strings.Contains(err.Error(), "HTTP 502") || !strings.Contains(err.Error(), "budget") {
			t.Errorf("err %v", err)
		}
	})
}

func TestFullJitterBounds(t *testing.T) {
	s := &server{status: http.StatusServiceUnavailable, fails: 1 << 30}
	srv := httptest.NewServer(s)
	defer srv.Close()
	const base, maxWait = 100 * time.Millisecond, 800 * time.Millisecond
	caps := []time.Duration{100, 200, 400, 800, 800, 800}
	var first []time.Duration
	for run := 0; run < 40; run++ {
		rec := &recorder{}
		p := Policy{Attempts: len(caps) + 1, Base: base, Max: maxWait, Sleep: rec.sleep}
		if _, err := p.Do(context.Background(), get(srv.URL)); err == nil {
			t.Fatal("no error from a server that always fails")
		}
		if len(rec.waits) != len(caps) {
			t.Fatalf("waits %v, want %d", rec.waits, len(caps))
		}
		for i, w := range rec.waits {
			if c := caps[i] * time.Millisecond; w < 0 || w > c {
				t.Errorf("wait %d = %s, outside [0, %s]", i+1, w, c)
			}
		}
		first = append(first, rec.waits[0])
	}
	// Full jitter draws from the whole range below the cap. Equal jitter (the
	// old Loki wait, in [cap/2, cap)) never goes below half; with 40 draws
	// the chance that full jitter never does is 2^-40.
	var low, high bool
	for _, w := range first {
		low = low || w < base/2
		high = high || w > base/2
	}
	if !low || !high {
		t.Errorf("first waits %v do not spread over [0, %s]", first, base)
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 10, 3, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		h    string
		want time.Duration
	}{
		{"", 0}, {"0", 0}, {"12", 12 * time.Second}, {" 12 ", 12 * time.Second}, {"-3", 0}, {"soon", 0}, {"1.5", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		// The two obsolete date forms RFC 9110 still asks recipients to accept.
		{"Saturday, 03-Oct-26 10:02:00 GMT", 2 * time.Minute},
		{"Sat Oct  3 10:02:00 2026", 2 * time.Minute},
		{"99999999999999999999", 0},
		{"9999999999999", 365 * 24 * time.Hour},
	}
	for _, tt := range tests {
		if got := RetryAfter(tt.h, now); got != tt.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tt.h, got, tt.want)
		}
	}
}
