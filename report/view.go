package report

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/rules"
)

// view is what the Markdown and HTML templates render: every text already in
// the target language, plain (unescaped); each template escapes for its format.
type view struct {
	Lang  string
	L     map[string]string
	Title string
	// Coverage are the first lines: what part of the window each source
	// leaves unknown (none when the evidence is complete).
	Coverage []string
	Summary  string
	TZ       string

	Impact   impactView
	Timeline []rowView
	Causes   []causeView
	// CauseNote is set when no finding explains the outage (only symptoms).
	CauseNote string
	// RuledOut explains the changes the numbers clear; Mitigations those
	// that lowered the risk.
	RuledOut    []string
	Mitigations []string

	Rules []ruleView
	Recs  []recView
	// NoFix is set when no rule was generated.
	NoFix string

	Remains []string

	Sources     []string
	Queries     []queryView
	Leaves      []string
	Checks      []checkView
	Findings    []findingView
	DataQuality []string

	Charts []chartView
}

type impactView struct {
	Window, Period                                           string
	Requests, Failed, Late, PHPRequests, PHPFailed, PHPShare string
	Statuses                                                 []statusView
	Caveats                                                  []string
}

type statusView struct{ Code, Count, Proxy string }

// rowView is one timeline row: the moments of one local minute.
type rowView struct {
	Index    int
	Time     string
	Text     string
	Findings string
	IDs      []string
	at       time.Time
}

type causeView struct {
	Rank                      int
	Role, Finding, Kind, Text string
}

type ruleView struct {
	Name, Finding, Why, Caddyfile, Fence string
	Backtest                             [][2]string
}

type recView struct{ Target, Key, Value, Why string }

type queryView struct{ Name, Query, Agg string }

type checkView struct{ Name, Outcome, Reason, Findings string }

type findingView struct{ ID, Kind, When, Confidence, Summary string }

// labels are the fixed words of the HTML page and of tables built in Go.
var labels = map[string]map[string]string{
	LangEN: {
		"summary": "Summary", "impact": "Impact", "charts": "Charts", "timeline": "Timeline", "cause": "Cause",
		"fix": "What to fix", "remains": "What remains", "sources": "Where the numbers come from",
		"time": "time", "what": "what happened", "finding": "finding", "status": "status", "responses": "responses",
		"by_caddy": "made by Caddy itself", "window": "window", "period": "failing", "requests": "requests logged",
		"failed": "requests failed (5xx, 429, late)", "late": "successes after the clients' timeout",
		"php_requests": "requests that needed PHP, while failing", "php_failed": "of them failed",
		"rule": "Rule", "backtest": "Backtest on the recorded traffic",
		"recommendations": "Configuration advice", "series": "series",
		"agg": "per minute", "leaves": "What they leave out", "checks": "What each detector concluded",
		"detector": "detector", "outcome": "outcome", "reason": "reason", "findings": "Findings",
		"id": "id", "kind": "kind", "when": "when", "confidence": "confidence", "finding_summary": "summary",
		"data_quality": "Data quality", "tz": "Times are local",
		"role_trigger": "Trigger", "role_enabler": "Enabling change", "role_mechanism": "Mechanism", "role_candidate": "Possibly related change", "role_symptom": "Symptom",
		"found": "found", "not_interesting": "nothing unusual", "could_not_run": "could not run",
		"bt_crawler": "crawler requests refused", "bt_php": "crawler PHP time saved", "bt_other": "other logged-out requests refused", "bt_readers": "requests of readers who share the crawler's fingerprint refused",
		"bt_logged_in": "logged-in requests refused", "bt_baseline": "refusals over the baseline", "bt_first": "first refusal",
		"ruled_out": "Ruled out", "mitigations": "Already changed", "legend_window": "failing stretch", "legend_moments": "numbers mark the timeline rows",
	},
	LangKO: {
		"summary": "요약", "impact": "영향", "charts": "그래프", "timeline": "경과", "cause": "원인",
		"fix": "고칠 것", "remains": "남은 문제", "sources": "수치의 출처",
		"time": "시각", "what": "일어난 일", "finding": "근거", "status": "상태", "responses": "응답",
		"by_caddy": "Caddy가 직접 만듦", "window": "분석 구간", "period": "실패 구간", "requests": "기록된 요청",
		"failed": "실패한 요청 (5xx, 429, 늦은 응답)", "late": "이용자가 떠난 뒤의 성공 응답",
		"php_requests": "실패 구간에 PHP가 필요했던 요청", "php_failed": "그중 실패",
		"rule": "규칙", "backtest": "기록된 요청으로 돌려 본 결과",
		"recommendations": "설정 권고", "series": "지표",
		"agg": "1분마다", "leaves": "빠진 것", "checks": "탐지기별 결과",
		"detector": "탐지기", "outcome": "결과", "reason": "이유", "findings": "탐지 결과 (탐지기 원문, 영어)",
		"id": "id", "kind": "종류", "when": "시각", "confidence": "신뢰도", "finding_summary": "요약",
		"data_quality": "데이터 품질", "tz": "시각은 현지 시각",
		"role_trigger": "계기", "role_enabler": "바탕이 된 변경", "role_mechanism": "작동 방식", "role_candidate": "관련이 있을 수 있는 변경", "role_symptom": "증상",
		"found": "찾음", "not_interesting": "특이점 없음", "could_not_run": "실행 못 함",
		"bt_crawler": "거절된 크롤러 요청", "bt_php": "아낀 크롤러 PHP 시간", "bt_other": "거절된 다른 비로그인 요청", "bt_readers": "크롤러와 지문이 같은 독자의 요청 중 거절된 것",
		"bt_logged_in": "거절된 로그인 요청", "bt_baseline": "기준 기간에 거절했을 요청", "bt_first": "첫 거절",
		"ruled_out": "원인이 아닌 것", "mitigations": "이미 바꾼 것", "legend_window": "실패 구간", "legend_moments": "숫자는 경과 표의 줄",
	},
}

// newView prepares r for rendering in lang.
func newView(r *Report, lang string) (*view, error) {
	if !validLang(lang) {
		return nil, fmt.Errorf("report: language %q: want one of %s", lang, strings.Join(Langs, ", "))
	}
	loc, err := r.location()
	if err != nil {
		return nil, err
	}
	day := r.incidentDay()
	p := newPrinter(lang, loc, day)
	v := &view{Lang: lang, L: labels[lang], TZ: r.Window.TZ}
	if v.TZ == "" {
		v.TZ = "UTC"
	}
	v.Title = title(p, r)
	v.Coverage = coverageLines(p, r)
	v.Summary = summary(p, r)
	v.Impact = impactOf(p, r)
	v.Timeline = rows(p, r)
	for _, c := range r.Causes {
		v.Causes = append(v.Causes, causeView{Rank: c.Rank, Role: v.L["role_"+c.Role], Finding: c.Finding, Kind: c.Kind,
			Text: c.text(lang) + estimatedMark(lang, r.finding(c.Finding))})
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		switch roleOf(f) {
		case detect.RoleRuledOut:
			v.RuledOut = append(v.RuledOut, explainNotCause(p, r, f))
		case detect.RoleMitigation:
			v.Mitigations = append(v.Mitigations, explainNotCause(p, r, f))
		}
	}
	if !hasCause(r.Causes) {
		v.CauseNote = map[string]string{
			LangEN: "No finding explains the failures: only their symptoms were found. The detectors' conclusions below say what was checked.",
			LangKO: "실패를 설명하는 근거를 찾지 못했습니다. 증상만 찾았습니다. 아래 탐지기별 결과에 무엇을 확인했는지 있습니다.",
		}[lang]
	}
	for _, rl := range r.Rules {
		v.Rules = append(v.Rules, ruleOf(p, v.L, rl))
	}
	for _, rc := range r.Recommendations {
		v.Recs = append(v.Recs, recView{Target: rc.Target, Key: rc.Key, Value: rc.Value, Why: rc.Why})
	}
	if len(r.Rules) == 0 {
		v.NoFix = map[string]string{
			LangEN: "No rule was generated.",
			LangKO: "만든 규칙이 없습니다.",
		}[lang]
		if len(r.Recommendations) == 0 {
			v.NoFix = map[string]string{
				LangEN: "No rule was generated and no configuration advice was computed.",
				LangKO: "만든 규칙도, 계산한 설정 권고도 없습니다.",
			}[lang]
		}
	}
	v.Remains = remains(p, r)
	v.Sources, v.Leaves = provenance(p, r)
	for _, s := range r.Evidence.Series {
		v.Queries = append(v.Queries, queryView{Name: s.Name, Query: s.Query, Agg: s.Agg})
	}
	for _, c := range r.Checks {
		v.Checks = append(v.Checks, checkView{Name: c.Name, Outcome: orDash(v.L[c.Outcome]), Reason: c.Reason, Findings: strings.Join(c.Findings, ", ")})
	}
	for _, f := range r.Findings {
		when := p.stamp(f.Start)
		if f.End.After(f.Start) {
			when += "–" + p.stamp(f.End)
		}
		v.Findings = append(v.Findings, findingView{ID: f.ID, Kind: f.Kind, When: when,
			Confidence: strconv.FormatFloat(f.Confidence, 'f', 2, 64), Summary: f.Summary + estimatedMark(lang, &f)})
	}
	for _, n := range r.DataQuality {
		v.DataQuality = append(v.DataQuality, n.Severity+" ("+n.Source+"): "+n.Message)
	}
	scrub(reflect.ValueOf(v).Elem())
	return v, nil
}

// scrub removes control and format characters from every string of a view,
// whatever renders it: escaping keeps them from being markup, but a bidi
// override would still reorder what a reader sees, and a line break in a cell
// means nothing to a reader either. Line breaks become spaces; the Caddyfile
// snippet keeps its lines.
func scrub(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(cleanText(v.String()))
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() && f.Name != "Caddyfile" {
				scrub(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			scrub(v.Index(i))
		}
	case reflect.Ptr:
		if !v.IsNil() {
			scrub(v.Elem())
		}
	}
}

// cleanText turns line breaks and tabs into spaces and drops other control
// and format characters.
func cleanText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, s)
}

func hasCause(cs []Cause) bool {
	for _, c := range cs {
		if c.Role != detect.RoleSymptom {
			return true
		}
	}
	return false
}

func title(p printer, r *Report) string {
	year := strconv.Itoa(p.day.Year())
	failing := firstKind(r.Findings, detect.KindUpstreamErrors) != nil
	from, to := r.Impact.Start, r.Impact.End
	if !failing {
		from, to = r.Window.From, r.Window.To
	}
	if p.ko {
		what := "장애 보고서"
		if !failing {
			what = "분석 보고서"
		}
		return year + "년 " + p.date(p.day) + " " + what + " (" + p.hm(from) + "~" + p.stamp(to) + ", " + r.Window.TZ + ")"
	}
	what := "Postmortem: outage on "
	if !failing {
		what = "Incident report: "
	}
	return what + p.date(p.day) + " " + year + ", " + p.hm(from) + "–" + p.stamp(to) + " (" + r.Window.TZ + ")"
}

// summary is the opening paragraph, modelled on the reference postmortem: what
// failed and how much, what triggered it, what let it, how it recovered.
func summary(p printer, r *Report) string {
	im := r.Impact
	errs := firstKind(r.Findings, detect.KindUpstreamErrors)
	// Only a crawler judged the trigger (in time and weight) is told as
	// what took the workers; one judged context is in the timeline.
	var crawler *detect.Finding
	for i := range r.Findings {
		if f := &r.Findings[i]; f.Kind == detect.KindCrawlerBurst && roleOf(f) == detect.RoleTrigger {
			crawler = f
			break
		}
	}
	sat := firstKind(r.Findings, detect.KindWorkerSaturation)
	health := firstKind(r.Findings, detect.KindHealthcheckStarved)
	var change *detect.Finding
	for i := range r.Findings {
		if f := &r.Findings[i]; f.Kind == detect.KindConfigChange && (roleOf(f) == detect.RoleEnabler || roleOf(f) == detect.RoleTrigger) {
			change = f
			break
		}
	}
	var s []string
	wa, wb := p.ends(r.Window.From, r.Window.To, true)

	// What failed.
	switch {
	case errs != nil && p.ko:
		a, b := p.ends(im.Start, im.End, true)
		s = append(s, a+"부터 "+b+"까지 PHP가 필요한 요청 "+p.i(im.PHPRequests)+"건 가운데 "+josa(p.i(im.PHPFailed)+"건", "이/가")+" 실패했습니다 ("+p.pct(im.PHPFailedShare)+").")
	case errs != nil:
		a, b := p.ends(im.Start, im.End, true)
		s = append(s, "From "+a+" to "+b+", "+p.i(im.PHPFailed)+" of the "+p.i(im.PHPRequests)+" requests that needed PHP failed ("+p.pct(im.PHPFailedShare)+").")
	case coverageIncomplete(r, "access") && p.ko:
		s = append(s, wa+"부터 "+wb+"까지 접근 로그가 남은 시간에는 요청 "+p.i(im.Requests)+"건 가운데 "+p.i(im.FailedRequests)+"건이 실패했습니다. 로그가 없는 시간은 알 수 없습니다.")
	case coverageIncomplete(r, "access"):
		s = append(s, "From "+wa+" to "+wb+", in the minutes the access log covers, "+p.i(im.FailedRequests)+" of "+p.i(im.Requests)+" requests failed; the minutes it does not cover are unknown, so this window cannot be called normal.")
	case im.Baseline != nil && !im.Baseline.Usable() && p.ko:
		// Nothing usual was measured: "no more than usual" would compare
		// the window with itself.
		s = append(s, wa+"부터 "+wb+"까지 요청 "+p.i(im.Requests)+"건 가운데 "+p.i(im.FailedRequests)+"건이 실패했지만, 실패가 몰린 구간은 없었습니다. 비교할 평소 구간은 없었습니다.")
	case im.Baseline != nil && !im.Baseline.Usable():
		s = append(s, "From "+wa+" to "+wb+", "+p.i(im.FailedRequests)+" of "+p.i(im.Requests)+" requests failed, in no stretch where clients were failed; no baseline was available to say what is usual.")
	case p.ko:
		s = append(s, wa+"부터 "+wb+"까지 요청 "+p.i(im.Requests)+"건 가운데 실패가 평소보다 많지 않았습니다 (실패 "+p.i(im.FailedRequests)+"건).")
	default:
		s = append(s, "From "+wa+" to "+wb+", no more requests failed than usual ("+p.i(im.FailedRequests)+" of "+p.i(im.Requests)+").")
	}
	if errs != nil && len(im.OtherStretches) > 0 {
		// Separate stretches stay separate: the worst leads, the others are named.
		var parts []string
		for _, o := range im.OtherStretches {
			if p.ko {
				a, b := p.ends(o.Start, o.End, false)
				parts = append(parts, a+"~"+b+" ("+p.i(o.Requests)+"건 중 "+p.i(o.Failed)+"건 실패)")
			} else {
				a, b := p.ends(o.Start, o.End, false)
				parts = append(parts, a+" to "+b+" ("+p.i(o.Failed)+" of "+p.i(o.Requests)+" failed)")
			}
		}
		if p.ko {
			s = append(s, "따로 떨어진 실패 구간도 있었습니다: "+strings.Join(parts, ", ")+".")
		} else {
			s = append(s, "Separate stretches of failures: "+p.list(parts)+".")
		}
	}
	if errs != nil {
		if b := statusBreakdown(p, im.StatusCounts, im.LateRequests); b != "" {
			s = append(s, b)
		}
	}
	// What triggered it.
	if crawler != nil {
		var paths []string
		if crawler.Fingerprint != nil {
			paths = crawler.Fingerprint.Paths
		}
		if len(paths) > 3 {
			paths = paths[:3]
		}
		cf := detect.FactsOf[detect.CrawlerBurstFacts](crawler)
		spread := cf.Spread
		w := ""
		// "Took every worker" is said of a crawler that did most of the
		// PHP work added at the onset; one with a smaller (still material)
		// share is said to have loaded PHP with that share.
		share, weighed := cf.PHPAddedShare.V, cf.PHPAddedShare.OK
		if sat != nil && (!weighed || share >= 0.5) {
			w = p.n(float64(detect.FactsOf[detect.WorkerSaturationFacts](sat).Workers))
		}
		if p.ko {
			t := "크롤러가"
			if spread {
				t = p.n(float64(cf.DistinctIPs)) + "개 주소에 퍼진 크롤러가"
			}
			if len(paths) > 0 {
				t += " 캐시되지 않는 " + strings.Join(paths, ", ") + " 등을 훑어"
			}
			switch {
			case w != "":
				t += " php-fpm 워커 " + w + "개를 모두 차지했습니다."
			case weighed:
				t += " 장애 시작 때 늘어난 PHP 시간의 " + josa(p.pct(share), "을/를") + " 썼습니다."
			default:
				t += " PHP에 부하를 주었습니다."
			}
			s = append(s, t)
		} else {
			t := "A crawler"
			if spread {
				t += " spread over " + p.n(float64(cf.DistinctIPs)) + " addresses"
			}
			if len(paths) > 0 {
				t += " walked pages no cache holds (" + p.list(paths) + ")"
			} else {
				t += " loaded PHP"
			}
			switch {
			case w != "":
				t += " and took every one of the " + w + " php-fpm workers."
			case weighed:
				t += " and used " + p.pct(share) + " of the PHP time added at the onset."
			default:
				t += "."
			}
			s = append(s, t)
		}
	} else if sat != nil {
		if p.ko {
			s = append(s, "php-fpm 워커 "+p.n(float64(detect.FactsOf[detect.WorkerSaturationFacts](sat).Workers))+"개가 모두 점유됐습니다.")
		} else {
			s = append(s, "All "+p.n(float64(detect.FactsOf[detect.WorkerSaturationFacts](sat).Workers))+" php-fpm workers were busy.")
		}
	}
	if crawler == nil {
		s = append(s, contextRises(p, r)...)
	}
	// What let it turn into an outage.
	var why string
	if change != nil && change.Change != nil {
		c := change.Change
		grew := direction(c.Old, c.New)
		if p.ko {
			verb := map[int]string{1: "커진", -1: "줄어든", 0: "바뀐"}[grew]
			why = p.at(c.Time) + "에 " + josa(orDash(c.Key), "이/가") + " " + value(c.Old) + "에서 " + josa(value(c.New), "으로/로") + " " + verb + " 탓에 "
		} else {
			verb := map[int]string{1: "grown", -1: "shrunk", 0: "changed"}[grew]
			why = "Because " + orDash(c.Key) + " had " + verb + " from " + value(c.Old) + " to " + value(c.New) + " at " + p.at(c.Time) + ", "
		}
	}
	if health != nil {
		hf := detect.FactsOf[detect.HealthcheckFacts](health)
		wait, timeout := hf.EstQueueWaitS.V, hf.HealthTimeoutS
		made503 := hf.Proxy503.V > 0
		if p.ko {
			t := why + "php-fpm 앞 대기열에"
			if wait > 0 {
				t += " 약 " + p.secs(wait) + "어치"
			}
			t += " 요청이 쌓였고, 웹 서버의 상태 확인이"
			if timeout > 0 {
				t += " " + p.secs(timeout)
			} else {
				t += " 시간"
			}
			t += " 안에 답을 받지 못했습니다."
			if made503 {
				t += " 웹 서버는 PHP를 죽은 것으로 판단하고 직접 503을 돌려주었습니다."
			}
			s = append(s, t)
		} else {
			t := "the queue in front of php-fpm held"
			if wait > 0 {
				t += " about " + p.secs(wait) + " of waiting"
			} else {
				t += " the health check"
			}
			if timeout > 0 {
				t += ", longer than the " + p.secs(timeout) + " health-check timeout"
			}
			if made503 {
				t += ", so Caddy concluded PHP was dead and answered 503 itself."
			} else {
				t += ", so the health check failed."
			}
			if why == "" {
				t = capitalize(t)
			}
			s = append(s, why+t)
		}
	} else if why != "" {
		if p.ko {
			s = append(s, strings.TrimSuffix(why, " 탓에 ")+" 뒤의 일입니다.")
		} else {
			c := change.Change
			s = append(s, "At "+p.at(c.Time)+", "+orDash(c.Key)+" had changed from "+value(c.Old)+" to "+value(c.New)+".")
		}
	}
	// How it ended. A failing stretch that runs to the window's end did
	// not end as far as the evidence shows.
	if errs != nil && !errs.End.Before(r.Window.To.Truncate(time.Minute)) {
		if p.ko {
			s = append(s, "분석 구간이 끝날 때("+p.at(r.Window.To)+")까지도 실패가 이어졌습니다.")
		} else {
			s = append(s, "Failures were still going on when the window ended at "+p.at(r.Window.To)+".")
		}
	} else if errs != nil {
		died := crawler != nil && crawler.End.Sub(errs.End).Abs() <= 5*time.Minute
		switch {
		case p.ko && died:
			s = append(s, p.at(errs.End)+"에 크롤링이 잦아들며 실패가 평소 수준으로 돌아왔습니다.")
		case p.ko:
			s = append(s, p.at(errs.End)+"에 실패가 평소 수준으로 돌아왔습니다.")
		case died:
			s = append(s, "Failures fell back to the usual rate at "+p.at(errs.End)+", as the crawl died down.")
		default:
			s = append(s, "Failures fell back to the usual rate at "+p.at(errs.End)+".")
		}
	}
	if len(r.Rules) > 0 {
		bt := r.Rules[0].Backtest
		if p.ko {
			s = append(s, "아래 "+r.Rules[0].Name+" 규칙은 기록된 요청으로 돌려 보았을 때 크롤러 요청의 "+josa(p.pct(bt.CrawlerRefusedShare), "을/를")+" 거절했을 것입니다.")
		} else {
			s = append(s, "The "+r.Rules[0].Name+" rule below would have refused "+p.pct(bt.CrawlerRefusedShare)+" of the crawler's requests, replayed over the recorded traffic.")
		}
	}
	return strings.Join(s, " ")
}

// direction compares two numeric settings: 1 when new is larger, -1 smaller,
// 0 when equal or not numbers.
func direction(old, new string) int {
	o, err1 := strconv.ParseFloat(strings.ReplaceAll(old, ",", ""), 64)
	n, err2 := strconv.ParseFloat(strings.ReplaceAll(new, ",", ""), 64)
	switch {
	case err1 != nil || err2 != nil || o == n:
		return 0
	case n > o:
		return 1
	}
	return -1
}

// statusBreakdown: "8,001 responses were 503 and 1,027 were 502."
func statusBreakdown(p printer, counts map[string]int, late int) string {
	type sc struct {
		code string
		n    int
	}
	var all []sc
	for c, n := range counts {
		if failedStatus(c) && n > 0 {
			all = append(all, sc{c, n})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].code < all[j].code
	})
	if len(all) > 4 {
		all = all[:4]
	}
	var parts []string
	for i, x := range all {
		switch {
		case p.ko:
			parts = append(parts, josa(x.code, "이/가")+" "+p.i(x.n)+"건")
		case i == 0:
			parts = append(parts, p.i(x.n)+" responses were "+x.code)
		default:
			parts = append(parts, p.i(x.n)+" were "+x.code)
		}
	}
	if late > 0 {
		if p.ko {
			parts = append(parts, "이용자가 떠난 뒤의 성공 응답이 "+p.i(late)+"건")
		} else {
			parts = append(parts, p.i(late)+" successes came after their clients had left")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	if p.ko {
		return "분석 구간에 " + strings.Join(parts, ", ") + " 나갔습니다."
	}
	return "In the window, " + p.list(parts) + "."
}

func impactOf(p printer, r *Report) impactView {
	im := r.Impact
	v := impactView{
		Window:      p.stamp(r.Window.From) + " – " + p.stamp(r.Window.To),
		Requests:    p.i(im.Requests),
		Failed:      p.i(im.FailedRequests),
		Late:        p.i(im.LateRequests),
		PHPRequests: p.i(im.PHPRequests),
		PHPFailed:   p.i(im.PHPFailed) + " (" + p.pct(im.PHPFailedShare) + ")",
	}
	if im.Requests > 0 {
		v.Failed += " (" + p.pct(float64(im.FailedRequests)/float64(im.Requests)) + ")"
	}
	if !p.sameDay(r.Window.From) {
		v.Window = r.Window.From.In(p.loc).Format("2006-01-02 15:04") + " – " + p.stamp(r.Window.To)
	}
	v.Period = p.stamp(im.Start) + " – " + p.stamp(im.End)
	errs := firstKind(r.Findings, detect.KindUpstreamErrors)
	codes := make([]string, 0, len(im.StatusCounts))
	for c := range im.StatusCounts {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		sv := statusView{Code: c, Count: p.i(im.StatusCounts[c])}
		if errs != nil {
			code, _ := strconv.Atoi(c)
			if n, ok := detect.FactsOf[detect.UpstreamErrorsFacts](errs).Proxy[code]; ok {
				sv.Proxy = p.n(float64(n))
			}
		}
		v.Statuses = append(v.Statuses, sv)
	}
	for _, c := range im.caveats {
		v.Caveats = append(v.Caveats, c.in(p.lang))
	}
	if im.caveats == nil {
		v.Caveats = append(v.Caveats, im.Caveats...)
	}
	return v
}

// rows groups the moments by local minute, as the reference's table does.
func rows(p printer, r *Report) []rowView {
	var out []rowView
	sep := "; "
	if p.ko {
		sep = ". "
	}
	for _, m := range r.Timeline {
		stamp := p.stamp(m.Time)
		if n := len(out); n > 0 && out[n-1].Time == stamp {
			out[n-1].Text += sep + m.text(p.lang)
			if !slices.Contains(out[n-1].IDs, m.Finding) {
				out[n-1].IDs = append(out[n-1].IDs, m.Finding)
				out[n-1].Findings = strings.Join(out[n-1].IDs, ", ")
			}
			continue
		}
		out = append(out, rowView{Index: len(out) + 1, Time: stamp, Text: m.text(p.lang), Findings: m.Finding, IDs: []string{m.Finding}, at: m.Time})
	}
	return out
}

func ruleOf(p printer, l map[string]string, rl rules.Rule) ruleView {
	bt := rl.Backtest
	fence := "```"
	for strings.Contains(rl.Caddyfile, fence) {
		fence += "`"
	}
	of := func(n, total int) string {
		if p.ko {
			return p.i(total) + "건 중 " + p.i(n) + "건"
		}
		return p.i(n) + " of " + p.i(total)
	}
	// The block opens with what deploying it takes, as rules.caddy does
	// (one source: rules.DeploySteps): pasted alone, it still says it needs
	// caddy-ratelimit and where it goes.
	var head strings.Builder
	for _, l := range rules.DeploySteps() {
		head.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
	v := ruleView{Name: rl.Name, Finding: rl.Finding, Why: rl.Why, Caddyfile: head.String() + rl.Caddyfile, Fence: fence}
	v.Backtest = [][2]string{
		{l["bt_crawler"], of(bt.CrawlerRefused, bt.CrawlerRequests) + " (" + p.pct(bt.CrawlerRefusedShare) + ")"},
		{l["bt_php"], p.secs(bt.CrawlerPHPSecondsSaved)},
		{l["bt_readers"], of(bt.FingerprintReaderRefused, bt.FingerprintReaderRequests)},
		{l["bt_other"], of(bt.OtherLoggedOutRefused, bt.OtherLoggedOutRequests) + " (" + p.pct(bt.OtherLoggedOutRefusedShare) + ")"},
		{l["bt_logged_in"], of(bt.LoggedInRefused, bt.LoggedInRequests)},
		{l["bt_baseline"], of(bt.BaselineRefused, bt.BaselineRequests)},
	}
	if !bt.FirstRefusal.IsZero() {
		v.Backtest = append(v.Backtest, [2]string{l["bt_first"], p.stamp(bt.FirstRefusal)})
	}
	return v
}

// remains lists what the fix leaves open, from the backtests, the findings
// without a remedy and what could not be checked.
// causingCrawler reports whether a crawler_burst finding is among the
// causes (any role but context).
func causingCrawler(fs []detect.Finding) bool {
	for i := range fs {
		if fs[i].Kind == detect.KindCrawlerBurst && fs[i].Role != detect.RoleContext {
			return true
		}
	}
	return false
}

func remains(p printer, r *Report) []string {
	var out []string
	for _, rl := range r.Rules {
		bt := rl.Backtest
		if p.ko {
			s := "크롤링이 이어지는 동안에는 " + rl.Name + " 규칙에 걸리는 요청을 보내는 로그인하지 않은 이용자도 크롤러와 같은 한도에서 429를 받을 수 있습니다. 기록된 요청으로 돌려 보았을 때 다른 비로그인 요청 " + p.i(bt.OtherLoggedOutRequests) + "건 중 " + p.i(bt.OtherLoggedOutRefused) + "건(" + p.pct(bt.OtherLoggedOutRefusedShare) + "), 기준 기간 요청 " + p.i(bt.BaselineRequests) + "건 중 " + p.i(bt.BaselineRefused) + "건이 거절됐습니다."
			if bt.LoggedInRefused == 0 {
				s += " 로그인한 이용자는 제한을 받지 않습니다."
			} else {
				s += " 로그인한 요청도 " + p.i(bt.LoggedInRefused) + "건 거절됐습니다."
			}
			out = append(out, s)
			continue
		}
		s := "While a crawl goes on, logged-out readers whose requests match " + rl.Name + " share the crawler's budget and can get a 429: replayed over the recorded traffic, it refused " + p.i(bt.OtherLoggedOutRefused) + " of " + p.i(bt.OtherLoggedOutRequests) + " other logged-out requests (" + p.pct(bt.OtherLoggedOutRefusedShare) + ") and " + p.i(bt.BaselineRefused) + " of " + p.i(bt.BaselineRequests) + " baseline requests."
		if bt.LoggedInRefused == 0 {
			s += " Logged-in users are not limited."
		} else {
			s += " It also refused " + p.i(bt.LoggedInRefused) + " logged-in requests."
		}
		out = append(out, s)
	}
	if len(r.Rules) == 0 {
		// A crawler that was context, not a cause, gets no rule on purpose;
		// only a causing crawler left without one can do it again.
		switch c := firstKind(r.Findings, detect.KindCrawlerBurst); {
		case causingCrawler(r.Findings):
			if p.ko {
				out = append(out, "만든 규칙이 없으므로 같은 크롤러가 같은 방식으로 다시 올 수 있습니다.")
			} else {
				out = append(out, "No rule was generated: the crawler can come back the same way.")
			}
		case c != nil:
			if p.ko {
				out = append(out, "크롤러("+c.ID+")는 있었지만 이번 장애의 원인이 아닌 배경이어서 규칙을 만들지 않았습니다.")
			} else {
				out = append(out, "No rule was generated for the crawler ("+c.ID+"): it was there, but as context, not a cause of this incident.")
			}
		}
	}
	if hc := firstKind(r.Findings, detect.KindHealthcheckStarved); hc != nil && !advises(r, "backlog", "health") {
		if p.ko {
			out = append(out, "상태 확인은 여전히 php-fpm 대기열에서 다른 요청 뒤에 줄을 섭니다. 상한이 "+p.n(detect.FactsOf[detect.HealthcheckFacts](hc).Backlog.V)+"인 대기열은 다시 상태 확인을 굶길 수 있습니다.")
		} else {
			out = append(out, "The health check still waits in php-fpm's queue behind everyone else: a queue capped at "+p.n(detect.FactsOf[detect.HealthcheckFacts](hc).Backlog.V)+" can starve it again.")
		}
	}
	for _, c := range r.Checks {
		if c.Outcome != detect.OutcomeCouldNotRun {
			continue
		}
		if p.ko {
			out = append(out, c.Name+" 검사는 돌리지 못했습니다: "+c.Reason)
		} else {
			out = append(out, "Not checked: "+c.Name+" ("+c.Reason+").")
		}
	}
	if len(out) == 0 {
		if p.ko {
			out = append(out, "찾은 것 가운데 남은 문제는 없습니다.")
		} else {
			out = append(out, "Nothing found remains open.")
		}
	}
	return out
}

// advises reports whether a recommendation touches a key containing any of words.
func advises(r *Report, words ...string) bool {
	for _, rc := range r.Recommendations {
		for _, w := range words {
			if strings.Contains(rc.Key, w) {
				return true
			}
		}
	}
	return false
}

// provenance says which inputs the numbers come from and what they leave out.
func provenance(p printer, r *Report) (src, leaves []string) {
	e := r.Evidence
	if e.AccessFiles > 0 || e.Lines > 0 {
		if p.ko {
			src = append(src, "Caddy 접근 로그: 파일 "+p.i(e.AccessFiles)+"개에서 "+p.n(float64(e.Lines))+"줄을 읽고 "+p.i(e.SkippedLines)+"줄을 건너뛰었습니다. 분석 구간의 요청은 "+p.i(r.Impact.Requests)+"건입니다. 상태별 건수, 응답 시간, 클라이언트 지문, 분당 건수는 모두 이 줄에서 셌습니다.")
		} else {
			src = append(src, "Caddy access log: "+plural(p, e.AccessFiles, "file", "files")+", "+p.n(float64(e.Lines))+" lines read, "+p.i(e.SkippedLines)+" skipped; "+p.i(r.Impact.Requests)+" requests in the window. Status counts, durations, client fingerprints and the per-minute counts all come from these lines.")
		}
	}
	if e.MetricFiles > 0 || len(e.Series) > 0 {
		if p.ko {
			src = append(src, "지표: 파일 "+p.i(e.MetricFiles)+"개, 표본 "+p.n(float64(e.MetricSamples))+"개를 아래 PromQL로 읽어 1분에 한 값으로 줄였습니다.")
		} else {
			src = append(src, "Metrics: "+plural(p, e.MetricFiles, "file", "files")+", "+p.n(float64(e.MetricSamples))+" samples, read with the PromQL below and reduced to one value a minute.")
		}
	}
	if len(r.Changes) > 0 {
		if p.ko {
			src = append(src, "설정 변경 기록 "+p.i(len(r.Changes))+"건 (git 기록, changes.yaml, 지표에서 찾은 변경).")
		} else {
			src = append(src, "Configuration changes: "+plural(p, len(r.Changes), "change", "changes")+" read (git history, changes.yaml, steps seen in metrics).")
		}
	}
	if len(src) == 0 {
		if p.ko {
			src = append(src, "읽은 입력이 기록되지 않았습니다.")
		} else {
			src = append(src, "No input was recorded.")
		}
	}
	if p.ko {
		leaves = append(leaves,
			"기록되기 전에 거절된 요청(기록을 남기지 않는 속도 제한의 429 등)은 접근 로그에 없으므로 위 건수에 들어 있지 않습니다.",
			"Caddy 2.11은 499를 남기지 않습니다. 기다리다 떠난 이용자는 제한 시간보다 늦게 기록된 응답으로만 보입니다.",
			"프록시 자신의 상태 확인 요청은 클라이언트 지문에서 뺐습니다.")
		if len(e.Series) > 0 {
			leaves = append(leaves, "지표는 1분에 한 값(워커와 대기열은 그 1분의 최댓값, CPU는 평균)으로 줄였으므로 더 짧은 변화는 보이지 않습니다.")
		}
	} else {
		leaves = append(leaves,
			"Requests refused before they were logged (429s of a rate limit that drops them, for instance) are not in the access log, so not in these counts.",
			"Caddy 2.11 logs no 499: a client that gave up shows only as a response logged after its timeout.",
			"The proxy's own health checks are left out of the client fingerprints.")
		if len(e.Series) > 0 {
			leaves = append(leaves, "Metrics are reduced to one value a minute (the minute's maximum for workers and queue, the mean for CPU): shorter swings do not show.")
		}
	}
	return src, leaves
}

func plural(p printer, n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return p.i(n) + " " + many
}

// contextRises says, of each client rise judged context, why it is not the
// trigger, so that a reader who sees it in the timeline does not blame it.
func contextRises(p printer, r *Report) []string {
	var out []string
	for i := range r.Findings {
		f := &r.Findings[i]
		if f.Kind != detect.KindCrawlerBurst || roleOf(f) != detect.RoleContext {
			continue
		}
		cf := detect.FactsOf[detect.CrawlerBurstFacts](f)
		lead := time.Duration(cf.OnsetLeadS.V * float64(time.Second))
		share := cf.PHPAddedShare.V
		early := lead > detect.TriggerLead
		switch {
		case p.ko && early:
			out = append(out, josa(crowd(p, f), "이/가")+" "+p.at(f.Start)+"부터 늘었지만 장애 시작보다 "+p.dur(lead)+" 앞서 시작했으므로 원인이 아닙니다.")
		case p.ko:
			out = append(out, josa(crowd(p, f), "이/가")+" "+p.at(f.Start)+"부터 늘었지만 장애 시작 때 늘어난 PHP 시간의 "+p.pct(share)+"만 썼으므로 원인이 아닙니다.")
		case early:
			out = append(out, capitalize(crowd(p, f))+" rose from "+p.at(f.Start)+" but did not trigger the incident: it started "+p.dur(lead)+" before the onset.")
		default:
			out = append(out, capitalize(crowd(p, f))+" rose from "+p.at(f.Start)+" but did not trigger the incident: it did "+p.pct(share)+" of the PHP time added at the onset.")
		}
	}
	return out
}
