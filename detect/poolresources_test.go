package detect

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/metrics/promstore"
)

// scrapes writes one exposition of the text each scrape returns, every 15 s
// over span from from, with the scrape's timestamp on every sample line (as
// a bundle keeps them). body gives the sample lines of scrape i (t seconds
// in), without timestamps; header lines (# HELP, # TYPE) come first once.
func scrapes(from time.Time, span time.Duration, header string, body func(i int, t float64) []string) string {
	var b strings.Builder
	b.WriteString(header)
	for i, t := 0, time.Duration(0); t <= span; i, t = i+1, t+15*time.Second {
		ts := from.Add(t).UnixMilli()
		for _, l := range body(i, t.Seconds()) {
			fmt.Fprintf(&b, "%s %d\n", l, ts)
		}
	}
	return b.String()
}

// hipagesChildren is hipages/php-fpm_exporter's per-child output of php-fpm's
// full status (labels pool, child, scrape_uri, as v2 writes them): running
// children report a last-request CPU and memory of 0 (php-fpm computes them
// when a request ends) and the duration so far; idle ones their last request.
const hipagesHeader = `# HELP phpfpm_process_last_request_cpu The %cpu the last request consumed.
# TYPE phpfpm_process_last_request_cpu gauge
# HELP phpfpm_process_last_request_memory The max amount of memory the last request consumed.
# TYPE phpfpm_process_last_request_memory gauge
# HELP phpfpm_process_request_duration The duration in microseconds of the requests.
# TYPE phpfpm_process_request_duration gauge
# HELP phpfpm_process_state The state of the process (Idle, Running, ...).
# TYPE phpfpm_process_state gauge
# HELP phpfpm_active_processes The number of active processes.
# TYPE phpfpm_active_processes gauge
# HELP phpfpm_total_processes The number of idle + active processes.
# TYPE phpfpm_total_processes gauge
`

// hipagesScrape: children idle ones finished a request of dur µs at cpu %
// and mem bytes; running ones are busy (cpu and memory 0).
func hipagesScrape(idle, running int, cpu, dur, mem float64) []string {
	const l = `pool="www",scrape_uri="unix:///run/php/php8.2-fpm.sock;/status"`
	out := []string{
		fmt.Sprintf(`phpfpm_active_processes{%s} %d`, l, running),
		fmt.Sprintf(`phpfpm_total_processes{%s} %d`, l, idle+running),
	}
	for c := range idle + running {
		state, c0, d, m := "Idle", cpu, dur, mem
		if c >= idle {
			state, c0, d, m = "Running", 0, 123456, 0
		}
		ch := fmt.Sprintf(`child="%d",%s`, c, l)
		out = append(out,
			fmt.Sprintf(`phpfpm_process_last_request_cpu{%s} %g`, ch, c0),
			fmt.Sprintf(`phpfpm_process_last_request_memory{%s} %g`, ch, m),
			fmt.Sprintf(`phpfpm_process_request_duration{%s} %g`, ch, d))
		for _, s := range []string{"Idle", "Running", "Reading headers", "Finishing", "Ending", "Getting request informations"} {
			v := 0
			if s == state {
				v = 1
			}
			out = append(out, fmt.Sprintf(`phpfpm_process_state{child="%d",%s,state=%q} %d`, c, l, s, v))
		}
	}
	return out
}

// node is node_exporter: cores CPUs each busy the share busy, and the
// available memory.
func nodeScrape(t float64, cores int, busy, memAvail float64) []string {
	var out []string
	for c := range cores {
		out = append(out,
			fmt.Sprintf(`node_cpu_seconds_total{cpu="%d",mode="idle"} %.2f`, c, 5000+(1-busy)*t),
			fmt.Sprintf(`node_cpu_seconds_total{cpu="%d",mode="user"} %.2f`, c, 3000+busy*t))
	}
	return append(out, fmt.Sprintf(`node_memory_MemAvailable_bytes %g`, memAvail))
}

// nodeScrapeNiced is nodeScrape whose busy share holds the niced share
// nice (a low-priority job's time, mode="nice").
func nodeScrapeNiced(t float64, cores int, busy, nice, memAvail float64) []string {
	var out []string
	for c := range cores {
		out = append(out,
			fmt.Sprintf(`node_cpu_seconds_total{cpu="%d",mode="idle"} %.2f`, c, 5000+(1-busy)*t),
			fmt.Sprintf(`node_cpu_seconds_total{cpu="%d",mode="nice"} %.2f`, c, 1000+nice*t),
			fmt.Sprintf(`node_cpu_seconds_total{cpu="%d",mode="user"} %.2f`, c, 3000+(busy-nice)*t))
	}
	return append(out, fmt.Sprintf(`node_memory_MemAvailable_bytes %g`, memAvail))
}

const nodeHeader = "# TYPE node_cpu_seconds_total counter\n# TYPE node_memory_MemAvailable_bytes gauge\n"

// processExporter is ncabatoff/process-exporter's group of php-fpm (its
// comm, "php-fpm8.2"): cores of CPU split user/system, a master of 30 MiB
// and procs-1 children of rss resident bytes each.
func processExporterScrape(t, cores float64, procs int, rss float64) []string {
	const g = `groupname="php-fpm8.2"`
	return []string{
		fmt.Sprintf(`namedprocess_namegroup_cpu_seconds_total{%s,mode="user"} %.3f`, g, 100+0.8*cores*t),
		fmt.Sprintf(`namedprocess_namegroup_cpu_seconds_total{%s,mode="system"} %.3f`, g, 40+0.2*cores*t),
		fmt.Sprintf(`namedprocess_namegroup_memory_bytes{%s,memtype="resident"} %g`, g, float64(procs-1)*rss+30*mib),
		fmt.Sprintf(`namedprocess_namegroup_memory_bytes{%s,memtype="virtual"} %g`, g, float64(procs)*4*rss),
		fmt.Sprintf(`namedprocess_namegroup_num_procs{%s} %d`, g, procs),
	}
}

const processExporterHeader = `# HELP namedprocess_namegroup_cpu_seconds_total Cpu user usage in seconds
# TYPE namedprocess_namegroup_cpu_seconds_total counter
# HELP namedprocess_namegroup_memory_bytes number of bytes of memory in use
# TYPE namedprocess_namegroup_memory_bytes gauge
# HELP namedprocess_namegroup_num_procs number of processes in this group
# TYPE namedprocess_namegroup_num_procs gauge
`

func loadResources(t *testing.T, from time.Time, files ...string) *Pool {
	t.Helper()
	store, err := promstore.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	for i, f := range files {
		if _, err := store.LoadReader(fmt.Sprintf("file%d.prom", i), strings.NewReader(f), nil); err != nil {
			t.Fatal(err)
		}
	}
	p, err := LoadPool(context.Background(), store, from, from.Add(20*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const mib = 1 << 20

func TestPoolResourcesFromExporters(t *testing.T) {
	from := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	span := 20 * time.Minute
	in := func(p *Pool) PoolResources { return p.Resources(from.Add(5*time.Minute), from.Add(15*time.Minute)) }

	t.Run("php-fpm status only: CPU binds", func(t *testing.T) {
		// 4 idle children last ran 0.4 s requests at 25% of a core and 18 MiB;
		// 4 running ones report 0 and must not dilute it. 4 cores, 1 GiB free.
		p := loadResources(t, from,
			scrapes(from, span, hipagesHeader, func(int, float64) []string { return hipagesScrape(4, 4, 25, 400000, 18*mib) }),
			scrapes(from, span, nodeHeader, func(_ int, s float64) []string { return nodeScrape(s, 4, 0.5, 1024*mib) }))
		r := in(p)
		if !r.Known() || r.CPUFromProcesses || r.MemResident {
			t.Fatalf("resources %+v: want known, from php-fpm's status", r)
		}
		near(t, "cores per busy worker", r.CoresPerBusyWorker, 0.25)
		near(t, "CPU s per request", r.CPUSecondsPerRequest, 0.1)
		near(t, "memory per worker MiB", r.MemPerWorkerBytes/mib, 18)
		near(t, "host cores", r.HostCores, 4)
		// Without the processes' CPU, other processes' share is unknown:
		// every core counts.
		near(t, "cores for PHP", r.CoresForPHP, 4)
		near(t, "memory for PHP MiB", r.MemForPHPBytes/mib, 1024+8*18)
		fit := r.Fit()
		if fit.ByCPU != 16 || fit.ByMemory != 64 || fit.Fit != 16 || fit.Bound != BoundCPU {
			t.Errorf("fit %+v, want 16 by CPU (4 cores / 0.25), 64 by memory", fit)
		}
	})
	t.Run("process-exporter: memory binds, other processes' CPU left out", func(t *testing.T) {
		// php-fpm: 1.5 cores over 6 busy workers, 6 children of 100 MiB
		// resident and a master of 30 (105 a worker, the master's spread
		// over them); the host: 8 cores half busy (4 cores, 2.5 of them
		// other processes), 300 MiB available.
		p := loadResources(t, from,
			scrapes(from, span, hipagesHeader, func(int, float64) []string { return hipagesScrape(0, 6, 0, 0, 0) }),
			scrapes(from, span, processExporterHeader, func(_ int, s float64) []string { return processExporterScrape(s, 1.5, 7, 100*mib) }),
			scrapes(from, span, nodeHeader, func(_ int, s float64) []string { return nodeScrape(s, 8, 0.5, 300*mib) }))
		r := in(p)
		if !r.CPUFromProcesses || !r.MemResident {
			t.Fatalf("resources %+v: want the processes' own CPU and resident memory", r)
		}
		near(t, "cores per busy worker", r.CoresPerBusyWorker, 0.25)
		near(t, "memory per worker MiB", r.MemPerWorkerBytes/mib, 105)
		near(t, "cores for PHP", r.CoresForPHP, 8-2.5)
		near(t, "memory for PHP MiB", r.MemForPHPBytes/mib, 300+630)
		fit := r.Fit()
		if fit.ByMemory != 8 || fit.ByCPU != 22 || fit.Fit != 8 || fit.Bound != BoundMemory {
			t.Errorf("fit %+v, want 8 by memory (930 MiB / 105), 22 by CPU (5.5 / 0.25)", fit)
		}
	})
	t.Run("niced work yields its CPU to the pool", func(t *testing.T) {
		// A host of 4 cores kept 100% busy, 3 of them by a niced job; php-fpm
		// ran the fourth over 4 busy workers, and nothing else ran at normal
		// priority: every core was php-fpm's for the asking. Not knowing
		// whether php-fpm was niced itself, Resources takes off the larger of
		// the niced cores and the pool's: 4 - max(3, 1) = 1 core for others,
		// 3 for PHP, 12 workers (low by the pool's own core, the safe side);
		// not the 1 core and 4 workers of counting the niced job against it.
		p := loadResources(t, from,
			scrapes(from, span, hipagesHeader, func(int, float64) []string { return hipagesScrape(0, 4, 0, 0, 0) }),
			scrapes(from, span, processExporterHeader, func(_ int, s float64) []string { return processExporterScrape(s, 1, 5, 50*mib) }),
			scrapes(from, span, nodeHeader, func(_ int, s float64) []string { return nodeScrapeNiced(s, 4, 1, 0.75, 4096*mib) }))
		r := in(p)
		near(t, "cores per busy worker", r.CoresPerBusyWorker, 0.25)
		near(t, "cores for PHP", r.CoresForPHP, 3)
		if fit := r.Fit(); fit.ByCPU != 12 {
			t.Errorf("fit %+v, want 12 by CPU (3 cores / 0.25)", fit)
		}
	})
	t.Run("a pool busy and idle by turns: the CPU of the busy scrapes is not lost", func(t *testing.T) {
		// 3 workers busy for 30 s, then idle for 30 s (an upstream marked
		// down and up), each busy worker at 0.1 of a core. The CPU is a
		// rate over a minute: the idle scrapes carry half of it; the busy
		// count is an instant. Over every scrape the ratio is 0.1; over
		// the busy scrapes alone it would be about half.
		busy := func(i int) bool { return i%4 < 2 }
		counter := func(i int) float64 {
			n := 0
			for j := 1; j <= i; j++ {
				if busy(j) {
					n++
				}
			}
			return 0.3 * 15 * float64(n)
		}
		p := loadResources(t, from,
			scrapes(from, span, hipagesHeader, func(i int, _ float64) []string {
				if busy(i) {
					return hipagesScrape(0, 3, 0, 0, 0)
				}
				return hipagesScrape(3, 0, 10, 300000, 8*mib)
			}),
			scrapes(from, span, processExporterHeader, func(i int, _ float64) []string {
				const g = `groupname="php-fpm8.2"`
				return []string{
					fmt.Sprintf(`namedprocess_namegroup_cpu_seconds_total{%s,mode="user"} %.3f`, g, counter(i)),
					fmt.Sprintf(`namedprocess_namegroup_memory_bytes{%s,memtype="resident"} %d`, g, 4*20*mib),
					fmt.Sprintf(`namedprocess_namegroup_num_procs{%s} 4`, g),
				}
			}))
		r := in(p)
		if !r.CPUFromProcesses || math.Abs(r.CoresPerBusyWorker-0.1) > 0.015 {
			t.Errorf("cores per busy worker %v (from the processes %v), want 0.1", r.CoresPerBusyWorker, r.CPUFromProcesses)
		}
	})
	t.Run("no per-process series", func(t *testing.T) {
		p := loadResources(t, from,
			scrapes(from, span, nodeHeader, func(_ int, s float64) []string { return nodeScrape(s, 8, 0.69, 300*mib) }))
		r := in(p)
		if r.Known() {
			t.Fatalf("resources %+v from the machine's series alone: the pool's own were never measured", r)
		}
		if fit := r.Fit(); fit.Fit != -1 || fit.Bound != "" {
			t.Errorf("fit %+v without per-process series, want unknown", fit)
		}
	})
}

func TestSizePool(t *testing.T) {
	tests := []struct {
		name          string
		needed, floor float64
		fit           PoolFit
		size          int
		bound         string
		ok            bool
	}{
		{"the load binds: 10 needed, 13 with headroom, the old 24 back", 10, 24, PoolFit{ByMemory: 40, ByCPU: 64, Fit: 40, Bound: BoundMemory}, 24, BoundLoad, true},
		{"memory binds below the old size", 10, 24, PoolFit{ByMemory: 18, ByCPU: 64, Fit: 18, Bound: BoundMemory}, 18, BoundMemory, true},
		{"CPU binds below the load's need", 10, 0, PoolFit{ByMemory: 40, ByCPU: 8, Fit: 8, Bound: BoundCPU}, 8, BoundCPU, false},
		{"host unknown: the load alone", 10, 0, PoolFit{ByMemory: -1, ByCPU: -1, Fit: -1}, 13, BoundLoad, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size, bound, ok := SizePool(tt.needed, tt.floor, tt.fit)
			if size != tt.size || bound != tt.bound || ok != tt.ok {
				t.Errorf("SizePool(%v, %v, %+v) = %d, %q, %v; want %d, %q, %v", tt.needed, tt.floor, tt.fit, size, bound, ok, tt.size, tt.bound, tt.ok)
			}
		})
	}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 0.02*math.Abs(want)+1e-9 {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
