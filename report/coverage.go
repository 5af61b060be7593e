package report

import (
	"strings"

	"github.com/aftermath-forensics/aftermath/sources"
)

// coverageNames are the sources' names in prose, per language.
var coverageNames = map[string][2]string{
	"access":      {"the access log", "접근 로그"},
	"metrics":     {"the php-fpm metrics", "php-fpm 지표"},
	"cpu":         {"the CPU series", "CPU 지표"},
	"caddy log":   {"Caddy's own log", "Caddy 자체 로그"},
	"php-fpm log": {"php-fpm's log", "php-fpm 로그"},
}

func coverageName(p printer, source string) string {
	n, ok := coverageNames[source]
	if !ok {
		return source
	}
	if p.ko {
		return n[1]
	}
	return n[0]
}

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

// coverageLines are the report's first lines: for each source that leaves
// part of the window unknown, what it covers and what it does not. A report
// whose evidence is complete has none.
func coverageLines(p printer, r *Report) []string {
	var out []string
	for _, c := range r.Coverage {
		if c.Complete() {
			continue
		}
		name := coverageName(p, c.Source)
		var s []string
		if c.State == sources.CoverageNone {
			if p.ko {
				a, b := p.ends(r.Window.From, r.Window.To, false)
				s = append(s, a+"부터 "+b+"까지 "+name+"에 이 구간의 기록이 없습니다. 알 수 없는 것이지 조용했던 것이 아닙니다.")
			} else {
				a, b := p.ends(r.Window.From, r.Window.To, false)
				s = append(s, "There is nothing from "+name+" between "+a+" and "+b+": what it would show is unknown, not quiet.")
			}
			out = append(out, strings.Join(s, " "))
			continue
		}
		for _, u := range c.Uncovered {
			d := p.dur(u.To.Sub(u.From))
			switch {
			case u.Kind == sources.StretchTail && p.ko:
				s = append(s, name+"의 기록은 "+p.at(u.From)+"에 끝납니다. 구간 끝("+p.at(u.To)+")보다 "+d+" 이릅니다. 그 뒤는 알 수 없습니다.")
			case u.Kind == sources.StretchTail:
				s = append(s, "The evidence of "+name+" ends at "+p.at(u.From)+", "+d+" before the window does ("+p.at(u.To)+"): nothing after it is known.")
			case u.Kind == sources.StretchHead && p.ko:
				s = append(s, name+"의 기록은 "+p.at(u.To)+"에 시작합니다. 구간 시작보다 "+d+" 늦습니다. 그 앞은 알 수 없습니다.")
			case u.Kind == sources.StretchHead:
				s = append(s, "The evidence of "+name+" begins at "+p.at(u.To)+", "+d+" after the window does: nothing before it is known.")
			case p.ko:
				a, b := p.ends(u.From, u.To, false)
				s = append(s, a+"부터 "+b+"까지 "+name+"의 기록이 빠져 있습니다 ("+d+").")
			default:
				a, b := p.ends(u.From, u.To, false)
				s = append(s, "Nothing from "+name+" between "+a+" and "+b+" ("+d+").")
			}
		}
		if len(c.Truncated) > 0 {
			last := ""
			if c.Last != nil {
				last = p.at(*c.Last)
			}
			if p.ko {
				s = append(s, strings.Join(c.Truncated, ", ")+" 파일이 중간에 잘려 있습니다. 읽은 기록은 "+last+"에 끝납니다.")
			} else {
				s = append(s, "Cut short: "+strings.Join(c.Truncated, ", ")+"; what was read ends at "+last+".")
			}
		}
		out = append(out, strings.Join(s, " "))
	}
	if len(out) > 0 {
		head := "Evidence incomplete."
		if p.ko {
			head = "근거가 불완전합니다."
		}
		out = append([]string{head}, out...)
	}
	return out
}
