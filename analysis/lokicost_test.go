package analysis_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// lokiCostEnv names the measurements TestLokiCost makes (comma-separated:
// day, week, day-limits, day-bytes); unset, the test is skipped. `make
// loki-cost` sets it. The day costs about 150 s of CPU, too much for every
// test run.
const lokiCostEnv = "AFTERMATH_LOKI_COST"

// TestLokiCost is issue #29's measurement, runnable on demand: a full pull
// and a pushdown (with its second passes) of the simulated crawler day
// (22.5 h, the 3 h baseline before it) and of the simulated week, each
// against its own fake Loki holding the access log, one mode after the
// other (the wall times are not shared). It prints what each cost Loki by
// the fake's own statistics (the bytes its answers' stats say it scanned,
// the requests it answered), what crossed the wire (a byte-counting relay
// between the client and the fake: gzip as sent), the raw line bytes pulled
// and the story each analysis tells. day-limits runs the day under
// max_query_length 6h, max_query_bytes_read 100 MB and max_query_series 8
// together, day-bytes under max_query_bytes_read alone. The fake is not
// Loki: its scanned bytes follow Loki's statistics as documented (every
// line of the streams a query selects, over its range) and its wall time
// is a Go slice's, not Loki's chunks'; the measurement compares the two
// modes, it does not predict a real Loki's seconds. A mode's wall time runs
// until the bundle is detected as it stands: the pushdown's includes the
// analyses that ask for its second passes.
//
// It asserts nothing of the costs: two of the bars (under 10% of
// the bytes, Loki scanning no more than for the full pull) are not met on
// the simulated day, and the reasons are in the table (the crawler's
// minutes, and the counts a pushdown must make over the whole range first).
// TestPushdownKeepsTheCrawlerDay asserts the story.
func TestLokiCost(t *testing.T) {
	want := strings.Split(os.Getenv(lokiCostEnv), ",")
	if len(want) == 1 && want[0] == "" {
		t.Skipf("set %s=day,week,day-limits,day-bytes to measure (about 150 s of CPU for the day)", lokiCostEnv)
	}
	type row struct {
		name     string
		scanned  int64
		requests int64
		wire     int64
		run      fetchRun
	}
	var rows []row
	measure := func(t *testing.T, name string, sim *bundle.Bundle, from, to time.Time, limits func(*lokitest.Loki)) {
		for _, pushdown := range []bool{false, true} {
			cfg, lk := servedAccessLog(t, sim)
			if limits != nil {
				limits(lk)
			}
			relay := newCountingRelay(t, lk.URL())
			l := *cfg.Loki
			l.Addr, cfg.Loki = relay.URL(), &l
			lk.ResetStats()
			r := fetchAndTell(t, cfg, from, to, pushdown)
			calls, _ := lk.Stats()
			var answered int64
			for _, n := range calls {
				answered += int64(n)
			}
			mode := "full pull"
			if pushdown {
				mode = "pushdown"
			}
			rows = append(rows, row{name: name + ", " + mode, scanned: lk.BytesProcessed(), requests: answered, wire: relay.bytes.Load(), run: r})
			if relay.requests.Load() != answered {
				t.Errorf("%s: the relay passed %d requests, the fake answered %d", mode, relay.requests.Load(), answered)
			}
		}
	}
	for _, what := range want {
		switch what {
		case "day", "day-limits", "day-bytes":
			sim := simulatedDay(t)
			to := sim.Manifest.Window.To
			measure(t, what, sim, to.Add(-22*time.Hour-30*time.Minute), to, dayLimits[what])
		case "week":
			sim := simulatedWeek(t)
			measure(t, what, sim, sim.Manifest.Window.From, sim.Manifest.Window.To, nil)
		default:
			t.Fatalf("%s=%s: want day, week, day-limits or day-bytes", lokiCostEnv, what)
		}
	}
	mb := func(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
	var out strings.Builder
	fmt.Fprintf(&out, "\n%-22s %11s %11s %11s %9s %8s %9s %9s %7s %9s  %s\n", "run", "raw pulled", "on wire", "Loki scan", "requests", "wall", "addresses", "failed", "crawler", "requests", "choice, problems, findings")
	for _, r := range rows {
		s := r.run.story
		choice := "pulled whole"
		for _, c := range []*bundle.PushdownCost{r.run.cost, r.run.fullPull} {
			if c != nil && c.Estimate != nil {
				choice = fmt.Sprintf("%s (estimates on %s: full %s, pushdown %s; Loki full %s, pushdown %s; report.json says Loki scanned %s)", c.Estimate.Chosen, c.Estimate.Basis,
					mb(c.Estimate.FullBytes), mb(c.Estimate.PushdownBytes), mb(c.Estimate.FullLokiBytes), mb(c.Estimate.PushdownLokiBytes), mb(c.LokiBytesProcessed))
			}
		}
		fmt.Fprintf(&out, "%-22s %11s %11s %11s %9d %7.1fs %9.0f %9.0f %7s %9.0f  %s; %d problems; %s\n", r.name, mb(r.run.bytes), mb(r.wire), mb(r.scanned),
			r.requests, r.run.wall.Seconds(), s.crawlerAddresses, s.failed, s.crawlerStart.Format("15:04"), s.requests, choice, len(r.run.problems), strings.Join(s.findings, " "))
		for _, p := range r.run.problems {
			fmt.Fprintf(&out, "    %s: %s\n", p.Severity, p.Message)
		}
		for _, l := range r.run.limits {
			fmt.Fprintf(&out, "    limit followed: %s\n", l)
		}
	}
	for i := 0; i+1 < len(rows); i += 2 {
		full, pushed := rows[i], rows[i+1]
		ratio := func(a, b int64) string { return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(max(b, 1))) }
		fmt.Fprintf(&out, "%s / %s: raw %s, wire %s, scanned %s, requests %s, wall %.2fx; same story %v\n", pushed.name, full.name,
			ratio(pushed.run.bytes, full.run.bytes), ratio(pushed.wire, full.wire), ratio(pushed.scanned, full.scanned), ratio(pushed.requests, full.requests),
			pushed.run.wall.Seconds()/full.run.wall.Seconds(), len(storyDifferences(pushed.run.story, full.run.story)) == 0)
	}
	t.Log(out.String())
}

// dayLimits are the limits TestLokiCost's day runs are fetched under: the
// issue's three together, and max_query_bytes_read alone (under a 6h
// max_query_length no query over the day reads 100 MB, so the bytes limit
// bites only alone).
var dayLimits = map[string]func(*lokitest.Loki){
	"day-limits": func(lk *lokitest.Loki) {
		lk.SetMaxQueryLength(6 * time.Hour)
		lk.SetMaxQueryBytesRead(100_000_000) // "100MB", as Loki reads it (SI)
		lk.SetMaxQuerySeries(8)
	},
	"day-bytes": func(lk *lokitest.Loki) { lk.SetMaxQueryBytesRead(100_000_000) },
}

// simulatedWeek is the week scenario with a 3 h baseline before it, made for
// the calling test and removed after it.
func simulatedWeek(t *testing.T) *bundle.Bundle {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "week")
	if _, err := simulate.Run(context.Background(), simulate.Options{Scenario: "week", Seed: 1, BaselineHours: 3, Out: dir, FastGzip: true}); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// countingRelay stands between the client and a fake Loki and counts the
// requests it passes and the response bytes as they cross the wire (the
// gzip the client asked for, passed through unopened).
type countingRelay struct {
	srv      *httptest.Server
	requests atomic.Int64
	bytes    atomic.Int64
}

func newCountingRelay(t *testing.T, target string) *countingRelay {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	r := &countingRelay{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.Transport = &http.Transport{DisableCompression: true}
	proxy.ModifyResponse = func(resp *http.Response) error {
		resp.Body = &countedBody{ReadCloser: resp.Body, n: &r.bytes}
		return nil
	}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *countingRelay) URL() string { return r.srv.URL }

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
