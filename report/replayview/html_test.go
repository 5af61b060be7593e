package replayview

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/aftermath-forensics/aftermath/report/layoutcheck"
	"github.com/aftermath-forensics/aftermath/rules/replay/replayreport"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// measured reads a replay's measurement as rules/replay wrote it: its golden
// files (NAME.json, rewritten by go test -update there) are what these tests
// render, so a change to the measurement reaches the renderings.
func measured(t *testing.T, name string) *replayreport.Report {
	t.Helper()
	js, err := os.ReadFile(filepath.Join("..", "..", "rules", "replay", "testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r replayreport.Report
	if err := json.Unmarshal(js, &r); err != nil {
		t.Fatalf("%s.json: %v", name, err)
	}
	return &r
}

// TestRenderGolden renders the golden measurement (a crawler mostly refused,
// an ordinary client that timed out, a fingerprint whose user agent tries to
// inject Markdown) as replay.md and replay.html.
func TestRenderGolden(t *testing.T) {
	rep := measured(t, "report")
	md := Markdown(rep)
	page, err := HTML(rep)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{"report.md": md, "report.html": page} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to write it)", err)
		}
		if string(want) != string(got) {
			t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", name, got)
		}
	}
	// A value from a log line never becomes a link or markup.
	if strings.Contains(string(md), "Evil](") || strings.Contains(string(md), "<b>") {
		t.Errorf("the crawler's fingerprint was not escaped:\n%s", md)
	}
	if !strings.Contains(string(Markdown(measured(t, "stopped"))), "Stopped early") {
		t.Errorf("the report must say the run stopped early")
	}
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
	rep := measured(t, "saturated")
	page, err := HTML(rep)
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

	valid, err := HTML(measured(t, "report"))
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
	var frames []layoutcheck.Frame
	charts := map[string]int{} // chart drawings in each page
	for name, fixture := range map[string]string{"saturated": "saturated", "golden": "report"} {
		page, err := HTML(measured(t, fixture))
		if err != nil {
			t.Fatal(err)
		}
		if page, err = layoutcheck.WithProbe(page); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".html"), page, 0o644); err != nil {
			t.Fatal(err)
		}
		charts[name+".html"] = strings.Count(string(page), `<svg class="chart"`)
		for _, width := range []int{1366, 390} {
			frames = append(frames, layoutcheck.Frame{Page: name + ".html", Width: width})
		}
	}
	// One Chromium measures both pages at both widths; each frame is then
	// checked on its own.
	layouts := layoutcheck.MeasureAll(t, dir, frames)
	for i, f := range frames {
		t.Run(fmt.Sprintf("%s at %d px", strings.TrimSuffix(f.Page, ".html"), f.Width), func(t *testing.T) {
			l, charts := layouts[i], charts[f.Page]
			l.CheckReadable(t, f.Width)
			l.CheckFits(t, f.Width)
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

// TestLagAndInFlightInEveryReport: whatever the run (valid, invalid, stopped
// early, with no rule to compare), each of replay.md and
// replay.html states the generator's worst scheduling lag and its in-flight
// high-water mark, and the HTML charts both (replay.json: package replay).
func TestLagAndInFlightInEveryReport(t *testing.T) {
	for name, fixture := range map[string]string{"valid": "report", "invalid": "saturated", "no rule": "no-rule", "stopped": "stopped"} {
		rep := measured(t, fixture)
		lag := fmt.Sprintf("%.1f ms", rep.Generator.WorstLagMS)
		high := rep.Generator.InFlightHigh
		if high == 0 || rep.Generator.WorstLagMS == 0 {
			t.Fatalf("%s: the fixture should have lag and requests in flight", name)
		}
		md := string(Markdown(rep))
		if !strings.Contains(md, "Worst scheduling lag "+lag) || !strings.Contains(md, fmt.Sprintf("In flight (clients still waiting) at most %d;", high)) {
			t.Errorf("%s: replay.md does not state the lag (%s) and the in-flight high-water mark (%d)", name, lag, high)
		}
		page, err := HTML(rep)
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
