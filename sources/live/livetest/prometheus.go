package livetest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
	"github.com/aftermath-forensics/aftermath/sources/metrics/promstore"
)

// Prometheus answers /api/v1/query and /api/v1/query_range as Prometheus'
// HTTP API does, from a metrics.Store (Prometheus' own engine over loaded
// OpenMetrics files): vectors, matrices (a range selector in an instant query
// gives its raw samples), and {"status":"error","errorType":"bad_data"} for a
// query the engine refuses.
type Prometheus struct {
	t     testing.TB
	srv   *httptest.Server
	store *promstore.Store

	mu       sync.Mutex
	before   func(w http.ResponseWriter, r *http.Request, n int) bool
	n        int
	queries  []string
	headers  []http.Header
	written  int64
	warnings []string
}

// NewPrometheus loads files (OpenMetrics with timestamps, plain or .gz) and
// serves them.
func NewPrometheus(t testing.TB, files ...string) *Prometheus {
	t.Helper()
	st, err := promstore.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var skips sources.Skips
	for _, f := range files {
		if _, err := st.LoadFile(f, &skips); err != nil {
			t.Fatal(err)
		}
	}
	if n := skips.Count(""); n > 0 {
		t.Fatalf("fake prometheus: %d samples skipped: %v", n, skips.Notes("metrics", "samples"))
	}
	p := &Prometheus{t: t, store: st}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// URL is the fake's base URL.
func (p *Prometheus) URL() string { return p.srv.URL }

// SetBefore installs a hook that runs first for every request (n counts
// requests from 1); if it returns true it has answered.
func (p *Prometheus) SetBefore(h func(w http.ResponseWriter, r *http.Request, n int) bool) {
	p.mu.Lock()
	p.before = h
	p.mu.Unlock()
}

// SetWarnings makes every successful answer carry warnings.
func (p *Prometheus) SetWarnings(w ...string) {
	p.mu.Lock()
	p.warnings = w
	p.mu.Unlock()
}

// Headers returns the headers of every request so far.
func (p *Prometheus) Headers() []http.Header {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]http.Header(nil), p.headers...)
}

// Written is the number of response bytes sent.
func (p *Prometheus) Written() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.written
}

func (p *Prometheus) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		p.answer(w, http.StatusBadRequest, apiError("bad_data", err.Error()))
		return
	}
	p.mu.Lock()
	p.n++
	n, before, warnings := p.n, p.before, p.warnings
	p.queries = append(p.queries, r.Form.Get("query"))
	p.headers = append(p.headers, r.Header.Clone())
	p.mu.Unlock()
	if before != nil && before(w, r, n) {
		return
	}
	q := r.Form.Get("query")
	var (
		series []metrics.Series
		err    error
		matrix bool
	)
	switch {
	case strings.HasSuffix(r.URL.Path, "/api/v1/query_range"):
		start, e1 := promTimeParam(r.Form.Get("start"))
		end, e2 := promTimeParam(r.Form.Get("end"))
		step, e3 := strconv.ParseFloat(r.Form.Get("step"), 64)
		if e1 != nil || e2 != nil || e3 != nil || step <= 0 {
			p.answer(w, http.StatusBadRequest, apiError("bad_data", "invalid start, end or step"))
			return
		}
		if end.Sub(start).Seconds()/step > 11000 {
			p.answer(w, http.StatusBadRequest, apiError("bad_data", "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)"))
			return
		}
		series, err = p.store.QueryRange(r.Context(), q, start, end, time.Duration(step*float64(time.Second)))
		matrix = true
	case strings.HasSuffix(r.URL.Path, "/api/v1/query"):
		at := time.Now()
		if s := r.Form.Get("time"); s != "" {
			if at, err = promTimeParam(s); err != nil {
				p.answer(w, http.StatusBadRequest, apiError("bad_data", err.Error()))
				return
			}
		}
		series, err = p.store.Query(r.Context(), q, at)
		matrix = strings.HasSuffix(strings.TrimSpace(q), "]")
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		p.answer(w, http.StatusBadRequest, apiError("bad_data", err.Error()))
		return
	}
	result := make([]map[string]any, 0, len(series))
	for _, s := range series {
		if matrix {
			vals := make([][2]any, 0, len(s.Points))
			for _, pt := range s.Points {
				vals = append(vals, sample(pt))
			}
			result = append(result, map[string]any{"metric": s.Labels, "values": vals})
		} else if len(s.Points) > 0 {
			result = append(result, map[string]any{"metric": s.Labels, "value": sample(s.Points[0])})
		}
	}
	kind := "vector"
	if matrix {
		kind = "matrix"
	}
	body := map[string]any{"status": "success", "data": map[string]any{"resultType": kind, "result": result}}
	if len(warnings) > 0 {
		body["warnings"] = warnings
	}
	p.answer(w, http.StatusOK, body)
}

func (p *Prometheus) answer(w http.ResponseWriter, status int, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		p.t.Errorf("fake prometheus: %v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	n, _ := w.Write(b)
	p.mu.Lock()
	p.written += int64(n)
	p.mu.Unlock()
}

func apiError(kind, msg string) map[string]any {
	return map[string]any{"status": "error", "errorType": kind, "error": msg}
}

// sample renders [<seconds with ms>, "<value>"].
func sample(pt metrics.Point) [2]any {
	ms := pt.T.UnixMilli()
	return [2]any{json.Number(strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)), strconv.FormatFloat(pt.V, 'f', -1, 64)}
}

// promTimeParam reads a Prometheus API time: float seconds or RFC 3339.
func promTimeParam(s string) (time.Time, error) {
	if x, err := strconv.ParseFloat(s, 64); err == nil {
		return time.UnixMilli(int64(x*1000 + 0.5)).UTC(), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}
