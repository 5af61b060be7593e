package configchange

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/changes"
)

// backlogTest: the worst queue wait B*S/W before and after, against the
// health timeout, and whether the queue ever passed the old cap.
func backlogTest(a *assessment, q QueueFacts) {
	old, ok1 := settingValue(a.c.Old, a.k)
	nw, ok2 := settingValue(a.c.New, a.k)
	if !ok1 || !ok2 {
		a.quantText = "The values are not numbers: no arithmetic."
		return
	}
	W, S := float64(q.Workers), q.ServiceTimeS
	var sent []string
	haveRate := W > 0 && S > 0
	limit, limitName := q.HealthTimeoutS, "health timeout"
	if limit <= 0 && q.ClientTimeoutS > 0 {
		limit, limitName = q.ClientTimeoutS, "client timeout"
	}
	if haveRate {
		wb, wa := QueueWait(old, S, W), QueueWait(nw, S, W)
		a.facts.WaitBeforeS = Some(round(wb, 2))
		a.facts.WaitAfterS = Some(round(wa, 2))
		a.facts.Workers = Some(q.Workers)
		a.facts.ServiceTimeS = Some(S)
		s := fmt.Sprintf("With %s workers at %s per request, a full queue now holds %s of work", fmtInt(q.Workers), fmtSecTrim(S), fmtSecTrim(wa))
		if limit > 0 {
			// Which limit the wait was held against is which of the two
			// facts is stated: a health timeout nobody configured is not 0.
			if limitName == "health timeout" {
				a.facts.HealthTimeoutS = Some(limit)
			} else {
				a.facts.ClientTimeoutS = Some(limit)
			}
			s += fmt.Sprintf(" against a %s %s", fmtSecTrim(limit), limitName)
		}
		s += fmt.Sprintf(" (it held %s before)", fmtSecTrim(wb))
		sent = append(sent, s)
		switch {
		case limit <= 0:
			a.quant = 0.6
		case a.risk >= 0 && wb <= limit && wa > limit:
			a.quant = 1
		case a.risk >= 0 && wb > limit:
			a.quant = 0.7
		case a.risk >= 0:
			a.quant = 0.3
		case wa <= limit: // lowered, and now safe
			a.quant = 1
		default:
			a.quant = 0.5
		}
	} else {
		sent = append(sent, "Workers or service time unknown: the queue wait B*S/W could not be computed")
		a.quant = 0.5
	}
	peak, passedAt, reachedAt := queueStats(q, old, nw)
	if peak > 0 {
		a.facts.QueuePeak = Some(peak)
		passed := peak > old
		a.facts.QueuePassedOldCap = Some(passed)
		if a.risk > 0 && !passed {
			a.quant = 0
			a.notLinked = fmt.Sprintf("the queue peaked at %s and never passed the old cap of %s, so the old cap would have changed nothing",
				fmtNum(peak), fmtNum(old))
		}
		if a.risk > 0 && passed {
			s := "the queue passed " + fmtNum(old)
			if !passedAt.IsZero() {
				s += " at " + clockIn(passedAt, q.Loc)
			}
			if !reachedAt.IsZero() {
				s += " and reached " + fmtNum(nw) + " at " + clockIn(reachedAt, q.Loc)
			} else {
				s += " and peaked at " + fmtNum(peak)
			}
			if haveRate {
				wp := QueueWait(peak, S, W)
				a.facts.WaitAtPeakS = Some(round(wp, 2))
				if reachedAt.IsZero() {
					s += fmt.Sprintf(" (%s of waiting)", fmtSecTrim(wp))
				}
			}
			sent = append(sent, s)
		}
	} else if a.risk > 0 && len(q.Queue) == 0 {
		// Whether the old cap would have held the same incident is the
		// verdict; without the queue series it cannot be given.
		a.cannotJudge = "could not judge: whether the old cap of " + fmtNum(old) + " would have held needs php-fpm's listen queue series (phpfpm_listen_queue), which the evidence lacks"
		sent = append(sent, "no queue depth was measured, so whether the queue passed the old cap is unknown")
	}
	a.quantText = sentences(sent)
}

// workersTest judges a pool that got smaller or larger by Little's law on
// the incident's own numbers: at the peak, the requests a second that needed
// PHP times the service time is the workers the load kept busy. A cut
// enabled the incident when the old pool would have held that load and the
// new one could not; when neither could, the load alone overran the pool;
// when the new one could, the cut played no part. Two full-queue waits are
// no verdict: both may be past every timeout.
func workersTest(a *assessment, q QueueFacts) {
	old, ok1 := settingValue(a.c.Old, a.k)
	nw, ok2 := settingValue(a.c.New, a.k)
	S := q.ServiceTimeS
	if !ok1 || !ok2 || old <= 0 || nw <= 0 || S <= 0 {
		a.quantText = "Service time or values unknown: no arithmetic."
		return
	}
	a.facts.ServiceTimeS = Some(S)
	if q.PeakPHPPerS <= 0 {
		a.quantText = fmt.Sprintf("Capacity went from %s to %s requests per second at %s per request; the load at the peak is unknown (no access log), so whether the old pool would have held cannot be said.",
			fmtNum(math.Round(LittleRate(old, S))), fmtNum(math.Round(LittleRate(nw, S))), fmtSecTrim(S))
		if a.risk > 0 {
			a.cannotJudge = "could not judge: whether the old pool would have held needs the requests that reached PHP at the peak, from the access log, which the evidence lacks"
		}
		return
	}
	lambda := q.PeakPHPPerS
	need := LittleHeld(lambda, S)
	a.facts.PeakPHPPerS = Some(round(lambda, 2))
	a.facts.WorkersNeeded = Some(round(need, 1))
	a.facts.OldPoolHeld = Some(need <= old)
	s := fmt.Sprintf("By Little's law, at the peak (%s from %s, the proxy's failures and their retries counted as PHP's) %s requests a second needed PHP at %s each: %s busy workers, against %s before the change and %s after it",
		spanText(demandSpan), clockIn(q.PeakAt, q.Loc), fmtNum(round(lambda, 1)), fmtSecTrim(S), fmtNum(round(need, 1)), fmtNum(old), fmtNum(nw))
	switch {
	case a.risk > 0 && need <= old && need > nw:
		a.quant = 1
		s += fmt.Sprintf(": the old pool of %s would have held this load, the new %s could not", fmtNum(old), fmtNum(nw))
	case a.risk > 0 && need > old:
		a.quant = 0.5
		s += fmt.Sprintf(": the old pool of %s would not have held it either; the cut made the shortfall worse", fmtNum(old))
	case a.risk > 0:
		a.quant = 0
		a.notLinked = fmt.Sprintf("by Little's law the peak load kept %s workers busy (%s requests a second at %s each), within the new pool of %s: the cut from %s played no part",
			fmtNum(round(need, 1)), fmtNum(round(lambda, 1)), fmtSecTrim(S), fmtNum(nw), fmtNum(old))
	case need <= nw:
		a.quant = 1
		s += fmt.Sprintf(": the new pool of %s holds it", fmtNum(nw))
	default:
		s += fmt.Sprintf(": the new pool of %s would not hold it either", fmtNum(nw))
	}
	a.quantText = s + "." + loadText(a, q, lambda)
	floor := 0.0
	if a.risk > 0 {
		floor = old
	}
	sz := sizing(q.Resources, need, floor)
	sz.state(a.facts)
	a.quantText += " " + Messages.Say("config_change.sizing", sz).String()
}

// loadText names the load that filled the pool beside the change that let
// it: the trigger found, else the demand for PHP against its usual over the
// hour before the load could rise into the onset.
func loadText(a *assessment, q QueueFacts, lambda float64) string {
	if a.risk <= 0 || a.quant == 0 {
		return ""
	}
	if q.UsualPHPPerS > 0 {
		a.facts.UsualPHPPerS = Some(round(q.UsualPHPPerS, 2))
	}
	switch {
	case q.LoadTrigger != "":
		return fmt.Sprintf(" The load that filled the pool: %s, the trigger; the cut is what let it fail.", q.LoadTrigger)
	case q.UsualPHPPerS <= 0:
		return ""
	case lambda > arrivalsFlat*q.UsualPHPPerS:
		return fmt.Sprintf(" The load that filled the pool was demand for PHP rising from a usual %s requests a second (%s to %s) to %s: the trigger, and the cut is what let it fail.",
			fmtNum(round(q.UsualPHPPerS, 1)), clockIn(q.Onset.Add(-demandLead-time.Hour), q.Loc), clockIn(q.Onset.Add(-demandLead), q.Loc), fmtNum(round(lambda, 1)))
	}
	return fmt.Sprintf(" Demand for PHP did not rise (a usual %s requests a second from %s to %s, %s at the peak): the ordinary load filled the smaller pool.",
		fmtNum(round(q.UsualPHPPerS, 1)), clockIn(q.Onset.Add(-demandLead-time.Hour), q.Loc), clockIn(q.Onset.Add(-demandLead), q.Loc), fmtNum(round(lambda, 1)))
}

// timeoutTest: would the check have survived the observed queue wait under
// the old timeout, and does it fail under the new one?
func timeoutTest(a *assessment, q QueueFacts) {
	old, ok1 := settingValue(a.c.Old, a.k)
	nw, ok2 := settingValue(a.c.New, a.k)
	if !ok1 || !ok2 {
		a.quantText = "The timeouts are not durations: no arithmetic."
		return
	}
	var note string
	if strings.HasPrefix(changes.CanonicalKey(a.c.Key), "php_fastcgi.") && a.k.name == "health_timeout" {
		// design.md: a connected FastCGI check is cut short by read_timeout only.
		a.mech *= 0.7
		note = " Behind php_fastcgi the transport's read_timeout, not health_timeout, is what fails a queued check."
	}
	peak := math.Max(q.QueuePeak, queueMax(q.Queue))
	if q.Workers <= 0 || q.ServiceTimeS <= 0 || peak <= 0 {
		a.quantText = "The queue wait in the incident is unknown: no arithmetic." + note
		if peak <= 0 && a.risk > 0 {
			a.cannotJudge = "could not judge: whether the check would have survived the old timeout needs the queue wait, from php-fpm's listen queue series (phpfpm_listen_queue), which the evidence lacks"
		}
		return
	}
	w := QueueWait(peak, q.ServiceTimeS, float64(q.Workers))
	a.facts.WaitAtPeakS = Some(round(w, 2))
	s := fmt.Sprintf("At its peak of %s the queue held %s of work; the timeout went from %s to %s", fmtNum(peak), fmtSecTrim(w), timeoutText(old), timeoutText(nw))
	switch {
	case a.risk > 0 && w > nw && w <= old:
		a.quant = 1
		s += ": the check would have survived under the old timeout"
	case a.risk > 0 && w > old:
		a.quant = 0.5
		s += ": it would have failed under the old one too"
	case a.risk > 0:
		a.quant = 0
		a.notLinked = fmt.Sprintf("the queue never held more than %s of work, under both the old (%s) and the new (%s) timeout", fmtSecTrim(w), timeoutText(old), timeoutText(nw))
	case a.risk < 0 && w <= nw:
		a.quant = 1
	}
	a.quantText = s + "." + note
}

// queueStats: the deepest queue, when it first passed old, when it first
// reached (99% of) nw.
func queueStats(q QueueFacts, old, nw float64) (peak float64, passedAt, reachedAt time.Time) {
	pts := append([]QueuePoint(nil), q.Queue...)
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })
	peak = q.QueuePeak
	for _, p := range pts {
		peak = math.Max(peak, p.Depth)
		if passedAt.IsZero() && p.Depth > old {
			passedAt = p.T
		}
		if reachedAt.IsZero() && nw > old && p.Depth >= 0.99*nw {
			reachedAt = p.T
		}
	}
	return peak, passedAt, reachedAt
}

func queueMax(pts []QueuePoint) float64 {
	m := 0.0
	for _, p := range pts {
		m = math.Max(m, p.Depth)
	}
	return m
}

// serviceTimeSame: PHP's median time per request after a change at most this
// many times the one before is no change: the page mix of one hour against
// another moves the median by about this much.
const serviceTimeSame = 1.25

// serviceTimeSpan is how far on each side of a change PHP's time is read.
const serviceTimeSpan = 3 * time.Hour

// serviceTimeTest: a change whose mechanism is PHP's time per request (a new
// PHP runtime, the opcode cache) can have enabled the incident only if PHP
// got slower across it; if not, the same load would have failed the same way
// with the old value, and the change is ruled out. PHP's own time (minutes
// without a queue) in the hours before the change against those after it, up
// to the onset.
func serviceTimeTest(a *assessment, q QueueFacts) {
	if q.PHPTimes == nil {
		a.quantText = "No access log: PHP's time per request across the change is unknown."
		a.cannotJudge = "could not judge: whether PHP got slower across the change needs the access log's PHP answers on both sides of it"
		return
	}
	at := a.c.Time
	to := at.Add(serviceTimeSpan)
	if !q.Onset.IsZero() && q.Onset.Before(to) {
		to = q.Onset
	}
	before, after := q.PHPTimes(at.Add(-serviceTimeSpan), at), q.PHPTimes(at, to)
	if before.N < minServiceSamples || after.N < minServiceSamples {
		a.quantText = fmt.Sprintf("The access log holds %s PHP answers in the %s before the change and %s after it (minutes without a queue): too few to compare.",
			fmtInt(before.N), spanText(serviceTimeSpan), fmtInt(after.N))
		a.cannotJudge = "could not judge: whether PHP got slower across the change needs PHP's answers on both sides of it, which the access log does not hold"
		return
	}
	mb, ma := before.Quantile(0.5), after.Quantile(0.5)
	a.facts.PHPMedianBeforeS, a.facts.PHPMedianAfterS = Some(round(mb, 3)), Some(round(ma, 3))
	if ma <= serviceTimeSame*mb {
		a.quant = 0
		a.notLinked = fmt.Sprintf("PHP did not get slower across it (median %s per request over %s answers before it, %s over %s after it up to the onset, minutes without a queue), so the same load would have failed the same way with the old value",
			fmtSecTrim(mb), fmtInt(before.N), fmtSecTrim(ma), fmtInt(after.N))
		return
	}
	a.quant = 0.8
	a.quantText = fmt.Sprintf("PHP's median time per request rose from %s before it to %s after it (minutes without a queue): it may have added to the load; whether the old value would have held is not known.",
		fmtSecTrim(mb), fmtSecTrim(ma))
}
