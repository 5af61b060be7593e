package report

import (
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// coverageIncomplete reports whether the access log (whose counts every
// number of the report rests on) leaves part of the window unknown.
func coverageIncomplete(r *Report, source string) bool {
	for _, c := range r.Coverage {
		if c.Source == source {
			return c.State == sources.CoverageIncomplete || c.State == sources.CoverageNone
		}
	}
	return false
}

// stretch is a part of the window one source leaves unknown, for its message.
type stretch struct {
	Name     string
	From, To time.Time
	Missing  time.Duration
}

// coverageLines are the report's first lines: for each source that leaves
// part of the window unknown, what it covers and what it does not. A report
// whose evidence is complete has none.
func coverageLines(p printer, r *Report) []string {
	var out []string
	for _, c := range r.Coverage {
		if c.Complete() {
			continue
		}
		name := p.say("coverage.source", c.Source)
		if c.State == sources.CoverageNone {
			out = append(out, p.say("coverage.none", stretch{Name: name, From: r.Window.From, To: r.Window.To}))
			continue
		}
		var s []string
		for _, u := range c.Uncovered {
			st := stretch{Name: name, From: u.From, To: u.To, Missing: u.To.Sub(u.From)}
			switch u.Kind {
			case sources.StretchTail:
				s = append(s, p.say("coverage.tail", st))
			case sources.StretchHead:
				s = append(s, p.say("coverage.head", st))
			default:
				s = append(s, p.say("coverage.gap", st))
			}
		}
		if len(c.Truncated) > 0 {
			s = append(s, p.say("coverage.truncated", struct {
				Files []string
				Last  *time.Time
			}{c.Truncated, c.Last}))
		}
		out = append(out, strings.Join(s, " "))
	}
	if len(out) > 0 {
		out = append([]string{p.say("coverage.incomplete", nil)}, out...)
	}
	return out
}
