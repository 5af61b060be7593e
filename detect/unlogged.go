package detect

import (
	"time"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

// Unlogged returns the stretches of [from, to) the access log has no lines
// for, in time order: a missing head, gaps, a missing tail, and the rest of
// the window after a file that was cut short. Every claim about a minute
// (failing, recovered, quiet) rests on the access log's lines; in these
// minutes it has none, so what happened there is unknown.
//
// It is the one place the story reads the access log's coverage: the gaps
// sources found (silences too long for the site's own rate, the time lost
// between rotated files) arrive as stretches of Coverage.Uncovered, and
// every edge, sentence and chart shading follows from them. Without an
// access log (not given) it returns nil: no minute is claimed from it then.
func Unlogged(cov []sources.Coverage, from, to time.Time) []sources.Stretch {
	c, ok := accessCoverage(cov)
	if !ok || !to.After(from) {
		return nil
	}
	var out []sources.Stretch
	add := func(s sources.Stretch) {
		s.From, s.To = later(s.From, from), earlier(s.To, to)
		if !s.To.After(s.From) {
			return
		}
		if n := len(out); n > 0 && !s.From.After(out[n-1].To) {
			out[n-1].To = later(out[n-1].To, s.To)
			if s.Kind == sources.StretchTail {
				out[n-1].Kind = sources.StretchTail
			}
			return
		}
		out = append(out, s)
	}
	switch c.State {
	case sources.CoverageNotGiven:
		return nil
	case sources.CoverageNone:
		add(sources.Stretch{From: from, To: to, Kind: sources.StretchGap})
		return out
	}
	for _, u := range c.Uncovered {
		add(u)
	}
	// A file cut short ends its evidence early: the minutes after the last
	// line read are unknown even when too few to count as a gap at the
	// site's rate.
	if len(c.Truncated) > 0 && c.Last != nil && c.Last.Before(to) {
		add(sources.Stretch{From: *c.Last, To: to, Kind: sources.StretchTail})
	}
	return out
}

// accessCoverage is the access log's coverage among cov.
func accessCoverage(cov []sources.Coverage) (sources.Coverage, bool) {
	for _, c := range cov {
		if c.Source == evidence.CoverageAccess {
			return c, true
		}
	}
	return sources.Coverage{}, false
}

// coveredOver reports whether source has evidence over all of [from, to):
// given, and none of its uncovered stretches overlaps it.
func coveredOver(cov []sources.Coverage, source string, from, to time.Time) bool {
	for _, c := range cov {
		if c.Source != source {
			continue
		}
		if c.State != sources.CoverageComplete && c.State != sources.CoverageIncomplete {
			return false
		}
		if c.First == nil || c.Last == nil || c.First.After(from) || c.Last.Before(to.Add(-time.Duration(c.Resolution*float64(time.Second)))) {
			return false
		}
		for _, u := range c.Uncovered {
			if u.From.Before(to) && u.To.After(from) {
				return false
			}
		}
		return true
	}
	return false
}

// unloggedWithin is how much of [a, b) lies in the stretches ss.
func unloggedWithin(ss []sources.Stretch, a, b time.Time) time.Duration {
	var d time.Duration
	for _, s := range ss {
		if lo, hi := later(s.From, a), earlier(s.To, b); hi.After(lo) {
			d += hi.Sub(lo)
		}
	}
	return d
}

// earlier returns the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// EndsAtUnlogged reports whether something the access log shows ending at t
// may have gone on unseen: a stretch without lines begins within mergeGap
// of t (a pause shorter than that ends no failing stretch either).
func EndsAtUnlogged(unlogged []sources.Stretch, t time.Time) bool {
	for _, s := range unlogged {
		if s.To.After(t) && !s.From.After(t.Add(mergeGap)) {
			return true
		}
	}
	return false
}

// StartsAtUnlogged returns the stretch without access-log lines that
// something the access log shows beginning at t may have begun in, unseen:
// t lies in it or within mergeGap after its end (the log begins, or
// resumes after a gap, with it already going on). ok is false when the log
// covers mergeGap before t: the start is then seen.
func StartsAtUnlogged(unlogged []sources.Stretch, t time.Time) (s sources.Stretch, ok bool) {
	for _, s := range unlogged {
		if !s.From.After(t) && !s.To.Before(t.Add(-mergeGap)) {
			return s, true
		}
	}
	return sources.Stretch{}, false
}

// Unseen is where the access log begins, or resumes after a gap, with
// something already going on: the catalog's words for a start the log
// cannot show ("already under way when the access log begins at 02:22").
type Unseen struct {
	// Gap is true when the log resumes after a gap (From-To), false when
	// it begins at To.
	Gap      bool
	From, To time.Time
}

// unseenStart is the Unseen a start at t runs into, nil when the log shows it.
func unseenStart(s Story, t time.Time) *Unseen {
	from, to := s.Window()
	u, ok := StartsAtUnlogged(Unlogged(s.Coverage(), from, to), t)
	if !ok {
		return nil
	}
	return &Unseen{Gap: u.Kind == sources.StretchGap, From: u.From, To: u.To}
}

// unseenAt is the Unseen a start at t runs into, in the evidence's zone;
// nil when the access log shows it.
func (ev *Evidence) unseenAt(t time.Time) *Unseen {
	u, ok := StartsAtUnlogged(Unlogged(ev.Coverage, ev.From, ev.To), t)
	if !ok {
		return nil
	}
	return &Unseen{Gap: u.Kind == sources.StretchGap, From: u.From.In(ev.loc()), To: u.To.In(ev.loc())}
}

// sayUnseen is the catalog's clause for a start at t the access log cannot
// show ("already under way when the access log begins at 02:22"), "" when
// the log shows it.
func sayUnseen(p Phraser, s Story, t time.Time) string {
	u := unseenStart(s, t)
	if u == nil {
		return ""
	}
	return p.Say("unseen.start", u)
}

// unjudgedClause ends a check's reason that found nothing beyond the usual
// while the access log has no lines for part of the window: the minutes
// without lines hold no count to judge, so the reason says so rather than
// "as usual" for them ("" when the log covers the window).
func (ev *Evidence) unjudgedClause() prose.Text {
	d := unloggedWithin(Unlogged(ev.Coverage, ev.From, ev.To), ev.From, ev.To)
	if d <= 0 {
		return prose.Text{}
	}
	return Messages.Say("unjudged", struct {
		Span    string
		Missing time.Duration
	}{spanText(d), d})
}
