package prometheus

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/metrics/promstore"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// The live path against a real Prometheus (Debian's package; .ci/run installs
// it): the incident is backfilled with promtool, a server is started over
// the blocks on a loopback port, and every query the detectors run must give
// the same series live as offline.

// needPrometheus returns the paths of prometheus and promtool (Debian's
// prometheus package); testenv ends the test when they are missing.
func needPrometheus(t *testing.T) (server, tool string) {
	t.Helper()
	return testenv.Program(t, "prometheus", "apt-get install prometheus"), testenv.Program(t, "promtool", "apt-get install prometheus")
}

// backfill writes text to a file and turns it into TSDB blocks in a new
// directory with promtool, which wants plain OpenMetrics ending in "# EOF".
func backfill(t *testing.T, promtool string, text []byte) string {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "incident.om")
	if err := os.WriteFile(in, text, 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", in, data).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
	}
	return data
}

// startPrometheus runs the server over dataDir on a free loopback port until
// the test ends, and returns its URL once /-/ready answers. A port taken
// between choosing and binding it is retried.
func startPrometheus(t *testing.T, server, dataDir string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "prometheus.yml")
	// No scrape jobs: the server only answers queries over the backfilled blocks.
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 15s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		url, portTaken := startOnce(t, server, cfg, dataDir)
		if !portTaken {
			return url
		}
		if attempt == 3 {
			t.Fatal("prometheus: no free port after 3 attempts")
		}
	}
}

// startOnce starts the server on a free port and waits until it is ready. It
// reports portTaken when the server exited because another process bound
// the port first.
func startOnce(t *testing.T, server, cfg, dataDir string) (url string, portTaken bool) {
	t.Helper()
	addr := freePort(t)
	var logs testenv.LockedBuffer
	cmd := exec.Command(server,
		"--config.file="+cfg,
		"--storage.tsdb.path="+dataDir,
		"--web.listen-address="+addr,
		// Retention counts back from the newest block, but the data may be
		// anywhere in time relative to the clock: keep everything.
		"--storage.tsdb.retention.time=100y",
		"--log.level=warn",
	)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	killWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting prometheus: %v", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	url = "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for !ready(url) {
		select {
		case <-exited:
			if strings.Contains(logs.String(), "address already in use") {
				return "", true
			}
			t.Fatalf("prometheus exited: %v\n%s", waitErr, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 20s:\n%s", logs.String())
		}
	}
	return url, false
}

func ready(url string) bool {
	resp, err := http.Get(url + "/-/ready")
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// live returns a client of a real Prometheus serving text, and the offline
// store of the same text.
func live(t *testing.T, text []byte) (*Client, *promstore.Store) {
	t.Helper()
	server, tool := needPrometheus(t)
	url := startPrometheus(t, server, backfill(t, tool, text))
	c, err := New(Config{URL: url, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c, offlineStore(t, "incident.om", text)
}

// counterStarts returns, for each counter the detectors rate(), the time of
// its first sample in the offline store.
func counterStarts(t *testing.T, offline *promstore.Store, from, to time.Time) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	for _, sel := range []string{"phpfpm_accepted_connections", `node_cpu_seconds_total{mode="idle"}`} {
		for _, s := range rawSamples(t, offline, sel, from.Add(-time.Hour), to) {
			if first := s.Points[0].T; out[sel].IsZero() || first.Before(out[sel]) {
				out[sel] = first
			}
		}
	}
	return out
}

// compareQueries runs each query live and offline over [from, to] and
// compares the answers; it returns how many points were compared.
//
// One difference is expected and allowed: rate() in the first minute of a
// counter, while the 1m range reaches back before the series' first
// sample. Prometheus 2.42 (Debian's) first limits the extrapolation towards
// the range start to the counter's zero point and then compares it with 1.1
// sample intervals; newer engines (this module's promql) compare first and
// then limit, so the two extrapolate a different distance there. Anywhere
// else a difference fails the test.
func compareQueries(t *testing.T, c *Client, offline *promstore.Store, queries []string, from, to time.Time, step time.Duration, starts map[string]time.Time) int {
	t.Helper()
	ctx := context.Background()
	n, allowed := 0, 0
	for _, q := range queries {
		got, err := c.QueryRange(ctx, q, from, to, step)
		if err != nil {
			t.Fatal(err)
		}
		want, err := offline.QueryRange(ctx, q, from, to, step)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			t.Errorf("%s: no data offline: the comparison would be vacuous", q)
		}
		var allow func(time.Time) bool
		for sel, first := range starts {
			if strings.Contains(q, "rate("+sel+"[1m])") {
				allow = func(at time.Time) bool { return at.Sub(first) < time.Minute }
			}
		}
		allowed += sameSeries(t, fmt.Sprintf("%s step %s", q, step), got, want, allow)
		n += points(want)
	}
	if allowed > 0 {
		t.Logf("%d of %d points differ as expected: rate() in a counter's first minute (extrapolation order, Prometheus 2.42 vs 3)", allowed, n)
	}
	return n
}

func TestLivePrometheusMatchesOffline(t *testing.T) {
	began := time.Now()
	c, offline := live(t, incident(t))
	t.Logf("backfill and start: %v", time.Since(began).Round(time.Millisecond))
	from, to := incidentStart, incidentStart.Add(incidentSpan)
	starts := counterStarts(t, offline, from, to)

	t.Run("detector queries, whole window", func(t *testing.T) {
		n := compareQueries(t, c, offline, detectorQueries, from, to, Step(from, to), starts)
		t.Logf("%d points compared", n)
	})
	t.Run("detector queries, the crawl at 5s", func(t *testing.T) {
		// detect.poolStep's grid for a short window, off the minute.
		compareQueries(t, c, offline, detectorQueries, from.Add(110*time.Minute+2*time.Second), from.Add(3*time.Hour), 5*time.Second, nil)
	})
	t.Run("change inference", func(t *testing.T) {
		// detect/changeevidence.go reads 72 h before the window at 1 m.
		compareQueries(t, c, offline, changeQueries, to.Add(-72*time.Hour), to, time.Minute, nil)
	})
	t.Run("instant queries", func(t *testing.T) {
		for _, at := range []time.Time{from.Add(30 * time.Minute), from.Add(2*time.Hour + 17*time.Minute + 3*time.Second), to} {
			for _, q := range detectorQueries {
				got, err := c.Query(context.Background(), q, at)
				if err != nil {
					t.Fatal(err)
				}
				want, err := offline.Query(context.Background(), q, at)
				if err != nil {
					t.Fatal(err)
				}
				sameSeries(t, fmt.Sprintf("%s at %s", q, at.Format(time.TimeOnly)), got, want, nil)
			}
		}
	})
	t.Run("split beyond 11,000 points", func(t *testing.T) {
		// 4 h at 1 s is 14,401 points: two calls, one grid.
		compareQueries(t, c, offline, []string{"sum(phpfpm_listen_queue)"}, from, to, time.Second, nil)
	})
	t.Run("export", func(t *testing.T) {
		checkExport(t, c, offline)
	})
	t.Run("errors name the query", func(t *testing.T) {
		_, err := c.QueryRange(context.Background(), "sum(phpfpm_listen_queue", from, to, time.Minute)
		if err == nil || !strings.Contains(err.Error(), `prometheus query "sum(phpfpm_listen_queue"`) || !strings.Contains(err.Error(), "bad_data") {
			t.Errorf("err = %v", err)
		}
	})
	if n := c.Notes(); len(n) != 0 {
		t.Errorf("server warnings: %v", n)
	}
	t.Logf("total %v", time.Since(began).Round(time.Millisecond))
}

// TestLivePrometheusLabIncident does the same on the recording of the real
// stack, when the shared data is there.
func TestLivePrometheusLabIncident(t *testing.T) {
	text, err := io.ReadAll(testenv.OpenGzip(t, testenv.LabIncident(t, "metrics/prometheus.om.gz")))
	if err != nil {
		t.Fatal(err)
	}
	c, offline := live(t, text)
	// The bundle's window (bundle.yaml), scrapes at x.054 s.
	from := time.Date(2026, 11, 29, 15, 33, 10, 0, time.UTC)
	to := time.Date(2026, 11, 29, 15, 47, 10, 0, time.UTC)
	starts := counterStarts(t, offline, from, to)
	n := compareQueries(t, c, offline, detectorQueries, from, to, 5*time.Second, starts)
	n += compareQueries(t, c, offline, changeQueries, from, to, time.Minute, nil)
	t.Logf("%d points compared", n)
}
