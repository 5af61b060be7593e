package rules

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/aftermath-forensics/aftermath/detect"
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
	note := func(format string, args ...any) {
		notes = append(notes, sources.QualityNote{Source: "advice", Severity: sources.SeverityInfo, Message: fmt.Sprintf(format, args...)})
	}
	sat := firstFinding(findings, detect.KindWorkerSaturation)
	hc := firstFinding(findings, detect.KindHealthcheckStarved)
	lq := firstFinding(findings, detect.KindListenQueueOverflow)

	// W: workers. S: the pool's service time per request: its normal one when
	// known (the safety factor covers how much worse an overload makes it),
	// else the one measured under the incident. sInc is the latter. T: the
	// timeout a queued check is held to.
	var w, s, sInc, t, backlog float64
	var wFrom, sFrom, tFrom, bFrom string
	sf := detect.FactsOf[detect.WorkerSaturationFacts](sat)
	hf := detect.FactsOf[detect.HealthcheckFacts](hc)
	if sat != nil && sf.Workers > 0 {
		w, wFrom = float64(sf.Workers), sat.ID
	} else if site.Workers > 0 {
		w, wFrom = float64(site.Workers), "site facts"
	}
	if sat != nil {
		sInc = sf.ServiceTimeS.V
		switch {
		case sf.NormalServiceTimeS.V > 0:
			s, sFrom = sf.NormalServiceTimeS.V, "the pool's normal service time, "+sat.ID
		case sInc > 0:
			s, sFrom = sInc, "measured while all workers were busy, "+sat.ID
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
		t, tFrom = ct, ctFinding.ID+", the timeout that applied to the queued check"
	case ct > 0:
		t, tFrom = ct, "the FastCGI read_timeout (site facts)"
	case site.ClientTimeoutS > 0:
		t, tFrom = site.ClientTimeoutS, "the clients' timeout (site facts; no timeout applies to a queued health check)"
	}
	switch {
	case hc != nil && hf.Backlog.V > 0:
		backlog, bFrom = hf.Backlog.V, hc.ID
	case lq != nil && detect.FactsOf[detect.ListenQueueFacts](lq).Backlog.V > 0:
		backlog, bFrom = detect.FactsOf[detect.ListenQueueFacts](lq).Backlog.V, lq.ID
	}
	if backlog == 0 && site.Backlog > 0 {
		backlog, bFrom = float64(site.Backlog), "site facts"
	}

	// listen.backlog: B <= W*T/S, over the safety factor, down to a power of
	// two; then halved while the incident's own service time would keep a full
	// queue longer than half the timeout.
	var b int
	switch {
	case w == 0 || s == 0 || t == 0:
		note("no listen.backlog advice: it needs the workers (W), their service time (S, from worker_saturation) and the health timeout (T); missing: %s",
			missing(map[string]bool{"W": w == 0, "S": s == 0, "T": t == 0}))
	default:
		limit := detect.DrainableBacklog(t, s, w)
		target := limit / drainFactor
		b = powerOfTwoBelow(target)
		why := fmt.Sprintf("A full queue of B requests waits B x S / W before a worker takes the last one. With W = %s workers (%s), S = %s s (%s) and T = %s s (%s), the queue drains within the timeout while B <= W x T / S = %s x %s / %s = %s. "+
			"aftermath aims for a drain of T / %d = %s s, not T itself (safety factor %d: under overload the service time rises, crawled tools cost several times an article, a self-calling page holds two workers, and the check needs its own service time after the queue): %s / %d = %s, rounded down to a power of two: %d.",
			num(w), wFrom, num(s), sFrom, num(t), tFrom, num(w), num(t), num(s), num(limit),
			drainFactor, num(t/drainFactor), drainFactor, num(limit), drainFactor, num(target), b)
		if sInc > 0 && sInc != s {
			first := b
			for b > 1 && detect.QueueWait(float64(b), sInc, w) > t/2 {
				b /= 2
			}
			if b != first {
				why += fmt.Sprintf(" During the incident the service time was %s s (%.1f times normal): a full queue of %d would have waited %s s, more than half the timeout, so it is halved to %d.",
					num(sInc), sInc/s, first, num(detect.QueueWait(float64(first), sInc, w)), b)
			}
			why += fmt.Sprintf(" At the incident's %s s a full queue of %d waits %d x %s / %s = %s s.", num(sInc), b, b, num(sInc), num(w), num(detect.QueueWait(float64(b), sInc, w)))
		} else {
			why += fmt.Sprintf(" A full queue of %d then waits %d x %s / %s = %s s.", b, b, num(s), num(w), num(detect.QueueWait(float64(b), s, w)))
		}
		if backlog > 0 {
			sb := s
			if sInc > 0 {
				sb = sInc
			}
			why += fmt.Sprintf(" The %s in force (%s) waits %s x %s / %s = %s s.", num(backlog), bFrom, num(backlog), num(sb), num(w), num(backlog*sb/w))
		}
		why += " Overflow beyond it fails fast only on a Unix socket (see listen)."
		recs = append(recs, Recommendation{Target: "php-fpm", Key: "listen.backlog", Value: strconv.Itoa(b), Why: why})
	}

	// pm.max_children: only if the CPU had room while every worker was busy.
	if sat != nil && w > 0 {
		cpu, hasCPU := sf.CPUAvgPct.V, sf.CPUAvgPct.OK
		switch {
		case !hasCPU || cpu <= 0:
			note("no pm.max_children advice: %s has no CPU measurement", sat.ID)
		case sf.CPUBound.V || cpu >= cpuTarget:
			recs = append(recs, Recommendation{Target: "php-fpm", Key: "pm.max_children", Value: num(w),
				Why: fmt.Sprintf("Keep %s: while all %s workers were busy the CPU averaged %s%% (%s), so more children would only queue on the CPU; a rate limit, not more workers, takes the crawl off.",
					num(w), num(w), num(cpu), sat.ID)})
		default:
			n := int(math.Floor(w * cpuTarget / cpu))
			n = min(n, int(w)*maxChildrenFactor)
			why := fmt.Sprintf("All %s workers were busy while the CPU averaged only %s%% (%s): they were waiting, not computing. Throughput grows with workers until the CPU is busy: W x %s%% / %s%% = %s x %s / %s = %s, so %d (capped at %dx the current pool), if memory allows %d children (each may use up to PHP's memory_limit). A larger pool also drains the queue faster: recompute listen.backlog with the new W.",
				num(w), num(cpu), sat.ID, num(cpuTarget), num(cpu), num(w), num(cpuTarget), num(cpu), num(w*cpuTarget/cpu), n, maxChildrenFactor, n)
			recs = append(recs, Recommendation{Target: "php-fpm", Key: "pm.max_children", Value: strconv.Itoa(n), Why: why})
		}
	}
	recs = unblamePoolSize(recs, findings)

	// read_timeout: what lets a queued check fail at all.
	switch {
	case ct > 0:
		v := ct
		recs = append(recs, Recommendation{Target: "caddy", Key: "php_fastcgi read_timeout", Value: num(v) + "s",
			Why: fmt.Sprintf("Keep it: Caddy's FastCGI transport waits for php-fpm until read_timeout once connected, whatever health_timeout says, so read_timeout (%ss) is what lets a check queued in php-fpm fail, and what turns a request queued longer than that into a 504 instead of a reply nobody reads.", num(v))})
	default:
		v := site.ClientTimeoutS
		from := "the clients' timeout: nobody waits longer"
		if v == 0 {
			v, from = site.HealthTimeoutS, "the health_timeout"
		}
		if v == 0 {
			v, from = 10, "a common client patience, the site's being unknown"
		}
		if !math.IsNaN(p99) && v < 2*p99 {
			v, from = math.Ceil(2*p99), "twice the p99 of ordinary PHP durations"
		}
		verb := "Make sure it is set (aftermath could not tell whether it is)"
		if site.HealthTimeoutS > 0 || site.HealthFails > 0 || site.HealthURI != "" {
			verb = "Set it (the site facts give none)"
		}
		recs = append(recs, Recommendation{Target: "caddy", Key: "php_fastcgi read_timeout", Value: num(v) + "s",
			Why: fmt.Sprintf("%s, to %ss, %s: without read_timeout Caddy's FastCGI transport waits for php-fpm as long as it takes once connected, and health_timeout does not cut a connected check short, so a check queued behind a crawl waits minutes and passes: the upstream is never marked down, clients time out, and Caddy logs late 200s with no 5xx at all (a silent wedge).%s",
				verb, num(v), from, p99Text(p99))})
	}

	// health_timeout and health_fails.
	if t > 0 {
		ht := site.HealthTimeoutS
		if ht == 0 {
			ht = t
		}
		why := fmt.Sprintf("Keep health_timeout at the read_timeout (%ss): for php_fastcgi only the transport's read_timeout bounds a connected check, so a different health_timeout only misleads the reader of the config.", num(t))
		if b > 0 {
			why += fmt.Sprintf(" With listen.backlog %d a queued check waits at most %d x %s / %s = %s s, well under it.", b, b, num(s), num(w), num(detect.QueueWait(float64(b), s, w)))
		}
		recs = append(recs, Recommendation{Target: "caddy", Key: "health_timeout", Value: num(t) + "s", Why: why})
	}
	fails := max(site.HealthFails, minHealthFails)
	interval := site.HealthIntervalS
	whyFails := fmt.Sprintf("Marking the only upstream down makes Caddy answer 503 to everyone, so one slow check must not do it: %d consecutive failures", fails)
	if interval > 0 && t > 0 {
		whyFails += fmt.Sprintf(" at health_interval %ss take at least %d x %s + %s = %s s of failing checks", num(interval), fails, num(interval), num(t), num(float64(fails)*interval+t))
	}
	if site.HealthFails > 0 && site.HealthFails >= minHealthFails {
		whyFails += fmt.Sprintf("; the %d in force is enough", site.HealthFails)
	}
	whyFails += "."
	if hc != nil || site.HealthFails > 0 {
		recs = append(recs, Recommendation{Target: "caddy", Key: "health_fails", Value: strconv.Itoa(fails), Why: whyFails})
	}

	// Unix socket or TCP: whether a small backlog fails fast at all.
	recs = append(recs, listenAdvice(listen, b))
	return recs, notes
}

// listenAdvice says whether php-fpm's listener lets a full backlog fail fast.
func listenAdvice(listen string, b int) Recommendation {
	tcpWhy := "On TCP a small backlog does not fail fast: the kernel drops the SYNs of connections beyond it (ListenOverflows rises), Caddy's dials wait until the FastCGI dial timeout (3 s by default) and end in 502, and the health check's own connect is dropped the same way, so the upstream still flaps (in the reference recording with backlog 64 and no rate limit: 25 flaps in five minutes, 1,300 503s and 2,257 502s). A Unix socket refuses at once (EAGAIN): Caddy answers 502 immediately and the check keeps its place. Alternatively serve health_uri from a separate pool (its own listen) so the check is never queued behind the crawl."
	unix := strings.HasPrefix(listen, "/") || strings.HasPrefix(listen, "unix/") || strings.HasPrefix(listen, "unix:")
	backlog := ""
	if b > 0 {
		backlog = fmt.Sprintf(" with listen.backlog %d", b)
	}
	switch {
	case listen == "":
		return Recommendation{Target: "php-fpm", Key: "listen", Value: "a Unix socket, e.g. /run/php/php-fpm-www.sock",
			Why: "aftermath could not tell whether php-fpm listens on a Unix socket or TCP. If it is a socket, keep it: overflow" + backlog + " fails at once. " + tcpWhy}
	case unix:
		return Recommendation{Target: "php-fpm", Key: "listen", Value: listen,
			Why: "Keep the Unix socket: when its backlog" + backlog + " is full, connect fails at once (EAGAIN), so Caddy answers 502 immediately instead of waiting for a dial timeout, and the health check is refused rather than queued."}
	default:
		return Recommendation{Target: "php-fpm", Key: "listen", Value: "a Unix socket instead of " + listen,
			Why: "php-fpm listens on TCP (" + listen + "). " + tcpWhy}
	}
}

func p99Text(p99 float64) string {
	if math.IsNaN(p99) {
		return ""
	}
	return fmt.Sprintf(" Ordinary PHP requests before the crawl took up to %s s (p99), well within it.", num(p99))
}

func firstFinding(fs []detect.Finding, kind string) *detect.Finding {
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
// headroom, if more).
func unblamePoolSize(recs []Recommendation, findings []detect.Finding) []Recommendation {
	for i := range findings {
		f := &findings[i]
		if f.Kind != detect.KindConfigChange || f.Change == nil || f.Change.Key != "pm.max_children" {
			continue
		}
		cf := detect.FactsOf[detect.ConfigChangeFacts](f)
		if !cf.Linked || !cf.OldValue.OK || !cf.NewValue.OK || cf.NewValue.V >= cf.OldValue.V || !cf.WorkersNeeded.OK {
			continue
		}
		blamed, old := cf.NewValue.V, cf.OldValue.V
		want := math.Max(old, math.Ceil(cf.WorkersNeeded.V*blameHeadroom))
		why := fmt.Sprintf("Not %s: %s blames the cut from %s to %s. By Little's law the peak needed %s busy workers (%s requests a second at %s s each), so %s: the old size back, or the workers the peak needed with a quarter's headroom if that is more, if memory allows that many children (each may use up to PHP's memory_limit).",
			num(blamed), f.ID, num(old), num(blamed), num(cf.WorkersNeeded.V), num(cf.PeakPHPPerS.V), num(cf.ServiceTimeS.V), num(want))
		found := false
		for j := range recs {
			if recs[j].Key != "pm.max_children" {
				continue
			}
			found = true
			// A size above the blamed one that still holds the peak stands.
			if v, err := strconv.ParseFloat(recs[j].Value, 64); err == nil && v > blamed && v >= cf.WorkersNeeded.V {
				continue
			}
			recs[j] = Recommendation{Target: "php-fpm", Key: "pm.max_children", Value: num(want), Why: why}
		}
		if !found {
			recs = append(recs, Recommendation{Target: "php-fpm", Key: "pm.max_children", Value: num(want), Why: why})
		}
	}
	return recs
}

// blameHeadroom is the margin over the workers a peak kept busy that a
// restored pool is sized with: the next peak is not the last one's.
const blameHeadroom = 1.25
