package detect

import (
	"math"
	"sort"
	"time"

	"github.com/aftermath-forensics/aftermath/prose"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/failure"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// Incident is one stretch of the window where clients were failed: 5xx, 429,
// and answers after the clients' timeout, placed by when the request arrived.
// A window (or the data's span) can be a day; the incident is what in it went
// wrong, and the hours before its onset are what was usual.
type Incident struct {
	// Onset is when it began: the first failing minute, or the start of the
	// pool saturation (every worker busy, or a queue deeper than the workers)
	// that ran without a break into it, whichever came first.
	Onset time.Time `json:"onset"`
	// Start and End bound the failing stretch [Start, End): the first and
	// the last minute (by arrival) whose requests failed clearly beyond the
	// usual, merged over short pauses.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// ClearFrom is the first minute that failed clearly (failure.Span's
	// Clear): Start may be an edge minute before it, one stray slow
	// request or the first readers failed as the pool fills. It is when
	// clients began to be failed in numbers they could react to, what a
	// consequence of the failing (users retrying, monitors probing) rises
	// after (ClientsFailedFrom).
	ClearFrom time.Time `json:"-"`
	// SaturatedFrom is when the saturation leading into it began (zero: none
	// seen, or no metrics).
	SaturatedFrom time.Time `json:"saturated_from,omitzero"`
	// Requests counts the requests that arrived in [Start, End); Failed those
	// of them that failed: Refused (5xx, 429) and Late (answered after the
	// clients' timeout, or the estimate of it).
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
	Refused  int `json:"refused"`
	Late     int `json:"late"`
	// PeakFailedPerMin is the most failures among one minute's arrivals, at PeakAt.
	PeakFailedPerMin int       `json:"peak_failed_per_min"`
	PeakAt           time.Time `json:"peak_at"`
	// OpenStart and OpenEnd are set when the access log has no lines right
	// before Start or right after End (its head or tail is missing, a gap, a
	// file cut short): the failures may have begun earlier or gone on later,
	// so that edge is unknown, never a recovery or an onset. Nil: the log
	// covers mergeGap beyond the edge, as long as a pause must last to end
	// a stretch.
	OpenStart *Edge `json:"open_start,omitempty"`
	OpenEnd   *Edge `json:"open_end,omitempty"`
	// Unlogged lists the access log's stretches without lines inside
	// [Start, End): a silence of the log is no pause of the failures, so the
	// stretch runs across them; their minutes are not in the counts.
	Unlogged []sources.Stretch `json:"unlogged,omitempty"`
}

// ClientsFailedFrom is when clients began to be failed in numbers: the
// first clearly failing minute, or Start where that is not known.
func (inc *Incident) ClientsFailedFrom() time.Time {
	if inc.ClearFrom.IsZero() || inc.ClearFrom.Before(inc.Start) {
		return inc.Start
	}
	return inc.ClearFrom
}

// Edge is an end of a failing stretch the access log cannot show.
type Edge struct {
	// Unlogged is the access log's stretch without lines the edge runs into.
	Unlogged sources.Stretch `json:"unlogged"`
	// BoundedBy names a source that covers those minutes and bounds the
	// stretch instead: "metrics" when php-fpm's pool was saturated (every
	// worker busy, or more queued than workers) at the edge and the series
	// show where that saturation began (a start) or ended (an end). Empty:
	// nothing bounds it.
	BoundedBy string `json:"bounded_by,omitempty"`
	// At is where the bounding source shows the saturation beginning or
	// ending; Ongoing is true when it had not ended when the window did.
	At      time.Time `json:"at,omitzero"`
	Ongoing bool      `json:"ongoing,omitempty"`
}

// Bounded reports whether another source bounds the edge.
func (e *Edge) Bounded() bool { return e != nil && e.BoundedBy != "" }

// Baseline sources: where the period thresholds are relative to came from.
const (
	BaselineGiven        = "given"
	BaselineBeforeOnset  = "before_onset"
	BaselineBeforeWindow = "before_window"
	BaselineNone         = "none"
)

// Late threshold sources: how an answer was judged too late for its reader.
const (
	LateFromSite         = "site"
	LateFromBaselineTail = "baseline_tail"
	LateFromQuietMinutes = "quiet_minutes"
	LateAssumed          = "assumed"
	LateUnknown          = "unknown"
)

// Baseline is the period thresholds are relative to. It never contains an
// incident: it ends at the onset (or is the given one, cut at the onset).
type Baseline struct {
	From   time.Time `json:"from,omitzero"`
	To     time.Time `json:"to,omitzero"`
	Source string    `json:"source"`
}

// Usable reports whether there is a baseline at all.
func (b Baseline) Usable() bool { return b.Source != BaselineNone && b.To.After(b.From) }

// Incidents is what FindIncidents concluded about the window.
type Incidents struct {
	// List holds the incidents in time order.
	List []Incident `json:"list"`
	// Worst indexes List: the incident that failed the most requests (-1: none).
	Worst int `json:"worst"`
	// Baseline is the period detectors compare with.
	Baseline Baseline `json:"baseline"`
	// LateAfterS is the answer time beyond which a success reached nobody
	// (0: unknown, nothing counted late), and LateSource where it came from.
	LateAfterS float64 `json:"late_after_s"`
	LateSource string  `json:"late_source"`
	// Notes say what limited the judgement (no baseline, an estimated timeout).
	Notes []sources.QualityNote `json:"notes"`
}

// Worst returns the worst incident, or nil when nothing failed beyond the usual.
func (in *Incidents) WorstIncident() *Incident {
	if in == nil || in.Worst < 0 || in.Worst >= len(in.List) {
		return nil
	}
	return &in.List[in.Worst]
}

// Thresholds of the incident's edges.
const (
	// minUsableBaseline is the shortest baseline compared with: a few
	// minutes of ordinary traffic still say what one minute usually holds
	// (the lab recording has four before its onset). Shorter, detectors
	// judge by absolute criteria and say so; under shortBaseline the
	// report says the thresholds rest on few samples.
	minUsableBaseline = 3 * time.Minute
	shortBaseline     = time.Hour
	// mergeGap joins failing stretches closer than this (failure's one
	// definition of a stretch), unless the pool stayed saturated in between;
	// the edges of an incident are judged at the same distance.
	mergeGap = failure.MergeGapMinutes * time.Minute
	// absFailedShare: with no baseline, a minute fails when at least this
	// share of its arrivals failed (and more than a handful did).
	absFailedShare = failure.AbsShare
	// lateTailFactor and minLateS estimate the clients' timeout when the
	// site does not give it: an answer slower than lateTailFactor times the
	// usual 99th percentile, and slower than minLateS, which few readers (or
	// HTTP clients' defaults) wait out.
	lateTailFactor = 3.0
	minLateS       = 10.0
)

// incidents returns the incidents of the window, finding them on first use.
func (ev *Evidence) incidents() *Incidents {
	if ev.Incidents == nil {
		ev.Incidents = FindIncidents(ev)
	}
	return ev.Incidents
}

// FindIncidents finds the stretches of the window where clients were failed,
// the worst of them, and the baseline before its onset. Without a known
// client timeout it estimates one and counts late answers with it (the
// access log's per-minute counts are updated to match).
func FindIncidents(ev *Evidence) *Incidents {
	in := &Incidents{Worst: -1, LateSource: LateUnknown}
	given, givenOK, givenWhy := ev.givenBaseline()
	if ev.Traffic == nil {
		// Without the access log no one is known to have failed: the
		// baseline is the given one, else the hours before the window.
		in.Baseline = Baseline{From: ev.From.Add(-recentBaseline), To: ev.From, Source: BaselineBeforeWindow}
		if givenOK {
			in.Baseline = given
		}
		return in
	}
	// Before the incident is known, the usual failure rate and answer tail
	// come from the given baseline's part before the window (it may reach
	// into the incident), else from the data before the window.
	provisional, provisionalOK := given, givenOK
	if provisional.To.After(ev.From) {
		provisional.To = ev.From
		provisionalOK = provisionalOK && provisional.To.Sub(provisional.From) >= minUsableBaseline
	}
	if !provisionalOK {
		provisional, provisionalOK = ev.beforeWindow()
	}
	lateArg := in.lateThreshold(ev, provisional, provisionalOK)

	// The usual failure rate per arriving minute, from the provisional
	// baseline (before the incident is known): with none, absolute criteria.
	var usual failure.Usual
	if provisionalOK {
		var base []int
		reqs := 0
		for m := provisional.From.Unix() / 60; m < provisional.To.Unix()/60; m++ {
			n := 0
			if a := ev.Traffic.arrivals[m]; a != nil {
				n = a.failed(lateArg)
				reqs += a.Requests
			}
			base = append(base, n)
		}
		usual = failure.UsualOf(base, reqs)
	}
	// The failing stretches, by the one definition the simulator's truth
	// lists them by too (failure.Stretches): clear minutes, their edges,
	// each standing out as a whole. Minutes the access log has no lines
	// for are no pause (only the logged minutes between two failing ones
	// can end a stretch), nor is a pool that stayed saturated in between.
	first, last := ev.From.Unix()/60, (ev.To.Unix()+59)/60
	saturated := ev.saturatedRuns()
	unlogged := Unlogged(ev.Coverage, ev.From, ev.To)
	at := func(m int64) (int, int) {
		a := ev.Traffic.arrivals[m]
		if a == nil {
			return 0, 0
		}
		return a.failed(lateArg), a.Requests
	}
	joined := func(end, next int64) bool {
		from, to := time.Unix(end*60, 0).UTC(), time.Unix(next*60, 0).UTC()
		return to.Sub(from)-unloggedWithin(unlogged, from, to) <= mergeGap || coveredBy(saturated, from, to)
	}
	var list []Incident
	for _, s := range failure.Stretches(failure.Minutes{First: first, Last: last, At: at, Joined: joined}, usual) {
		list = append(list, Incident{Start: time.Unix(s.Start*60, 0).UTC(), End: time.Unix(s.End*60, 0).UTC(),
			ClearFrom: time.Unix(s.Clear*60, 0).UTC()})
	}
	for i := range list {
		inc := &list[i]
		ev.countIncident(inc, lateArg)
		inc.Onset = inc.Start
		for _, r := range saturated {
			// A saturation that ran into the failing stretch began it.
			if r.Start.Before(inc.Onset) && !r.End.Before(inc.Start.Add(-mergeGap)) && r.Start.Before(inc.End) {
				inc.SaturatedFrom = r.Start
				inc.Onset = r.Start
				break
			}
		}
	}
	in.List = list
	for i := range in.List {
		ev.openEdges(&in.List[i], unlogged, saturated)
		if in.Worst < 0 || in.List[i].Failed > in.List[in.Worst].Failed {
			in.Worst = i
		}
	}
	in.chooseBaseline(ev, given, givenOK, givenWhy)
	if b := in.Baseline; b.Usable() && b.To.Sub(b.From) < shortBaseline {
		in.note(sources.SeverityInfo, Messages.Say("incident.baseline_short", struct {
			Source   string
			From, To time.Time
		}{b.Source, b.From.In(ev.loc()), b.To.In(ev.loc())}))
	}
	if n := len(in.List); n > 1 {
		w := in.List[in.Worst]
		in.note(sources.SeverityInfo, Messages.Say("incident.stretches", struct {
			N, Failed  int
			Start, End time.Time
		}{n, w.Failed, w.Start.In(ev.loc()), w.End.In(ev.loc())}))
	}
	return in
}

// openEdges marks the edges of inc that run into minutes the access log
// has no lines for (unlogged), and the stretches inside it. Such an edge is
// bounded by the php-fpm metrics when they cover those minutes and the pool
// was saturated (saturated) at the edge: the saturation's own end (or start)
// is then what is known, and the report says it is the metrics'.
func (ev *Evidence) openEdges(inc *Incident, unlogged []sources.Stretch, saturated []run) {
	metricsCover := func(a, b time.Time) bool { return coveredOver(ev.Coverage, evidence.CoverageMetrics, a, b) }
	for _, s := range unlogged {
		switch {
		case !s.From.Before(inc.Start) && !s.To.After(inc.End):
			inc.Unlogged = append(inc.Unlogged, s)
		case inc.OpenEnd == nil && EndsAtUnlogged([]sources.Stretch{s}, inc.End):
			e := &Edge{Unlogged: s}
			for _, r := range saturated {
				if r.Start.After(inc.End) || !r.End.After(inc.End) {
					continue
				}
				// The pool was saturated when the log stopped and stayed so
				// past it: its end, where the series cover it, bounds the
				// failing stretch.
				end := earlier(r.End, ev.To)
				if metricsCover(inc.End, earlier(end.Add(mergeGap), ev.To)) {
					e.BoundedBy, e.At = evidence.CoverageMetrics, end
					e.Ongoing = ev.Pool != nil && !r.End.Before(ev.To.Add(-ev.Pool.Step))
				}
				break
			}
			inc.OpenEnd = e
		case inc.OpenStart == nil && s.From.Before(inc.Start) && !s.To.Before(inc.Start.Add(-mergeGap)):
			e := &Edge{Unlogged: s}
			if sat := inc.SaturatedFrom; !sat.IsZero() && sat.Before(inc.Start) && metricsCover(later(sat.Add(-mergeGap), ev.From), inc.Start) {
				e.BoundedBy, e.At = evidence.CoverageMetrics, sat
			}
			inc.OpenStart = e
		}
	}
}

func (ev *Evidence) loc() *time.Location {
	if ev.Loc == nil {
		return time.UTC
	}
	return ev.Loc
}

func (in *Incidents) note(sev sources.Severity, t prose.Text) {
	in.Notes = append(in.Notes, sources.Note("incident", sev, t))
}

// baselineSpan is a given baseline too short to use, for the messages
// that say so: the span given (RFC 3339 in English, as report.json has
// always had it), what it held and what is needed.
type baselineSpan struct {
	From, To             time.Time
	FromText, ToText     string
	Held, Needed         time.Duration
	HeldText, NeededText string
}

func givenTooShort(from, to time.Time, held Baseline, loc *time.Location) baselineSpan {
	d := max(0, held.To.Sub(held.From))
	return baselineSpan{From: from.In(loc), To: to.In(loc), FromText: from.Format(time.RFC3339), ToText: to.Format(time.RFC3339),
		Held: d, Needed: minUsableBaseline, HeldText: spanText(d), NeededText: spanText(minUsableBaseline)}
}

// countIncident sums the arrivals of an incident's failing stretch.
func (ev *Evidence) countIncident(inc *Incident, lateArg float64) {
	for m := inc.Start.Unix() / 60; m < inc.End.Unix()/60; m++ {
		a := ev.Traffic.arrivals[m]
		if a == nil {
			continue
		}
		n := a.failed(lateArg)
		inc.Requests += a.Requests
		inc.Failed += n
		inc.Refused += a.Refused
		inc.Late += a.late(lateArg)
		if n > inc.PeakFailedPerMin {
			inc.PeakFailedPerMin, inc.PeakAt = n, time.Unix(m*60, 0).UTC()
		}
	}
}

// saturatedRuns are the stretches in which every worker was busy or more
// requests queued than there are workers (nil without metrics).
func (ev *Evidence) saturatedRuns() []run {
	p := ev.Pool
	workers := poolSize(ev)
	if p == nil || workers == 0 {
		return nil
	}
	from, to := ev.From.Add(-recentBaseline), ev.To
	full := func(pt metrics.Point) bool { return pt.V >= float64(workers) }
	rs := append(runs(p.Active, from, to, 2*p.Step, full), runs(p.Queue, from, to, 2*p.Step, full)...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start.Before(rs[j].Start) })
	var out []run
	for _, r := range rs {
		r.End = r.End.Add(p.Step)
		// A dip below the maximum shorter than mergeGap does not end
		// saturation, as a pause that short does not end an outage.
		if n := len(out); n > 0 && !r.Start.After(out[n-1].End.Add(mergeGap)) {
			if r.End.After(out[n-1].End) {
				out[n-1].End = r.End
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// coveredBy reports whether one run spans [a, b].
func coveredBy(rs []run, a, b time.Time) bool {
	for _, r := range rs {
		if !r.Start.After(a) && !r.End.Before(b) {
			return true
		}
	}
	return false
}

// givenBaseline is the baseline the user gave, cut to its last recentBaseline,
// when it holds enough data to compare with; else why not.
func (ev *Evidence) givenBaseline() (Baseline, bool, prose.Text) {
	if ev.BaselineFrom.IsZero() || !ev.BaselineTo.After(ev.BaselineFrom) {
		return Baseline{Source: BaselineNone}, false, prose.Text{}
	}
	b := Baseline{From: ev.BaselineFrom, To: ev.BaselineTo, Source: BaselineGiven}
	if ev.Traffic != nil {
		first, last := ev.Traffic.Span()
		if b.From.Before(first) {
			b.From = first.Truncate(time.Minute)
		}
		if b.To.After(last) {
			b.To = last.Add(time.Minute).Truncate(time.Minute)
		}
	}
	if b.To.Sub(b.From) > recentBaseline {
		b.From = b.To.Add(-recentBaseline)
	}
	if b.To.Sub(b.From) < minUsableBaseline {
		return b, false, Messages.Say("incident.given_baseline_short", givenTooShort(ev.BaselineFrom, ev.BaselineTo, b, ev.loc()))
	}
	return b, true, prose.Text{}
}

// beforeWindow is the data before the window (its last recentBaseline), when
// there is enough of it.
func (ev *Evidence) beforeWindow() (Baseline, bool) {
	first, _ := ev.Traffic.Span()
	b := Baseline{From: later(first.Truncate(time.Minute), ev.From.Add(-recentBaseline)), To: ev.From, Source: BaselineBeforeWindow}
	return b, b.To.Sub(b.From) >= minUsableBaseline
}

// chooseBaseline settles the baseline: the given one unless it reaches into
// an incident (then it ends at the onset); else the hours before the worst
// incident's onset (after any earlier incident); else, with no incident, the
// data before the window. None of these compares the incident with itself.
func (in *Incidents) chooseBaseline(ev *Evidence, given Baseline, givenOK bool, givenWhy prose.Text) {
	loc := ev.loc()
	worst := in.WorstIncident()
	if givenOK {
		b := given
		for _, inc := range in.List {
			if inc.Onset.Before(b.To) && inc.End.After(b.From) {
				b.To = inc.Onset
			}
		}
		if b.To.Sub(b.From) >= minUsableBaseline {
			in.Baseline = b
			if b.To.Before(given.To) {
				in.note(sources.SeverityInfo, Messages.Say("incident.given_baseline_cut", b.To.In(loc)))
			}
			return
		}
		givenWhy = Messages.Say("incident.given_baseline_before_onset", givenTooShort(given.From, given.To, b, loc))
	}
	first, _ := ev.Traffic.Span()
	first = first.Truncate(time.Minute)
	type instead struct {
		Given prose.Text
		What  string
	}
	var why prose.Text
	if worst != nil {
		b := Baseline{From: later(first, worst.Onset.Add(-recentBaseline)), To: worst.Onset, Source: BaselineBeforeOnset}
		for _, inc := range in.List {
			if inc.End.After(b.From) && !inc.End.After(worst.Onset) {
				b.From = inc.End
			}
		}
		if b.To.Sub(b.From) >= minUsableBaseline {
			in.Baseline = b
			if givenWhy.String() != "" {
				in.note(sources.SeverityWarning, Messages.Say("incident.baseline_instead", instead{givenWhy, "onset"}))
			}
			return
		}
		why = Messages.Say("incident.too_little_before_onset", struct {
			Held, Needed         time.Duration
			HeldText, NeededText string
			Onset                time.Time
		}{max(0, b.To.Sub(b.From)), minUsableBaseline, spanText(max(0, b.To.Sub(b.From))), spanText(minUsableBaseline), worst.Onset.In(loc)})
	} else if b, ok := ev.beforeWindow(); ok {
		in.Baseline = b
		if givenWhy.String() != "" {
			in.note(sources.SeverityWarning, Messages.Say("incident.baseline_instead", instead{givenWhy, "window"}))
		}
		return
	} else {
		why = Messages.Say("incident.too_little_before_window", struct {
			Held, Needed         time.Duration
			HeldText, NeededText string
		}{max(0, ev.From.Sub(first)), minUsableBaseline, spanText(max(0, ev.From.Sub(first))), spanText(minUsableBaseline)})
	}
	in.Baseline = Baseline{Source: BaselineNone}
	in.note(sources.SeverityWarning, Messages.Say("incident.no_baseline", struct {
		Given, Why prose.Text
		HasGiven   bool
	}{givenWhy, why, givenWhy.String() != ""}))
}

// lateThreshold settles when an answer came too late for its reader, applies
// it to the access log's counts when it is an estimate, and returns the
// threshold the arrival counts must be read with (0: they count it already).
func (in *Incidents) lateThreshold(ev *Evidence, b Baseline, ok bool) float64 {
	if s := ev.Site.ClientTimeoutS; s > 0 {
		in.LateAfterS, in.LateSource = s, LateFromSite
		return 0
	}
	if applied := ev.Traffic.lateAfter; applied > 0 {
		// Already estimated (FindIncidents ran before on this Traffic).
		in.LateAfterS, in.LateSource = applied, ev.Traffic.lateSource
		return applied
	}
	var h Histogram
	source := LateFromBaselineTail
	if ok {
		for m := b.From.Unix() / 60; m < b.To.Unix()/60; m++ {
			if a := ev.Traffic.arrivals[m]; a != nil {
				h.Merge(&a.Answers)
			}
		}
	}
	if h.N < minTailAnswers {
		h, source = ev.Traffic.quietAnswers(), LateFromQuietMinutes
	}
	if h.N < minTailAnswers {
		// No quiet minutes at all (the data starts inside the incident):
		// rather than let a silent outage vanish, answers slower than
		// minLateS are counted late, and the note says it is an assumption.
		after := minLateS
		ev.Traffic.applyLateAfter(after, LateAssumed)
		in.LateAfterS, in.LateSource = after, LateAssumed
		in.note(sources.SeverityWarning, Messages.Say("incident.late_assumed", after))
		return after
	}
	tail := h.Quantile(0.99)
	after := math.Max(lateTailFactor*tail, minLateS)
	ev.Traffic.applyLateAfter(after, source)
	in.LateAfterS, in.LateSource = after, source
	// Estimated from the log itself, the timeout is no evidence missing:
	// the data is complete and the report says the figure is an estimate
	// (the impact's late caveat, the findings' "estimated"), so the note is
	// info and leaves the exit status to what is really missing. Only the
	// bare assumption above, with no answers to estimate from, is a warning.
	in.note(sources.SeverityInfo, Messages.Say("incident.late_estimated", struct {
		After, Factor, Tail, Min float64
		Quiet                    bool
	}{after, lateTailFactor, tail, minLateS, source == LateFromQuietMinutes}))
	return after
}

// minTailAnswers is the fewest answers a 99th percentile is read from.
const minTailAnswers = 200

// quietAnswers merges the answer durations of the quietest minutes: those
// whose median answer is no more than twice the lower quartile of all
// minutes' medians, and under minLateS. While the incident covers under
// three quarters of the data, the quiet minutes are the usual ones.
func (t *Traffic) quietAnswers() Histogram {
	type med struct {
		m   int64
		p50 float64
	}
	var ms []med
	for m, a := range t.arrivals {
		if a.Answers.N >= 5 {
			ms = append(ms, med{m, a.Answers.Quantile(0.5)})
		}
	}
	var h Histogram
	if len(ms) == 0 {
		return h
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].p50 < ms[j].p50 })
	q1 := ms[len(ms)/4].p50
	for _, x := range ms {
		// A minute whose typical reader waited minLateS or more is no
		// quiet minute, however it ranks.
		if x.p50 <= 2*q1 && x.p50 < minLateS {
			h.Merge(&t.arrivals[x.m].Answers)
		}
	}
	return h
}

// applyLateAfter counts PHP successes slower than s as late (reaching no
// one) instead of goodput, in every minute: the site gave no timeout and s
// estimates it. A minute's goodput latencies hold exactly those successes.
func (t *Traffic) applyLateAfter(s float64, source string) {
	t.lateAfter, t.lateSource = s, source
	for _, mm := range t.minutes {
		n := mm.Latency.countAbove(s)
		if n == 0 {
			continue
		}
		for b := bucketOf(s) + 1; b < histBuckets; b++ {
			mm.Latency.N -= int(mm.Latency.Counts[b])
			mm.Latency.Counts[b] = 0
		}
		mm.Goodput -= n
		mm.Late += n
		mm.Abandoned += n
		mm.lateMoved += n
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
