package prometheus

import (
	"bytes"
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// processIncident is php-fpm's per-process series as the two exporters
// expose them, scraped every 15 s for an hour: php-fpm_exporter's per-child
// gauges of the full status page (8 children; the first 5 idle after a
// 0.5 s request at 30% of a core and 20 MiB, the others running and so
// reporting 0) and process-exporter's php-fpm group (1.2 cores, 8 children
// of 90 MiB and a master of 30), with node_exporter's 4 cores and 600 MiB
// available.
func processIncident(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := metrics.NewWriter(&buf)
	add := func(name string, l map[string]string, at time.Time, v float64) {
		if err := w.Sample(name, l, at, v); err != nil {
			t.Fatal(err)
		}
	}
	for i, at := 0, incidentStart.Add(3456*time.Millisecond); at.Before(incidentStart.Add(time.Hour)); i, at = i+1, at.Add(15*time.Second) {
		s := at.Sub(incidentStart).Seconds()
		pool := map[string]string{"instance": "web-1:9253", "job": "phpfpm", "pool": "www", "scrape_uri": "tcp://127.0.0.1:9000/status"}
		add("phpfpm_active_processes", pool, at, 3)
		add("phpfpm_total_processes", pool, at, 8)
		for c := range 8 {
			l := map[string]string{"child": strconv.Itoa(c)}
			for k, v := range pool {
				l[k] = v
			}
			cpu, dur, mem := 30.0, 500000.0, 20.0*(1<<20)
			if c >= 5 {
				cpu, dur, mem = 0, float64(100000+i*1000), 0
			}
			add("phpfpm_process_last_request_cpu", l, at, cpu)
			add("phpfpm_process_request_duration", l, at, dur)
			add("phpfpm_process_last_request_memory", l, at, mem)
		}
		g := map[string]string{"instance": "web-1:9256", "job": "process", "groupname": "php-fpm8.2"}
		for mode, share := range map[string]float64{"user": 0.85, "system": 0.15} {
			l := map[string]string{"mode": mode}
			for k, v := range g {
				l[k] = v
			}
			add("namedprocess_namegroup_cpu_seconds_total", l, at, math.Round((500+1.2*share*s)*100)/100)
		}
		rss := map[string]string{"memtype": "resident"}
		for k, v := range g {
			rss[k] = v
		}
		add("namedprocess_namegroup_memory_bytes", rss, at, (8*90+30)*(1<<20))
		add("namedprocess_namegroup_num_procs", g, at, 9)
		node := map[string]string{"instance": "web-1:9100", "job": "node"}
		for c := range 4 {
			add("node_cpu_seconds_total", map[string]string{"instance": "web-1:9100", "job": "node", "cpu": strconv.Itoa(c), "mode": "idle"}, at, math.Round((9000+0.6*s)*100)/100)
		}
		add("node_memory_MemAvailable_bytes", node, at, 600*(1<<20))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestLivePrometheusPoolResources: php-fpm's own CPU and memory, read by the
// detectors' queries (detect/poolresources.go, the only place they are
// written) from a real Prometheus and from a bundle of the same series, come
// out the same, and as the exporters' numbers say.
func TestLivePrometheusPoolResources(t *testing.T) {
	text := processIncident(t)
	c, offline := live(t, text)
	from, to := incidentStart.Add(10*time.Minute), incidentStart.Add(50*time.Minute)
	got := map[string]detect.PoolResources{}
	for name, q := range map[string]metrics.Querier{"live": c, "bundle": offline} {
		p, err := detect.LoadPool(context.Background(), q, from, to)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got[name] = p.Resources(from, to)
	}
	live, off := got["live"], got["bundle"]
	for _, f := range []struct {
		what      string
		live, off float64
		want      float64
	}{
		// process-exporter's CPU over php-fpm_exporter's busy workers.
		{"cores per busy worker", live.CoresPerBusyWorker, off.CoresPerBusyWorker, 1.2 / 3},
		{"CPU s per request (php-fpm's status)", live.CPUSecondsPerRequest, off.CPUSecondsPerRequest, 0.15},
		{"MiB per worker (master spread over 8)", live.MemPerWorkerBytes / (1 << 20), off.MemPerWorkerBytes / (1 << 20), 750.0 / 8},
		{"host cores", live.HostCores, off.HostCores, 4},
		{"memory for PHP MiB", live.MemForPHPBytes / (1 << 20), off.MemForPHPBytes / (1 << 20), 600 + 750},
	} {
		if math.Abs(f.live-f.off) > 1e-6*math.Max(1, math.Abs(f.off)) {
			t.Errorf("%s: live %v, bundle %v", f.what, f.live, f.off)
		}
		if math.Abs(f.off-f.want) > 0.02*f.want {
			t.Errorf("%s = %v, want %v", f.what, f.off, f.want)
		}
	}
	if fit := off.Fit(); fit.ByMemory != 14 || fit.Bound != detect.BoundCPU {
		t.Errorf("fit %+v, want 14 by memory (1350 / 93.75) and the CPU binding", fit)
	}
}
