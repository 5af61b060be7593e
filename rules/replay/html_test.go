package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report/layoutcheck"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources"
)

// saturatedRun is a replay's measurement written by hand in the shape of a
// saturated stack: two incident minutes at 10x, a crawler of 40 requests a
// replay second beside 12 ordinary and 1 logged-in, answered for four
// seconds and then timing out, late, 503, reset and refused, with the
// generator falling 150 ms behind in three seconds (so the run is invalid),
// a fingerprint that tries to inject markup and a transport error message
// that does too.
func saturatedRun() ReportInput {
	from := time.Date(2026, 10, 2, 17, 20, 0, 0, time.UTC)
	hostile := detect.ClusterKey{UA: `<script>alert(1)</script>"><b>bold</b>`, Lang: "zh-cn", LoggedIn: sources.LoggedInNo}
	p := &Plan{From: from, To: from.Add(2 * time.Minute), Speed: 10, CrawlerKeys: []detect.ClusterKey{hostile}, ClientsByPlan: 900}
	rng := rand.New(rand.NewPCG(1, 2))
	perSecond := [numClasses]int{ClassCrawler: 40, ClassOtherLoggedOut: 12, ClassLoggedIn: 1}
	res := &Result{Started: from.Add(24 * time.Hour), Ended: from.Add(24*time.Hour + 33*time.Second), Sources: 900, OpenHigh: 420,
		Environment:  Environment{GoVersion: "go1.26", GOOS: "linux", GOARCH: "amd64", NumCPU: 2, GOMAXPROCS: 1},
		ErrorSamples: map[string]string{"connection_reset": `read tcp 127.0.0.9:1->127.0.0.1:2: <img src=x onerror=alert(1)> reset`}}
	res.Seconds = make([]Second, 13)
	res.Goodput = make([]int, 23)
	for sec := range 12 {
		for c := Class(0); c < numClasses; c++ {
			for k := range perSecond[c] {
				offset := time.Duration(sec)*time.Second + time.Duration(k)*time.Second/time.Duration(perSecond[c])
				p.Shots = append(p.Shots, Shot{Offset: offset, Class: c, Arrival: from.Add(offset * 10)})
				lag := time.Duration(rng.IntN(3000)) * time.Microsecond
				if sec >= 6 && sec <= 8 && k == 0 {
					lag = 150 * time.Millisecond
				}
				res.Lags = append(res.Lags, lag)
				o, status := OutcomeAnswered, 200
				switch x := rng.IntN(100); {
				case sec < 4 && c == ClassCrawler && x < 30:
					status = 429
				case sec < 4:
				case x < 45:
					o, status = OutcomeTimeout, 0
				case x < 60:
					o = OutcomeLate
				case x < 75:
					status = 503
				case x < 80:
					o, status = OutcomeReset, 0
				case x < 83:
					o, status = OutcomeRefused, 0
				case x < 85:
					status = 404
				}
				if sec == 11 && k == 0 {
					o, status = OutcomeStopped, 0
				}
				res.Classes[c].add(o, status)
				res.Seconds[sec].Classes[c].add(o, status)
				if o == OutcomeAnswered && status == 200 {
					res.Goodput[sec+rng.IntN(2)]++
				}
			}
		}
		res.Seconds[sec].InFlightHigh = min(53*(sec+1), 420)
		res.InFlightHigh = max(res.InFlightHigh, res.Seconds[sec].InFlightHigh)
	}
	res.WorstLag, res.WorstLagAt = 150*time.Millisecond, 6*time.Second
	slices.SortStableFunc(p.Shots, func(a, b Shot) int { return int(a.Offset - b.Offset) })
	bt := &rules.Backtest{CrawlerRequests: 480, CrawlerRefused: 470, OtherLoggedOutRequests: 144, LoggedInRequests: 12}
	return ReportInput{Plan: p, Result: res, Backtest: bt, RuleName: "tools_chrome_zh_cn", RuleFile: "out/rules.caddy", ScaledRuleFile: "out/rules-speed-10x.caddy",
		Options: Options{Target: &url.URL{Scheme: "http", Host: "127.0.0.1:8080"}, Loopback: true, ClientTimeout: 10 * time.Second, LateWindow: 10 * time.Second, MaxLag: 100 * time.Millisecond},
		Notes:   []string{"client timeout 10s from the site facts (client_timeout_s)"}}
}

// parsed is replay.html as a browser's parser reads it.
type parsed struct {
	elements map[string]int // count by tag name
	ids      map[string]bool
	text     string
	shaded   int // rect.window in the charts
	charts   []string
}

func parseReplayHTML(t *testing.T, page []byte) parsed {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	p := parsed{elements: map[string]int{}, ids: map[string]bool{}}
	var text strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.ElementNode:
			p.elements[n.Data]++
			for _, a := range n.Attr {
				switch {
				case a.Key == "id":
					p.ids[a.Val] = true
					if strings.HasPrefix(a.Val, "chart-") {
						p.charts = append(p.charts, a.Val)
					}
				case a.Key == "class" && a.Val == "window":
					p.shaded++
				}
			}
		case html.TextNode:
			text.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	p.text = text.String()
	return p
}

// TestHTMLReport: replay.html shows the outcome of every class, the goodput,
// the in-flight count against the schedule's ceiling and the generator's lag
// as charts; an invalid run says so at the top and shades the seconds the
// generator fell behind; text from a log line or a socket stays text.
func TestHTMLReport(t *testing.T) {
	rep := NewReport(saturatedRun())
	page, err := rep.HTML()
	if err != nil {
		t.Fatal(err)
	}
	got := parseReplayHTML(t, page)
	want := []string{"chart-crawler", "chart-other-logged-out", "chart-logged-in", "chart-goodput", "chart-in-flight", "chart-lag"}
	if !slices.Equal(got.charts, want) {
		t.Errorf("charts %q, want %q", got.charts, want)
	}
	if !got.ids["invalid"] || got.ids["valid"] || !strings.Contains(got.text, "INVALID RUN: the generator's worst scheduling lag was 150 ms") {
		t.Errorf("an invalid run must say so at the top: ids %v", got.ids)
	}
	// Three seconds behind schedule, shaded on each of the six charts, in
	// both drawings of each (wide and narrow).
	if got.shaded != 3*6*2 {
		t.Errorf("%d shaded columns, want 36 (3 seconds on 6 charts, each drawn wide and narrow)", got.shaded)
	}
	if got.elements["script"] != 0 || got.elements["b"] != 0 || got.elements["img"] != 0 {
		t.Errorf("markup from a fingerprint or an error message became elements: %v", got.elements)
	}
	for _, s := range []string{`<script>alert(1)</script>"><b>bold</b>`, "<img src=x onerror=alert(1)>"} {
		if !strings.Contains(got.text, s) {
			t.Errorf("%q is not shown as text", s)
		}
	}
	if rep.Generator.InFlightBound != 530 {
		t.Errorf("the schedule's ceiling is 53 requests a replay second for 10 s: %d", rep.Generator.InFlightBound)
	}
	for _, s := range []string{"schedule&#39;s ceiling 530", "bound 100 ms", "out/rules-speed-10x.caddy"} {
		if !strings.Contains(string(page), s) {
			t.Errorf("replay.html does not show %q", s)
		}
	}

	valid, err := NewReport(goldenRun()).HTML()
	if err != nil {
		t.Fatal(err)
	}
	g := parseReplayHTML(t, valid)
	if !g.ids["valid"] || g.ids["invalid"] || g.shaded != 0 || strings.Contains(g.text, "INVALID") {
		t.Errorf("a valid run is marked: ids %v, %d shaded", g.ids, g.shaded)
	}
	// The golden run has no logged-in requests: no empty chart for them.
	if slices.Contains(g.charts, "chart-logged-in") || len(g.charts) != 5 {
		t.Errorf("charts of the golden run: %q", g.charts)
	}
}

// TestHTMLLayoutInChromium measures replay.html in headless Chromium at a
// laptop's width and a phone's, by the postmortem's standard (package
// layoutcheck): no text below 10 px, no overlapping chart labels, no table
// word broken mid-word, titles above charts, no sideways scroll of the body;
// and every chart's time axis says the incident's date.
func TestHTMLLayoutInChromium(t *testing.T) {
	layoutcheck.RequireChromium(t)
	dir := t.TempDir()
	for name, in := range map[string]ReportInput{"saturated": saturatedRun(), "golden": goldenRun()} {
		page, err := NewReport(in).HTML()
		if err != nil {
			t.Fatal(err)
		}
		if page, err = layoutcheck.WithProbe(page); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".html"), page, 0o644); err != nil {
			t.Fatal(err)
		}
		charts := strings.Count(string(page), `<svg class="chart"`)
		for _, width := range []int{1366, 390} {
			t.Run(fmt.Sprintf("%s at %d px", name, width), func(t *testing.T) {
				l := layoutcheck.Measure(t, dir, name+".html", width)
				l.CheckReadable(t, width)
				l.CheckFits(t, width)
				if len(l.Dates) != charts || charts < 5 {
					t.Fatalf("%d charts measured, %d in the page", len(l.Dates), charts)
				}
				for i, d := range l.Dates {
					if !slices.Equal(d, []string{"2 October"}) {
						t.Errorf("chart %d dates its axis %q, want [2 October]", i+1, d)
					}
				}
			})
		}
	}
}

// TestLagAndInFlightInEveryReport: whatever the run (valid, invalid, stopped
// early, with no rule to compare), each of replay.json, replay.md and
// replay.html states the generator's worst scheduling lag and its in-flight
// high-water mark, and the HTML charts both.
func TestLagAndInFlightInEveryReport(t *testing.T) {
	noRule := goldenRun()
	noRule.Backtest = nil
	stopped := goldenRun()
	stopped.Result.Stopped, stopped.Result.Unsent = "interrupted", 4
	for name, in := range map[string]ReportInput{"valid": goldenRun(), "invalid": saturatedRun(), "no rule": noRule, "stopped": stopped} {
		rep := NewReport(in)
		lag := fmt.Sprintf("%.1f ms", rep.Generator.WorstLagMS)
		high := rep.Generator.InFlightHigh
		if high == 0 || rep.Generator.WorstLagMS == 0 {
			t.Fatalf("%s: the fixture should have lag and requests in flight", name)
		}
		js, err := rep.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			Generator map[string]any `json:"generator"`
		}
		if err := json.Unmarshal(js, &back); err != nil {
			t.Fatal(err)
		}
		if back.Generator["worst_lag_ms"] != rep.Generator.WorstLagMS || back.Generator["in_flight_high_water"] != float64(high) {
			t.Errorf("%s: replay.json generator %v", name, back.Generator)
		}
		md := string(rep.Markdown())
		if !strings.Contains(md, "Worst scheduling lag "+lag) || !strings.Contains(md, fmt.Sprintf("In flight (clients still waiting) at most %d;", high)) {
			t.Errorf("%s: replay.md does not state the lag (%s) and the in-flight high-water mark (%d)", name, lag, high)
		}
		page, err := rep.HTML()
		if err != nil {
			t.Fatal(err)
		}
		h := string(page)
		if !strings.Contains(h, "<th scope=\"row\">Worst scheduling lag</th><td>"+lag) ||
			!strings.Contains(h, fmt.Sprintf("<th scope=\"row\">In flight at most (clients still waiting)</th><td>%d</td>", high)) ||
			!strings.Contains(h, `id="chart-lag"`) || !strings.Contains(h, `id="chart-in-flight"`) {
			t.Errorf("%s: replay.html does not state and chart the lag (%s) and the in-flight high-water mark (%d)", name, lag, high)
		}
	}
}

// TestTargetPasswordNeverWritten: a target given with a password in its URL
// is written redacted in every report.
func TestTargetPasswordNeverWritten(t *testing.T) {
	in := goldenRun()
	in.Options.Target = &url.URL{Scheme: "http", User: url.UserPassword("ops", "s3cret-pw"), Host: "127.0.0.1:8080"}
	rep := NewReport(in)
	js, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	page, err := rep.HTML()
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string][]byte{"replay.json": js, "replay.md": rep.Markdown(), "replay.html": page} {
		if bytes.Contains(out, []byte("s3cret-pw")) {
			t.Errorf("%s holds the target's password", name)
		}
		if !bytes.Contains(out, []byte("127.0.0.1:8080")) {
			t.Errorf("%s does not name the target", name)
		}
	}
}
