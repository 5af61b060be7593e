package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs from the golden file at line %d:\n got: %q\nwant: %q\n(run with -update if the change is intended)", path, i+1, g, w)
			}
		}
	}
}

func TestPostmortemGolden(t *testing.T) {
	for _, lang := range Langs {
		t.Run(lang, func(t *testing.T) {
			got, err := Render(referenceReport(t), FormatMarkdown, lang)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "postmortem."+lang+".md", got)
		})
	}
}

// referenceSections are the reference postmortem's sections (its "What was
// fixed" becomes "What to fix": aftermath proposes, a human deploys), plus the
// two the issue adds: Impact and Where the numbers come from.
var referenceSections = map[string][]string{
	LangEN: {"Summary", "Impact", "Timeline", "Cause", "What to fix", "What remains", "Where the numbers come from"},
	LangKO: {"요약", "영향", "경과", "원인", "고칠 것", "남은 문제", "수치의 출처"},
}

func TestPostmortemHasReferenceSections(t *testing.T) {
	reports := map[string]func(testing.TB) *Report{"reference": referenceReport, "quiet": quietReport, "hostile": injectionReport}
	for name, build := range reports {
		for _, lang := range Langs {
			t.Run(name+"/"+lang, func(t *testing.T) {
				md, err := Render(build(t), FormatMarkdown, lang)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, line := range strings.Split(string(md), "\n") {
					if h, ok := strings.CutPrefix(line, "## "); ok {
						got = append(got, h)
					}
				}
				if strings.Join(got, "|") != strings.Join(referenceSections[lang], "|") {
					t.Errorf("sections = %q, want %q", got, referenceSections[lang])
				}
				prose, _ := splitFences(t, string(md))
				if n := strings.Count(prose, "\n# "); !strings.HasPrefix(prose, "# ") || n != 0 {
					t.Errorf("want exactly one title line, got %d more", n)
				}
			})
		}
	}
}

func TestPostmortemCarriesTheNumbers(t *testing.T) {
	md, err := Render(referenceReport(t), FormatMarkdown, LangEN)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"8,001 responses were 503, 1,027 were 502 and 168 successes came after their clients had left",
		"| 02:15 | logged-out Chrome 120/119 requests with Accept-Language zh-cn start to climb: 840 per 10 minutes before, 2,490 at the peak",
		"| 02:20 | all 16 php-fpm workers busy; CPU averages 99%",
		"| 02:21 | first request from the site to its own API",
		"| 02:24 | the php-fpm queue reaches 1,785, past the old cap of 511 |",
		"| 02:26 | the health check gets no answer within 10 s",
		"| 02:30 | the queue reaches its cap of 4,096: connections beyond it are dropped; failures peak at 1,412 a minute (1,300 × 503, 100 × 502, 12 late successes) |",
		"| 03:09 | last minute of failures above the usual rate",
		"| 03:10 | the crawl dies down |",
		"| 07:07 | listen.backlog changed from 4,096 to 64",
		"| 10-02 23:48 | listen.backlog changed from 511 to 4,096",
		"from 840 to 2,490 per 10 minutes (3×) from 02:15",
		"2,964 addresses in 2,871 /24 networks",
		"Only after it could the health check wait past its 10 s timeout.",
		"| crawler requests refused | 11,960 of 13,695 (87%) |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("postmortem.md lacks %q", want)
		}
	}
}

func TestTimeline(t *testing.T) {
	r := referenceReport(t)
	type row struct {
		local   string
		event   detect.Event
		finding string
	}
	var got []row
	for _, m := range r.Timeline {
		got = append(got, row{m.Time.In(kst).Format("01-02 15:04"), m.Event, m.Finding})
	}
	want := []row{
		{"10-02 23:48", EventConfigChange, "config_change-1"},
		{"10-03 02:15", EventBurstOnset, "crawler_burst-1"},
		{"10-03 02:20", EventSaturation, "worker_saturation-1"},
		{"10-03 02:21", EventSelfCall, "self_amplification-1"},
		{"10-03 02:24", EventQueueOldCap, "listen_queue_overflow-1"},
		{"10-03 02:26", EventHealthStarved, "healthcheck_starved-1"},
		{"10-03 02:30", EventQueueCap, "listen_queue_overflow-1"},
		{"10-03 02:30", EventFailurePeak, "upstream_errors-1"},
		{"10-03 03:09", EventLastFailure, "upstream_errors-1"},
		{"10-03 03:10", EventBurstEnd, "crawler_burst-1"},
		{"10-03 07:07", EventDeploy, "config_change-1"},
	}
	if len(got) != len(want) {
		t.Fatalf("timeline:\n got %v\nwant %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("moment %d = %v, want %v", i, got[i], want[i])
		}
	}
	ids := map[string]bool{}
	for _, f := range r.Findings {
		ids[f.ID] = true
	}
	for _, m := range r.Timeline {
		if !ids[m.Finding] {
			t.Errorf("moment %q points at no finding (%q)", m.Text, m.Finding)
		}
		for _, l := range Langs {
			if m.text(l) == "" {
				t.Errorf("moment %q has no %s text", m.Event, l)
			}
		}
	}
}

func TestTimelineMergesDuplicates(t *testing.T) {
	tests := []struct {
		name string
		edit func(r *Report)
		want map[detect.Event]int // events and how often they must appear
	}{
		{
			// The health check starved in the same minute failures began:
			// one moment, the more specific one.
			name: "first 503 and first failure",
			edit: func(r *Report) {},
			want: map[detect.Event]int{EventHealthStarved: 1, EventFailuresStart: 0},
		},
		{
			// Without the health finding, the first failing minute is the moment.
			name: "failures without health check",
			edit: func(r *Report) { r.Findings = dropKind(r.Findings, detect.KindHealthcheckStarved) },
			want: map[detect.Event]int{EventHealthStarved: 0, EventFailuresStart: 1},
		},
		{
			// The queue peak is its cap: one moment.
			name: "peak at the cap",
			edit: func(r *Report) {},
			want: map[detect.Event]int{EventQueueCap: 1, EventQueuePeak: 0},
		},
		{
			// Two detectors reporting the same burst twice: one moment a minute.
			name: "same finding twice",
			edit: func(r *Report) {
				dup := r.Findings[0]
				dup.ID = "crawler_burst-2"
				r.Findings = append(r.Findings, dup)
			},
			want: map[detect.Event]int{EventBurstOnset: 1, EventBurstEnd: 1},
		},
		{
			// The deploy after the change is also a mitigation finding: one moment.
			name: "deploy and mitigation",
			edit: func(r *Report) {
				c := r.Changes[1]
				r.Findings = append(r.Findings, detect.Finding{ID: "config_change-2", Kind: detect.KindConfigChange, Role: detect.RoleMitigation,
					Start: c.Time, End: c.Time, Facts: detect.MustParseFacts(detect.KindConfigChange, map[string]float64{"wait_after_s": 1.2}), Change: &c})
			},
			want: map[detect.Event]int{EventDeploy: 1},
		},
		{
			// No queue series: only the finding's start can be placed.
			name: "queue without series",
			edit: func(r *Report) { r.Evidence.Series = nil },
			want: map[detect.Event]int{EventQueueDeep: 1, EventQueueCap: 0, EventQueueOldCap: 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := referenceReport(t)
			tt.edit(r)
			if err := r.Assemble(); err != nil {
				t.Fatal(err)
			}
			count := map[detect.Event]int{}
			seen := map[string]bool{}
			for _, m := range r.Timeline {
				count[m.Event]++
				key := m.Time.Truncate(time.Minute).String() + m.Text
				if seen[key] {
					t.Errorf("duplicate moment %q", m.Text)
				}
				seen[key] = true
			}
			for ev, n := range tt.want {
				if count[ev] != n {
					t.Errorf("%s appears %d times, want %d", ev, count[ev], n)
				}
			}
		})
	}
}

func dropKind(fs []detect.Finding, kind detect.Kind) []detect.Finding {
	var out []detect.Finding
	for _, f := range fs {
		if f.Kind != kind {
			out = append(out, f)
		}
	}
	return out
}

func TestCausesRanking(t *testing.T) {
	tests := []struct {
		name     string
		findings func(r *Report) []detect.Finding
		want     []string // kind:role by rank
	}{
		{
			name:     "reference",
			findings: func(r *Report) []detect.Finding { return r.Findings },
			want: []string{"crawler_burst:trigger", "config_change:enabler", "worker_saturation:mechanism", "self_amplification:mechanism",
				"listen_queue_overflow:mechanism", "healthcheck_starved:mechanism", "upstream_errors:symptom", "client_abandoned_work:symptom"},
		},
		{
			// A symptom is never the root cause, whatever role it claims.
			name: "symptom claiming to be the trigger",
			findings: func(r *Report) []detect.Finding {
				f := *detect.First(r.Findings, detect.KindUpstreamErrors)
				f.Role = detect.RoleTrigger
				return []detect.Finding{f, *detect.First(r.Findings, detect.KindWorkerSaturation)}
			},
			want: []string{"worker_saturation:mechanism", "upstream_errors:symptom"},
		},
		{
			// A change the numbers clear, or one that lowered the risk, is no cause.
			name: "ruled out and mitigation",
			findings: func(r *Report) []detect.Finding {
				out := []detect.Finding{*detect.First(r.Findings, detect.KindUpstreamErrors)}
				for _, role := range []detect.Role{detect.RoleRuledOut, detect.RoleMitigation} {
					f := *detect.First(r.Findings, detect.KindConfigChange)
					f.Role = role
					out = append(out, f)
				}
				return out
			},
			want: []string{"upstream_errors:symptom"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := referenceReport(t)
			r.Findings = tt.findings(r)
			if err := r.Assemble(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, c := range r.Causes {
				if c.Rank != i+1 {
					t.Errorf("cause %d has rank %d", i, c.Rank)
				}
				if c.Explanation == "" {
					t.Errorf("cause %s has no explanation", c.Finding)
				}
				got = append(got, string(c.Kind)+":"+string(c.Role))
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("causes:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestOnlySymptomsSaysSo(t *testing.T) {
	r := referenceReport(t)
	r.Findings = []detect.Finding{*detect.First(r.Findings, detect.KindUpstreamErrors)}
	if err := r.Assemble(); err != nil {
		t.Fatal(err)
	}
	md, err := Render(r, FormatMarkdown, LangEN)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "No finding explains the failures: only their symptoms were found.") {
		t.Errorf("a report with symptoms only must say no cause was found:\n%s", md)
	}
}

// Explanations carry the findings' numbers.
func TestCauseExplanationsCarryNumbers(t *testing.T) {
	r := referenceReport(t)
	want := map[string][]string{
		"crawler_burst-1":         {"840", "2,490", "2,964", "2,871", "/24", "97%", "71%"},
		"config_change-1":         {"511", "4,096", "23:48 on 2 October", "9.6 s", "77 s", "10 s"},
		"worker_saturation-1":     {"16", "50 min", "99%", "53.3", "0.3 s"},
		"listen_queue_overflow-1": {"4,096", "02:30", "77 s"},
		"healthcheck_starved-1":   {"77 s", "10 s", "8,001", "312", "14", "40 min"},
		"upstream_errors-1":       {"8,001 × 503", "1,027 × 502", "1,412", "250", "168"},
		"client_abandoned_work-1": {"2,228", "10 s", "668 s"},
		"self_amplification-1":    {"412", "8"},
	}
	for _, c := range r.Causes {
		for _, n := range want[c.Finding] {
			if !strings.Contains(c.Explanation, n) {
				t.Errorf("%s: %q lacks %q", c.Finding, c.Explanation, n)
			}
		}
	}
}

func TestImpact(t *testing.T) {
	r := referenceReport(t)
	im := r.Impact
	if im.StatusCounts["503"] != 8001 || im.StatusCounts["502"] != 1027 {
		t.Errorf("status counts = %v", im.StatusCounts)
	}
	// Failed = 5xx + 429 + late successes.
	wantFailed := 8001 + 1027 + 14*12
	if im.FailedRequests != wantFailed || im.LateRequests != 14*12 {
		t.Errorf("failed = %d (late %d), want %d (late %d)", im.FailedRequests, im.LateRequests, wantFailed, 14*12)
	}
	if !im.Start.Equal(at("02:26")) || !im.End.Equal(at("03:10")) {
		t.Errorf("impact %v-%v, want 02:26-03:10", im.Start, im.End)
	}
	if im.PHPFailed != wantFailed || im.PHPFailedShare <= 0.5 || im.PHPFailedShare >= 1 {
		t.Errorf("php failed %d of %d (%.2f)", im.PHPFailed, im.PHPRequests, im.PHPFailedShare)
	}
	joined := strings.Join(im.Caveats, "\n")
	for _, want := range []string{"No 429 is in the access log", "168 responses logged as successes came after the clients' 10 s timeout", "3 lines skipped"} {
		if !strings.Contains(joined, want) {
			t.Errorf("caveats lack %q:\n%s", want, joined)
		}
	}

	q := quietReport(t)
	if q.Impact.FailedRequests != 0 || len(q.Timeline) != 0 || len(q.Causes) != 0 {
		t.Errorf("quiet report: %+v", q.Impact)
	}
	// A gap is a silence the site's own rate says should have held lines,
	// as the access log's coverage finds it: three minutes without a line
	// at 400 a minute is one; a minute without a line at 2 a minute is not.
	for _, tc := range []struct {
		perMin  int
		missing []int
		want    string
	}{{400, []int{10, 11, 12}, "No access-log line from 02:10 to 02:13"}, {2, []int{17}, ""}} {
		r := minutesReport(t, tc.perMin, tc.missing)
		caveats := strings.Join(r.Impact.Caveats, "\n")
		switch {
		case tc.want != "" && !strings.Contains(caveats, tc.want):
			t.Errorf("%d a minute: the gap in the log is not a caveat: %q", tc.perMin, r.Impact.Caveats)
		case tc.want == "" && strings.Contains(caveats, "No access-log line"):
			t.Errorf("%d a minute: a quiet minute is told as a gap: %q", tc.perMin, r.Impact.Caveats)
		}
	}
}

// minutesReport is 30 minutes of perMin requests without the given
// minutes, with the access log's coverage as sources measures it.
func minutesReport(t *testing.T, perMin int, missing []int) *Report {
	t.Helper()
	meter := sources.NewCoverageMeter(time.Minute)
	var ms []MinuteRow
	for i := 0; i < 30; i++ {
		if slices.Contains(missing, i) {
			continue
		}
		m := MinuteRow{Time: at("02:00").Add(time.Duration(i) * time.Minute), Requests: perMin, Status: map[string]int{"200": perMin}, PHP: perMin, Goodput: perMin, NeededPHP: perMin}
		meter.Observe(m.Time, m.Requests)
		ms = append(ms, m)
	}
	r := &Report{Window: Window{From: at("02:00"), To: at("02:30"), TZ: "Asia/Seoul"}, Evidence: Evidence{Minutes: ms},
		Coverage: []sources.Coverage{meter.Measure(evidence.CoverageAccess, at("02:00"), at("02:30"), 0, false)}}
	if err := r.Assemble(); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestJosa(t *testing.T) {
	tests := []struct{ word, pair, want string }{
		{"503", "이/가", "503이"}, {"502", "이/가", "502가"}, {"4,096", "으로/로", "4,096으로"},
		{"64", "으로/로", "64로"}, {"511", "으로/로", "511로"}, {"100%", "이/가", "100%가"},
		{"10초", "을/를", "10초를"}, {"1,400건", "으로/로", "1,400건으로"}, {"listen.backlog", "이/가", "listen.backlog가"},
		{"10", "이/가", "10이"}, {"요청", "이/가", "요청이"}, {"서울", "으로/로", "서울로"},
	}
	for _, tt := range tests {
		if got := josa(tt.word, tt.pair); got != tt.want {
			t.Errorf("josa(%q, %q) = %q, want %q", tt.word, tt.pair, got, tt.want)
		}
	}
}

func TestPrinter(t *testing.T) {
	day := at("02:00")
	en, ko := newPrinter(LangEN, kst, day), newPrinter(LangKO, kst, day)
	tests := []struct{ got, want string }{
		{en.at(at("02:26")), "02:26"}, {ko.at(at("02:26")), "2시 26분"}, {ko.at(at("07:00")), "7시"},
		{en.at(at("10-02 23:48")), "23:48 on 2 October"}, {ko.at(at("10-02 23:48")), "10월 2일 23시 48분"},
		{en.stamp(at("10-02 23:48")), "10-02 23:48"}, {en.n(8001), "8,001"}, {ko.n(1.25), "1.3"},
		{en.secs(76.8), "77 s"}, {ko.secs(0.3), "0.3초"}, {en.dur(305 * time.Second), "5 min 5 s"}, {ko.dur(50 * time.Minute), "50분"},
		{en.pct(0.0099), "1%"}, {en.pct(0.004), "0.4%"}, {en.list([]string{"a", "b", "c"}), "a, b and c"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%d: got %q, want %q", i, tt.got, tt.want)
		}
	}
}

func TestWriteAll(t *testing.T) {
	r := referenceReport(t)
	dir := t.TempDir()
	paths, err := WriteAll(dir, r, []string{"json", "md", "html", "md"}, LangKO)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "report.json"), filepath.Join(dir, "postmortem.md"), filepath.Join(dir, "report.html")}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Errorf("paths = %v, want %v", paths, want)
	}
	for _, p := range paths {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("dir holds %d entries, want 3 (no temporary file left)", len(entries))
	}
	for _, bad := range []struct {
		formats []string
		lang    string
	}{{[]string{"pdf"}, LangEN}, {[]string{"md"}, "fr"}} {
		if _, err := WriteAll(t.TempDir(), r, bad.formats, bad.lang); err == nil {
			t.Errorf("WriteAll(%v, %q) succeeded", bad.formats, bad.lang)
		}
	}
}

func TestTerminalSummary(t *testing.T) {
	var buf bytes.Buffer
	PrintSummary(&buf, referenceReport(t), LangEN, "/tmp/out/postmortem.md")
	out := buf.String()
	for _, want := range []string{"8,001", "page_tools", "crawler_burst-1", "wrote /tmp/out/postmortem.md", "11,960 of 13,695 (87%)"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal summary lacks %q:\n%s", want, out)
		}
	}
	if regexp.MustCompile(`[\x00-\x08\x0b-\x1f\x7f]`).MatchString(out) {
		t.Errorf("terminal summary holds control characters")
	}
}

// A stretch across local midnight dates both ends, in both languages; one
// within the incident's day says its date once (or not at all inline).
func TestPrinterEndsAcrossMidnight(t *testing.T) {
	day := at("10-02 23:48")
	en, ko := newPrinter(LangEN, kst, day), newPrinter(LangKO, kst, day)
	join := func(sep string) func(a, b string) string { return func(a, b string) string { return a + sep + b } }
	tests := []struct{ got, want string }{
		{join(" to ")(en.ends(at("10-02 23:48"), at("03:10"), false)), "23:48 on 2 October to 03:10 on 3 October"},
		{join("부터 ")(ko.ends(at("10-02 23:48"), at("03:10"), false)), "10월 2일 23시 48분부터 10월 3일 3시 10분"},
		{join(" to ")(en.ends(at("10-02 22:00"), at("10-02 23:48"), false)), "22:00 to 23:48"},
		{join(" to ")(en.ends(at("10-02 22:00"), at("10-02 23:48"), true)), "22:00 to 23:48 on 2 October"},
		{join("부터 ")(ko.ends(at("10-02 22:00"), at("10-02 23:48"), true)), "10월 2일 22시부터 23시 48분"},
		// On another day than the incident's, the date is said even inline.
		{join(" to ")(en.ends(at("02:00"), at("03:10"), false)), "02:00 to 03:10 on 3 October"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%d: got %q, want %q", i, tt.got, tt.want)
		}
	}
}

// The summary of an outage from 23:48 to 03:10 (KST) names both dates and
// never appends a second date to an already dated end.
func TestSummaryAcrossMidnight(t *testing.T) {
	r := referenceReport(t)
	errs := detect.First(r.Findings, detect.KindUpstreamErrors)
	errs.Start, errs.End = at("10-02 23:48"), at("03:10")
	r.Window.From = at("10-02 23:00")
	if err := r.Assemble(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{LangEN: "From 23:48 on 2 October to 03:10 on 3 October, ", LangKO: "10월 2일 23시 48분부터 10월 3일 3시 10분까지 PHP가"}
	for _, lang := range Langs {
		p := newPrinter(lang, kst, r.Impact.Start)
		s := summary(p, r)
		if !strings.Contains(s, want[lang]) {
			t.Errorf("%s summary %q does not contain %q", lang, s, want[lang])
		}
		if strings.Contains(s, "October on") || strings.Contains(s, "까지 10월") {
			t.Errorf("%s summary dates an end twice: %q", lang, s)
		}
		if ex := explain(p, r, errs); lang == LangEN && !strings.HasPrefix(ex, "From 23:48 on 2 October to 03:10 on 3 October:") {
			t.Errorf("upstream_errors explanation %q", ex)
		}
	}
}
