// Package layoutcheck measures an HTML page aftermath writes (the
// postmortem's report.html, the replay's replay.html) the way a reader's
// browser lays it out: it frames the page at a given width in headless
// Chromium, runs a probe inside it, and checks that the page stays readable
// there. The tests of those pages share it, so both are held to one standard.
package layoutcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// Chromium is Debian's chromium package, which .ci/run installs.
const Chromium = "/usr/bin/chromium"

// RequireChromium ends t as testenv.Missing says when Chromium is absent.
func RequireChromium(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(Chromium); err != nil {
		testenv.Missing(t, "%s is missing (.ci/run installs Debian's chromium): %v", Chromium, err)
	}
}

// probe measures the rendered page from inside it and posts the numbers
// to the parent frame: the smallest rendered text size (an SVG text's font
// size times its on-screen scale), the pairs of chart labels whose boxes
// intersect, the words in table cells split across lines, the charts whose
// title is not above them, the page's scroll width against its width, and
// each chart's date labels.
const probe = `(function(){
const out = {}, de = document.documentElement;
out.scrollWidth = de.scrollWidth; out.clientWidth = de.clientWidth;
out.pageScrollWidth = document.scrollingElement.scrollWidth; out.innerWidth = innerWidth;
// Charts, tables and code drawn or hidden per width: only what shows counts.
const shown = el => el.getClientRects().length > 0;
let min = 1e9, minAt = '', n;
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
while ((n = walker.nextNode())) {
  if (!n.textContent.trim()) continue;
  const el = n.parentElement;
  if (el.closest('title, script') || !shown(el)) continue;
  const cs = getComputedStyle(el);
  if (cs.display === 'none' || cs.visibility === 'hidden') continue;
  let size = parseFloat(cs.fontSize);
  if (el instanceof SVGElement) { const m = el.getScreenCTM(); size *= Math.hypot(m.a, m.b); }
  if (size < min) { min = size; minAt = el.tagName + ' ' + n.textContent.trim().slice(0, 40); }
}
out.minFontPx = min; out.minFontAt = minAt;
out.overlaps = []; out.dates = [];
out.chartsOutside = []; out.stretchesHidden = []; out.scrollingBoxes = [];
document.querySelectorAll('svg.chart').forEach(svg => {
  if (!shown(svg)) return;
  const id = (svg.closest('figure') || {}).id;
  // The chart whole in the window's width, and its failing stretch inside
  // the part of it that shows without scrolling anything sideways.
  const box = svg.getBoundingClientRect();
  let left = 0, right = innerWidth;
  for (let p = svg.parentElement; p; p = p.parentElement) {
    const r = p.getBoundingClientRect();
    if (getComputedStyle(p).overflowX !== 'visible') { left = Math.max(left, r.left); right = Math.min(right, r.right); }
  }
  if (box.left < left - 0.5 || box.right > right + 0.5) out.chartsOutside.push(id + ': ' + Math.round(box.left) + '-' + Math.round(box.right) + ' px, visible ' + Math.round(left) + '-' + Math.round(right));
  svg.querySelectorAll('rect.window').forEach(w => {
    const r = w.getBoundingClientRect();
    if (r.left < left - 0.5 || r.right > right + 0.5) out.stretchesHidden.push(id + ': ' + Math.round(r.left) + '-' + Math.round(r.right) + ' px, visible ' + Math.round(left) + '-' + Math.round(right));
  });
  const ts = [...svg.querySelectorAll('text')].map(t => [t.textContent, t.getBoundingClientRect()]);
  for (let a = 0; a < ts.length; a++) for (let b = a + 1; b < ts.length; b++) {
    const r = ts[a][1], s = ts[b][1];
    if (Math.min(r.right, s.right) - Math.max(r.left, s.left) > 0.5 && Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top) > 0.5)
      out.overlaps.push(id + ': "' + ts[a][0] + '" on "' + ts[b][0] + '"');
  }
  out.dates.push([...svg.querySelectorAll('text.xdate')].map(t => t.textContent));
});
out.brokenWords = [];
document.querySelectorAll('td, th').forEach(cell => {
  const tw = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT); let t;
  while ((t = tw.nextNode())) {
    // Code (a PromQL query) is no prose: on a phone it wraps where it must.
    if (t.parentElement.closest('code')) continue;
    // A word may break after a hyphen, slash or comma, nowhere else.
    const re = /[^\s\-\/,]+[\-\/,]?/g; let m;
    while ((m = re.exec(t.textContent))) {
      const r = document.createRange(); r.setStart(t, m.index); r.setEnd(t, m.index + m[0].length);
      if ([...r.getClientRects()].filter(x => x.width > 0).length > 1) out.brokenWords.push(m[0]);
    }
  }
});
document.querySelectorAll('table, pre').forEach(el => {
  if (shown(el) && el.scrollWidth > el.clientWidth + 1) out.scrollingBoxes.push(el.tagName + ' ' + el.textContent.trim().slice(0, 40));
});
out.titlesNotAbove = [];
document.querySelectorAll('figure').forEach(f => {
  const cap = f.querySelector('figcaption'), svg = [...f.querySelectorAll('svg')].find(shown);
  if (!cap || !svg || cap.getBoundingClientRect().bottom > svg.getBoundingClientRect().top) out.titlesNotAbove.push(f.id);
});
parent.postMessage(JSON.stringify(out), '*');
})();`

// Layout is what the probe measured at one width.
type Layout struct {
	ScrollWidth, ClientWidth int
	// PageScrollWidth is document.scrollingElement.scrollWidth, against the
	// window's InnerWidth.
	PageScrollWidth, InnerWidth int
	// ChartsOutside lists the shown charts that do not fit the part of the
	// page that shows without sideways scrolling; StretchesHidden the
	// failing stretches (rect.window) that lie outside it.
	ChartsOutside, StretchesHidden []string
	// ScrollingBoxes lists the tables and code blocks that scroll sideways
	// inside themselves.
	ScrollingBoxes []string
	MinFontPx      float64
	MinFontAt      string
	Overlaps       []string
	// Dates holds each chart's date labels on its time axis.
	Dates          [][]string
	BrokenWords    []string
	TitlesNotAbove []string
}

var csp = regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`)

// WithProbe returns page ready to measure. The probe is a script, which the
// pages' Content-Security-Policy forbids: the measured copy drops that one
// meta tag; everything else (the CSS, the SVG) is the page as written. A
// page without the tag is an error: it would have been measured without the
// policy it must carry.
func WithProbe(page []byte) ([]byte, error) {
	if !csp.Match(page) {
		return nil, fmt.Errorf("no Content-Security-Policy meta tag to lift for the probe")
	}
	out := csp.ReplaceAll(page, nil)
	return append(out, []byte("<script>"+probe+"</script>")...), nil
}

// Frame is one page of a directory (written by WithProbe), framed at one
// width.
type Frame struct {
	Page  string
	Width int
}

// MeasureAll frames each page at its width, all in one headless Chromium,
// and returns what each frame's probe posted, in order. One Chromium for
// all: its start is most of a measurement's CPU. Each page is its own
// document whose window is its iframe, so it lays out as it would alone.
// Headless Chromium will not make a window narrower than 500 px, so an
// outer page holds the pages in iframes of their widths and collects the
// numbers, telling the frames apart by the window that posted them.
//
// The outer page listens before its first iframe exists: a frame that
// loads and posts while the outer page is still being parsed is heard.
// Chromium may still dump the DOM before the last frames have posted (it
// did on a quiet machine with six frames); those frames are measured once
// more, in a Chromium of their own, and one that posts nothing there fails t.
func MeasureAll(t *testing.T, dir string, frames []Frame) []Layout {
	t.Helper()
	out := make([]Layout, len(frames))
	missing := make([]int, len(frames))
	for i := range frames {
		missing[i] = i
	}
	var log string
	for attempt := 1; len(missing) > 0; attempt++ {
		var posted map[int]string
		posted, log = measureOnce(t, dir, frames, missing, attempt)
		var still []int
		for _, i := range missing {
			js, ok := posted[i]
			if !ok {
				still = append(still, i)
				continue
			}
			if err := json.Unmarshal([]byte(js), &out[i]); err != nil {
				t.Fatalf("%s at %d px: probe: %v: %s", frames[i].Page, frames[i].Width, err, js)
			}
			l := out[i]
			t.Logf("%s at %d px: scroll %d/%d px, smallest text %.2f px (%s), %d overlaps, %d broken words, dates %q",
				frames[i].Page, frames[i].Width, l.ScrollWidth, l.ClientWidth, l.MinFontPx, l.MinFontAt, len(l.Overlaps), len(l.BrokenWords), l.Dates)
		}
		if len(still) > 0 && attempt == 2 {
			f := frames[still[0]]
			t.Fatalf("%s at %d px: the probe posted nothing (did the framed page load?)\n%s", f.Page, f.Width, Tail(log, 2000))
		}
		if len(still) > 0 {
			t.Logf("%d of %d frames posted nothing before Chromium dumped the page: measuring them again", len(still), len(missing))
		}
		missing = still
	}
	return out
}

// measureOnce frames the pages of frames at the indexes in which, in one
// Chromium, and returns the numbers each frame posted by its index in
// frames, and Chromium's log.
func measureOnce(t *testing.T, dir string, frames []Frame, which []int, attempt int) (map[int]string, string) {
	t.Helper()
	var iframes strings.Builder
	for _, i := range which {
		fmt.Fprintf(&iframes, `<iframe data-frame="%d" src="%s" style="border:0;display:block;width:%dpx;height:3000px"></iframe>`+"\n", i, frames[i].Page, frames[i].Width)
	}
	page := fmt.Sprintf(`<!DOCTYPE html><html><head><script>addEventListener('message', e => {
  const f = [...document.querySelectorAll('iframe')].find(f => f.contentWindow === e.source);
  const p = document.createElement('pre'); p.id = 'layout-' + (f ? f.dataset.frame : 'unknown'); p.textContent = e.data; document.body.appendChild(p); });</script></head>
<body style="margin:0">%s</body></html>`, iframes.String())
	name := fmt.Sprintf("%d-%d-%s", attempt, frames[which[0]].Width, frames[which[0]].Page) // .html last: Chromium shows other names as text
	if len(which) > 1 {
		name = fmt.Sprintf("%d-frames-%s", len(which), name)
	}
	outer := filepath.Join(dir, "frame-"+name)
	if err := os.WriteFile(outer, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(dir, "profile-"+name)
	dom, log, err := runChromium(outer, profile, dir)
	// A Chromium killed by a signal (it segfaults now and then on a loaded
	// machine) measured nothing: one more run, then its error stands. An
	// exit with a status is Chromium's answer and is not retried.
	if crashed(err) {
		dom, log, err = runChromium(outer, profile, dir)
	}
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, Tail(log, 2000))
	}
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	posted := map[int]string{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "pre" {
			for _, a := range n.Attr {
				if i, ok := strings.CutPrefix(a.Val, "layout-"); a.Key == "id" && ok && n.FirstChild != nil {
					if k, err := strconv.Atoi(i); err == nil {
						posted[k] = n.FirstChild.Data
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return posted, log
}

// CheckReadable fails t where the page measured at width is hard to read:
// text below 10 px, chart labels on top of each other, a table word broken
// mid-word, a chart whose title is not above it, or a body that scrolls
// sideways (charts, tables and code must scroll inside themselves).
func (l Layout) CheckReadable(t *testing.T, width int) {
	t.Helper()
	if l.ClientWidth != width {
		t.Fatalf("the page was %d px wide, want %d", l.ClientWidth, width)
	}
	if l.ScrollWidth > l.ClientWidth {
		t.Errorf("the page scrolls sideways: %d px of content in %d px", l.ScrollWidth, l.ClientWidth)
	}
	if l.MinFontPx < 10 {
		t.Errorf("text renders at %.2f px (%s), want at least 10", l.MinFontPx, l.MinFontAt)
	}
	if len(l.Overlaps) > 0 {
		t.Errorf("%d chart labels overlap: %q", len(l.Overlaps), l.Overlaps)
	}
	if len(l.BrokenWords) > 0 {
		t.Errorf("%d words break mid-word in tables: %q", len(l.BrokenWords), l.BrokenWords)
	}
	if len(l.TitlesNotAbove) > 0 {
		t.Errorf("charts whose title is not above them: %q", l.TitlesNotAbove)
	}
}

// CheckFits fails t where the page measured at width does not fit it as a
// phone needs: the page wider than the window, a chart wider than what
// shows, a failing stretch outside it, or a table or code block that must
// be scrolled sideways to be read.
func (l Layout) CheckFits(t *testing.T, width int) {
	t.Helper()
	if l.InnerWidth != width {
		t.Fatalf("the window was %d px wide, want %d", l.InnerWidth, width)
	}
	if l.PageScrollWidth > l.InnerWidth {
		t.Errorf("the page overflows sideways: scrollWidth %d px in %d px", l.PageScrollWidth, l.InnerWidth)
	}
	if len(l.ChartsOutside) > 0 {
		t.Errorf("charts wider than what shows: %q", l.ChartsOutside)
	}
	if len(l.StretchesHidden) > 0 {
		t.Errorf("failing stretches outside what shows: %q", l.StretchesHidden)
	}
	if len(l.ScrollingBoxes) > 0 {
		t.Errorf("tables or code that scroll sideways: %q", l.ScrollingBoxes)
	}
}

// Tail is the end of a long text (Chromium's stderr), for a failure message.
func Tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// runChromium dumps the DOM of the page at outer after its scripts ran.
func runChromium(outer, profile, home string) (dom []byte, log string, err error) {
	// Generous but bounded: Chromium on a loaded two-core machine is slow.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, Chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile,
		"--hide-scrollbars", "--force-device-scale-factor=1", "--allow-file-access-from-files",
		"--virtual-time-budget=10000", "--window-size=1500,3000", "--dump-dom",
		(&url.URL{Scheme: "file", Path: outer}).String())
	cmd.Env = append(os.Environ(), "HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return stdout.Bytes(), stderr.String(), err
}

// crashed says whether err is a process killed by a signal other than the
// context's deadline (a timeout is a verdict on the page, not a crash).
func crashed(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() != syscall.SIGKILL
}
