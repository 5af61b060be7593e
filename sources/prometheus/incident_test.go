package prometheus

import (
	"bytes"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
	"github.com/aftermath-forensics/aftermath/sources/metrics/promstore"
)

// incidentStart is where the simulated incident's data begins; it runs for
// incidentSpan.
var (
	incidentStart = time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	incidentSpan  = 4 * time.Hour
)

// incident writes a simulated php-fpm incident as OpenMetrics through
// metrics.Writer (so the bundle writer's output is what promtool backfills):
// two php-fpm instances scraped every 10 s, a crawl from 2h00 to 2h40 that
// pins every worker and fills the listen queue, the backlog raised from 511
// to 4096 at 1h30, web-2 restarted at 2h50, Caddy's upstreams flapping
// during the crawl, node CPU (mostly idle during the crawl: the workers
// wait), CloudWatch CPU every minute, and one series no selector asks for.
//
// Scrape timestamps sit off the query grids (x.345 s, x.567 s, x.890 s), as
// real scrapes do, so no sample falls exactly on a range boundary: that is
// where Prometheus 2 (closed ranges) and 3 (left-open) would differ.
func incident(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := metrics.NewWriter(&buf)
	add := func(name string, lbls map[string]string, at time.Time, v float64) {
		if err := w.Sample(name, lbls, at, v); err != nil {
			t.Fatal(err)
		}
	}
	rnd := rand.New(rand.NewPCG(2026, 10))
	end := incidentStart.Add(incidentSpan)
	crawl := func(el time.Duration) bool { return el >= 2*time.Hour && el < 2*time.Hour+40*time.Minute }

	for k, inst := range []string{"web-1:9253", "web-2:9253"} {
		lbls := map[string]string{"instance": inst, "job": "phpfpm", "pool": "www"}
		started := incidentStart.Add(-72 * time.Hour)
		var accepted, maxChildren, slow, maxQueue float64
		restarted := false
		for at := incidentStart.Add(2345 * time.Millisecond); at.Before(end); at = at.Add(10 * time.Second) {
			el := at.Sub(incidentStart)
			if k == 1 && !restarted && el >= 2*time.Hour+50*time.Minute {
				restarted, started = true, at.Add(-3*time.Second)
				accepted, maxChildren, slow, maxQueue = 0, 0, 0, 0
			}
			const total = 8.0
			active := float64(1 + rnd.IntN(3))
			queue, rate := 0.0, 20+5*rnd.Float64()
			if crawl(el) {
				active, rate = total, 8+rnd.Float64()
				queue = math.Min(3000, math.Floor((el-2*time.Hour).Seconds()*2.5)) + float64(rnd.IntN(20))
				if rnd.IntN(2) == 0 {
					maxChildren++
				}
				if rnd.IntN(4) == 0 {
					slow++
				}
			}
			backlog := 511.0
			if el >= 90*time.Minute {
				backlog = 4096
			}
			accepted += math.Round(rate * 10)
			maxQueue = math.Max(maxQueue, queue)
			for name, v := range map[string]float64{
				"phpfpm_active_processes":     active,
				"phpfpm_idle_processes":       total - active,
				"phpfpm_total_processes":      total,
				"phpfpm_listen_queue":         queue,
				"phpfpm_listen_queue_length":  backlog,
				"phpfpm_max_listen_queue":     maxQueue,
				"phpfpm_max_children_reached": maxChildren,
				"phpfpm_accepted_connections": accepted,
				"phpfpm_slow_requests":        slow,
				"phpfpm_start_since":          math.Floor(at.Sub(started).Seconds()),
				"phpfpm_max_active_processes": math.Max(active, 3),
				"phpfpm_up":                   1,
			} {
				add(name, lbls, at, v)
			}
			add("go_goroutines", map[string]string{"instance": inst}, at, 12)
		}
	}

	var ok, unavailable float64
	for at := incidentStart.Add(4567 * time.Millisecond); at.Before(end); at = at.Add(10 * time.Second) {
		el := at.Sub(incidentStart)
		for _, up := range []string{"web-1:9000", "web-2:9000"} {
			v := 1.0
			if crawl(el) && int((el-2*time.Hour)/(20*time.Second))%3 == 0 {
				v = 0
			}
			add("caddy_reverse_proxy_upstreams_healthy", map[string]string{"upstream": up}, at, v)
		}
		ok += 300
		if crawl(el) {
			unavailable += 40
		}
		add("caddy_http_requests_total", map[string]string{"code": "200", "server": "srv0"}, at, ok)
		add("caddy_http_requests_total", map[string]string{"code": "503", "server": "srv0"}, at, unavailable)
	}

	cpu := map[[2]string]float64{}
	for at := incidentStart.Add(7890 * time.Millisecond); at.Before(end); at = at.Add(15 * time.Second) {
		user := 0.3 + 0.1*rnd.Float64()
		if crawl(at.Sub(incidentStart)) {
			user = 0.08
		}
		for _, c := range []string{"0", "1"} {
			for mode, share := range map[string]float64{"user": user, "system": 0.05, "idle": 0.95 - user} {
				cpu[[2]string{c, mode}] += 15 * share
				add("node_cpu_seconds_total", map[string]string{"instance": "web-1:9100", "cpu": c, "mode": mode}, at, cpu[[2]string{c, mode}])
			}
		}
	}

	for at := incidentStart; at.Before(end); at = at.Add(time.Minute) {
		v := 35 + 5*rnd.Float64()
		if crawl(at.Sub(incidentStart)) {
			v = 12 + rnd.Float64()
		}
		add("aws_ec2_cpuutilization_average", map[string]string{"instance_id": "i-0a1b2c3d4e5f60718"}, at, math.Round(v*100)/100)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// offlineStore loads text into a metrics.Store: the offline path.
func offlineStore(t testing.TB, name string, text []byte) *promstore.Store {
	t.Helper()
	s, err := promstore.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var skips sources.Skips
	st, err := s.LoadReader(name, bytes.NewReader(text), &skips)
	if err != nil {
		t.Fatal(err)
	}
	if n := skips.Count(""); n != 0 || st.Samples == 0 {
		t.Fatalf("%s: %d samples loaded, %d skipped: %v", name, st.Samples, n, skips.Notes("test", "lines"))
	}
	return s
}

// detectorQueries are the range queries the detectors run: detect/pool.go's
// poolQueries and cpuQueries (copied: sources must not import detect).
var detectorQueries = []string{
	"sum(phpfpm_active_processes)",
	"sum(phpfpm_total_processes)",
	"sum(phpfpm_listen_queue)",
	"max(phpfpm_listen_queue_length)",
	"sum(phpfpm_max_listen_queue)",
	"sum(phpfpm_max_children_reached)",
	"sum(rate(phpfpm_accepted_connections[1m]))",
	"min(phpfpm_start_since)",
	"min(caddy_reverse_proxy_upstreams_healthy)",
	"avg(aws_ec2_cpuutilization_average)",
	`100 * (1 - avg(rate(node_cpu_seconds_total{mode="idle"}[1m])))`,
}

// changeQueries are the plain selectors detect/changeevidence.go reads at a
// 1 m step to infer configuration changes and restarts.
var changeQueries = []string{changes.MetricListenQueueLength, changes.MetricTotalProcesses, changes.MetricStartSince}

// sameSeries compares two answers series by series and point by point,
// values within a relative 1e-9 (the engines may sum in another order).
// Points where allow (if not nil) returns true may differ; it returns how
// many did.
func sameSeries(t *testing.T, what string, got, want []metrics.Series, allow func(time.Time) bool) int {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d series, want %d", what, len(got), len(want))
		return 0
	}
	allowed := 0
	for i := range want {
		g, w := got[i], want[i]
		if labelKey(g.Labels) != labelKey(w.Labels) {
			t.Errorf("%s: series %d is %s, want %s", what, i, labelKey(g.Labels), labelKey(w.Labels))
			continue
		}
		if len(g.Points) != len(w.Points) {
			t.Errorf("%s %s: %d points, want %d", what, labelKey(w.Labels), len(g.Points), len(w.Points))
			continue
		}
		bad := 0
		for j := range w.Points {
			gp, wp := g.Points[j], w.Points[j]
			same := gp.V == wp.V || (math.IsNaN(gp.V) && math.IsNaN(wp.V)) ||
				math.Abs(gp.V-wp.V) <= 1e-9*math.Max(1, math.Abs(wp.V))
			switch {
			case !gp.T.Equal(wp.T):
			case same:
				continue
			case allow != nil && allow(wp.T):
				allowed++
				continue
			}
			if bad++; bad <= 3 {
				t.Errorf("%s %s: point %d = %v %v, want %v %v", what, labelKey(w.Labels), j, gp.T, gp.V, wp.T, wp.V)
			}
		}
	}
	return allowed
}

func labelKey(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k + "=" + m[k] + ",")
	}
	return "{" + strings.TrimSuffix(b.String(), ",") + "}"
}

func points(ss []metrics.Series) int {
	n := 0
	for _, s := range ss {
		n += len(s.Points)
	}
	return n
}
