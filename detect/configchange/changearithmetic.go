package configchange

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources/changes"
)

// backlogTest: the worst queue wait B*S/W before and after, against the
// health timeout, and whether the queue ever passed the old cap.
func backlogTest(a *assessment, q QueueFacts) {
	old, ok1 := settingValue(a.c.Old, a.k)
	nw, ok2 := settingValue(a.c.New, a.k)
	if !ok1 || !ok2 {
		a.quantText = detect.Messages.Say("config_change.backlog.not_numbers", nil)
		return
	}
	W, S := float64(q.Workers), q.ServiceTimeS
	var sent []prose.Text
	haveRate := W > 0 && S > 0
	limit, limitName := q.HealthTimeoutS, "health timeout"
	if limit <= 0 && q.ClientTimeoutS > 0 {
		limit, limitName = q.ClientTimeoutS, "client timeout"
	}
	if haveRate {
		wb, wa := detect.QueueWait(old, S, W), detect.QueueWait(nw, S, W)
		a.facts.WaitBeforeS = detect.Some(detect.Round(wb, 2))
		a.facts.WaitAfterS = detect.Some(detect.Round(wa, 2))
		a.facts.Workers = detect.Some(q.Workers)
		a.facts.ServiceTimeS = detect.Some(S)
		wait := struct {
			Workers                       int
			Service, After, Before, Limit prose.Text
			HasLimit, Client              bool
		}{Workers: q.Workers, Service: secsText(S), After: secsText(wa), Before: secsText(wb)}
		if limit > 0 {
			// Which limit the wait was held against is which of the two
			// facts is stated: a health timeout nobody configured is not 0.
			if limitName == "health timeout" {
				a.facts.HealthTimeoutS = detect.Some(limit)
			} else {
				a.facts.ClientTimeoutS = detect.Some(limit)
			}
			wait.HasLimit, wait.Client, wait.Limit = true, limitName != "health timeout", secsText(limit)
		}
		sent = append(sent, detect.Messages.Say("config_change.backlog.wait", wait))
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
		sent = append(sent, detect.Messages.Say("config_change.backlog.no_rate", nil))
		a.quant = 0.5
	}
	peak, passedAt, reachedAt := queueStats(q, old, nw)
	if peak > 0 {
		a.facts.QueuePeak = detect.Some(peak)
		passed := peak > old
		a.facts.QueuePassedOldCap = detect.Some(passed)
		if a.risk > 0 && !passed {
			a.quant = 0
			a.notLinked = detect.Messages.Say("config_change.backlog.never_passed", struct{ Peak, Old float64 }{peak, old})
		}
		if a.risk > 0 && passed {
			passing := struct {
				Old, New, Peak               float64
				PassedAt, ReachedAt          time.Time
				HasPassed, HasReached, Waits bool
				Wait                         prose.Text
			}{Old: old, New: nw, Peak: peak, PassedAt: passedAt.In(q.Loc), ReachedAt: reachedAt.In(q.Loc),
				HasPassed: !passedAt.IsZero(), HasReached: !reachedAt.IsZero()}
			if haveRate {
				wp := detect.QueueWait(peak, S, W)
				a.facts.WaitAtPeakS = detect.Some(detect.Round(wp, 2))
				if reachedAt.IsZero() {
					passing.Waits, passing.Wait = true, secsText(wp)
				}
			}
			sent = append(sent, detect.Messages.Say("config_change.backlog.passed", passing))
		}
	} else if a.risk > 0 && len(q.Queue) == 0 {
		// Whether the old cap would have held the same incident is the
		// verdict; without the queue series it cannot be given.
		a.cannotJudge = detect.Messages.Say("config_change.backlog.cannot_judge", old)
		sent = append(sent, detect.Messages.Say("config_change.backlog.no_depth", nil))
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
	// The arrivals are the access log's, so the time is its requests' too.
	S := q.ServiceTimeS
	if q.LoggedServiceTimeS > 0 {
		S = detect.Round(q.LoggedServiceTimeS, 3)
	}
	if !ok1 || !ok2 || old <= 0 || nw <= 0 || S <= 0 {
		a.quantText = detect.Messages.Say("config_change.workers.unknown", nil)
		return
	}
	a.facts.ServiceTimeS = detect.Some(S)
	if S != q.ServiceTimeS && q.ServiceTimeS > 0 {
		a.facts.PoolServiceTimeS = detect.Some(detect.Round(q.ServiceTimeS, 3))
	}
	if q.PeakPHPPerS <= 0 {
		a.quantText = detect.Messages.Say("config_change.workers.no_load", struct {
			Old, New float64
			Service  prose.Text
		}{math.Round(detect.LittleRate(old, S)), math.Round(detect.LittleRate(nw, S)), secsText(S)})
		if a.risk > 0 {
			a.cannotJudge = detect.Messages.Say("config_change.workers.cannot_judge", nil)
		}
		return
	}
	lambda := q.PeakPHPPerS
	need := detect.LittleHeld(lambda, S)
	a.facts.PeakPHPPerS = detect.Some(detect.Round(lambda, 2))
	a.facts.WorkersNeeded = detect.Some(detect.Round(need, 1))
	little := struct {
		Span, Service, Load prose.Text
		Sizing, Queue       prose.Text
		// PoolService is the saturated pool's time a connection when
		// Service is the logged requests' own instead (health checks
		// left out); empty when they are the same.
		PoolService            prose.Text
		HasPoolService         bool
		PeakAt                 time.Time
		Lambda, Need, Old, New float64
		Verdict                string
		HasLoad, HasQueue      bool
		// Burst: the span's average fit the pool the verdict says was
		// short; its queue second by second did not.
		Burst bool
		// Overflowed: the old pool's burst overflowed the backlog (its
		// full queue refused connections), not only queued.
		Overflowed bool
	}{Span: spanSaid(demandSpan), Service: secsText(S), PoolService: poolServiceText(a.facts), HasPoolService: a.facts.PoolServiceTimeS.OK, PeakAt: q.PeakAt.In(q.Loc),
		Lambda: detect.Round(lambda, 1), Need: detect.Round(need, 1), Old: old, New: nw}
	// A span's average hides a burst: the queue the load built second by
	// second, up to the first failure told, is run with each size and held
	// against the clients' timeout.
	qw, queued := queueWaits(q, old, nw, S)
	if queued {
		a.facts.OldPoolLongestWaitS = detect.Some(detect.Round(qw.Old, 1))
		a.facts.NewPoolLongestWaitS = detect.Some(detect.Round(qw.New, 1))
		a.facts.ClientTimeoutS = detect.Some(qw.Limit)
		if qw.Backlog > 0 {
			a.facts.QueueBacklog = detect.Some(qw.Backlog)
			if qw.OldBacklog > 0 {
				a.facts.OldPoolBacklog = detect.Some(qw.OldBacklog)
			}
			a.facts.OldPoolRefused = detect.Some(qw.OldRefused)
			a.facts.NewPoolRefused = detect.Some(qw.NewRefused)
		}
		if qw.OwnService > 0 {
			a.facts.QueueServiceTimeS = detect.Some(qw.OwnService)
		}
		little.Queue, little.HasQueue = detect.Messages.Say("config_change.workers.queue", qw), true
	}
	oldShort := need > old || (queued && qw.short(qw.Old, qw.OldRefused))
	newShort := need > nw || (queued && qw.short(qw.New, qw.NewRefused))
	a.facts.OldPoolHeld = detect.Some(!oldShort)
	switch {
	case a.risk > 0 && !oldShort && newShort:
		a.quant = 1
		little.Verdict, little.Burst = "old_held", need <= nw
	case a.risk > 0 && oldShort:
		a.quant = 0.5
		little.Verdict, little.Burst, little.Overflowed = "old_short", need <= old, queued && qw.OldRefused > 0
	case a.risk > 0:
		a.quant = 0
		a.notLinked = detect.Messages.Say("config_change.workers.played_no_part", struct {
			Need, Lambda, New, Old float64
			Service                prose.Text
			Queue                  queueRun
			HasQueue               bool
		}{detect.Round(need, 1), detect.Round(lambda, 1), nw, old, secsText(S), qw, queued})
	case !newShort:
		a.quant = 1
		little.Verdict = "new_holds"
	default:
		little.Verdict = "new_short"
	}
	little.Load = loadText(a, q, lambda)
	little.HasLoad = said(little.Load)
	floor := 0.0
	if a.risk > 0 {
		floor = old
	}
	sz := sizing(q.Resources, need, floor)
	sz.state(a.facts)
	little.Sizing = detect.Messages.Say("config_change.sizing", sz)
	a.quantText = detect.Messages.Say("config_change.workers.little", little)
}

// poolServiceText is the saturated pool's time a connection, said beside
// the logged requests' own when the arithmetic used theirs.
func poolServiceText(f *ConfigChangeFacts) prose.Text {
	if !f.PoolServiceTimeS.OK {
		return prose.Text{}
	}
	return secsText(f.PoolServiceTimeS.V)
}

// queueRun is the longest wait of the load's queue second by second under
// the old and the new pool size (QueueFacts.PHPArrivals), against the
// clients' timeout Limit: the data of config_change.workers.queue.
type queueRun struct {
	Old, New, OldSize, NewSize, Limit float64
	// OwnService is PHP's own mean time per request before the onset the
	// queue drained at (0: too few answers there; the saturation's S).
	OwnService  float64
	From, Until time.Time
	// OldAt and NewAt are when each longest wait was reached (zero: the
	// queue never formed).
	OldAt, NewAt time.Time
	// Backlog is the listen queue's cap the queue ran against (0: unknown,
	// the queue unbounded); OldBacklog the old size's when the same commit
	// changed it too (0: Backlog); OldRefused and NewRefused the
	// connections a full queue refused with each size (none when it is
	// unknown).
	Backlog, OldBacklog    int
	OldRefused, NewRefused int
}

// OldCap is the listen queue's cap the old pool size ran against.
func (r queueRun) OldCap() int {
	if r.OldBacklog > 0 {
		return r.OldBacklog
	}
	return r.Backlog
}

// short: a pool size did not hold the load's queue, which waited past the
// clients' timeout or overflowed the backlog.
func (r queueRun) short(longest float64, refused int) bool {
	return longest > r.Limit || refused > 0
}

// queueWaits runs the load's queue with old and nw workers at S seconds a
// request; false when the per-second load or the clients' timeout is
// unknown.
func queueWaits(q QueueFacts, old, nw, S float64) (queueRun, bool) {
	if len(q.PHPArrivals) == 0 || q.ClientTimeoutS <= 0 {
		return queueRun{}, false
	}
	r := queueRun{OldSize: old, NewSize: nw, Limit: q.ClientTimeoutS, From: q.ArrivalsFrom.In(q.Loc), Until: q.ArrivalsUntil.In(q.Loc)}
	// The queue drains at PHP's own time per request, read where nothing
	// queued before the onset; the saturation's S (busy workers over
	// completions) also counts the seconds a full pool stood idle while the
	// proxy held its upstream down. Not when PHP got slower at the onset
	// (a service-time regression found): then the time before it is not the
	// incident's, and the saturation's S is.
	if q.PHPTimes != nil && !q.Onset.IsZero() && !q.SlowerAtOnset {
		if h := q.PHPTimes(q.ArrivalsFrom, q.Onset); h.N >= detect.MinServiceSamples {
			S, r.OwnService = h.Mean(), detect.Round(h.Mean(), 3)
		}
	}
	at := func(i int) time.Time {
		if i < 0 {
			return time.Time{}
		}
		return q.ArrivalsFrom.Add(time.Duration(i) * time.Second).In(q.Loc)
	}
	// Each size runs against its own configuration's backlog: the one in
	// force during the incident, or for the old size the one before the
	// change when the same commit changed it too. A full queue refuses
	// what comes next, so it waits no longer than a full queue's wait, and
	// what it refused failed however short that is.
	backlog := float64(max(q.Backlog, 0))
	oldBacklog := backlog
	if q.BacklogBefore > 0 && q.Backlog > 0 {
		oldBacklog, r.OldBacklog = float64(q.BacklogBefore), q.BacklogBefore
	}
	var i, j int
	var oldRefused, newRefused float64
	r.Old, i, oldRefused = detect.LongestQueueWait(q.PHPArrivals, 1, S, old, oldBacklog)
	r.New, j, newRefused = detect.LongestQueueWait(q.PHPArrivals, 1, S, nw, backlog)
	r.OldAt, r.NewAt = at(i), at(j)
	r.Old, r.New = detect.Round(r.Old, 1), detect.Round(r.New, 1)
	r.Backlog, r.OldRefused, r.NewRefused = q.Backlog, int(math.Round(oldRefused)), int(math.Round(newRefused))
	return r, true
}

// loadText names the load that filled the pool beside the change that let
// it: the trigger found, else the demand for PHP against its usual over the
// hour before the load could rise into the onset.
func loadText(a *assessment, q QueueFacts, lambda float64) prose.Text {
	if a.risk <= 0 || a.quant == 0 {
		return prose.Text{}
	}
	if q.UsualPHPPerS > 0 {
		a.facts.UsualPHPPerS = detect.Some(detect.Round(q.UsualPHPPerS, 2))
	}
	if q.LoadTrigger != "" {
		return detect.Messages.Say("config_change.load.trigger", q.LoadTrigger)
	}
	if q.UsualPHPPerS <= 0 {
		return prose.Text{}
	}
	demand := struct {
		Usual, Peak float64
		From, To    time.Time
		// Logged is the seconds of a log that began shortly before the
		// onset that the usual was read over (0: the hour From to To).
		Logged float64
	}{Usual: detect.Round(q.UsualPHPPerS, 1), Peak: detect.Round(lambda, 1),
		From: q.Onset.Add(-demandLead - time.Hour).In(q.Loc), To: q.Onset.Add(-demandLead).In(q.Loc)}
	if !q.UsualFrom.IsZero() && q.UsualTo.Sub(q.UsualFrom) < time.Hour {
		demand.From, demand.To = q.UsualFrom.In(q.Loc), q.UsualTo.In(q.Loc)
		demand.Logged = math.Round(q.UsualTo.Sub(q.UsualFrom).Seconds())
	}
	if lambda > detect.ArrivalsFlat*q.UsualPHPPerS {
		return detect.Messages.Say("config_change.load.rose", demand)
	}
	return detect.Messages.Say("config_change.load.flat", demand)
}

// timeoutTest: would the check have survived the observed queue wait under
// the old timeout, and does it fail under the new one?
func timeoutTest(a *assessment, q QueueFacts) {
	old, ok1 := settingValue(a.c.Old, a.k)
	nw, ok2 := settingValue(a.c.New, a.k)
	if !ok1 || !ok2 {
		a.quantText = detect.Messages.Say("config_change.timeout.not_durations", nil)
		return
	}
	var note prose.Text
	if strings.HasPrefix(changes.CanonicalKey(a.c.Key), "php_fastcgi.") && a.k.name == "health_timeout" {
		// design.md: a connected FastCGI check is cut short by read_timeout only.
		a.mech *= 0.7
		note = detect.Messages.Say("config_change.timeout.php_fastcgi", nil)
	}
	peak := math.Max(q.QueuePeak, queueMax(q.Queue))
	if q.Workers <= 0 || q.ServiceTimeS <= 0 || peak <= 0 {
		a.quantText = withNote(detect.Messages.Say("config_change.timeout.unknown_wait", nil), note)
		if peak <= 0 && a.risk > 0 {
			a.cannotJudge = detect.Messages.Say("config_change.timeout.cannot_judge", nil)
		}
		return
	}
	w := detect.QueueWait(peak, q.ServiceTimeS, float64(q.Workers))
	a.facts.WaitAtPeakS = detect.Some(detect.Round(w, 2))
	held := struct {
		Peak           float64
		Wait, Old, New prose.Text
		Verdict        string
	}{Peak: peak, Wait: secsText(w), Old: timeoutText(old), New: timeoutText(nw)}
	switch {
	case a.risk > 0 && w > nw && w <= old:
		a.quant = 1
		held.Verdict = "survived"
	case a.risk > 0 && w > old:
		a.quant = 0.5
		held.Verdict = "failed_too"
	case a.risk > 0:
		a.quant = 0
		a.notLinked = detect.Messages.Say("config_change.timeout.never_held", held)
	case a.risk < 0 && w <= nw:
		a.quant = 1
	}
	a.quantText = withNote(detect.Messages.Say("config_change.timeout.peak", held), note)
}

// withNote says the timeout's arithmetic followed by its note, when there
// is one.
func withNote(t, note prose.Text) prose.Text {
	if !said(note) {
		return t
	}
	return joined(" ", []prose.Text{t, note})
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
		a.quantText = detect.Messages.Say("config_change.service.no_log", nil)
		a.cannotJudge = detect.Messages.Say("config_change.service.cannot_judge_log", nil)
		return
	}
	at := a.c.Time
	to := at.Add(serviceTimeSpan)
	if !q.Onset.IsZero() && q.Onset.Before(to) {
		to = q.Onset
	}
	before, after := q.PHPTimes(at.Add(-serviceTimeSpan), at), q.PHPTimes(at, to)
	if before.N < detect.MinServiceSamples || after.N < detect.MinServiceSamples {
		a.quantText = detect.Messages.Say("config_change.service.few", struct {
			Before, After int
			Span          prose.Text
		}{before.N, after.N, spanSaid(serviceTimeSpan)})
		a.cannotJudge = detect.Messages.Say("config_change.service.cannot_judge_few", nil)
		return
	}
	mb, ma := before.Quantile(0.5), after.Quantile(0.5)
	a.facts.PHPMedianBeforeS, a.facts.PHPMedianAfterS = detect.Some(detect.Round(mb, 3)), detect.Some(detect.Round(ma, 3))
	medians := struct {
		Before, After               prose.Text
		AnswersBefore, AnswersAfter int
	}{secsText(mb), secsText(ma), before.N, after.N}
	if ma <= serviceTimeSame*mb {
		a.quant = 0
		a.notLinked = detect.Messages.Say("config_change.service.not_slower", medians)
		return
	}
	a.quant = 0.8
	a.quantText = detect.Messages.Say("config_change.service.slower", medians)
}
