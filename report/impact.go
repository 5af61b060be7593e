package report

import (
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

// assembleImpact counts what users saw from the per-minute evidence. An outage
// is not only 5xx: a success logged after the clients' timeout reached nobody,
// and a 429 refused a reader; both count as failed (design.md, Detectors).
func assembleImpact(r *Report, loc *time.Location) Impact {
	im := Impact{Start: r.Window.From, End: r.Window.To, StatusCounts: map[string]int{}}
	if f := detect.First(r.Findings, detect.KindUpstreamErrors); f != nil && !f.Start.IsZero() && f.End.After(f.Start) {
		im.Start, im.End = f.Start, f.End
	}
	if in := r.incidents; in != nil {
		if w := in.WorstIncident(); w != nil {
			im.Onset = w.Onset
			unknown := false
			if w.OpenStart != nil {
				im.StartKnown, im.StartBound = &unknown, w.OpenStart
			}
			if w.OpenEnd != nil {
				im.EndKnown, im.EndBound = &unknown, w.OpenEnd
			}
			im.Unlogged = w.Unlogged
			for i, inc := range in.List {
				if i != in.Worst {
					im.OtherStretches = append(im.OtherStretches, inc)
				}
			}
		}
		b := in.Baseline
		im.Baseline = &b
	}
	for i := range r.Evidence.Minutes {
		m := &r.Evidence.Minutes[i]
		im.Requests += m.Requests
		for s, n := range m.Status {
			im.StatusCounts[s] += n
		}
		failed := m.failed()
		im.FailedRequests += failed
		im.LateRequests += m.Late
		if !m.Time.Before(im.Start.Truncate(time.Minute)) && m.Time.Before(im.End) {
			im.PHPRequests += m.NeededPHP
			im.PHPFailed += m.FailedPHP
		}
	}
	if im.PHPRequests > 0 {
		im.PHPFailedShare = float64(im.PHPFailed) / float64(im.PHPRequests)
	}
	im.caveats = impactCaveats(r, &im, loc)
	im.Caveats = make([]string, len(im.caveats))
	for i, c := range im.caveats {
		im.Caveats[i] = c.in(LangEN)
	}
	return im
}

// impactCaveats says what the counts leave out.
func impactCaveats(r *Report, im *Impact, loc *time.Location) []phrase {
	var out []phrase
	day := im.Start
	switch n := im.StatusCounts["429"]; {
	case len(r.Evidence.Minutes) == 0:
		out = append(out, r.say(loc, day, func(p printer) string { return p.say("impact.no_access_log", nil) }))
	case n == 0:
		out = append(out, r.say(loc, day, func(p printer) string { return p.say("impact.no_429", nil) }))
	default:
		out = append(out, r.say(loc, day, func(p printer) string { return p.say("impact.refused_429", n) }))
	}
	if im.LateRequests > 0 {
		late := struct {
			Late      int
			TimeoutS  float64
			Estimated bool
		}{Late: im.LateRequests}
		if in := r.incidents; in != nil && in.LateSource != detect.LateFromSite {
			late.Estimated = true
		}
		if f := detect.First(r.Findings, detect.KindClientAbandonedWork); f != nil {
			late.TimeoutS = max(detect.FactsOf[detect.AbandonedWorkFacts](f).ClientTimeoutS, 0)
		}
		out = append(out, r.say(loc, day, func(p printer) string { return p.say("impact.late", late) }))
	}
	// A gap is a silence the site's own rate says should have held lines:
	// the access log's coverage found them (sources.CoverageMeter). A minute
	// without lines on a quiet site is not one; listing every such minute
	// told a week-long window's night as hundreds of holes.
	for _, c := range r.Coverage {
		if c.Source != evidence.CoverageAccess {
			continue
		}
		for _, g := range c.Gaps() {
			gap := struct{ From, To time.Time }{g.From, g.To}
			out = append(out, r.say(loc, day, func(p printer) string { return p.say("impact.gap", gap) }))
		}
	}
	for _, n := range r.DataQuality {
		if n.Severity == sources.SeverityInfo {
			continue
		}
		out = append(out, r.say(loc, day, func(p printer) string { return n.Source + ": " + p.text(n.Text, n.Message) }))
	}
	return out
}
