package simulate

import (
	"math"
	"strconv"
)

// ProcessModel is php-fpm's own memory and the host's, for a scenario whose
// bundle carries per-process series as two exporters scrape them:
// hipages/php-fpm_exporter's per-child gauges of php-fpm's full status
// (phpfpm_process_*: the last request's %cpu, duration and memory peak, the
// state) and ncabatoff/process-exporter's php-fpm group
// (namedprocess_namegroup_*: CPU seconds, resident memory, processes), with
// node_exporter's node_memory_MemTotal_bytes and MemAvailable_bytes. A
// scenario without one writes none of them.
type ProcessModel struct {
	// WorkerRSSMiB is a child's resident size, MasterRSSMiB the master's.
	WorkerRSSMiB, MasterRSSMiB float64
	// RequestPeakMiB is PHP's memory peak in a request (php-fpm's "last
	// request memory"): its own heap, less than the resident size.
	RequestPeakMiB float64
	// MemTotalMiB is the host's memory; OthersMiB what everything besides
	// php-fpm holds (the OS, Caddy, a search index...).
	MemTotalMiB, OthersMiB float64
}

// MemForPHPMiB is the memory php-fpm could hold: the host's less the others'.
func (m ProcessModel) MemForPHPMiB() float64 { return m.MemTotalMiB - m.OthersMiB }

// WorkersFitMemory is how many children that memory holds beside the master.
func (m ProcessModel) WorkersFitMemory() int {
	return int(math.Floor((m.MemForPHPMiB() - m.MasterRSSMiB) / m.WorkerRSSMiB))
}

// TruthProcesses is what the per-process series measure, from the run's own
// accounting: what a busy worker cost and how many the host holds.
type TruthProcesses struct {
	// CoresPerBusyWorker is PHP's CPU time over its workers' busy time, for
	// the requests PHP finished inside the window.
	CoresPerBusyWorker float64 `json:"cores_per_busy_worker"`
	WorkerRSSMiB       float64 `json:"worker_rss_mib"`
	MemForPHPMiB       float64 `json:"mem_for_php_mib"`
	WorkersFitMemory   int     `json:"workers_fit_memory"`
	// CoresForPHP is the host's cores less what Caddy and the OS used on
	// average over the window; WorkersFitCPU how many busy workers they hold.
	CoresForPHP   float64 `json:"cores_for_php"`
	WorkersFitCPU int     `json:"workers_fit_cpu"`
	// Binds is "memory" or "cpu", whichever fits fewer.
	Binds string `json:"binds"`
}

// childState is what php-fpm's status page keeps of a child's last request.
type childState struct {
	requests      int64
	lastCPUPct    float64
	lastDurUS     float64
	lastMemBytes  float64
	finishedFirst bool
}

// processAccount sums PHP's CPU and busy time of the requests it finished
// in the window, and the other processes' CPU, for the truth.
type processAccount struct {
	cpu, wall        float64
	othersCPU, spans float64
}

const mib = 1 << 20

// requestDone records a finished request on its child (php-fpm's status).
func (s *sim) requestDone(c *child, r *request) {
	if s.sc.Processes == nil {
		return
	}
	wall := float64(s.now-r.phpStart) / float64(second)
	cpu := r.cpu1 + r.cpu2
	c.state.requests++
	c.state.lastDurUS = math.Round(wall * 1e6)
	if wall > 0 {
		c.state.lastCPUPct = math.Round(cpu/wall*100*100) / 100
	}
	// A request's memory peak varies with the page; the child's pid spreads
	// it without drawing on the run's random numbers.
	c.state.lastMemBytes = math.Round(s.sc.Processes.RequestPeakMiB * mib * (0.9 + 0.2*float64(c.pid%7)/6))
	c.state.finishedFirst = true
	if s.now >= s.sc.From.UnixNano() && s.now < s.sc.To.UnixNano() {
		s.procAcct.cpu += cpu
		s.procAcct.wall += wall
	}
}

// sampleProcesses scrapes the per-process series at t; busy is PHP's
// core-seconds so far and others the cores Caddy and the OS used over the
// last minute (or -1 between minutes).
func (s *sim) sampleProcesses(t int64) {
	pm := s.sc.Processes
	if pm == nil {
		return
	}
	m, f := s.metrics, &s.fpm
	const scrape = "tcp://127.0.0.1:9000/status"
	for i, c := range f.kids {
		l := map[string]string{"instance": "10.0.0.5:9253", "job": "phpfpm", "pool": "www", "child": strconv.Itoa(i), "scrape_uri": scrape}
		state, cpu, dur, mem := "Idle", c.state.lastCPUPct, c.state.lastDurUS, c.state.lastMemBytes
		if c.job != nil {
			// php-fpm computes a request's %cpu and memory when it ends:
			// a running child shows 0 and the time it has run so far.
			state, cpu, mem = "Running", 0, 0
			dur = math.Round(float64(t-c.job.phpStart) / 1e3)
		}
		m.childSeries(i, "phpfpm_process_requests", l).add(t, float64(c.state.requests))
		m.childSeries(i, "phpfpm_process_last_request_cpu", l).add(t, cpu)
		m.childSeries(i, "phpfpm_process_last_request_memory", l).add(t, mem)
		m.childSeries(i, "phpfpm_process_request_duration", l).add(t, dur)
		for _, st := range []string{"Idle", "Running"} {
			ls := map[string]string{"state": st}
			for k, v := range l {
				ls[k] = v
			}
			v := 0.0
			if st == state {
				v = 1
			}
			m.childSeries(i, "phpfpm_process_state:"+st, ls).add(t, v)
		}
	}
	// process-exporter: the php-fpm group's CPU counters and memory.
	if m.procCPU[0] == nil {
		g := func(mode string) map[string]string {
			return map[string]string{"instance": "10.0.0.5:9256", "job": "process", "groupname": "php-fpm8.2", "mode": mode}
		}
		m.procCPU[0] = m.proc.series("namedprocess_namegroup_cpu_seconds_total", g("user"))
		m.procCPU[1] = m.proc.series("namedprocess_namegroup_cpu_seconds_total", g("system"))
		mem := g("")
		delete(mem, "mode")
		mem["memtype"] = "resident"
		m.procRSS = m.proc.series("namedprocess_namegroup_memory_bytes", mem)
		n := g("")
		delete(n, "mode")
		m.procN = m.proc.series("namedprocess_namegroup_num_procs", n)
		nl := map[string]string{"instance": "10.0.0.5:9100", "job": "node"}
		m.memTotal = m.node.series("node_memory_MemTotal_bytes", nl)
		m.memAvail = m.node.series("node_memory_MemAvailable_bytes", nl)
	}
	busy := s.cpu.busy
	if dt := float64(t-s.cpu.last) / float64(second); dt > 0 {
		busy += dt * math.Min(float64(len(s.cpu.jobs)), s.cpu.cores)
	}
	m.procCPU[0].add(t, math.Round(busy*0.87*100)/100)
	m.procCPU[1].add(t, math.Round(busy*0.13*100)/100)
	rss := float64(len(f.kids))*pm.WorkerRSSMiB + pm.MasterRSSMiB
	m.procRSS.add(t, math.Round(rss*mib))
	m.procN.add(t, float64(len(f.kids)+1))
	m.memTotal.add(t, pm.MemTotalMiB*mib)
	m.memAvail.add(t, math.Round((pm.MemTotalMiB-pm.OthersMiB-rss)*mib))
}

// childSeries is the series of child slot i (hipages numbers children by
// their place in the status page's list), made at its first scrape.
func (m *metricStore) childSeries(i int, key string, labels map[string]string) *series {
	k := key + "/" + strconv.Itoa(i)
	if s, ok := m.children[k]; ok {
		return s
	}
	if m.children == nil {
		m.children = map[string]*series{}
	}
	name := key
	if j := len("phpfpm_process_state"); len(key) > j && key[:j] == "phpfpm_process_state" {
		name = "phpfpm_process_state"
	}
	s := m.fpm.series(name, labels)
	m.children[k] = s
	return s
}

// truthProcesses is what the per-process series should measure.
func (s *sim) truthProcesses() *TruthProcesses {
	pm := s.sc.Processes
	if pm == nil || s.procAcct.wall == 0 {
		return nil
	}
	t := &TruthProcesses{CoresPerBusyWorker: round3(s.procAcct.cpu / s.procAcct.wall), WorkerRSSMiB: pm.WorkerRSSMiB,
		MemForPHPMiB: pm.MemForPHPMiB(), WorkersFitMemory: pm.WorkersFitMemory()}
	t.CoresForPHP = float64(s.sc.Cores)
	if s.procAcct.spans > 0 {
		t.CoresForPHP -= s.procAcct.othersCPU / s.procAcct.spans
	}
	t.CoresForPHP = round3(t.CoresForPHP)
	t.WorkersFitCPU = int(math.Floor(t.CoresForPHP / t.CoresPerBusyWorker))
	t.Binds = "memory"
	if t.WorkersFitCPU < t.WorkersFitMemory {
		t.Binds = "cpu"
	}
	return t
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
