package simulate

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// sampleWriter is what metricFile.write needs of sources/metrics' Writer.
type sampleWriter interface {
	Sample(name string, labels map[string]string, t time.Time, v float64)
	Close() error
}

// omWriter adapts metrics.Writer (whose Sample reports invalid names) to
// sampleWriter, keeping the first error for Close.
type omWriter struct {
	w   *metrics.Writer
	err error
}

func newSampleWriter(w io.Writer) sampleWriter { return &omWriter{w: metrics.NewWriter(w)} }

func (m *omWriter) Sample(name string, labels map[string]string, t time.Time, v float64) {
	if err := m.w.Sample(name, labels, t, v); err != nil && m.err == nil {
		m.err = err
	}
}

func (m *omWriter) Close() error {
	if m.err != nil {
		return m.err
	}
	return m.w.Close()
}

// series is one labelled time series kept in memory until the end of the run:
// one sample per scrape, so memory grows with simulated time, not with traffic.
type series struct {
	labels map[string]string
	t      []int64
	v      []float64
}

type family struct {
	name   string
	series []*series
}

// metricFile is one OpenMetrics file of the bundle.
type metricFile struct {
	path string
	fams []*family
}

func (f *metricFile) series(name string, labels map[string]string) *series {
	var fam *family
	for _, x := range f.fams {
		if x.name == name {
			fam = x
		}
	}
	if fam == nil {
		fam = &family{name: name}
		f.fams = append(f.fams, fam)
	}
	s := &series{labels: labels}
	fam.series = append(fam.series, s)
	return s
}

func (s *series) add(t int64, v float64) {
	s.t = append(s.t, t)
	s.v = append(s.v, v)
}

// write stores the file gzip-compressed, family by family.
func (f *metricFile) write(dir string, gzipLevel int) (samples int64, nseries int, err error) {
	zw, err := createGz(dir+"/"+f.path, gzipLevel)
	if err != nil {
		return 0, 0, err
	}
	w := newSampleWriter(zw)
	for _, fam := range f.fams {
		for _, s := range fam.series {
			nseries++
			for i, t := range s.t {
				w.Sample(fam.name, s.labels, time.Unix(0, t), s.v[i])
				samples++
			}
		}
	}
	err = w.Close()
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, fmt.Errorf("simulate: writing %s: %w", f.path, err)
	}
	return samples, nseries, nil
}

// metricStore holds every series the run scrapes.
type metricStore struct {
	fpm, caddy, cw, node metricFile

	up, accepted, active, idle, total, lq, maxLQ, lqLen, maxActive, maxReached, slow, since *series
	healthy                                                                                 *series
	cwCPU                                                                                   *series
	overflows                                                                               *series
	nodeCPU                                                                                 [][4]*series // per cpu: user, system, iowait, idle
	nodeBoot                                                                                float64

	// proc is process-exporter's file; it and the per-child and memory
	// series exist only for a scenario with a ProcessModel (processes.go).
	proc                               metricFile
	children                           map[string]*series
	procCPU                            [2]*series
	procRSS, procN, memTotal, memAvail *series

	lastBusy, lastCaddy float64
	cpuPeak             float64
	cpuPeakAt           int64
}

func newMetricStore(cores int) *metricStore {
	m := &metricStore{
		fpm:   metricFile{path: "metrics/phpfpm.om.gz"},
		caddy: metricFile{path: "metrics/caddy.om.gz"},
		cw:    metricFile{path: "metrics/cpu.om.gz"},
		node:  metricFile{path: "metrics/node.om.gz"},
		proc:  metricFile{path: "metrics/process.om.gz"},
	}
	l := func() map[string]string {
		return map[string]string{"instance": "10.0.0.5:9253", "job": "phpfpm", "pool": "www"}
	}
	m.up = m.fpm.series("phpfpm_up", l())
	m.accepted = m.fpm.series("phpfpm_accepted_connections", l())
	m.active = m.fpm.series("phpfpm_active_processes", l())
	m.idle = m.fpm.series("phpfpm_idle_processes", l())
	m.total = m.fpm.series("phpfpm_total_processes", l())
	m.lq = m.fpm.series("phpfpm_listen_queue", l())
	m.maxLQ = m.fpm.series("phpfpm_max_listen_queue", l())
	m.lqLen = m.fpm.series("phpfpm_listen_queue_length", l())
	m.maxActive = m.fpm.series("phpfpm_max_active_processes", l())
	m.maxReached = m.fpm.series("phpfpm_max_children_reached", l())
	m.slow = m.fpm.series("phpfpm_slow_requests", l())
	m.since = m.fpm.series("phpfpm_start_since", l())
	m.healthy = m.caddy.series("caddy_reverse_proxy_upstreams_healthy",
		map[string]string{"instance": "10.0.0.5:2019", "job": "caddy", "upstream": "127.0.0.1:9000"})
	m.cwCPU = m.cw.series("aws_ec2_cpuutilization_average", map[string]string{"instance_id": "i-0b5e7c1d2a3f49e86"})
	for c := range cores {
		var s [4]*series
		for i, mode := range []string{"user", "system", "iowait", "idle"} {
			s[i] = m.node.series("node_cpu_seconds_total",
				map[string]string{"cpu": strconv.Itoa(c), "instance": "10.0.0.5:9100", "job": "node", "mode": mode})
		}
		m.nodeCPU = append(m.nodeCPU, s)
	}
	m.overflows = m.node.series("node_netstat_TcpExt_ListenOverflows", map[string]string{"instance": "10.0.0.5:9100", "job": "node"})
	return m
}

// baseLoad is the host's own CPU use (cores) besides PHP and Caddy.
const baseLoad = 0.06

// sample is a scrape every 15 s; CloudWatch and node CPU once a minute.
func (s *sim) sample() {
	s.push(s.now+15*second, evSample, nil, nil, 0, 0)
	m, f := s.metrics, &s.fpm
	t := s.now
	if f.down {
		m.up.add(t, 0)
	} else {
		m.up.add(t, 1)
		m.accepted.add(t, float64(f.accepted))
		m.active.add(t, float64(f.active))
		m.idle.add(t, float64(len(f.idle)))
		m.total.add(t, float64(len(f.kids)))
		m.lq.add(t, float64(f.queueLen()))
		m.maxLQ.add(t, float64(f.maxQueue))
		m.lqLen.add(t, float64(f.backlog))
		m.maxActive.add(t, float64(f.maxActive))
		m.maxReached.add(t, float64(f.maxReached))
		m.slow.add(t, float64(f.slowReqs))
		m.since.add(t, float64((t-f.started)/second))
		s.sampleProcesses(t)
	}
	h := 0.0
	if s.healthy {
		h = 1
	}
	m.healthy.add(t, h)
	m.overflows.add(t, float64(f.overflows))
	s.st.sampled(s)

	if t%(60*second) != 0 {
		return
	}
	s.cpu.advance(t)
	busy, caddy := s.cpu.busy-m.lastBusy, s.st.caddyCPU-m.lastCaddy
	m.lastBusy, m.lastCaddy = s.cpu.busy, s.st.caddyCPU
	if s.sc.Processes != nil && t > s.sc.From.UnixNano() && t <= s.sc.To.UnixNano() {
		s.procAcct.othersCPU += (caddy + baseLoad*60) / 60
		s.procAcct.spans++
	}
	cores := float64(s.sc.Cores)
	util := math.Min(100, (busy+caddy+baseLoad*60)/(cores*60)*100)
	// CloudWatch stamps a period with its start.
	m.cwCPU.add(t-60*second, math.Round(util*100)/100)
	if util > m.cpuPeak {
		m.cpuPeak, m.cpuPeakAt = util, t-60*second
	}
	for c, ser := range m.nodeCPU {
		w := 1 + 0.03*(float64(c)-float64(len(m.nodeCPU)-1)/2) // cores are not perfectly even
		user := (busy*0.87 + caddy*0.55) / cores * w
		sys := (busy*0.13 + caddy*0.45 + baseLoad*60*0.7) / cores * w
		iow := baseLoad * 60 * 0.3 / cores
		idle := math.Max(0, 60-user-sys-iow)
		for i, v := range []float64{user, sys, iow, idle} {
			prev := m.nodeBoot * []float64{0.05, 0.02, 0.003, 0.927}[i]
			if n := len(ser[i].v); n > 0 {
				prev = ser[i].v[n-1]
			}
			ser[i].add(t, math.Round((prev+v)*100)/100)
		}
	}
}
