package report

import (
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
)

// assembleImpact counts what users saw from the per-minute evidence. An outage
// is not only 5xx: a success logged after the clients' timeout reached nobody,
// and a 429 refused a reader; both count as failed (design.md, Detectors).
func assembleImpact(r *Report, loc *time.Location) Impact {
	im := Impact{Start: r.Window.From, End: r.Window.To, StatusCounts: map[string]int{}}
	if f := firstKind(r.Findings, detect.KindUpstreamErrors); f != nil && !f.Start.IsZero() && f.End.After(f.Start) {
		im.Start, im.End = f.Start, f.End
	}
	if in := r.incidents; in != nil {
		if w := in.WorstIncident(); w != nil {
			im.Onset = w.Onset
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
			im.PHPRequests += m.PHP + m.ProxyMade + m.Status["429"]
			im.PHPFailed += failed
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
	if len(r.Evidence.Minutes) == 0 {
		out = append(out, say(loc, day, func(p printer) string {
			if p.ko {
				return "이 구간의 접근 로그가 없어 상태별 건수를 셀 수 없습니다."
			}
			return "No access log covers the window: the status counts are unknown."
		}))
	} else if n := im.StatusCounts["429"]; n == 0 {
		out = append(out, say(loc, day, func(p printer) string {
			if p.ko {
				return "접근 로그에 429가 없습니다. 속도 제한이 기록을 남기지 않고 거절한 요청이 있었다면 위 건수에 들어 있지 않습니다."
			}
			return "No 429 is in the access log: if a rate limit refused requests without logging them, they are not in these counts."
		}))
	} else {
		out = append(out, say(loc, day, func(p printer) string {
			if p.ko {
				return "429로 거절된 " + p.i(n) + "건도 실패로 셉니다. 속도 제한이 기록 없이 거절한 요청은 들어 있지 않습니다."
			}
			return p.i(n) + " requests refused with 429 count as failed; any a rate limit refused without logging are not in the counts."
		}))
	}
	if im.LateRequests > 0 {
		timeout := 0.0
		if f := firstKind(r.Findings, detect.KindClientAbandonedWork); f != nil {
			timeout = detect.FactsOf[detect.AbandonedWorkFacts](f).ClientTimeoutS
		}
		out = append(out, say(loc, day, func(p printer) string {
			if p.ko {
				t := "클라이언트가 기다리는 시간"
				if timeout > 0 {
					t += " " + p.secs(timeout)
				}
				return "성공으로 기록된 응답 " + p.i(im.LateRequests) + "건은 " + t + "보다 늦게 나가 아무도 받지 못했으므로 실패로 셉니다."
			}
			t := "the clients' timeout"
			if timeout > 0 {
				t = "the clients' " + p.secs(timeout) + " timeout"
			}
			return p.i(im.LateRequests) + " responses logged as successes came after " + t + "; nobody read them, so they count as failed."
		}))
	}
	for _, g := range minuteGaps(r.Evidence.Minutes) {
		out = append(out, say(loc, day, func(p printer) string {
			if p.ko {
				return p.at(g[0]) + "부터 " + p.at(g[1]) + "까지는 접근 로그가 한 줄도 없습니다. 로그가 빠졌거나 요청이 전혀 없었습니다."
			}
			return "No access-log line from " + p.at(g[0]) + " to " + p.at(g[1]) + ": a gap in the log, or no traffic at all."
		}))
	}
	for _, n := range r.DataQuality {
		if n.Severity == sources.SeverityInfo {
			continue
		}
		out = append(out, phrase{LangEN: n.Source + ": " + n.Message, LangKO: n.Source + ": " + n.Message})
	}
	return out
}

// minuteGaps finds missing minutes between the first and last minute logged:
// [first missing minute, end of the gap).
func minuteGaps(ms []MinuteRow) [][2]time.Time {
	var out [][2]time.Time
	for i := 1; i < len(ms); i++ {
		if d := ms[i].Time.Sub(ms[i-1].Time); d > time.Minute {
			out = append(out, [2]time.Time{ms[i-1].Time.Add(time.Minute), ms[i].Time})
		}
	}
	return out
}

func firstKind(fs []detect.Finding, kind string) *detect.Finding {
	for i := range fs {
		if fs[i].Kind == kind {
			return &fs[i]
		}
	}
	return nil
}
