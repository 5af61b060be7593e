package notify

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/scan"
)

var t0 = time.Date(2026, 10, 21, 12, 0, 0, 0, time.UTC)

func hour(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }

func crawler(sev scan.Severity, observed, score float64) scan.Anomaly {
	return scan.Anomaly{Kind: "crawler_burst", Key: "Chrome / zh-cn / logged out", Severity: sev, Start: hour(0),
		Metric: "requests per 10 minutes at the peak", Observed: observed, Baseline: 1, Score: score, Summary: "a crawler"}
}

func surge() scan.Anomaly {
	return scan.Anomaly{Kind: "surge", Severity: scan.SeverityInfo, Start: hour(0), Observed: 28000, Baseline: 750, Score: 170, Summary: "readers"}
}

// TestDiff walks one anomaly through a schedule: announced once when it
// starts, again only when it worsens, once when it ends.
func TestDiff(t *testing.T) {
	hourly := Policy{UpdateAfter: time.Hour, CloseAfter: time.Hour}
	tests := []struct {
		name   string
		policy Policy
		scans  [][]scan.Anomaly // one scan an hour (or every 10 minutes, see every)
		every  time.Duration
		want   []string // events per scan, joined by ";"
	}{
		{"start, ongoing, worse, worse in severity, end", hourly, [][]scan.Anomaly{
			nil,
			{crawler(scan.SeverityWarning, 900, 3000)},
			{crawler(scan.SeverityWarning, 930, 3100)},  // ongoing: no message
			{crawler(scan.SeverityWarning, 1500, 5600)}, // 1.6x: worse
			{crawler(scan.SeverityCritical, 8900, 17000)},
			{crawler(scan.SeverityCritical, 8000, 15000)}, // past its peak: no message
			nil,
			nil,
		}, time.Hour, []string{"", "opened crawler_burst Chrome / zh-cn / logged out: warning", "",
			"worsened crawler_burst Chrome / zh-cn / logged out: warning",
			"worsened crawler_burst Chrome / zh-cn / logged out: warning -> critical", "",
			"closed crawler_burst Chrome / zh-cn / logged out", ""}},
		{"info is never announced", hourly, [][]scan.Anomaly{{surge()}, {surge()}, nil}, time.Hour, []string{"", "", ""}},
		{"a 10-minute schedule: growth while the window fills is not news, a flicker does not close", hourly, [][]scan.Anomaly{
			{crawler(scan.SeverityWarning, 100, 100)},
			{crawler(scan.SeverityWarning, 300, 300)}, // 3x, but 10 minutes after the announcement
			nil, // a flicker
			{crawler(scan.SeverityWarning, 600, 600)},
			{crawler(scan.SeverityCritical, 700, 700)}, // severity always is news
			nil, nil, nil, nil, nil, nil, // gone for an hour
		}, 10 * time.Minute, []string{"opened crawler_burst Chrome / zh-cn / logged out: warning", "", "", "",
			"worsened crawler_burst Chrome / zh-cn / logged out: warning -> critical", "", "", "", "", "",
			"closed crawler_burst Chrome / zh-cn / logged out"}},
		{"no close delay: closed at the first scan without it", Policy{}, [][]scan.Anomaly{
			{crawler(scan.SeverityWarning, 100, 100)}, nil,
		}, 10 * time.Minute, []string{"opened crawler_burst Chrome / zh-cn / logged out: warning", "closed crawler_burst Chrome / zh-cn / logged out"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := NewState()
			for i, as := range tt.scans {
				events, next := Diff(st, as, t0.Add(time.Duration(i)*tt.every), tt.policy)
				var got []string
				for _, e := range events {
					got = append(got, e.String())
				}
				if g := strings.Join(got, ";"); g != tt.want[i] {
					t.Errorf("scan %d: events %q, want %q", i, g, tt.want[i])
				}
				st = next
			}
		})
	}
}

func TestStateRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "state.json")
	st, err := LoadState(path)
	if err != nil || len(st.Open) != 0 {
		t.Fatalf("a missing state file: %v, %v; want an empty state", st, err)
	}
	_, next := Diff(st, []scan.Anomaly{crawler(scan.SeverityWarning, 900, 3000)}, hour(1), Policy{})
	if err := next.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	e := back.Open["crawler_burst Chrome / zh-cn / logged out"]
	if e == nil || e.Observed != 900 || !e.Announced.Equal(hour(1)) || !back.Updated.Equal(hour(1)) {
		t.Errorf("state did not round-trip: %+v", back)
	}
	for _, bad := range []string{`{"schema":"something/v9","open":{}}`, `not json`, `{"schema":"aftermath.scan-state/v1","surprise":1}`} {
		p := filepath.Join(t.TempDir(), "state.json")
		if err := writeString(p, bad); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadState(p); err == nil {
			t.Errorf("LoadState(%q) succeeded; a state that is not one must be an error", bad)
		}
	}
}

// TestComposeEscapes: text from logs cannot ping a channel or forge a link
// in Slack's mrkdwn.
func TestComposeEscapes(t *testing.T) {
	a := crawler(scan.SeverityWarning, 900, 3000)
	a.Key = "Chrome / <!channel> / logged out"
	a.Summary = "walked <https://evil.example|your bank> & more"
	msg := Compose([]Event{{Type: Opened, Anomaly: a}}, scan.Range{From: hour(0), To: hour(1)}, time.UTC, "/var/lib/aftermath/scan/scan.md")
	for _, bad := range []string{"<!channel>", "<https://evil.example|your bank>", " & more"} {
		if strings.Contains(msg.Text, bad) {
			t.Errorf("message carries %q unescaped:\n%s", bad, msg.Text)
		}
	}
	for _, want := range []string{"NEW warning crawler_burst", "&lt;!channel&gt;", "Report: /var/lib/aftermath/scan/scan.md", "1 new, 0 worse, 0 ended"} {
		if !strings.Contains(msg.Text, want) {
			t.Errorf("message lacks %q:\n%s", want, msg.Text)
		}
	}
	link := Compose(nil, scan.Range{From: hour(0), To: hour(1)}, time.UTC, "https://ops.example.org/scan/scan.md")
	if !strings.Contains(link.Text, "<https://ops.example.org/scan/scan.md|scan report>") {
		t.Errorf("a report URL is not a link: %s", link.Text)
	}
}

// hook is a webhook that fails its first failures requests with status.
type hook struct {
	mu       sync.Mutex
	failures int
	status   int
	delay    time.Duration
	calls    int
	received []Message
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body) // read whole, the server notices a client leave
	h.mu.Lock()
	h.calls++
	fail := h.calls <= h.failures
	h.mu.Unlock()
	if h.delay > 0 && fail {
		select { // a client that gave up is gone
		case <-time.After(h.delay):
		case <-r.Context().Done():
		}
	}
	if fail {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "temporarily unavailable", h.status)
		return
	}
	var m Message
	if r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &m) != nil || m.Text == "" {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.received = append(h.received, m)
	h.mu.Unlock()
	io.WriteString(w, "ok")
}

func TestWebhookSend(t *testing.T) {
	const secret = "/services/T000/B000/XXXXsecretXXXX"
	tests := []struct {
		name         string
		hook         *hook
		attempts     int
		wantAttempts int
		wantReceived int
		wantErr      string
	}{
		{"delivered at once", &hook{}, 4, 1, 1, ""},
		{"fails twice, then succeeds: delivered once", &hook{failures: 2, status: http.StatusServiceUnavailable}, 4, 3, 1, ""},
		{"rate limited, then succeeds", &hook{failures: 1, status: http.StatusTooManyRequests}, 4, 2, 1, ""},
		{"times out twice, then succeeds", &hook{failures: 2, status: http.StatusOK, delay: 300 * time.Millisecond}, 4, 3, 1, ""},
		{"always down: gives up", &hook{failures: 99, status: http.StatusBadGateway}, 3, 3, 0, "HTTP 502"},
		{"revoked webhook: no retry", &hook{failures: 99, status: http.StatusNotFound}, 4, 1, 0, "HTTP 404"},
	}
	for _, tt := range tests {
		// In a bubble the 100 ms timeout and the hook's 300 ms delay are the
		// test's own clock, however busy the machine: on a real socket a
		// loaded CI host once took over 100 ms to answer, and a success was
		// counted as a timeout.
		synctest.Test(t, func(t *testing.T) {
			srv := serveInBubble(t, tt.hook)
			w := &Webhook{URL: srv.URL + secret, Client: srv.Client, Attempts: tt.attempts, Backoff: 10 * time.Millisecond, Timeout: 100 * time.Millisecond}
			n, err := w.Send(context.Background(), Message{Text: "hello"})
			if n != tt.wantAttempts || len(tt.hook.received) != tt.wantReceived {
				t.Errorf("attempts %d, received %d; want %d, %d (err %v)", n, len(tt.hook.received), tt.wantAttempts, tt.wantReceived, err)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one about %q", err, tt.wantErr)
			}
			if err != nil && (strings.Contains(err.Error(), "XXXXsecretXXXX") || strings.Contains(err.Error(), "T000")) {
				t.Errorf("the error shows the webhook's secret path: %v", err)
			}
			if got := w.Target(); got != srv.URL {
				t.Errorf("%s: Target() = %q, want %q (scheme and host only)", tt.name, got, srv.URL)
			}
		})
	}
}

// bubbleServer is an HTTP server reached over in-memory connections, for a
// synctest bubble: its goroutines and connections block durably, so fake
// time moves only when client and server both wait.
type bubbleServer struct {
	URL    string
	Client *http.Client
	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once
}

// serveInBubble serves h until the test ends.
func serveInBubble(t *testing.T, h http.Handler) *bubbleServer {
	s := &bubbleServer{URL: "http://hook.test", conns: make(chan net.Conn), done: make(chan struct{})}
	s.Client = &http.Client{Transport: &http.Transport{DialContext: s.dial}}
	srv := &http.Server{Handler: h}
	go srv.Serve(s)
	t.Cleanup(func() {
		s.Client.CloseIdleConnections()
		srv.Close()
	})
	return s
}

func (s *bubbleServer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case s.conns <- server:
		return client, nil
	case <-s.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Accept, Close and Addr make the server its own net.Listener.
func (s *bubbleServer) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.done:
		return nil, net.ErrClosed
	}
}
func (s *bubbleServer) Close() error   { s.once.Do(func() { close(s.done) }); return nil }
func (s *bubbleServer) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

func TestWebhookUnreachableKeepsSecret(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/services/T1/B1/topsecret"
	srv.Close() // nothing listens any more: connection refused
	w := &Webhook{URL: url, Attempts: 2, Backoff: time.Millisecond}
	n, err := w.Send(context.Background(), Message{Text: "x"})
	if err == nil || n != 2 {
		t.Fatalf("attempts %d, err %v; want 2 attempts and an error", n, err)
	}
	if strings.Contains(err.Error(), "topsecret") {
		t.Errorf("the error shows the webhook's secret path: %v", err)
	}
}

// TestWebhookStopsWithContext: a backoff of seconds does not outlive the
// caller's context. In a bubble, time.Since is the test's own clock: exact.
func TestWebhookStopsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := serveInBubble(t, &hook{failures: 99, status: http.StatusServiceUnavailable, delay: 20 * time.Millisecond})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		w := &Webhook{URL: srv.URL, Client: srv.Client, Attempts: 10, Backoff: time.Second}
		start := time.Now()
		if _, err := w.Send(ctx, Message{Text: "x"}); err == nil {
			t.Fatal("no error")
		}
		if d := time.Since(start); d > 50*time.Millisecond {
			t.Errorf("Send waited %s after its context ended at 50ms", d-50*time.Millisecond)
		}
	})
}

func writeString(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
