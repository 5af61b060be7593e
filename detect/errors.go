package detect

import (
	"cmp"
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/failure"
)

func init() {
	Register(Spec{
		Kind: KindUpstreamErrors, Requires: []Kind{KindCrawlerBurst}, New: func() Detector { return errorsDetector{} },
		NewFacts: func() Facts { return &UpstreamErrorsFacts{} },
		Role:     RoleSymptom,
		Chain:    6,
		Scan: ScanMeasure{Anomaly: "error_rate", Metric: Messages.SayLater("upstream_errors.scan_metric", nil),
			Observed: func(f *Finding) float64 { return float64(FactsOf[UpstreamErrorsFacts](f).FailedTotal) },
			Baseline: func(f *Finding) float64 { return FactsOf[UpstreamErrorsFacts](f).FailedExpectedInBase.V }},
		Events:  map[Event]int{EventFailuresStart: 8, EventFailurePeak: 11, EventLastFailure: 12},
		Explain: explainErrors,
		Moments: errorMoments,
	})
}

// UpstreamErrorsFacts are an upstream_errors finding's numbers.
type UpstreamErrorsFacts struct {
	FailedTotal      int `json:"failed_total"`
	PeakFailedPerMin int `json:"peak_failed_per_min"`
	// UsualFailedPerMin, GoodputUsualPerMin and FailedExpectedInBase need a
	// baseline before the incident.
	UsualFailedPerMin    Maybe[float64] `json:"usual_failed_per_min"`
	GoodputUsualPerMin   Maybe[float64] `json:"goodput_usual_per_min"`
	FailedExpectedInBase Maybe[float64] `json:"failed_expected_in_base"`
	// LateSuccess counts successes logged after the clients' timeout.
	LateSuccess int `json:"late_success"`
	// GoodputMinPerMin is the failing stretch's worst minute of ordinary
	// answers, when the stretch holds a minute.
	GoodputMinPerMin Maybe[int]     `json:"goodput_min_per_min"`
	SuccessP50S      Maybe[float64] `json:"success_p50_s"`
	SuccessP99S      Maybe[float64] `json:"success_p99_s"`
	// Status counts the window's responses by status code (report.json
	// "status_<code>"); Proxy those Caddy made itself, for 429 and 5xx only
	// ("proxy_<code>").
	Status map[int]int `json:"-"`
	Proxy  map[int]int `json:"-"`
}

func (*UpstreamErrorsFacts) FindingKind() Kind { return KindUpstreamErrors }

// Timeline events of the failing stretch.
const (
	EventFailuresStart Event = "failures_start"
	EventFailurePeak   Event = "failure_peak"
	EventLastFailure   Event = "last_failure"
)

func explainErrors(p Phraser, f *Finding, _ Story) string {
	type sc struct {
		code   string
		n, prx float64
	}
	var all []sc
	ef := FactsOf[UpstreamErrorsFacts](f)
	for c, n := range ef.Status {
		if !FailedStatus(c) || n <= 0 {
			continue
		}
		all = append(all, sc{strconv.Itoa(c), float64(n), float64(ef.Proxy[c])})
	}
	slices.SortFunc(all, func(a, b sc) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.code, b.code)) })
	var parts []string
	for _, x := range all {
		parts = append(parts, p.Say("upstream_errors.status", struct {
			Code     string
			N, Proxy float64
		}{x.code, x.n, x.prx}))
	}
	if ef.LateSuccess > 0 {
		parts = append(parts, p.Say("upstream_errors.late", ef.LateSuccess))
	}
	// Goodput is the ordinary clients' answers in time, never the crawler's:
	// it fell, held, or has no usual to compare with; nothing is said
	// without a lowest minute (every minute of the stretch only counted).
	gMin, gUsual := float64(ef.GoodputMinPerMin.V), ef.GoodputUsualPerMin.V
	goodput := ""
	switch {
	case !ef.GoodputMinPerMin.OK:
	case gUsual > 0 && gMin < gUsual:
		goodput = "fell"
	case gUsual > 0:
		goodput = "held"
	case !ef.GoodputUsualPerMin.OK:
		goodput = "unknown"
	}
	// An edge the access log cannot show is where the log begins or stops,
	// not where the failures did.
	var openStart, openEnd bool
	if f.Logged != nil {
		openStart, openEnd = f.Logged.OpenStart != nil, f.Logged.OpenEnd != nil
	}
	return p.Say("upstream_errors.explain", struct {
		Start, End         time.Time
		OpenStart, OpenEnd bool
		Parts              []string
		Peak               int
		Goodput            string
		Min, Usual         float64
	}{f.Start, f.End, openStart, openEnd, parts, max(ef.PeakFailedPerMin, 0), goodput, gMin, gUsual})
}

// errorMoments are the failing stretch's milestones: the first failing
// minute, the worst one with its rate, the last one, as upstream_errors
// placed them (Finding.Logged), each told with what that minute logged.
func errorMoments(f *Finding, s Story) []Moment {
	var out []Moment
	add := func(t time.Time, event Event, topic string, prio int, text func(p Phraser) string) {
		out = append(out, Moment{Time: t, Event: event, Topic: topic, Prio: prio, Text: text})
	}
	var first, worst, last *MinuteFailures
	if ms := f.Logged; ms != nil {
		minutes := s.Minutes()
		at := func(t time.Time) *MinuteFailures {
			for i := range minutes {
				if minutes[i].Time.Equal(t) {
					return &minutes[i]
				}
			}
			return nil
		}
		first, worst, last = at(ms.First), at(ms.Worst), at(ms.Last)
	}
	if first == nil || worst == nil || last == nil {
		// No per-minute counts: the finding's own bounds and peak are all there is.
		add(f.Start, EventFailuresStart, "failures_begin", 1, func(p Phraser) string {
			return p.Say("upstream_errors.moment.start", nil)
		})
		return out
	}
	// minute is what a milestone minute says: how many failed, and how.
	minute := func(m *MinuteFailures) func(p Phraser) any {
		return func(p Phraser) any {
			return struct {
				Failed int
				Codes  string
			}{m.Failed, failureCodes(p, *m)}
		}
	}
	// edge is what a milestone at an edge the log cannot show says: where
	// the log begins or stops instead of an onset or a recovery, and what
	// the metrics show beyond it.
	edge := func(m *MinuteFailures, e *Edge) func(p Phraser) any {
		return func(p Phraser) any {
			return struct {
				Failed       int
				Codes        string
				Gap          bool
				From, To, At time.Time
				BoundedBy    string
				Ongoing      bool
			}{m.Failed, failureCodes(p, *m), e.Unlogged.Kind == sources.StretchGap, e.Unlogged.From, e.Unlogged.To, e.At, e.BoundedBy, e.Ongoing}
		}
	}
	ms := f.Logged
	if ms.OpenStart != nil {
		add(first.Time, EventFailuresStart, "failures_begin", 1, func(p Phraser) string {
			return p.Say("upstream_errors.moment.first_unlogged", edge(first, ms.OpenStart)(p))
		})
	} else {
		add(first.Time, EventFailuresStart, "failures_begin", 1, func(p Phraser) string {
			return p.Say("upstream_errors.moment.first", minute(first)(p))
		})
	}
	add(worst.Time, EventFailurePeak, "failure_peak", 0, func(p Phraser) string {
		return p.Say("upstream_errors.moment.peak", minute(worst)(p))
	})
	switch {
	case ms.OpenEnd != nil:
		// Even at the peak: a log that stops there shows no recovery.
		add(last.Time, EventLastFailure, "failure_end", 0, func(p Phraser) string {
			return p.Say("upstream_errors.moment.last_unlogged", edge(last, ms.OpenEnd)(p))
		})
	case last != worst:
		add(last.Time, EventLastFailure, "failure_end", 0, func(p Phraser) string {
			return p.Say("upstream_errors.moment.last", minute(last)(p))
		})
	}
	return out
}

// failureCodes lists a minute's failures by status, most first: "1,210 × 503, 90 × 502".
func failureCodes(p Phraser, m MinuteFailures) string {
	type sc struct {
		s string
		n int
	}
	var all []sc
	for s, n := range m.Status {
		all = append(all, sc{s, n})
	}
	slices.SortFunc(all, func(a, b sc) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.s, b.s)) })
	var parts []string
	for _, x := range all {
		parts = append(parts, p.Say("upstream_errors.minute_status", struct {
			Code string
			N    int
		}{x.s, x.n}))
	}
	if m.Late > 0 {
		parts = append(parts, p.Say("upstream_errors.minute_late", m.Late))
	}
	return strings.Join(parts, ", ")
}

const (
	statusFactPrefix = "status_"
	proxyFactPrefix  = "proxy_"
)

func (f *UpstreamErrorsFacts) addExtraFacts(m map[string]float64) {
	for code, n := range f.Status {
		m[statusFactPrefix+strconv.Itoa(code)] = float64(n)
	}
	for code, n := range f.Proxy {
		m[proxyFactPrefix+strconv.Itoa(code)] = float64(n)
	}
}

func (*UpstreamErrorsFacts) extraFactPrefixes() []string {
	return []string{statusFactPrefix, proxyFactPrefix}
}

func (f *UpstreamErrorsFacts) setExtraFact(name string, v float64) bool {
	for prefix, into := range map[string]*map[int]int{statusFactPrefix: &f.Status, proxyFactPrefix: &f.Proxy} {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		code, err := strconv.Atoi(rest)
		if err != nil {
			return false
		}
		if *into == nil {
			*into = map[int]int{}
		}
		(*into)[code] = int(v)
		return true
	}
	return false
}

// errorsDetector builds the per-minute failure taxonomy (design.md,
// upstream_errors): never one "errors" number, but who answered what.
type errorsDetector struct{}

func (errorsDetector) Name() Kind { return KindUpstreamErrors }

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
		return nil, Because(OutcomeCouldNotRun, Messages.Say("upstream_errors.no_log", nil)), nil
	}
	c := ev.countMinutes((*Minute).Failed)
	total, expected := c.Total, c.Expected()
	incs := ev.incidents()
	inc := incs.WorstIncident()
	_, _, noBaseline := ev.baselineRange()
	if inc == nil {
		// Minutes without lines are not counted: the reason says so, or
		// it would read as a window that failed no one.
		quiet := struct {
			Total           int
			Share, Expected float64
			Unlogged        time.Duration
			UnloggedText    string
		}{Total: total, Share: absFailedShare, Expected: expected}
		if d := unloggedWithin(Unlogged(ev.Coverage, ev.From, ev.To), ev.From, ev.To); d > 0 {
			quiet.Unlogged, quiet.UnloggedText = d, spanText(d)
		}
		if noBaseline {
			return nil, Because("", Messages.Say("upstream_errors.quiet_no_baseline", quiet)), nil
		}
		return nil, Because("", Messages.Say("upstream_errors.quiet", quiet)), nil
	}
	usualFailed := Median(c.Base)
	crawlers := crawlerClusters(ev, prior)
	usualGood, usualSampled := ev.usualOrdinaryGoodput(crawlers)
	// The window's minutes, copied from the traffic's own: not every
	// minute of the log copied first (Minutes), most of them outside the
	// window.
	var window []Minute
	for _, m := range ev.Traffic.minutesInOrder() {
		if ev.inWindow(m) {
			window = append(window, *m)
		}
	}
	// The failing stretch is the worst incident's (incident.go): the minutes
	// whose arriving requests failed clearly beyond the usual. Its peak is
	// the minute of it that logged the most failures, the one the timeline
	// quotes.
	start, end := inc.Start, inc.End
	logged := ev.Traffic.loggedMilestones(start, end)
	logged.OpenStart, logged.OpenEnd = inc.OpenStart, inc.OpenEnd
	peakN, peakAt := logged.WorstFailed, logged.Worst
	minGood, minOK, minReadOnly := ev.lowestOrdinaryGoodput(window, start, end, crawlers)
	facts := &UpstreamErrorsFacts{FailedTotal: total, PeakFailedPerMin: peakN, Status: map[int]int{}, Proxy: map[int]int{}}
	// Nothing usual was measured without a baseline: no "usual" number is stated.
	if !noBaseline {
		facts.UsualFailedPerMin = Some(usualFailed)
		facts.GoodputUsualPerMin = Some(usualGood)
		facts.FailedExpectedInBase = Some(round(expected, 1))
	}
	status := map[int]int{}
	proxy := map[int]int{}
	var lat Histogram
	for i := range window {
		m := &window[i]
		for s, c := range m.Status {
			status[s] += c
		}
		for s, c := range m.ProxyStatus {
			proxy[s] += c
		}
		facts.LateSuccess += m.Late
		if !m.Start.Before(start) && m.Start.Before(end) {
			lat.Merge(&m.Latency)
		}
	}
	if minOK {
		facts.GoodputMinPerMin = Some(minGood)
	}
	type statusPart struct{ N, Code, Proxy int }
	said := struct {
		Start, End, PeakAt time.Time
		Parts              []statusPart
		Late, Timeout      float64
		LateEstimated      bool
		Peak               int
		MinOK, HasUsual    bool
		MinGood, UsualGood float64
	}{Start: start.In(ev.Loc), End: end.In(ev.Loc), PeakAt: peakAt.In(ev.Loc), Peak: peakN}
	codes := make([]int, 0, len(status))
	for s := range status {
		codes = append(codes, s)
	}
	sort.Ints(codes)
	for _, s := range codes {
		facts.Status[s] = status[s]
		if failure.Status(s) {
			facts.Proxy[s] = proxy[s]
			said.Parts = append(said.Parts, statusPart{status[s], s, proxy[s]})
		}
	}
	if late := float64(facts.LateSuccess); late > 0 {
		said.Late, said.Timeout, said.LateEstimated = late, incs.LateAfterS, incs.LateSource != LateFromSite
	}
	if lat.N > 0 {
		facts.SuccessP50S = Some(round(lat.Quantile(0.5), 3))
		facts.SuccessP99S = Some(round(lat.Quantile(0.99), 3))
	}
	said.MinOK, said.HasUsual, said.MinGood, said.UsualGood = minOK, !noBaseline, float64(minGood), usualGood
	// A crawler whose lines were not all read has answers in the minutes a
	// pushdown only counted that cannot be taken out of their goodput.
	var estimated []Estimate
	if usualSampled && facts.GoodputUsualPerMin.OK {
		estimated = append(estimated, Estimate{Figures: []string{"goodput_usual_per_min"}, Reason: EstimateBaselineSample})
	}
	if minReadOnly && facts.GoodputMinPerMin.OK {
		estimated = append(estimated, Estimate{Figures: []string{"goodput_min_per_min"}, Reason: EstimateReadMinutes})
	}
	f := Finding{Kind: KindUpstreamErrors, Role: RoleSymptom, Start: start, End: end, Confidence: 0.95,
		Facts: facts, Logged: &logged, Estimated: estimated}
	f.summarize(Messages.Say("upstream_errors.summary", said))
	return []Finding{f}, Check{}, nil
}

// LoggedMilestones are a failing stretch's first, worst and last minute by
// log time, the minutes the report's per-minute counts show: the timeline
// quotes what each of them logged, and upstream_errors states the worst as
// the peak. The incident's arrival placing decides which minutes fail
// (incident.go); these say when the failures were written down.
type LoggedMilestones struct {
	// First is the first minute of the stretch that logged a failure, Worst
	// the one that logged the most (the first of equals), Last the last one
	// that logged any. With none logging a failure First and Last are the
	// stretch's first and last logged minutes; all are zero when no minute
	// of the stretch logged a request.
	First, Worst, Last time.Time
	// WorstFailed is what Worst logged as failed (Minute.Failed).
	WorstFailed int
	// OpenStart and OpenEnd are the incident's edges the access log cannot
	// show (Incident.OpenStart, OpenEnd): the first minute is then where the
	// log begins, the last where it stops, neither an onset nor a recovery.
	OpenStart, OpenEnd *Edge
}

// loggedMilestones reads the minutes logged in [from, to) (from on a whole
// minute) for a stretch's first, worst and last failing one.
func (t *Traffic) loggedMilestones(from, to time.Time) LoggedMilestones {
	ms, _ := t.FailingMilestones(from, to, 0)
	return ms
}

// FailingMilestones reads the minutes logged in [from, to) for the first and
// last that logged more than above failures (Minute.Failed) and the worst;
// the scan asks it for the first minute clearly above the usual. ok is false
// when no minute logged more than above: First and Last are then the first
// and last logged minutes.
func (t *Traffic) FailingMilestones(from, to time.Time, above float64) (ms LoggedMilestones, ok bool) {
	var first, last time.Time
	worst := -1
	for m := from.Unix() / 60; m*60 < to.Unix(); m++ {
		mm := t.minutes[m]
		if mm == nil {
			continue
		}
		if first.IsZero() {
			first = mm.Start
		}
		last = mm.Start
		n := mm.Failed()
		if float64(n) > above {
			if ms.First.IsZero() {
				ms.First = mm.Start
			}
			ms.Last = mm.Start
		}
		if n > worst {
			worst, ms.Worst, ms.WorstFailed = n, mm.Start, n
		}
	}
	if ms.First.IsZero() {
		ms.First, ms.Last = first, last
		return ms, false
	}
	return ms, true
}
