package detect

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/failure"
)

func init() {
	Register(Spec{
		Kind: KindUpstreamErrors, Order: 5, New: func() Detector { return errorsDetector{} },
		Role:   RoleSymptom,
		Chain:  6,
		Scan:   ScanMeasure{Anomaly: "error_rate", Metric: "failed responses in the window", Observed: fact("failed_total"), Baseline: fact("failed_expected_in_base")},
		Events: map[string]int{"failures_start": 8, "failure_peak": 11, "last_failure": 12},
	})
}

// errorsDetector builds the per-minute failure taxonomy (design.md,
// upstream_errors): never one "errors" number, but who answered what.
type errorsDetector struct{}

func (errorsDetector) Name() string { return KindUpstreamErrors }

// failureRiseRatio is lower than a crawler's rise ratio: failures are what users
// feel, and twice the usual failures, far beyond noise, is already an incident
// (a rate limit refusing a crawler that was already refused at a low rate
// before, for one).
const failureRiseRatio = 2.0

// FailedStatus is true for the statuses that failed their client: 429 and
// 5xx. With Minute.Failed it is the one definition of "failed" the report and
// the scan count by.
func FailedStatus(code int) bool {
	return failure.Status(code)
}

// Failed counts what reached no one in a minute: 5xx, 429, and successes
// logged after the clients had given up (Late).
func (m *Minute) Failed() int {
	n := m.Late
	for s, c := range m.Status {
		if FailedStatus(s) {
			n += c
		}
	}
	return n
}

func (errorsDetector) Detect(ctx context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error) {
	if ev.Traffic == nil {
		return nil, Check{Outcome: OutcomeCouldNotRun, Reason: "no access log: response statuses are unknown"}, nil
	}
	c := ev.countMinutes((*Minute).Failed)
	total, expected := c.Total, c.Expected()
	incs := ev.incidents()
	inc := incs.WorstIncident()
	_, _, noBaseline := ev.baselineRange()
	if inc == nil {
		if noBaseline {
			return nil, Check{Reason: fmt.Sprintf("%s failed responses in the window, but no minute in which %s of the arriving requests failed (no baseline to compare with)",
				fmtInt(total), pct(absFailedShare))}, nil
		}
		return nil, Check{Reason: fmt.Sprintf("%s failed responses in the window against %s expected from the baseline", fmtInt(total), fmtNum(expected))}, nil
	}
	usualFailed := Median(c.Base)
	crawlers := crawlerClusters(ev, prior)
	usualGood := Median(ev.countMinutes(func(m *Minute) int { return ev.ordinaryGoodput(m, crawlers) }).Base)
	var window []Minute
	for _, m := range ev.Traffic.Minutes() {
		if ev.inWindow(&m) {
			window = append(window, m)
		}
	}
	// The failing stretch is the worst incident's (incident.go): the minutes
	// whose arriving requests failed clearly beyond the usual.
	start, end := inc.Start, inc.End
	peakN, peakAt := 0, time.Time{}
	minGood := math.MaxInt
	for i := range window {
		m := &window[i]
		if n := m.Failed(); n > peakN {
			peakN, peakAt = n, m.Start
		}
	}
	facts := map[string]float64{
		"failed_total":            float64(total),
		"peak_failed_per_min":     float64(peakN),
		"usual_failed_per_min":    usualFailed,
		"goodput_usual_per_min":   usualGood,
		"late_success":            0,
		"failed_expected_in_base": round(expected, 1),
	}
	if noBaseline {
		// Nothing usual was measured: no "usual" number is stated.
		delete(facts, "usual_failed_per_min")
		delete(facts, "goodput_usual_per_min")
		delete(facts, "failed_expected_in_base")
	}
	status := map[int]int{}
	proxy := map[int]int{}
	var lat Histogram
	for i := range window {
		m := &window[i]
		if !m.Start.Before(start) && m.Start.Before(end) {
			minGood = min(minGood, ev.ordinaryGoodput(m, crawlers))
		}
		for s, c := range m.Status {
			status[s] += c
		}
		for s, c := range m.ProxyStatus {
			proxy[s] += c
		}
		facts["late_success"] += float64(m.Late)
		if !m.Start.Before(start) && m.Start.Before(end) {
			lat.Merge(&m.Latency)
		}
	}
	if minGood != math.MaxInt {
		facts["goodput_min_per_min"] = float64(minGood)
	}
	var parts []string
	codes := make([]int, 0, len(status))
	for s := range status {
		codes = append(codes, s)
	}
	sort.Ints(codes)
	for _, s := range codes {
		facts["status_"+strconv.Itoa(s)] = float64(status[s])
		if s >= 500 || s == 429 {
			facts["proxy_"+strconv.Itoa(s)] = float64(proxy[s])
			who := "PHP"
			switch {
			case proxy[s] == status[s]:
				who = "all made by Caddy"
			case proxy[s] > 0:
				who = fmt.Sprintf("%s made by Caddy", fmtInt(proxy[s]))
			}
			parts = append(parts, fmt.Sprintf("%s × %d (%s)", fmtInt(status[s]), s, who))
		}
	}
	if late := facts["late_success"]; late > 0 {
		timeout := fmt.Sprintf("the clients' %s timeout", fmtSec(incs.LateAfterS))
		if incs.LateSource != LateFromSite {
			timeout = fmt.Sprintf("%s (an estimate of the clients' timeout)", fmtSec(incs.LateAfterS))
		}
		parts = append(parts, fmt.Sprintf("%s successes logged after %s", fmtNum(late), timeout))
	}
	if lat.N > 0 {
		facts["success_p50_s"] = round(lat.Quantile(0.5), 3)
		facts["success_p99_s"] = round(lat.Quantile(0.99), 3)
	}
	summary := fmt.Sprintf("From %s to %s: %s; failures peaked at %s a minute at %s",
		start.In(ev.Loc).Format("15:04"), end.In(ev.Loc).Format("15:04"), strings.Join(parts, ", "),
		fmtInt(peakN), peakAt.In(ev.Loc).Format("15:04"))
	if minGood != math.MaxInt {
		summary += fmt.Sprintf("; PHP goodput (ordinary clients' answers in time) was %s a minute at its lowest", fmtNum(float64(minGood)))
		if !noBaseline {
			summary += fmt.Sprintf(" (usually %s)", fmtNum(usualGood))
		}
	}
	summary += "."
	return []Finding{{Kind: KindUpstreamErrors, Role: RoleSymptom, Start: start, End: end, Confidence: 0.95,
		Summary: summary, Facts: facts}}, Check{}, nil
}
