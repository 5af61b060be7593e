package rules

import (
	"math"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/configchange"
	"github.com/aftermath-forensics/aftermath/sources"
)

func saturation(workers, s, cpu float64, cpuBound bool) detect.Finding {
	f := detect.Finding{ID: "worker_saturation-1", Kind: detect.KindWorkerSaturation,
		Facts: detect.MustParseFacts(detect.KindWorkerSaturation, map[string]float64{"workers": workers, "service_time_s": s, "cpu_avg_pct": cpu, "cpu_bound": 0})}
	if cpuBound {
		detect.FactsOf[detect.WorkerSaturationFacts](&f).CPUBound = detect.Some(true)
	}
	return f
}

func starved(timeout, backlog float64) detect.Finding {
	return detect.Finding{ID: "healthcheck_starved-1", Kind: detect.KindHealthcheckStarved,
		Facts: detect.MustParseFacts(detect.KindHealthcheckStarved, map[string]float64{"health_timeout_s": timeout, "backlog": backlog, "est_queue_wait_s": 77})}
}

func TestAdviseBacklog(t *testing.T) {
	for _, tc := range []struct {
		name     string
		findings []detect.Finding
		site     sources.Site
		want     string
		whys     []string
	}{{
		// The reference postmortem: 16 workers, 0.3 s, a 10 s check: the human chose 64.
		name:     "reference incident",
		findings: []detect.Finding{saturation(16, 0.3, 99, true), starved(10, 4096)},
		want:     "64",
		whys: []string{"16 x 10 / 0.3 = 533.3", "T / 8 = 1.25 s", "533.3 / 8 = 66.7", "power of two: 64",
			"64 x 0.3 / 16 = 1.2 s", "4,096 x 0.3 / 16 = 76.8 s"},
	}, {
		name:     "lab recording: 4 workers, 0.199 s",
		findings: []detect.Finding{saturation(4, 0.199, 19.7, false), starved(10, 4096)},
		want:     "16",
		whys:     []string{"4 x 10 / 0.199 = 201", "201 / 8 = 25.1", "power of two: 16"},
	}, {
		name:     "timeout from the site's read_timeout, workers from site facts",
		findings: []detect.Finding{{ID: "worker_saturation-1", Kind: detect.KindWorkerSaturation, Facts: detect.MustParseFacts(detect.KindWorkerSaturation, map[string]float64{"service_time_s": 0.25})}},
		site:     sources.Site{Workers: 32, ReadTimeoutS: 5, Backlog: 511},
		want:     "64", // 32 x 5 / 0.25 = 640; / 8 = 80 -> 64
		whys:     []string{"32 x 5 / 0.25 = 640", "read_timeout (site facts)", "The 511 in force (site facts)"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			recs, _ := Advise(tc.findings, tc.site, "")
			r := find(recs, "listen.backlog")
			if r == nil {
				t.Fatalf("no backlog advice in %+v", recs)
			}
			if r.Value != tc.want {
				t.Errorf("backlog %s, want %s: %s", r.Value, tc.want, r.Why)
			}
			for _, w := range tc.whys {
				if !strings.Contains(r.Why, w) {
					t.Errorf("Why lacks %q: %s", w, r.Why)
				}
			}
		})
	}
}

func TestAdviseMaxChildren(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    detect.Finding
		want string
		why  string
	}{
		{"CPU-bound: keep", saturation(16, 0.3, 99, true), "16", "more children would only queue on the CPU"},
		{"waiting-bound: raise to the CPU target", saturation(4, 0.2, 19.7, false), "14", "4 x 70 / 19.7 = 14.2"},
		{"waiting-bound, capped at 4x", saturation(4, 0.2, 2, false), "16", "capped at 4x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, _ := Advise([]detect.Finding{tc.f}, sources.Site{}, "")
			r := find(recs, "pm.max_children")
			if r == nil || r.Value != tc.want || !strings.Contains(r.Why, tc.why) {
				t.Errorf("got %+v, want %s with %q", r, tc.want, tc.why)
			}
		})
	}
	recs, notes := Advise([]detect.Finding{{ID: "worker_saturation-1", Kind: detect.KindWorkerSaturation, Facts: detect.MustParseFacts(detect.KindWorkerSaturation, map[string]float64{"workers": 4})}}, sources.Site{}, "")
	if find(recs, "pm.max_children") != nil || find(recs, "listen.backlog") != nil {
		t.Errorf("advice without CPU or service time: %+v", recs)
	}
	if !hasNote(notes, "has no CPU measurement") || !hasNote(notes, "missing: S, T") {
		t.Errorf("notes %v", notes)
	}
}

func TestAdviseTimeouts(t *testing.T) {
	// The silent wedge: no read_timeout, no check ever timed out.
	wedge := sources.Site{HealthTimeoutS: 10, HealthFails: 1, HealthIntervalS: 1, ClientTimeoutS: 10}
	recs, _ := advise([]detect.Finding{saturation(16, 0.3, 40, false)}, wedge, "", 3.2)
	rt := find(recs, "php_fastcgi read_timeout")
	if rt == nil || rt.Value != "10s" || !strings.Contains(rt.Why, "silent wedge") || !strings.Contains(rt.Why, "3.2 s (p99)") {
		t.Errorf("read_timeout advice %+v", rt)
	}
	hf := find(recs, "health_fails")
	if hf == nil || hf.Value != "3" || !strings.Contains(hf.Why, "3 x 1 + 10 = 13 s") {
		t.Errorf("health_fails advice %+v", hf)
	}
	ht := find(recs, "health_timeout")
	if ht == nil || ht.Value != "10s" || !strings.Contains(ht.Why, "only the transport's read_timeout") {
		t.Errorf("health_timeout advice %+v", ht)
	}

	// Slow ordinary requests raise the read_timeout above the clients' patience.
	recs, _ = advise(nil, wedge, "", 8)
	if rt := find(recs, "php_fastcgi read_timeout"); rt == nil || rt.Value != "16s" {
		t.Errorf("read_timeout with slow requests %+v", rt)
	}

	// Checks did time out: a read_timeout is in force; keep it.
	recs, _ = advise([]detect.Finding{starved(10, 4096)}, sources.Site{HealthFails: 3}, "", math.NaN())
	if rt := find(recs, "php_fastcgi read_timeout"); rt == nil || !strings.HasPrefix(rt.Why, "Keep it") {
		t.Errorf("read_timeout when checks timed out %+v", rt)
	}
	if hf := find(recs, "health_fails"); hf == nil || !strings.Contains(hf.Why, "the 3 in force is enough") {
		t.Errorf("health_fails %+v", hf)
	}
}

// The backlog's drain target is the timeout detect says a queued check was
// held to, else the clients' patience. A health_timeout that applied to
// nothing (no read_timeout, no check seen failing) is no limit: sizing the
// backlog on it (the obvious reading of the site facts) would contradict
// healthcheck_starved, which says Caddy ignores it once connected.
func TestAdviseBacklogDrainTarget(t *testing.T) {
	sat := saturation(16, 0.3, 40, false)
	for _, tc := range []struct {
		name     string
		findings []detect.Finding
		site     sources.Site
		want     string // in the listen.backlog advice's why; "" for no advice
	}{
		{"checks held to it", []detect.Finding{sat, starved(10, 4096)}, sources.Site{HealthTimeoutS: 30}, "T = 10 s (healthcheck_starved-1, the timeout that applied to the queued check)"},
		{"read_timeout", []detect.Finding{sat}, sources.Site{ReadTimeoutS: 20, HealthTimeoutS: 5}, "T = 20 s (the FastCGI read_timeout (site facts))"},
		{"clients", []detect.Finding{sat}, sources.Site{HealthTimeoutS: 5, ClientTimeoutS: 15}, "T = 15 s (the clients' timeout (site facts; no timeout applies to a queued health check))"},
		{"health_timeout alone", []detect.Finding{sat}, sources.Site{HealthTimeoutS: 5}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, notes := Advise(tc.findings, tc.site, "")
			r := find(recs, "listen.backlog")
			switch {
			case tc.want == "" && (r != nil || !hasNote(notes, "missing: T")):
				t.Errorf("advice %+v, notes %v: want none, T missing", r, notes)
			case tc.want != "" && (r == nil || !strings.Contains(r.Why, tc.want)):
				t.Errorf("advice %+v: want %q", r, tc.want)
			}
		})
	}
}

func TestAdviseListen(t *testing.T) {
	for _, tc := range []struct {
		listen, value, why string
	}{
		{"", "a Unix socket, e.g. /run/php/php-fpm-www.sock", "could not tell"},
		{"/run/php/php8.3-fpm.sock", "/run/php/php8.3-fpm.sock", "Keep the Unix socket"},
		{"127.0.0.1:9000", "a Unix socket instead of 127.0.0.1:9000", "drops the SYNs"},
	} {
		recs, _ := Advise([]detect.Finding{saturation(16, 0.3, 99, true), starved(10, 4096)}, sources.Site{}, tc.listen)
		r := find(recs, "listen")
		if r == nil || r.Value != tc.value || !strings.Contains(r.Why, tc.why) {
			t.Errorf("listen %q: %+v", tc.listen, r)
		}
	}
}

func TestPowerOfTwoBelow(t *testing.T) {
	for x, want := range map[float64]int{0.5: 1, 1: 1, 63.9: 32, 64: 64, 66.7: 64, 133: 128, 25.1: 16} {
		if got := powerOfTwoBelow(x); got != want {
			t.Errorf("powerOfTwoBelow(%v) = %d, want %d", x, got, want)
		}
	}
}

// TestAdviseNeverKeepsABlamedPoolSize: the pool was cut from 8 to 3 and the
// report blames the cut (Little's law: the peak needed 5 workers). The CPU
// was busy, so the CPU rule alone would say "keep 3": the very value the
// report blames. The advice gives the old size back instead; a pool cut
// the report does not blame keeps the CPU rule's answer.
func TestAdviseNeverKeepsABlamedPoolSize(t *testing.T) {
	cut := func(linked bool) detect.Finding {
		f := detect.Finding{ID: "config_change-1", Kind: detect.KindConfigChange,
			Change: &sources.Change{Key: "pm.max_children", Old: "8", New: "3"},
			Facts: detect.MustParseFacts(detect.KindConfigChange, map[string]float64{"old_value": 8, "new_value": 3,
				"workers_needed": 5.2, "peak_php_per_s": 13, "service_time_s": 0.4, "old_pool_held": 1})}
		detect.FactsOf[configchange.ConfigChangeFacts](&f).Linked = linked
		return f
	}
	for _, tt := range []struct {
		name   string
		linked bool
		want   string
	}{
		{"blamed", true, "8"},
		{"not blamed", false, "3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			recs, _ := Advise([]detect.Finding{saturation(3, 0.4, 90, true), cut(tt.linked)}, sources.Site{}, "")
			got := ""
			for _, r := range recs {
				if r.Key == "pm.max_children" {
					got = r.Value
					if tt.linked && !strings.Contains(r.Why, "blames the cut from 8 to 3") {
						t.Errorf("why %q does not name the blamed cut", r.Why)
					}
				}
			}
			if got != tt.want {
				t.Errorf("pm.max_children advice %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAdviseSizesOnThePoolsOwnResources: the cut from 8 to 3 is blamed
// (the peak needed 5.2 workers); the config_change finding sized the pool
// on php-fpm's own processes. The sized value replaces the machine-CPU rule
// and the advice names what bound it; when the host fits no more than the
// blamed 3, no size is recommended (keeping 3 is not advice); without
// per-process series the advice says it could not size on them.
func TestAdviseSizesOnThePoolsOwnResources(t *testing.T) {
	cut := func(sizing map[string]float64) detect.Finding {
		facts := map[string]float64{"old_value": 8, "new_value": 3, "workers_needed": 5.2, "peak_php_per_s": 13,
			"service_time_s": 0.4, "old_pool_held": 1, "risk_direction": 1}
		for k, v := range sizing {
			facts[k] = v
		}
		f := detect.Finding{ID: "config_change-1", Kind: detect.KindConfigChange,
			Change: &sources.Change{Key: "pm.max_children", Old: "8", New: "3"},
			Facts:  detect.MustParseFacts(detect.KindConfigChange, facts)}
		detect.FactsOf[configchange.ConfigChangeFacts](&f).Linked = true
		return f
	}
	for _, tt := range []struct {
		name   string
		sizing map[string]float64
		want   string
		why    []string
	}{
		{"the load binds", map[string]float64{"workers_sized": 8, "workers_fit_memory": 30, "workers_fit_cpu": 40,
			"sized_by_memory": 0, "sized_by_cpu": 0, "sized_holds_peak": 1, "pool_cores_per_busy_worker": 0.05, "pool_mem_per_worker_mib": 60, "pool_mem_resident": 1},
			"8", []string{"Little's law binds", "30 workers by memory and 40 by CPU"}},
		{"memory binds", map[string]float64{"workers_sized": 6, "workers_fit_memory": 6, "workers_fit_cpu": 40,
			"sized_by_memory": 1, "sized_by_cpu": 0, "sized_holds_peak": 1, "pool_mem_per_worker_mib": 120, "pool_mem_resident": 1},
			"6", []string{"Memory binds: 6", "held 120 MiB resident"}},
		{"CPU binds below the need", map[string]float64{"workers_sized": 4, "workers_fit_memory": 30, "workers_fit_cpu": 4,
			"sized_by_memory": 0, "sized_by_cpu": 1, "sized_holds_peak": 0, "pool_cores_per_busy_worker": 0.5},
			"4", []string{"CPU binds: 4", "fewer than the peak needed", "more cores"}},
		{"the host fits only the blamed size", map[string]float64{"workers_sized": 3, "workers_fit_memory": 3, "workers_fit_cpu": 40,
			"sized_by_memory": 1, "sized_by_cpu": 0, "sized_holds_peak": 0, "pool_mem_per_worker_mib": 200, "pool_mem_resident": 1},
			"no size fits this host", []string{"Not 3, though the host fits no more", "memory binds at 3"}},
		{"no per-process series", map[string]float64{"cannot_size_on_pool": 1},
			"8", []string{"Cannot size on php-fpm's own CPU/memory: no per-process series"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The machine's CPU was busy at 90%, mostly other processes:
			// the machine-CPU rule alone would keep the blamed 3.
			recs, _ := Advise([]detect.Finding{saturation(3, 0.4, 90, true), cut(tt.sizing)}, sources.Site{}, "")
			var got *Recommendation
			for i := range recs {
				if recs[i].Key == "pm.max_children" {
					got = &recs[i]
				}
			}
			if got == nil || got.Value != tt.want {
				t.Fatalf("pm.max_children advice %+v, want %q", got, tt.want)
			}
			for _, w := range tt.why {
				if !strings.Contains(got.Why, w) {
					t.Errorf("why %q does not say %q", got.Why, w)
				}
			}
		})
	}
}

// TestAdviseChildrenOnThePoolsOwnCPUAndMemory: 16 workers saturated while
// the machine's CPU was at 90% (the machine-CPU rule would keep 16). With
// php-fpm's own per-process series the advice sizes on them instead: the
// smaller of the memory and CPU fits binds, capped at 4x the pool.
func TestAdviseChildrenOnThePoolsOwnCPUAndMemory(t *testing.T) {
	for _, tt := range []struct {
		name  string
		facts map[string]float64
		want  string
		why   string
	}{
		{"memory binds", map[string]float64{"workers_fit_memory": 22, "workers_fit_cpu": 40, "pool_mem_per_worker_mib": 90, "pool_mem_resident": 1, "pool_cores_per_busy_worker": 0.1}, "22", "Memory binds: 22"},
		{"CPU binds", map[string]float64{"workers_fit_memory": 50, "workers_fit_cpu": 30, "pool_cores_per_busy_worker": 0.25}, "30", "CPU binds: 30"},
		{"capped", map[string]float64{"workers_fit_cpu": 400, "pool_cores_per_busy_worker": 0.02}, "64", "capped at 4x"},
		{"no per-process series: the machine's CPU", nil, "16", "Keep 16"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sat := saturation(16, 0.3, 90, true)
			sf := detect.FactsOf[detect.WorkerSaturationFacts](&sat)
			for k, v := range tt.facts {
				switch k {
				case "workers_fit_memory":
					sf.WorkersFitMemory = detect.Some(int(v))
				case "workers_fit_cpu":
					sf.WorkersFitCPU = detect.Some(int(v))
				case "pool_mem_per_worker_mib":
					sf.PoolMemPerWorkerMiB = detect.Some(v)
				case "pool_mem_resident":
					sf.PoolMemResident = detect.Some(v == 1)
				case "pool_cores_per_busy_worker":
					sf.PoolCoresPerBusyWorker = detect.Some(v)
				}
			}
			recs, _ := Advise([]detect.Finding{sat}, sources.Site{}, "")
			for _, r := range recs {
				if r.Key == "pm.max_children" {
					if r.Value != tt.want || !strings.Contains(r.Why, tt.why) {
						t.Errorf("pm.max_children %s (%s), want %s saying %q", r.Value, r.Why, tt.want, tt.why)
					}
					return
				}
			}
			t.Error("no pm.max_children advice")
		})
	}
}
