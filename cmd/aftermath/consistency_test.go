package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// One number, one source: every figure a report states in more than one place
// (the queue's peak, the ordinary clients' lowest goodput, the failures, the
// crawler's addresses, the backtest's shares) must read the same in
// postmortem.md (English and Korean), report.html (its text and its charts),
// report.json and the terminal summary. Each format is read back as a reader
// would, by the phrases that state the figure, and every sighting is compared
// with the value report.json carries.

// rendering is one report rendered in every format, as text.
type rendering map[string]string

// The formats read back; html holds the page's text, its charts' legends included.
const (
	fmtMarkdownEN = "postmortem.md (en)"
	fmtMarkdownKO = "postmortem.md (ko)"
	fmtHTML       = "report.html"
	fmtTerminal   = "terminal"
)

// Figures compared.
const (
	figQueuePeak   = "queue peak"
	figGoodputLow  = "lowest ordinary goodput while failing"
	figFailed      = "requests failed"
	figPHPFailed   = "PHP requests failed"
	figPHPRequests = "PHP requests while failing"
	figCrawlerIPs  = "crawler addresses"
	// figFingerprintIPs is the crawler's fingerprint's addresses in the
	// terminal's fingerprint table: the crawler's and those of the readers
	// who share its fingerprint, which the prose counts apart.
	figFingerprintIPs  = "crawler fingerprint addresses"
	figCrawlerRefused  = "crawler refused share"
	figOtherRefused    = "other logged-out refused share"
	figCrawlerRefusedN = "crawler requests refused"
	// figRoseFrom is the crawler's rate per 10 minutes its rise started
	// from (rose_from_per_10m): the walk's before a step, else the usual.
	figRoseFrom = "crawler's rate its rise started from"
)

// num matches a number as the reports print it ("24,980", "2.4", "62%").
const num = `([0-9][0-9,]*(?:\.[0-9]+)?)`

// inSentence is any text up to the end of its sentence: a full stop ends
// it, a decimal point between digits ("17.5") does not.
const inSentence = `(?:[^.]|[0-9]\.[0-9])*?`

// statement is a phrase that states a figure, in the formats it is written in.
type statement struct {
	figure  string
	formats []string
	re      *regexp.Regexp
	percent bool
}

var (
	prose    = []string{fmtMarkdownEN, fmtHTML}
	allEN    = []string{fmtMarkdownEN, fmtHTML, fmtTerminal}
	korean   = []string{fmtMarkdownKO}
	terminal = []string{fmtTerminal}
)

func stmt(figure string, formats []string, re string) statement {
	return statement{figure: figure, formats: formats, re: regexp.MustCompile(re), percent: strings.Contains(re, "%")}
}

// statements are the phrases read back. A phrase that states a figure in a
// way not listed here is not compared: keep the list in step with the texts.
var statements = []statement{
	stmt(figQueuePeak, allEN, `queue grew from a usual `+num+` to `+num),
	stmt(figQueuePeak, allEN, `queue peaks at `+num),
	stmt(figQueuePeak, allEN, `queue peaked at `+num),
	stmt(figQueuePeak, allEN, `\(it peaks at `+num),
	stmt(figQueuePeak, allEN, `queued, peak `+num),
	stmt(figQueuePeak, korean, `대기열이 평소 `+num+`에서 (?:[^.,]*?에 )?`+num+`까지`),
	stmt(figQueuePeak, korean, `워커 대기열이 `+num+`(?:으로|로) 가장 길어짐`),
	stmt(figQueuePeak, korean, `가장 길 때 `+num+`\)`),
	stmt(figQueuePeak, korean, `가장 길 때 `+num+`(?:으로|로) 예전 상한`),
	stmt(figQueuePeak, korean, `대기, 최고 `+num),

	stmt(figGoodputLow, allEN, `goodput`+inSentence+` to `+num+` at its lowest`),
	stmt(figGoodputLow, allEN, `goodput`+inSentence+` was `+num+` a minute at its lowest`),
	stmt(figGoodputLow, allEN, `goodput`+inSentence+` did not fall below `+num+` a minute`),
	stmt(figGoodputLow, allEN, `lowest while failing `+num),
	stmt(figGoodputLow, korean, `실패 중 최저 `+num),
	stmt(figGoodputLow, korean, `성공 응답은`+inSentence+`가장 적을 때 `+num+`건`),
	stmt(figGoodputLow, korean, `성공 응답은`+inSentence+`분당 `+num+`건 아래로 떨어지지 않았습니다`),
	stmt(figGoodputLow, korean, `성공 응답은`+inSentence+`가장 적을 때 분당 `+num+`건`),

	stmt(figFailed, allEN, `requests failed \(5xx, 429, late\)[\s|]*`+num),
	stmt(figFailed, allEN, `requests, `+num+` failed \(5xx, 429, late\)`),
	stmt(figPHPFailed, allEN, `(?P<v>[0-9][0-9,]*) of the `+num+` requests that needed PHP failed`),
	stmt(figPHPFailed, allEN, `(?P<v>[0-9][0-9,]*) of `+num+` PHP requests failed`),
	stmt(figPHPFailed, allEN, `of them failed[\s|]*`+num),
	stmt(figPHPFailed, korean, `PHP가 필요한 요청 [0-9,]+건 가운데 `+num+`건이 실패`),
	stmt(figPHPRequests, korean, `PHP가 필요한 요청 `+num+`건 가운데`),
	stmt(figPHPRequests, korean, `실패 구간에 PHP가 필요했던 요청 \| `+num),
	stmt(figPHPFailed, korean, `그중 실패 \| `+num),
	stmt(figFailed, korean, `실패한 요청 \(5xx, 429, 늦은 응답\) \| `+num),
	stmt(figPHPRequests, allEN, `of the `+num+` requests that needed PHP failed`),
	stmt(figPHPRequests, allEN, `of `+num+` PHP requests failed`),
	stmt(figPHPRequests, allEN, `requests that needed PHP while failing[\s|]*`+num),

	stmt(figCrawlerIPs, allEN, `spread over `+num+` addresses`),
	stmt(figCrawlerIPs, allEN, `came from `+num+` addresses`),
	stmt(figCrawlerIPs, allEN, `, from `+num+` addresses`),
	stmt(figCrawlerIPs, allEN, `spread out \(`+num+` addresses`),
	stmt(figCrawlerIPs, korean, num+`개 주소에 퍼진`),
	stmt(figCrawlerIPs, korean, num+`개 주소에서`),
	// Where a /64 held several addresses: "클라이언트 3,791개(주소 10,777개, IPv6 /64 ...)"
	// and "10,777개 주소, 3,791개 /64 대역(...)에서".
	stmt(figCrawlerIPs, korean, `\(주소 `+num+`개, IPv6 /64`),
	stmt(figCrawlerIPs, korean, num+`개 주소, [0-9,]+개 /64 대역`),

	stmt(figRoseFrom, prose, `rose from (?P<v>[0-9][0-9,]*(?:\.[0-9]+)?) to `+num+` per 10 minutes`),
	stmt(figRoseFrom, prose, num+` per 10 minutes before, `),
	stmt(figRoseFrom, korean, `10분에 `+num+`건쯤에서`),
	stmt(figRoseFrom, korean, `(?:직전|평소) 10분에 `+num+`건, `),

	stmt(figCrawlerRefused, allEN, `would have refused `+num+`% of the crawler's requests`),
	stmt(figCrawlerRefused, allEN, `crawler requests refused[\s|]*[0-9,]+ of [0-9,]+ \(`+num+`%\)`),
	stmt(figCrawlerRefusedN, allEN, `crawler requests refused[\s|]*`+num+` of `+num),
	stmt(figCrawlerRefused, korean, `크롤러 요청의 `+num+`%를 거절`),
	stmt(figCrawlerRefused, terminal, `(?m)^│ \S+ +│ [0-9,]+ of [0-9,]+ \(`+num+`%\)`),
	stmt(figCrawlerRefusedN, terminal, `(?m)^│ \S+ +│ (?P<v>[0-9][0-9,]*) of [0-9,]+ \(`),
	stmt(figCrawlerRefusedN, terminal, `(?m)^│ \S+ +│ [0-9,]+ of `+num+` \(`),
	stmt(figOtherRefused, terminal, `(?m)^│ \S+ +│ [0-9,]+ of [0-9,]+ \([0-9.]+%\) +│ [0-9,]+ of [0-9,]+ \(`+num+`%\)`),
	stmt(figOtherRefused, allEN, `other logged-out requests refused[\s|]*[0-9,]+ of [0-9,]+ \(`+num+`%\)`),
}

// sighting is one place a figure is stated.
type sighting struct {
	format, figure, text string
	pattern              string // the statement's expression that found it
	value                float64
	decimals             int // digits after the point as printed
	percent              bool
}

// read finds every statement of a figure in each format; crawlers are the
// crawlers' fingerprints, whose rows the terminal's fingerprint table has.
func read(r rendering, crawlers []string) []sighting {
	sts := statements
	for _, fp := range crawlers {
		sts = append(sts, stmt(figFingerprintIPs, terminal, `(?m)^│ `+regexp.QuoteMeta(fp)+` +│ [0-9,]+ +│ `+num+` `))
	}
	var out []sighting
	for _, st := range sts {
		for _, f := range st.formats {
			for _, m := range st.re.FindAllStringSubmatch(r[f], -1) {
				// The group named v is the figure, else the last (a phrase
				// may name another number first).
				raw := m[len(m)-1]
				if i := st.re.SubexpIndex("v"); i > 0 {
					raw = m[i]
				}
				v, err := strconv.ParseFloat(strings.ReplaceAll(raw, ",", ""), 64)
				if err != nil {
					continue
				}
				dec := 0
				if i := strings.IndexByte(raw, '.'); i >= 0 {
					dec = len(raw) - i - 1
				}
				out = append(out, sighting{format: f, figure: st.figure, text: m[0], pattern: st.re.String(), value: v, decimals: dec, percent: st.percent})
			}
		}
	}
	return out
}

// truth is what report.json says of each figure: the values a sighting may
// state (a figure with several crawlers or rules has several).
type truth map[string][]float64

// figuresOf reads the figures from report.json, and checks that its own
// places agree (a finding's fact, the chart's series).
func figuresOf(t *testing.T, data []byte) (tr truth, crawlers, problems []string) {
	t.Helper()
	var rep struct {
		Window struct{ From, To time.Time }
		Impact struct {
			Start, End     time.Time
			FailedRequests float64 `json:"failed_requests"`
			PHPRequests    float64 `json:"php_requests"`
			PHPFailed      float64 `json:"php_failed"`
		}
		Findings []map[string]any
		Rules    []struct {
			Backtest map[string]any
		}
		Evidence struct {
			Minutes []struct {
				Time    time.Time
				Goodput float64
			}
			Series []struct {
				ID  string
				Max float64
			}
			Crawlers []struct{ Finding, Fingerprint string }
		}
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	tr = truth{}
	// A crawler joined from several fingerprints (one actor rotating its
	// user agents) has its addresses spread over as many rows of the
	// terminal's fingerprint table: no one row states the actor's count.
	joined := map[string]bool{}
	for _, f := range rep.Findings {
		if n, ok := factOf(f, "fingerprints"); ok && n > 1 {
			joined[fmt.Sprint(f["id"])] = true
		}
	}
	for _, c := range rep.Evidence.Crawlers {
		if !joined[c.Finding] {
			crawlers = append(crawlers, c.Fingerprint)
		}
	}
	add := func(fig string, v float64) {
		if !containsValue(tr[fig], v) {
			tr[fig] = append(tr[fig], v)
		}
	}
	add(figFailed, rep.Impact.FailedRequests)
	if rep.Impact.PHPRequests > 0 {
		add(figPHPFailed, rep.Impact.PHPFailed)
		add(figPHPRequests, rep.Impact.PHPRequests)
	}
	for _, s := range rep.Evidence.Series {
		if s.ID == report.SeriesQueue {
			add(figQueuePeak, s.Max)
		}
	}
	for _, f := range rep.Findings {
		switch detect.Kind(fmt.Sprint(f["kind"])) {
		case detect.KindListenQueueOverflow:
			v, ok := factOf(f, "queue_peak")
			if !ok {
				continue
			}
			add(figQueueFinding, v)
			if !containsValue(tr[figQueuePeak], v) {
				problems = append(problems, fmt.Sprintf("report.json: %s's queue_peak %v is not the queue series' max %v", f["id"], v, tr[figQueuePeak]))
			}
		case detect.KindUpstreamErrors:
			v, ok := factOf(f, "goodput_min_per_min")
			if !ok {
				continue
			}
			add(figGoodputLow, v)
			low := math.Inf(1)
			for _, m := range rep.Evidence.Minutes {
				if !m.Time.Before(rep.Impact.Start) && m.Time.Before(rep.Impact.End) {
					low = math.Min(low, m.Goodput)
				}
			}
			if low != v {
				problems = append(problems, fmt.Sprintf("report.json: %s's lowest goodput %v is not the lowest of evidence.minutes' goodput from %s to %s, %v",
					f["id"], v, rep.Impact.Start.Format(time.RFC3339), rep.Impact.End.Format(time.RFC3339), low))
			}
		case detect.KindCrawlerBurst:
			if v, ok := factOf(f, "rose_from_per_10m"); ok {
				add(figRoseFrom, v)
			}
			if v, ok := factOf(f, "distinct_ips"); ok {
				add(figCrawlerIPs, v)
				if joined[fmt.Sprint(f["id"])] {
					continue
				}
				// The fingerprint's addresses: the crawler's, its readers'
				// and its other clients' (set apart from the burst).
				readers, _ := factOf(f, "fingerprint_readers")
				others, _ := factOf(f, "fingerprint_others")
				add(figFingerprintIPs, v+readers+others)
			}
		}
	}
	for _, rl := range rep.Rules {
		b := rl.Backtest
		add(figCrawlerRefused, 100*number(b["crawler_refused_share"]))
		add(figOtherRefused, 100*number(b["other_logged_out_refused_share"]))
		add(figCrawlerRefusedN, number(b["crawler_refused"]))
		add(figCrawlerRefusedN, number(b["crawler_requests"]))
	}
	return tr, crawlers, problems
}

// factOf finds a finding's fact by name wherever report.json keeps it.
func factOf(f map[string]any, name string) (float64, bool) {
	facts, _ := f["facts"].(map[string]any)
	var find func(m map[string]any) (float64, bool)
	find = func(m map[string]any) (float64, bool) {
		for k, v := range m {
			if k == name {
				if x, ok := v.(float64); ok {
					return x, true
				}
			}
			if sub, ok := v.(map[string]any); ok {
				if x, ok := find(sub); ok {
					return x, true
				}
			}
		}
		return 0, false
	}
	return find(facts)
}

func number(v any) float64 {
	x, _ := v.(float64)
	return x
}

func containsValue(vs []float64, v float64) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// agrees says whether a printed value states v: exactly for a count, within
// the last printed digit otherwise.
func (s sighting) agrees(v float64) bool {
	// Shares near 0% and 100% are cut towards 50% (a whole digit), others rounded.
	tol := math.Pow(10, -float64(s.decimals)) + 1e-9
	if !s.percent && s.decimals == 0 {
		return math.Round(v) == s.value
	}
	return math.Abs(v-s.value) <= tol
}

// mustState lists the figures each format has to state when report.json
// holds them: a report that drops a figure is not consistent by silence. The
// Markdown states the queue's peak when a listen_queue_overflow finding
// does (else only the HTML chart shows the queue); the terminal lists five
// fingerprints, not always the crawler's.
var mustState = map[string][]string{
	fmtMarkdownEN: {figQueueFinding, figGoodputLow, figFailed, figPHPFailed, figCrawlerIPs, figCrawlerRefused, figOtherRefused, figRoseFrom},
	fmtHTML:       {figQueuePeak, figGoodputLow, figFailed, figPHPFailed, figCrawlerIPs, figCrawlerRefused, figOtherRefused, figRoseFrom},
	fmtMarkdownKO: {figQueueFinding, figGoodputLow, figFailed, figPHPFailed, figCrawlerIPs, figCrawlerRefused, figRoseFrom},
	fmtTerminal:   {figFailed, figPHPFailed, figCrawlerRefusedN},
}

// figQueueFinding stands for figQueuePeak when a finding states it.
const figQueueFinding = figQueuePeak + " (a finding's)"

// disagreements compares every sighting with report.json.
func disagreements(t *testing.T, r rendering, jsonData []byte) []string {
	tr, crawlers, problems := figuresOf(t, jsonData)
	seen := map[string]map[string]bool{}
	for _, s := range read(r, crawlers) {
		if seen[s.format] == nil {
			seen[s.format] = map[string]bool{}
		}
		seen[s.format][s.figure] = true
		ok := false
		for _, v := range tr[s.figure] {
			ok = ok || s.agrees(v)
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("%s states %s as %q; report.json says %v", s.format, s.figure, s.text, tr[s.figure]))
		}
	}
	for f, figs := range mustState {
		for _, fig := range figs {
			if fig == figQueueFinding {
				if len(tr[fig]) == 0 {
					continue
				}
				fig = figQueuePeak
			}
			if len(tr[fig]) > 0 && !seen[f][fig] {
				problems = append(problems, fmt.Sprintf("%s never states %s (report.json: %v)", f, fig, tr[fig]))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// renderAll renders r in every format and language read back.
func renderAll(t *testing.T, r *report.Report) (rendering, []byte) {
	t.Helper()
	out := rendering{}
	for _, x := range []struct{ name, format, lang string }{
		{fmtMarkdownEN, report.FormatMarkdown, report.LangEN},
		{fmtMarkdownKO, report.FormatMarkdown, report.LangKO},
		{fmtHTML, report.FormatHTML, report.LangEN},
	} {
		data, err := report.Render(r, x.format, x.lang)
		if err != nil {
			t.Fatalf("%s: %v", x.name, err)
		}
		out[x.name] = readable(t, x.format, data)
	}
	var term bytes.Buffer
	report.PrintSummary(&term, r, report.LangEN)
	out[fmtTerminal] = term.String()
	data, err := report.Render(r, report.FormatJSON, report.LangEN)
	if err != nil {
		t.Fatal(err)
	}
	return out, data
}

// markdownUnescape undoes MarkdownCell, so that prose reads as written.
var markdownUnescape = regexp.MustCompile(`\\(.)`)

// readable turns a rendered file into the text a reader sees: Markdown
// without its escapes, HTML as its text nodes (SVG legends included), one a
// line so that table cells stay apart.
func readable(t *testing.T, format string, data []byte) string {
	if format == report.FormatMarkdown {
		return markdownUnescape.ReplaceAllString(string(data), "$1")
	}
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("report.html: %v", err)
	}
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (n.Data == "style" || n.Data == "script") {
			return
		}
		if n.Type == html.TextNode && strings.TrimSpace(n.Data) != "" {
			b.WriteString(strings.Join(strings.Fields(n.Data), " "))
			b.WriteString("\n")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return b.String()
}

// analyzeBundleReport analyzes a bundle with the pipeline `aftermath
// analyze` runs, its texts in English and Korean: the tests that share it
// (analyzedScenario) render it in both.
func analyzeBundleReport(ctx context.Context, b string) (*report.Report, error) {
	bd, err := bundle.Open(b)
	if err != nil {
		return nil, err
	}
	a, err := analyzeInputs(ctx, evidence.FromBundle(bd), nil, report.LangKO)
	if err != nil {
		return nil, fmt.Errorf("analyze %s: %w", b, err)
	}
	return a.Report, nil
}

// TestOneNumberEverywhere compares the figures of the scenarios listed in
// testdata/onenumber-coverage.json: a set chosen (with -update, which
// analyzes every scenario) to cover together all that the whole set of
// scenarios covers: every finding kind, every data-quality note, every edge
// of a failing stretch another source bounds, and every phrase read back in
// each format. Analyzing all of them took most of this package's CPU time.
// The test fails when the chosen set no longer covers one of those (a
// scenario lost a finding, a phrase no longer reads in a format): run it
// with -update to choose again.
func TestOneNumberEverywhere(t *testing.T) {
	t.Parallel()
	dump := os.Getenv("AFTERMATH_CONSISTENCY_DUMP") // a directory: keep each rendering there
	want := readOneNumberCoverage(t)
	chosen := want.Scenarios
	if *update {
		chosen = simulate.Scenarios()
	}
	var mu sync.Mutex
	covered := map[string][]string{} // scenario -> what it covers
	t.Run("scenarios", func(t *testing.T) {
		for _, sc := range chosen {
			t.Run(sc, func(t *testing.T) {
				t.Parallel()
				r := analyzedScenario(t, sc)
				out, data := renderAll(t, r)
				if dump != "" {
					d := filepath.Join(dump, sc)
					_ = os.MkdirAll(d, 0o755)
					for f, text := range out {
						_ = os.WriteFile(filepath.Join(d, strings.NewReplacer(" ", "_", "(", "", ")", "").Replace(f)+".txt"), []byte(text), 0o644)
					}
					_ = os.WriteFile(filepath.Join(d, "report.json"), data, 0o644)
				}
				for _, p := range disagreements(t, out, data) {
					t.Error(p)
				}
				c := coverageOf(t, r, out, data)
				mu.Lock()
				covered[sc] = c
				mu.Unlock()
			})
		}
	})
	if t.Failed() {
		return
	}
	if *update {
		writeOneNumberCoverage(t, chooseScenarios(t, covered))
		return
	}
	have := map[string]bool{}
	for _, c := range covered {
		for _, x := range c {
			have[x] = true
		}
	}
	for _, x := range want.Covers {
		if !have[x] {
			t.Errorf("the scenarios compared (%s) no longer cover %s: run the test with -update to choose them again", strings.Join(chosen, ", "), x)
		}
	}
}

// update rewrites the package's testdata from what the tests see.
var update = flag.Bool("update", false, "rewrite testdata/onenumber-coverage.json from every scenario's analysis")

// oneNumberCoverage is testdata/onenumber-coverage.json: what all the
// scenarios together cover, and the scenarios compared, which cover it.
type oneNumberCoverage struct {
	Scenarios []string `json:"scenarios"`
	Covers    []string `json:"covers"`
	// OnlyIn says, for the reader choosing again, what each scenario
	// compared is alone in covering among them.
	OnlyIn map[string][]string `json:"only_in,omitempty"`
}

const oneNumberCoverageFile = "testdata/onenumber-coverage.json"

func readOneNumberCoverage(t *testing.T) oneNumberCoverage {
	t.Helper()
	var c oneNumberCoverage
	if *update {
		return c
	}
	if err := json.Unmarshal(mustRead(t, oneNumberCoverageFile), &c); err != nil {
		t.Fatalf("%s: %v", oneNumberCoverageFile, err)
	}
	if len(c.Scenarios) == 0 || len(c.Covers) == 0 {
		t.Fatalf("%s lists no scenario or nothing covered: run the test with -update", oneNumberCoverageFile)
	}
	return c
}

// coverageOf is what one scenario's report exercises of the comparison and
// of the report: its findings' kinds, its data-quality notes (by catalog
// message, else source and severity), the edges of its failing stretch
// another source bounds, and the phrases read back in each format.
func coverageOf(t *testing.T, r *report.Report, out rendering, data []byte) []string {
	seen := map[string]bool{}
	for _, f := range r.Findings {
		seen["finding "+string(f.Kind)] = true
	}
	for _, n := range r.DataQuality {
		_, name, _ := n.Text.Message()
		if name == "" {
			name = "(no catalog message)"
		}
		seen[fmt.Sprintf("data_quality %s %s %s", n.Source, n.Severity, name)] = true
	}
	for edge, b := range map[string]*detect.Edge{"start": r.Impact.StartBound, "end": r.Impact.EndBound} {
		if b != nil {
			seen[fmt.Sprintf("impact %s_bound bounded_by=%q ongoing=%v", edge, b.BoundedBy, b.Ongoing)] = true
		}
	}
	_, crawlers, _ := figuresOf(t, data)
	for _, s := range read(out, crawlers) {
		if s.figure == figFingerprintIPs {
			s.pattern = "(the crawler's fingerprint row)"
		}
		seen[fmt.Sprintf("read %s in %s by %s", s.figure, s.format, s.pattern)] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// chooseScenarios picks scenarios that together cover all that every
// scenario covers: first those other tests analyze anyway (free here), then
// greedily the one covering most not yet covered per byte of its access log
// (what its simulation and analysis cost), and last drops those the others
// make redundant.
func chooseScenarios(t *testing.T, covered map[string][]string) oneNumberCoverage {
	t.Helper()
	all := map[string]bool{}
	for _, c := range covered {
		for _, x := range c {
			all[x] = true
		}
	}
	cost := func(sc string) float64 {
		st, err := os.Stat(filepath.Join(scenarioBundle(t, sc), "access", "access.log.gz"))
		if err != nil {
			t.Fatal(err)
		}
		return float64(st.Size())
	}
	var chosen []string
	left := maps.Clone(all)
	take := func(sc string) {
		chosen = append(chosen, sc)
		for _, x := range covered[sc] {
			delete(left, x)
		}
	}
	for _, sc := range analyzedByOtherTests {
		take(sc)
	}
	for len(left) > 0 {
		best, bestGain := "", 0.0
		for _, sc := range slices.Sorted(maps.Keys(covered)) {
			n := 0
			for _, x := range covered[sc] {
				if left[x] {
					n++
				}
			}
			if g := float64(n) / cost(sc); n > 0 && g > bestGain {
				best, bestGain = sc, g
			}
		}
		take(best)
	}
	// Greedy choice can take a scenario the later ones make redundant:
	// drop those, the costliest first.
	byCost := slices.Clone(chosen[len(analyzedByOtherTests):])
	sort.Slice(byCost, func(i, j int) bool { return cost(byCost[i]) > cost(byCost[j]) })
	for _, sc := range byCost {
		rest := slices.DeleteFunc(slices.Clone(chosen), func(x string) bool { return x == sc })
		have := map[string]bool{}
		for _, x := range rest {
			for _, c := range covered[x] {
				have[c] = true
			}
		}
		if len(have) == len(all) {
			chosen = rest
		}
	}
	sort.Strings(chosen)
	by := map[string][]string{} // item -> the chosen scenarios covering it
	for _, sc := range chosen {
		for _, x := range covered[sc] {
			by[x] = append(by[x], sc)
		}
	}
	only := map[string][]string{}
	for x, scs := range by {
		if len(scs) == 1 {
			only[scs[0]] = append(only[scs[0]], x)
		}
	}
	for _, xs := range only {
		sort.Strings(xs)
	}
	return oneNumberCoverage{Scenarios: chosen, Covers: slices.Sorted(maps.Keys(all)), OnlyIn: only}
}

// analyzedByOtherTests are the scenarios whose analysis other tests of the
// package share (TestApplicationShapes, TestKoreanReportHasNoEnglishSentence, referenceReport):
// comparing their figures costs no analysis of its own.
var analyzedByOtherTests = []string{"crawler-backlog", "flash-crowd", "heavy-scraper-among-bots", "idle-pinning", "laravel-rotating-scraper", "nextcloud-share-crawl", "slow-database"}

func writeOneNumberCoverage(t *testing.T, c oneNumberCoverage) {
	t.Helper()
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(oneNumberCoverageFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(oneNumberCoverageFile, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOneNumberCatchesOneRenderingChanged: the comparison is not vacuous. The
// crawler-backlog report is rendered again with one figure changed in one
// format only (as if that renderer computed its own number); each time the
// comparison must name that format and figure.
func TestOneNumberCatchesOneRenderingChanged(t *testing.T) {
	t.Parallel()
	r := analyzedScenario(t, "crawler-backlog")
	out, data := renderAll(t, r)
	if p := disagreements(t, out, data); len(p) > 0 {
		t.Fatalf("the unchanged report already disagrees: %v", p)
	}
	if len(r.Rules) == 0 || len(r.Evidence.Crawlers) == 0 {
		t.Fatal("crawler-backlog has no rule or no crawler: nothing to change")
	}
	rerender := func(t *testing.T, c *report.Report, format string) {
		t.Helper()
		switch format {
		case fmtTerminal:
			var b bytes.Buffer
			report.PrintSummary(&b, c, report.LangEN)
			out[format] = b.String()
			return
		}
		f, lang := report.FormatMarkdown, report.LangEN
		switch format {
		case fmtHTML:
			f = report.FormatHTML
		case fmtMarkdownKO:
			lang = report.LangKO
		}
		b, err := report.Render(c, f, lang)
		if err != nil {
			t.Fatal(err)
		}
		out[format] = readable(t, f, b)
	}
	for _, m := range []struct {
		figure, format string
		change         func(c *report.Report)
	}{
		{figQueuePeak, fmtHTML, func(c *report.Report) {
			c.Evidence.Series = slices.Clone(c.Evidence.Series)
			for i := range c.Evidence.Series {
				if c.Evidence.Series[i].ID == report.SeriesQueue {
					c.Evidence.Series[i].Max += 7
				}
			}
		}},
		// The chart's key states upstream_errors' lowest goodput: a renderer
		// holding its own copy of that fact must be caught.
		{figGoodputLow, fmtHTML, func(c *report.Report) {
			c.Findings = slices.Clone(c.Findings)
			for i := range c.Findings {
				if c.Findings[i].Kind == detect.KindUpstreamErrors {
					ef := *detect.FactsOf[detect.UpstreamErrorsFacts](&c.Findings[i])
					ef.GoodputMinPerMin.V += 2
					c.Findings[i].Facts = &ef
				}
			}
		}},
		{figFailed, fmtMarkdownEN, func(c *report.Report) { c.Impact.FailedRequests++ }},
		{figPHPFailed, fmtMarkdownKO, func(c *report.Report) { c.Impact.PHPFailed-- }},
		{figFingerprintIPs, fmtTerminal, func(c *report.Report) {
			c.Evidence.Clusters = slices.Clone(c.Evidence.Clusters)
			for i := range c.Evidence.Clusters {
				if c.Evidence.Clusters[i].Fingerprint == c.Evidence.Crawlers[0].Fingerprint {
					c.Evidence.Clusters[i].DistinctIPs++
				}
			}
		}},
		{figCrawlerRefused, fmtMarkdownKO, func(c *report.Report) {
			c.Rules = slices.Clone(c.Rules)
			c.Rules[0].Backtest.CrawlerRefusedShare -= 0.05
		}},
		{figOtherRefused, fmtMarkdownEN, func(c *report.Report) {
			c.Rules = slices.Clone(c.Rules)
			c.Rules[0].Backtest.OtherLoggedOutRefusedShare += 0.1
		}},
	} {
		t.Run(m.figure+" in "+m.format, func(t *testing.T) {
			kept := out[m.format]
			defer func() { out[m.format] = kept }()
			c := *r
			m.change(&c)
			rerender(t, &c, m.format)
			want := m.format + " states " + m.figure + " as"
			var caught bool
			for _, p := range disagreements(t, out, data) {
				caught = caught || strings.HasPrefix(p, want)
			}
			if !caught {
				t.Errorf("%s changed in %s alone, and the comparison did not notice", m.figure, m.format)
			}
		})
	}
}
