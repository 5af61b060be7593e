package prometheus

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

func TestStep(t *testing.T) {
	from := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		window time.Duration
		want   time.Duration
	}{
		{0, 15 * time.Second},
		{-time.Hour, 15 * time.Second},
		{time.Minute, 15 * time.Second},
		{2 * time.Hour, 15 * time.Second},
		{24 * time.Hour, 15 * time.Second},          // 5,761 points
		{45 * time.Hour, 15 * time.Second},          // 10,801 points
		{46 * time.Hour, 30 * time.Second},          // 15 s would be 11,041
		{7 * 24 * time.Hour, time.Minute},           // 10,081 points
		{30 * 24 * time.Hour, 5 * time.Minute},      // 8,641 points
		{365 * 24 * time.Hour, time.Hour},           // 8,761 points
		{40 * 365 * 24 * time.Hour, 24 * time.Hour}, // 14,601 days: over the list
	}
	for _, tt := range tests {
		got := Step(from, from.Add(tt.window))
		if tt.window == 40*365*24*time.Hour {
			// Beyond 24 h steps: the window over MaxPoints, whole seconds.
			if !fits(tt.window, got) || got%time.Second != 0 || fits(tt.window, got-time.Second) {
				t.Errorf("Step(%v) = %v: not the smallest whole-second step that fits", tt.window, got)
			}
			continue
		}
		if got != tt.want {
			t.Errorf("Step(%v) = %v, want %v", tt.window, got, tt.want)
		}
	}
	// Whatever the window, the step fits Prometheus' limit and is >= MinStep.
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		w := time.Duration(r.Int64N(int64(200 * 365 * 24 * time.Hour)))
		s := Step(from, from.Add(w))
		if s < MinStep || !fits(w, s) || int64(w/s) > MaxPoints {
			t.Fatalf("Step(%v) = %v: %d points", w, s, int64(w/s)+1)
		}
	}
}

// fakeAPI answers /api/v1/query and /api/v1/query_range like Prometheus: a
// matrix with one point per step (value = the step's Unix seconds), and 400
// bad_data beyond 11,000 points.
type fakeAPI struct {
	mu       sync.Mutex
	requests []*http.Request
	forms    []string
	// status, when set, is answered instead of a result, with body and,
	// when set, a Retry-After header.
	status     int
	body       string
	retryAfter string
	// warnings and infos are added to every successful answer.
	warnings, infos []string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, r)
	f.forms = append(f.forms, r.Form.Encode())
	status, body, warnings, infos := f.status, f.body, f.warnings, f.infos
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if f.retryAfter != "" {
		w.Header().Set("Retry-After", f.retryAfter)
	}
	if status != 0 {
		w.WriteHeader(status)
		fmt.Fprint(w, body)
		return
	}
	num := func(k string) float64 {
		v, _ := strconv.ParseFloat(r.Form.Get(k), 64)
		return v
	}
	var data any
	switch r.URL.Path {
	case "/prefix/api/v1/query_range":
		start, end, step := num("start"), num("end"), num("step")
		if (end-start)/step > 11000 {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)"}`)
			return
		}
		var values [][2]any
		for ts := start; ts <= end; ts += step {
			values = append(values, [2]any{ts, strconv.FormatFloat(ts, 'f', -1, 64)})
		}
		data = map[string]any{"resultType": "matrix", "result": []any{
			map[string]any{"metric": map[string]string{"__name__": "up", "job": "b"}, "values": values},
			map[string]any{"metric": map[string]string{"__name__": "up", "job": "a"}, "values": values},
		}}
	case "/prefix/api/v1/query":
		ts := num("time")
		data = map[string]any{"resultType": "vector", "result": []any{
			map[string]any{"metric": map[string]string{"job": "a"}, "value": [2]any{ts, "1.5"}},
		}}
	default:
		w.WriteHeader(http.StatusNotFound)
		return
	}
	b, _ := json.Marshal(map[string]any{"status": "success", "data": data, "warnings": warnings, "infos": infos})
	w.Write(b)
}

func newFakeAPI(t *testing.T, cfg Config) (*fakeAPI, *Client) {
	t.Helper()
	f := &fakeAPI{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	u := srv.URL + "/prefix/"
	if cfg.URL != "" {
		u = strings.Replace(cfg.URL, "SERVER", strings.TrimPrefix(srv.URL, "http://"), 1)
	}
	cfg.URL = u
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func TestRangeQuerySplitsLongRanges(t *testing.T) {
	f, c := newFakeAPI(t, Config{})
	start := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	end := start.Add(72 * time.Hour) // 17,281 points at 15 s: two calls
	series, err := c.QueryRange(context.Background(), "up", start, end, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.requests) != 2 {
		t.Errorf("%d calls, want 2", len(f.requests))
	}
	if len(series) != 2 || series[0].Labels["job"] != "a" || series[1].Labels["job"] != "b" {
		t.Fatalf("series = %v, want job a then b", labelsOf(series))
	}
	// A step so large that step*11,000 overflows a Duration: one call.
	if _, err := c.QueryRange(context.Background(), "up", start, start.Add(365*24*time.Hour), 30*24*time.Hour); err != nil || len(f.requests) != 3 {
		t.Errorf("huge step: err %v after %d calls, want 1 more call", err, len(f.requests)-2)
	}
	pts := series[0].Points
	if len(pts) != 17281 {
		t.Fatalf("%d points, want 17281", len(pts))
	}
	for i, p := range pts {
		if want := start.Add(time.Duration(i) * 15 * time.Second); !p.T.Equal(want) || p.V != float64(want.Unix()) {
			t.Fatalf("point %d = %v, want %s", i, p, want)
		}
	}
}

func labelsOf(ss []metrics.Series) []map[string]string {
	out := make([]map[string]string, len(ss))
	for i, s := range ss {
		out[i] = s.Labels
	}
	return out
}

func TestWarningsAndInfos(t *testing.T) {
	f, c := newFakeAPI(t, Config{})
	f.warnings = []string{"partial response: store 2 of 3 did not answer"}
	f.infos = []string{`PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "phpfpm_accepted_connections"`}
	at := time.Date(2026, 10, 3, 5, 0, 0, 0, time.UTC)

	r, err := c.InstantQuery(context.Background(), "up", at)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || len(r.Infos) != 1 || len(r.Series) != 1 || r.Series[0].Points[0].V != 1.5 {
		t.Errorf("InstantQuery = %+v", r)
	}
	if len(c.Notes()) != 0 {
		t.Errorf("InstantQuery made notes: %v", c.Notes())
	}
	for range 2 { // the same warning twice is one note
		if _, err := c.QueryRange(context.Background(), "sum(up)", at, at.Add(time.Minute), 15*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	notes := c.Notes()
	if len(notes) != 1 || notes[0].Source != "prometheus" || notes[0].Severity != "warning" ||
		!strings.Contains(notes[0].Message, `"sum(up)"`) || !strings.Contains(notes[0].Message, "store 2 of 3") {
		t.Errorf("Notes() = %+v, want one warning naming the query", notes)
	}
}

func TestErrorsAndRetries(t *testing.T) {
	at := time.Date(2026, 10, 3, 5, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		status     int
		body       string
		retryAfter string
		calls      int
		contains   []string
		// waitCaps bounds each wait: full jitter below a doubling cap, or
		// exactly the server's Retry-After.
		waitCaps []time.Duration
		exact    bool
	}{
		{"bad query", http.StatusBadRequest,
			`{"status":"error","errorType":"bad_data","error":"1:8: parse error: unclosed left parenthesis"}`, "",
			1, []string{`prometheus query "sum(up"`, "bad_data", "unclosed left parenthesis"}, nil, false},
		// A 503 that is Prometheus' own query timeout would time out again.
		{"query timeout", http.StatusServiceUnavailable,
			`{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`, "",
			1, []string{`prometheus query "sum(up"`, "timeout", "query timed out"}, nil, false},
		{"proxy error", http.StatusBadGateway, `<html>bad gateway</html>`, "",
			3, []string{`prometheus query "sum(up"`, "server error: 502"}, []time.Duration{retryBase, 2 * retryBase}, false},
		// A 429 whose body carries an error type and message of its own: the
		// status code decides, not the text.
		{"rate limited", http.StatusTooManyRequests, `{"status":"error","errorType":"too_many_requests","error":"slow down"}`, "",
			3, []string{"slow down"}, []time.Duration{retryBase, 2 * retryBase}, false},
		{"rate limited with Retry-After", http.StatusTooManyRequests, `{"status":"error","errorType":"too_many_requests","error":"slow down"}`, "7",
			3, []string{"slow down"}, []time.Duration{7 * time.Second, 7 * time.Second}, true},
		{"unauthorized", http.StatusUnauthorized, `unauthorized`, "",
			1, []string{"401"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFakeAPI(t, Config{})
			f.status, f.body, f.retryAfter = tt.status, tt.body, tt.retryAfter
			var waits []time.Duration
			c.retry.Sleep = func(ctx context.Context, d time.Duration) error {
				waits = append(waits, d)
				return ctx.Err()
			}
			_, err := c.Query(context.Background(), "sum(up", at)
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range tt.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if len(f.requests) != tt.calls {
				t.Errorf("%d calls, want %d", len(f.requests), tt.calls)
			}
			if len(waits) != len(tt.waitCaps) {
				t.Fatalf("waits %v, want %d", waits, len(tt.waitCaps))
			}
			for i, w := range waits {
				if w < 0 || w > tt.waitCaps[i] || tt.exact && w != tt.waitCaps[i] {
					t.Errorf("wait %d = %s, want at most %s (exactly: %v)", i+1, w, tt.waitCaps[i], tt.exact)
				}
			}
		})
	}
	t.Run("step", func(t *testing.T) {
		_, c := newFakeAPI(t, Config{})
		if _, err := c.QueryRange(context.Background(), "up", at, at.Add(time.Hour), 0); err == nil || !strings.Contains(err.Error(), `"up"`) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestAuthAndHeaders(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     Config
		auth    string
		headers map[string]string
	}{
		{"none", Config{}, "", nil},
		{"basic in the URL", Config{URL: "http://alice:pw%40x@SERVER/prefix"}, "Basic " + b64("alice:pw@x"), nil},
		{"basic", Config{Username: "bob", Password: "hunter2"}, "Basic " + b64("bob:hunter2"), nil},
		{"bearer", Config{BearerToken: "tok"}, "Bearer tok", nil},
		{"bearer file", Config{BearerTokenFile: tokenFile}, "Bearer file-token", nil},
		{"headers", Config{Headers: map[string]string{"X-Scope-OrgID": "tenant-1"}}, "", map[string]string{"X-Scope-Orgid": "tenant-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFakeAPI(t, tt.cfg)
			if _, err := c.Query(context.Background(), "up", time.Now()); err != nil {
				t.Fatal(err)
			}
			r := f.requests[0]
			if got := r.Header.Get("Authorization"); got != tt.auth {
				t.Errorf("Authorization = %q, want %q", got, tt.auth)
			}
			for k, v := range tt.headers {
				if got := r.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if r.URL.User != nil {
				t.Errorf("user info sent in the URL: %v", r.URL.User)
			}
		})
	}
	bad := []struct {
		cfg Config
		err string
	}{
		{Config{}, "no URL"},
		{Config{URL: "ftp://x"}, "not an http(s) URL"},
		{Config{URL: "http://x", Username: "a", BearerToken: "b"}, "mutually exclusive"},
		{Config{URL: "http://x", BearerToken: "a", Headers: map[string]string{"authorization": "b"}}, "mutually exclusive"},
		{Config{URL: "http://x", CAFile: filepath.Join(dir, "missing.pem")}, "CA file"},
	}
	for _, b := range bad {
		if _, err := New(b.cfg); err == nil || !strings.Contains(err.Error(), b.err) {
			t.Errorf("New(%v) = %v, want %q", b.cfg, err, b.err)
		}
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestCredentialsNeverShown(t *testing.T) {
	const (
		password = "pw-LEAK-1"
		token    = "tok-LEAK-2"
		header   = "hdr-LEAK-3"
	)
	cfgs := []Config{
		{URL: "http://oncall:" + password + "@127.0.0.1:1/", Headers: map[string]string{"X-Api-Key": header}},
		{URL: "http://127.0.0.1:1", Username: "oncall", Password: password},
		{URL: "http://127.0.0.1:1", BearerToken: token},
	}
	for _, cfg := range cfgs {
		var logged bytes.Buffer
		slog.New(slog.NewTextHandler(&logged, nil)).Info("cfg", "cfg", cfg)
		js, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ym, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		// An unreachable server: the error must not carry credentials either.
		c.cfg.Retries = 0
		c.cfg.Timeout = 2 * time.Second
		_, qerr := c.Query(context.Background(), "up", time.Now())
		outs := []string{cfg.String(), fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg), logged.String(), string(js), string(ym),
			c.String(), fmt.Sprintf("%v", c)}
		if qerr != nil {
			outs = append(outs, qerr.Error())
		}
		for _, o := range outs {
			for _, s := range []string{password, token, header} {
				if strings.Contains(o, s) {
					t.Errorf("credential %q shown in %s", s, o)
				}
			}
		}
	}
	// An invalid URL with a password is not echoed.
	if _, err := New(Config{URL: "ftp://u:" + password + "@x"}); err == nil || strings.Contains(err.Error(), password) {
		t.Errorf("New with a bad URL: %v", err)
	}
}

func TestFileCredentialsScrubbedFromErrors(t *testing.T) {
	const secret = "file-secret-LEAK-4"
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  Config
		auth string
	}{
		{"bearer token file", Config{BearerTokenFile: file}, "Bearer " + secret},
		{"password file", Config{Username: "oncall", PasswordFile: file}, "Basic " + b64("oncall:"+secret)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFakeAPI(t, tt.cfg)
			c.cfg.Retries = 0
			// A proxy that echoes the request's Authorization header in its
			// 5xx body.
			f.status = http.StatusServiceUnavailable
			f.body = `{"status":"error","errorType":"internal","error":"upstream refused Authorization: ` + tt.auth + `"}`
			_, err := c.Query(context.Background(), "up", time.Now())
			if err == nil {
				t.Fatal("no error")
			}
			if got := f.requests[0].Header.Get("Authorization"); got != tt.auth {
				t.Fatalf("Authorization = %q, want %q: the file was not used", got, tt.auth)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), b64("oncall:"+secret)) ||
				!strings.Contains(err.Error(), "upstream refused") {
				t.Errorf("error = %q: want the body without the credential", err)
			}
		})
	}
}
