package detect

import (
	"context"
	"github.com/aftermath-forensics/aftermath/prose"
	"math"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

func init() {
	Register(Spec{
		Kind: KindHealthcheckStarved, New: func() Detector { return healthcheckDetector{} },
		NewFacts: func() Facts { return &HealthcheckFacts{} },
		Role:     RoleMechanism,
		Chain:    5,
		// No Baseline: the health timeout the wait is judged against is a
		// limit, not a usual value; the summary states it.
		Scan: ScanMeasure{Severity: AnomalyCritical, Metric: Messages.SayLater("healthcheck_starved.scan_metric", nil),
			Observed: func(f *Finding) float64 { return FactsOf[HealthcheckFacts](f).EstQueueWaitS.V }},
		Events:  map[Event]int{EventHealthStarved: 7},
		Explain: explainHealth,
		Moments: healthMoments,
	})
}

// HealthcheckFacts are a healthcheck_starved finding's numbers; each source
// (access log, health checker's log, upstream gauge, queue series) states
// its own only when it was given.
type HealthcheckFacts struct {
	Proxy503            Maybe[int]     `json:"proxy_503"`
	HealthCheckFailures Maybe[int]     `json:"health_check_failures"`
	HealthRecoveries    Maybe[int]     `json:"health_recoveries"`
	UnhealthySeconds    Maybe[float64] `json:"unhealthy_seconds"`
	// EstQueueWaitS is the queued check's wait by Little's law, with the
	// queue's peak it was read at.
	EstQueueWaitS Maybe[float64] `json:"est_queue_wait_s"`
	QueuePeak     Maybe[float64] `json:"queue_peak"`
	Backlog       Maybe[float64] `json:"backlog"`
	// HealthTimeoutS is the timeout that applied to the queued check;
	// absent when none applies (it waits and passes): no timeout is not 0.
	HealthTimeoutS Maybe[float64] `json:"health_timeout_s"`
}

func (*HealthcheckFacts) FindingKind() Kind { return KindHealthcheckStarved }

// EventHealthStarved is the timeline event of the health check starving.
const EventHealthStarved Event = "health_starved"

func explainHealth(p Phraser, f *Finding, _ Story) string {
	return p.Say("healthcheck_starved.explain", FactsOf[HealthcheckFacts](f))
}

func healthMoments(f *Finding, _ Story) []Moment {
	return []Moment{{Time: f.Start, Event: EventHealthStarved, Topic: "failures_begin", Text: func(p Phraser) string { return healthMoment(p, f) }}}
}

func healthMoment(p Phraser, f *Finding) string {
	return p.Say("healthcheck_starved.moment", FactsOf[HealthcheckFacts](f))
}

// healthcheckDetector finds a health check starved behind the php-fpm queue:
// the check waited longer than the timeout that really applies to it, the proxy
// marked PHP down and answered 503 itself (design.md, healthcheck_starved).
type healthcheckDetector struct{}

func (healthcheckDetector) Name() Kind { return KindHealthcheckStarved }

func (healthcheckDetector) Detect(ctx context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error) {
	if ev.Traffic == nil && ev.Pool == nil {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("healthcheck_starved.no_input", nil)), nil
	}
	facts := &HealthcheckFacts{}
	// evidence is what showed the proxy marking PHP down, counted and said
	// by the messages (healthcheck_starved.evidence).
	var evidence struct {
		Proxy503, Failures, Timeouts, Ups int
		Unhealthy                         time.Duration
		N                                 int
		Sep                               string
	}

	// 1. 503s the proxy made itself.
	proxy503, first503, last503 := 0, time.Time{}, time.Time{}
	if ev.Traffic != nil {
		c := ev.countMinutes(func(m *Minute) int { return m.ProxyStatus[503] })
		proxy503, first503, last503 = c.Total, c.Start, c.End
		facts.Proxy503 = Some(proxy503)
		if proxy503 > 0 {
			evidence.Proxy503 = proxy503
			evidence.N++
		}
	}

	// 2. The health checker's own log.
	failures, timeouts, ups := 0, 0, 0
	for _, h := range ev.Health {
		if h.Time.Before(ev.From) || !h.Time.Before(ev.To) {
			continue
		}
		switch h.Kind {
		case sources.HealthFailed:
			failures++
			if e := strings.ToLower(h.Error); strings.Contains(e, "timeout") || strings.Contains(e, "deadline exceeded") {
				timeouts++
			}
		case sources.HealthUp:
			ups++
		}
	}
	if ev.HealthLogGiven {
		facts.HealthCheckFailures = Some(failures)
		facts.HealthRecoveries = Some(ups)
		if failures > 0 {
			evidence.Failures, evidence.Timeouts, evidence.Ups = failures, timeouts, ups
			evidence.N++
		}
	}

	// 3. Caddy's upstream gauge.
	var unhealthy time.Duration
	if ev.Pool != nil && len(ev.Pool.Healthy) > 0 {
		for _, r := range runs(ev.Pool.Healthy, ev.From, ev.To, ev.Pool.Step, func(p metrics.Point) bool { return p.V < 1 }) {
			unhealthy += r.End.Sub(r.Start) + ev.Pool.Step
		}
		facts.UnhealthySeconds = Some(unhealthy.Seconds())
		if unhealthy > 0 {
			evidence.Unhealthy = unhealthy.Round(time.Second)
			evidence.N++
		}
	}

	// 4. Little's law: how long the check waited in the queue.
	wait, queuePeak, backlog := littleWait(ev)
	if wait > 0 {
		facts.EstQueueWaitS = Some(round(wait, 1))
		facts.QueuePeak = Some(queuePeak)
	}
	if backlog > 0 {
		facts.Backlog = Some(backlog)
	}
	timeout, timeoutWhy := QueuedCheckTimeout(ev.Site, timeouts > 0, proxy503 > 0)
	if timeout > 0 {
		facts.HealthTimeoutS = Some(timeout)
	}

	if proxy503 == 0 && failures == 0 && unhealthy == 0 {
		return nil, Because("", Messages.Say("healthcheck_starved.never_down", struct {
			Silent bool
			Wait   float64
			Why    prose.Text
		}{timeout == 0 && wait > 0, wait, timeoutWhy})), nil
	}
	starved := timeout > 0 && wait > timeout
	if !starved && timeouts == 0 {
		evidence.Sep = "; "
		return nil, Because("", Messages.Say("healthcheck_starved.not_starved", struct {
			Evidence      any
			Wait, Timeout float64
		}{evidence, wait, timeout})), nil
	}
	start, end := first503, last503
	if start.IsZero() {
		start, end = ev.From, ev.To
	}
	evidence.Sep = ", "
	said := struct {
		Wait, Depth, Timeout float64
		Why                  prose.Text
		Evidence             any
	}{Evidence: evidence}
	if wait > 0 {
		// queuePeak is the depth where the wait was longest, not the
		// queue's own peak (listen_queue_overflow states that).
		said.Wait, said.Depth, said.Timeout, said.Why = wait, queuePeak, timeout, timeoutWhy
	}
	conf := 0.5 + 0.1*float64(evidence.N)
	if starved {
		conf += 0.15
	}
	f := Finding{Kind: KindHealthcheckStarved, Role: RoleMechanism, Start: start, End: end, Confidence: round(math.Min(conf, 0.95), 2), Facts: facts}
	f.summarize(Messages.Say("healthcheck_starved.summary", said))
	return []Finding{f}, Check{}, nil
}

// QueuedCheckTimeout is the timeout that can fail a health check queued
// behind php-fpm (design.md), with why: the FastCGI read_timeout when known;
// else, if checks were seen timing out or the proxy did mark PHP down, the
// configured health_timeout evidently applied. 0 means none applies: Caddy's
// FastCGI transport ignores health_timeout once connected, so a queued check
// waits and passes.
func QueuedCheckTimeout(site sources.Site, sawTimeouts, sawDown bool) (float64, prose.Text) {
	switch {
	case site.ReadTimeoutS > 0:
		return site.ReadTimeoutS, Messages.Say("healthcheck_starved.timeout_read", nil)
	case site.HealthTimeoutS > 0 && (sawTimeouts || sawDown):
		return site.HealthTimeoutS, Messages.Say("healthcheck_starved.timeout_health", nil)
	case site.HealthTimeoutS > 0:
		return 0, Messages.Say("healthcheck_starved.timeout_ignored", site.HealthTimeoutS)
	}
	return 0, Messages.Say("healthcheck_starved.timeout_unknown", nil)
}

// CheckTimeout is the timeout a queued health check was held to in an
// analysis, for the queue arithmetic that compares a wait with it:
// healthcheck_starved's when that finding (returned as hc) states one, else
// QueuedCheckTimeout with no failed check seen (the FastCGI read_timeout, or
// 0: none applies).
func CheckTimeout(site sources.Site, findings []Finding) (s float64, hc *Finding) {
	if f := first(findings, KindHealthcheckStarved); f != nil {
		if s := FactsOf[HealthcheckFacts](f).HealthTimeoutS; s.OK {
			return s.V, f
		}
	}
	s, _ = QueuedCheckTimeout(site, false, false)
	return s, nil
}

// littleWait estimates the longest queue wait in the window by Little's law:
// depth / completion rate, at the point where that ratio peaks.
func littleWait(ev *Evidence) (wait, depth, backlog float64) {
	p := ev.Pool
	if p == nil || len(p.Queue) == 0 {
		return 0, 0, float64(ev.Site.Backlog)
	}
	backlog = float64(ev.Site.Backlog)
	if b := peak(between(p.Backlog, ev.From, ev.To)); b.V > 0 {
		backlog = b.V
	}
	for _, q := range between(p.Queue, ev.From, ev.To) {
		rate := completionRate(ev, q.T)
		if rate <= 0 || q.V <= 0 {
			continue
		}
		if w := LittleTime(q.V, rate); w > wait {
			wait, depth = w, q.V
		}
	}
	if depth == 0 {
		depth = peak(between(p.Queue, ev.From, ev.To)).V
	}
	return wait, depth, backlog
}

// completionRate is how fast php-fpm finished requests around t: from
// phpfpm_accepted_connections when present, else from PHP's responses in the
// access log, over the minute around t.
func completionRate(ev *Evidence, t time.Time) float64 {
	if ev.Pool != nil && len(ev.Pool.Accepted) > 0 {
		if v := valueAt(ev.Pool.Accepted, t); !math.IsNaN(v) {
			return v
		}
	}
	if ev.Traffic != nil {
		if m := ev.Traffic.Minute(t.Truncate(time.Minute)); m != nil {
			return float64(m.PHPDone) / 60
		}
	}
	return 0
}
