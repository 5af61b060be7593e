package rules

import (
	"fmt"
	"github.com/aftermath-forensics/aftermath/prose"
	"math"
	"strconv"
	"strings"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/configchange"
	"github.com/aftermath-forensics/aftermath/sources"
)

// Advice constants.
const (
	// drainFactor is the safety factor k of the backlog advice: a full queue
	// should drain in T/k at the pool's normal service time, not just within T.
	// Under overload the service time rises (CPU contention: in the simulated
	// reference crawl it rose about sixfold), the requests a crawl brings
	// (uncached tools) cost several times an article, a request that calls the
	// site's own API holds two workers, and the health check needs its own
	// service time after the queue. At k = 8 a 10 s timeout leaves a 1.25 s
	// drain, about the second a reader does not notice; the human fix of the
	// reference incident (16 workers, 0.3 s, 10 s: 533 / 8 = 66.7 -> 64) lands
	// on the same value. A queue that only just fits the timeout fails checks
	// as soon as the service time rises.
	drainFactor = 8
	// cpuTarget is the CPU share (percent) the pm.max_children advice aims at
	// when the workers were waiting rather than computing.
	cpuTarget = 70.0
	// maxChildrenFactor caps how far the advice raises pm.max_children at once.
	maxChildrenFactor = 4
	// minHealthFails is the fewest consecutive failures that should mark the
	// only upstream down.
	minHealthFails = 3
)

// Advise computes config advice from the findings' queueing numbers and the
// site facts, each Recommendation with its arithmetic in Why. listen is
// php-fpm's listen address if known ("" if not).
func Advise(findings []detect.Finding, site sources.Site, listen string) ([]Recommendation, []sources.QualityNote) {
	return advise(findings, site, listen, math.NaN())
}

// advise is Advise with the p99 of ordinary PHP durations (NaN if unknown),
// which bounds the read_timeout advice from below.
func advise(findings []detect.Finding, site sources.Site, listen string, p99 float64) ([]Recommendation, []sources.QualityNote) {
	var recs []Recommendation
	var notes []sources.QualityNote
	note := func(t prose.Text) {
		notes = append(notes, sources.Note("advice", sources.SeverityInfo, t))
	}
	sat := firstFinding(findings, detect.KindWorkerSaturation)
	hc := firstFinding(findings, detect.KindHealthcheckStarved)
	lq := firstFinding(findings, detect.KindListenQueueOverflow)

	// W: workers. S: the pool's service time per request: its normal one when
	// known (the safety factor covers how much worse an overload makes it),
	// else the one measured under the incident. sInc is the latter. T: the
	// timeout a queued check is held to.
	var w, s, sInc, t, backlog float64
	// Where each number came from: a finding's id, the site facts, or how
	// the finding measured it (the advice.from message).
	var wFrom, sFrom, tFrom, bFrom prose.Text
	from := func(how, id string) prose.Text {
		return Messages.Say("advice.from", struct{ How, ID string }{how, id})
	}
	sf := detect.FactsOf[detect.WorkerSaturationFacts](sat)
	hf := detect.FactsOf[detect.HealthcheckFacts](hc)
	if sat != nil && sf.Workers > 0 {
		w, wFrom = float64(sf.Workers), from("finding", sat.ID)
	} else if site.Workers > 0 {
		w, wFrom = float64(site.Workers), from("site", "")
	}
	if sat != nil {
		sInc = sf.ServiceTimeS.V
		switch {
		case sf.NormalServiceTimeS.V > 0:
			s, sFrom = sf.NormalServiceTimeS.V, from("normal_service", sat.ID)
		case sInc > 0:
			s, sFrom = sInc, from("busy_service", sat.ID)
		}
	}
	// T is the timeout detect says a queued check was held to. When none
	// applies (no read_timeout: Caddy's FastCGI transport ignores
	// health_timeout once connected) the queue must still drain before the
	// clients give up, as config_change's backlog arithmetic holds it; a
	// configured health_timeout that applied to nothing is no limit.
	ct, ctFinding := detect.CheckTimeout(site, findings)
	switch {
	case ctFinding != nil:
		t, tFrom = ct, from("check_timeout", ctFinding.ID)
	case ct > 0:
		t, tFrom = ct, from("read_timeout", "")
	case site.ClientTimeoutS > 0:
		t, tFrom = site.ClientTimeoutS, from("client_timeout", "")
	}
	switch {
	case hc != nil && hf.Backlog.V > 0:
		backlog, bFrom = hf.Backlog.V, from("finding", hc.ID)
	case lq != nil && detect.FactsOf[detect.ListenQueueFacts](lq).Backlog.V > 0:
		backlog, bFrom = detect.FactsOf[detect.ListenQueueFacts](lq).Backlog.V, from("finding", lq.ID)
	}
	if backlog == 0 && site.Backlog > 0 {
		backlog, bFrom = float64(site.Backlog), from("site", "")
	}

	// listen.backlog: B <= W*T/S, over the safety factor, down to a power of
	// two; then halved while the incident's own service time would keep a full
	// queue longer than half the timeout.
	var b int
	switch {
	case w == 0 || s == 0 || t == 0:
		note(Messages.Say("advice.no_backlog", missing(map[string]bool{"W": w == 0, "S": s == 0, "T": t == 0})))
	default:
		limit := detect.DrainableBacklog(t, s, w)
		target := limit / drainFactor
		b = powerOfTwoBelow(target)
		said := backlogAdvice{W: num(w), WFrom: wFrom, S: num(s), SFrom: sFrom, T: num(t), TFrom: tFrom, Limit: num(limit),
			Factor: drainFactor, Drain: num(t / drainFactor), Target: num(target), B: b}
		if sInc > 0 && sInc != s {
			first := b
			for b > 1 && detect.QueueWait(float64(b), sInc, w) > t/2 {
				b /= 2
			}
			if b != first {
				said.Halved, said.First = true, first
				said.Times, said.FirstWait = fmt.Sprintf("%.1f", sInc/s), num(detect.QueueWait(float64(first), sInc, w))
			}
			said.Incident, said.SInc, said.Wait = true, num(sInc), num(detect.QueueWait(float64(b), sInc, w))
		} else {
			said.Wait = num(detect.QueueWait(float64(b), s, w))
		}
		said.Final = b
		if backlog > 0 {
			sb := s
			if sInc > 0 {
				sb = sInc
			}
			said.InForce, said.BFrom, said.SB, said.InForceWait = num(backlog), bFrom, num(sb), num(backlog*sb/w)
		}
		recs = append(recs, recommend("php-fpm", "listen.backlog", strconv.Itoa(b), Messages.Say("advice.backlog", said)))
	}

	// pm.max_children: on php-fpm's own CPU and memory when per-process
	// series measured them, else only if the machine's CPU had room while
	// every worker was busy (the pool's share is at most the machine's).
	if sat != nil && w > 0 {
		cpu, hasCPU := sf.CPUAvgPct.V, sf.CPUAvgPct.OK
		switch {
		case sf.WorkersFitMemory.OK || sf.WorkersFitCPU.OK:
			recs = append(recs, fitAdvice(sf, w, sat.ID))
		case !hasCPU || cpu <= 0:
			note(Messages.Say("advice.no_cpu", sat.ID))
		case sf.CPUBound.V || cpu >= cpuTarget:
			recs = append(recs, recommend("php-fpm", "pm.max_children", num(w), Messages.Say("advice.children_keep", struct{ W, CPU, ID string }{num(w), num(cpu), sat.ID})))
		default:
			n := int(math.Floor(w * cpuTarget / cpu))
			n = min(n, int(w)*maxChildrenFactor)
			why := Messages.Say("advice.children_grow", struct {
				W, CPU, ID, Target, Exact string
				N, Cap                    int
			}{num(w), num(cpu), sat.ID, num(cpuTarget), num(w * cpuTarget / cpu), n, maxChildrenFactor})
			recs = append(recs, recommend("php-fpm", "pm.max_children", strconv.Itoa(n), why))
		}
	}
	recs = unblamePoolSize(recs, findings)

	// read_timeout: what lets a queued check fail at all.
	switch {
	case ct > 0:
		v := ct
		recs = append(recs, recommend("caddy", "php_fastcgi read_timeout", num(v)+"s", Messages.Say("advice.read_timeout_keep", num(v))))
	default:
		v := site.ClientTimeoutS
		said := struct {
			Known   bool
			V, From string
			P99     string
			HasP99  bool
		}{V: num(v), From: "client"}
		if v == 0 {
			v, said.From = site.HealthTimeoutS, "health_timeout"
		}
		if v == 0 {
			v, said.From = 10, "common"
		}
		if !math.IsNaN(p99) && v < 2*p99 {
			v, said.From = math.Ceil(2*p99), "p99"
		}
		said.V = num(v)
		if !math.IsNaN(p99) {
			said.HasP99, said.P99 = true, num(p99)
		}
		said.Known = site.HealthTimeoutS > 0 || site.HealthFails > 0 || site.HealthURI != ""
		recs = append(recs, recommend("caddy", "php_fastcgi read_timeout", num(v)+"s", Messages.Say("advice.read_timeout_set", said)))
	}

	// health_timeout and health_fails.
	if t > 0 {
		ht := site.HealthTimeoutS
		if ht == 0 {
			ht = t
		}
		said := struct {
			T, S, W, Wait string
			B             int
		}{T: num(t), B: b}
		if b > 0 {
			said.S, said.W, said.Wait = num(s), num(w), num(detect.QueueWait(float64(b), s, w))
		}
		recs = append(recs, recommend("caddy", "health_timeout", num(t)+"s", Messages.Say("advice.health_timeout", said)))
	}
	fails := max(site.HealthFails, minHealthFails)
	interval := site.HealthIntervalS
	failsSaid := struct {
		Fails, InForce       int
		Interval, T, Failing string
		Timed, Enough        bool
	}{Fails: fails, InForce: site.HealthFails, Enough: site.HealthFails > 0 && site.HealthFails >= minHealthFails}
	if interval > 0 && t > 0 {
		failsSaid.Timed, failsSaid.Interval, failsSaid.T, failsSaid.Failing = true, num(interval), num(t), num(float64(fails)*interval+t)
	}
	if hc != nil || site.HealthFails > 0 {
		recs = append(recs, recommend("caddy", "health_fails", strconv.Itoa(fails), Messages.Say("advice.health_fails", failsSaid)))
	}

	// Unix socket or TCP: whether a small backlog fails fast at all.
	recs = append(recs, listenAdvice(listen, b))
	return recs, notes
}

// fitAdvice sizes pm.max_children on php-fpm's own CPU and memory: the
// workers the host fits by memory and by CPU, the smaller binding, capped at
// maxChildrenFactor times the pool.
func fitAdvice(sf *detect.WorkerSaturationFacts, w float64, id string) Recommendation {
	said := struct {
		W, ID, ByMemory, ByCPU, Bound string
		Cores, MiB                    float64
		Resident, Capped              bool
		N, Cap                        int
	}{W: num(w), ID: id, ByMemory: fitText(sf.WorkersFitMemory), ByCPU: fitText(sf.WorkersFitCPU), Cap: maxChildrenFactor,
		Cores: sf.PoolCoresPerBusyWorker.V, MiB: sf.PoolMemPerWorkerMiB.V, Resident: sf.PoolMemResident.V}
	// Called with at least one of the two known, so one of them binds.
	fit := detect.FitOf(sf.WorkersFitMemory.Or(-1), sf.WorkersFitCPU.Or(-1))
	said.N, said.Bound = fit.Fit, fit.Bound
	if limit := int(w) * maxChildrenFactor; said.N > limit {
		said.N, said.Capped = limit, true
	}
	said.N = max(said.N, 1)
	return recommend("php-fpm", "pm.max_children", strconv.Itoa(said.N), Messages.Say("advice.children_fit", said))
}

// listenAdvice says whether php-fpm's listener lets a full backlog fail fast.
func listenAdvice(listen string, b int) Recommendation {
	unix := strings.HasPrefix(listen, "/") || strings.HasPrefix(listen, "unix/") || strings.HasPrefix(listen, "unix:")
	said := struct {
		B      int
		Listen string
	}{b, listen}
	switch {
	case listen == "":
		return recommendSaid("php-fpm", "listen", Messages.Say("advice.value_socket", nil), Messages.Say("advice.listen_unknown", said))
	case unix:
		return recommend("php-fpm", "listen", listen, Messages.Say("advice.listen_unix", said))
	default:
		return recommendSaid("php-fpm", "listen", Messages.Say("advice.value_socket_instead", listen), Messages.Say("advice.listen_tcp", said))
	}
}

// recommend is a recommendation whose reason is t.
func recommend(target, key, value string, t prose.Text) Recommendation {
	return Recommendation{Target: target, Key: key, Value: value, Why: t.String(), WhyText: t}
}

// recommendSaid is a recommendation whose value is said too (not a number
// or a setting's own text).
func recommendSaid(target, key string, value, why prose.Text) Recommendation {
	r := recommend(target, key, value.String(), why)
	r.ValueText = value
	return r
}

// backlogAdvice is the listen.backlog arithmetic, each number as num prints
// it (advice.backlog).
type backlogAdvice struct {
	W, S, T, Limit, Drain, Target, Wait string
	WFrom, SFrom, TFrom, BFrom          prose.Text
	Factor, B, Final                    int
	// Halved: the incident's service time halved B from First.
	Halved           bool
	First            int
	Times, FirstWait string
	// Incident: the wait is told at the incident's service time SInc.
	Incident bool
	SInc     string
	// InForce is the backlog in force ("" when unknown), waiting InForceWait
	// at SB.
	InForce, SB, InForceWait string
}

func firstFinding(fs []detect.Finding, kind detect.Kind) *detect.Finding {
	for i := range fs {
		if fs[i].Kind == kind {
			return &fs[i]
		}
	}
	return nil
}

// powerOfTwoBelow returns the largest power of two <= x (at least 1).
func powerOfTwoBelow(x float64) int {
	b := 1
	for float64(b*2) <= x {
		b *= 2
	}
	return b
}

// num renders a number with at most three significant decimals.
func num(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmtInt(int(v))
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func missing(m map[string]bool) string {
	var out []string
	for _, k := range []string{"W", "S", "T"} {
		if m[k] {
			out = append(out, k)
		}
	}
	return strings.Join(out, ", ")
}

// unblamePoolSize keeps the advice from recommending a pool size the report
// blames: when a configuration change that cut pm.max_children is linked to
// the incident with Little's law's count of the workers the peak needed, a
// recommendation at or below the blamed size, or below that count, becomes
// the old size back (or the workers the peak needed, with a quarter's
// headroom, if more). When the finding sized the pool on php-fpm's own CPU
// and memory, that size replaces any other (the machine's CPU is not the
// pool's), and says which of memory, CPU or the load bound it; when the host
// fits no more than the blamed size, no size is recommended, since keeping
// the blamed one is not advice.
func unblamePoolSize(recs []Recommendation, findings []detect.Finding) []Recommendation {
	for i := range findings {
		f := &findings[i]
		if f.Kind != detect.KindConfigChange || f.Change == nil || f.Change.Key != "pm.max_children" {
			continue
		}
		cf := detect.FactsOf[configchange.ConfigChangeFacts](f)
		if !cf.Linked || !cf.OldValue.OK || !cf.NewValue.OK || cf.NewValue.V >= cf.OldValue.V || !cf.WorkersNeeded.OK {
			continue
		}
		blamed, old := cf.NewValue.V, cf.OldValue.V
		want := math.Max(old, math.Ceil(cf.WorkersNeeded.V*detect.SizingHeadroom))
		said := unblameAdvice{Blamed: num(blamed), ID: f.ID, Old: num(old), Needed: num(cf.WorkersNeeded.V),
			Peak: num(cf.PeakPHPPerS.V), Service: num(cf.ServiceTimeS.V), Want: num(want), Unsized: cf.CannotSizeOnPool.V}
		sized := cf.WorkersSized.OK
		rec := recommend("php-fpm", "pm.max_children", num(want), Messages.Say("advice.children_unblame", said))
		if cf.CannotSizeOnPool.V {
			rec = recommend("php-fpm", "pm.max_children", num(want), Messages.Say("advice.children_unblame_unsized", said))
		}
		if sized {
			said.Sized, said.Want = true, num(float64(cf.WorkersSized.V))
			said.Bound, said.Holds = detect.BoundLoad, cf.SizedHoldsPeak.V
			switch {
			case cf.SizedByMemory.V:
				said.Bound = detect.BoundMemory
			case cf.SizedByCPU.V:
				said.Bound = detect.BoundCPU
			}
			said.ByMemory, said.ByCPU = fitText(cf.WorkersFitMemory), fitText(cf.WorkersFitCPU)
			said.Cores, said.MiB, said.Resident = cf.PoolCoresPerBusyWorker.V, cf.PoolMemPerWorkerMiB.V, cf.PoolMemResident.V
			if float64(cf.WorkersSized.V) <= blamed {
				rec = recommendSaid("php-fpm", "pm.max_children", Messages.Say("advice.value_no_size_fits", nil), Messages.Say("advice.children_no_fit", said))
			} else {
				rec = recommend("php-fpm", "pm.max_children", said.Want, Messages.Say("advice.children_sized", said))
			}
		}
		found := false
		for j := range recs {
			if recs[j].Key != "pm.max_children" {
				continue
			}
			found = true
			// A size above the blamed one that still holds the peak stands,
			// unless the pool's own CPU and memory sized it.
			if v, err := strconv.ParseFloat(recs[j].Value, 64); err == nil && v > blamed && v >= cf.WorkersNeeded.V && !sized {
				continue
			}
			recs[j] = rec
		}
		if !found {
			recs = append(recs, rec)
		}
	}
	return recs
}

// unblameAdvice is the arithmetic of a pool size the report blames
// (advice.children_unblame, children_sized, children_no_fit).
type unblameAdvice struct {
	Blamed, ID, Old, Needed, Peak, Service, Want string
	// Unsized: no per-process series, so the size is not checked against
	// php-fpm's own CPU and memory.
	Unsized bool
	// Sized: Want is the config_change finding's size on php-fpm's own
	// CPU and memory; Bound is what bound it, Holds whether it holds the
	// peak; ByMemory and ByCPU the workers each fits ("" unknown).
	Sized, Holds    bool
	Bound           string
	ByMemory, ByCPU string
	Cores, MiB      float64
	Resident        bool
}

func fitText(m detect.Maybe[int]) string {
	if !m.OK {
		return ""
	}
	return strconv.Itoa(m.V)
}
