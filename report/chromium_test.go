package report

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/aftermath-forensics/aftermath/report/layoutcheck"
	"github.com/aftermath-forensics/aftermath/report/timechart"
)

// TestHTMLInChromium renders report.html in headless Chromium, as a reader's
// browser would, and checks three things: the charts drew (every chart's SVG
// holds non-empty paths after load, and a screenshot shows the charts'
// colours), hostile log text stays text, and the page made no network request.
//
// Network: each Chromium runs with --proxy-server pointing at a local listener
// that records every connection, and --proxy-bypass-list="<-loopback>" so that
// even loopback goes through it; Chromium's net log says who asked for each
// request. Chromium's own services (component updater, sign-in, network time)
// connect whatever the flags say, so a connection only fails the test when the
// net log attributes a request to the page (its network isolation key is the
// file:// page) or when the proxy saw a host that no browser-initiated request
// in the net log explains. A control page that loads an image from
// leak.invalid proves both detectors see a leak.
func TestHTMLInChromium(t *testing.T) {
	layoutcheck.RequireChromium(t)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// The hostile page is the reference report with hostile text in every
	// field a log fills: the same charts, tables and page. One Chromium
	// loads it, dumps its DOM and takes its screenshot (a Chromium start is
	// most of a run's CPU; the reference page had one of its own).
	hostilePage, err := Render(injectionReport(t), FormatHTML, LangEN)
	if err != nil {
		t.Fatal(err)
	}
	runs := []*chromiumRun{
		{name: "hostile", page: write("hostile.html", hostilePage), screenshot: filepath.Join(dir, "hostile.png")},
		{name: "control", page: write("control.html", []byte(`<!DOCTYPE html><html><body><p>leak</p><img src="http://leak.invalid/x.png"></body></html>`))},
	}
	// Generous: when the test started three Chromiums at once (two now),
	// they took over 25 s on a loaded two-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.run(ctx, dir)
		}()
	}
	wg.Wait()
	for _, r := range runs {
		if r.err != nil {
			t.Fatalf("%s: %v\n%s", r.name, r.err, r.stderr)
		}
	}

	t.Run("charts drew", func(t *testing.T) {
		checkChartsInDOM(t, runs[0].dom, 6)
		checkInertHTML(t, runs[0].dom, 6)
		if !strings.Contains(textOf(t, runs[0].dom), "<script>alert(1)</script>") {
			t.Errorf("the hostile text is not shown as text after load")
		}
	})
	t.Run("screenshot is not blank", func(t *testing.T) {
		checkScreenshot(t, runs[0].screenshot)
		if keep := os.Getenv("AFTERMATH_KEEP_SCREENSHOT"); keep != "" {
			data, _ := os.ReadFile(runs[0].screenshot)
			_ = os.WriteFile(keep, data, 0o644)
		}
	})
	t.Run("no network request", func(t *testing.T) {
		r := runs[0]
		if len(r.pageRequests) > 0 {
			t.Errorf("%s: the page requested %q", r.name, r.pageRequests)
		}
		for _, host := range r.proxied {
			if !r.browserHosts[host] {
				t.Errorf("%s: a connection to %s that no browser service explains", r.name, host)
			}
		}
		// The control page must be caught by both detectors, or they prove nothing.
		c := runs[1]
		if len(c.pageRequests) == 0 {
			t.Errorf("control: the net log did not attribute the image request to the page")
		}
		if !slices.Contains(c.proxied, "leak.invalid") {
			t.Errorf("control: the proxy did not see the page's request (saw %q)", c.proxied)
		}
	})
}

// chromiumRun is one headless Chromium invocation (the page's DOM after
// load, and a screenshot when asked) and what it revealed.
type chromiumRun struct {
	name, page, screenshot string

	dom          []byte
	stderr       string
	err          error
	proxied      []string        // hosts the proxy saw
	pageRequests []string        // URLs the net log attributes to the page
	browserHosts map[string]bool // hosts of requests Chromium made for itself
}

func (r *chromiumRun) run(ctx context.Context, dir string) {
	proxy, err := listenProxy()
	if err != nil {
		r.err = err
		return
	}
	profile := filepath.Join(dir, r.name+"-profile")
	netlog := filepath.Join(dir, r.name+"-netlog.json")
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile,
		"--proxy-server=" + proxy.addr(), "--proxy-bypass-list=<-loopback>",
		"--log-net-log=" + netlog,
		"--hide-scrollbars", "--force-device-scale-factor=1",
	}
	args = append(args, "--dump-dom")
	if r.screenshot != "" {
		args = append(args, "--window-size=1280,3200", "--screenshot="+r.screenshot)
	}
	args = append(args, (&url.URL{Scheme: "file", Path: r.page}).String())
	cmd := exec.CommandContext(ctx, layoutcheck.Chromium, args...)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	r.proxied = proxy.close()
	r.dom, r.stderr = stdout.Bytes(), layoutcheck.Tail(stderr.String(), 2000)
	if err != nil {
		r.err = fmt.Errorf("chromium: %w", err)
		return
	}
	r.pageRequests, r.browserHosts, r.err = readNetLog(netlog)
}

// recordingProxy accepts connections, records the host each asks for (from
// the CONNECT line or the absolute URL of a plain request) and answers nothing.
type recordingProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	hosts []string
	wg    sync.WaitGroup
}

func listenProxy() (*recordingProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy listener: %w", err)
	}
	p := &recordingProxy{ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer c.Close()
				_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
				line, _ := bufio.NewReader(c).ReadString('\n')
				f := strings.Fields(line)
				if len(f) < 2 {
					// A socket Chromium opened ahead of need (a preconnect) and
					// closed without asking for anything is no request.
					return
				}
				host := f[1]
				if u, err := url.Parse(f[1]); err == nil && u.Host != "" {
					host = u.Host
				}
				if h, _, err := net.SplitHostPort(host); err == nil {
					host = h
				}
				p.mu.Lock()
				p.hosts = append(p.hosts, host)
				p.mu.Unlock()
			}()
		}
	}()
	return p, nil
}

func (p *recordingProxy) addr() string { return p.ln.Addr().String() }

func (p *recordingProxy) close() []string {
	p.ln.Close()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hosts
}

// readNetLog sorts the network requests in a Chromium net log into those the
// page made (its network isolation key or initiator is the file:// page) and
// the hosts of those Chromium made for itself.
func readNetLog(path string) (page []string, browser map[string]bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("net log: %w", err)
	}
	var log struct {
		Constants struct {
			LogEventTypes map[string]int `json:"logEventTypes"`
		} `json:"constants"`
		Events []struct {
			Type   int            `json:"type"`
			Params map[string]any `json:"params"`
		} `json:"events"`
	}
	if err := json.Unmarshal(data, &log); err != nil {
		// A log cut short at exit lacks its closing brackets.
		fixed := append(bytes.TrimRight(bytes.TrimSpace(data), ","), []byte("]}")...)
		if err2 := json.Unmarshal(fixed, &log); err2 != nil {
			return nil, nil, fmt.Errorf("net log %s: %w", path, err)
		}
	}
	start, ok := log.Constants.LogEventTypes["URL_REQUEST_START_JOB"]
	if !ok {
		return nil, nil, fmt.Errorf("net log %s: no URL_REQUEST_START_JOB event type", path)
	}
	browser = map[string]bool{}
	for _, e := range log.Events {
		if e.Type != start {
			continue
		}
		raw, _ := e.Params["url"].(string)
		u, err := url.Parse(raw)
		if err != nil || raw == "" {
			continue
		}
		switch u.Scheme {
		case "http", "https", "ws", "wss", "ftp":
		default:
			continue // file:, data:, chrome: never leave the machine
		}
		nik, _ := e.Params["network_isolation_key"].(string)
		initiator, _ := e.Params["initiator"].(string)
		if strings.Contains(nik, "file://") || initiator == "null" || strings.HasPrefix(initiator, "file://") {
			page = append(page, raw)
			continue
		}
		browser[u.Hostname()] = true
	}
	return page, browser, nil
}

// checkChartsInDOM: after load, every chart's SVG holds a data path with a
// real outline.
func checkChartsInDOM(t *testing.T, dom []byte, want int) {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	attr := func(n *html.Node, key string) string {
		for _, a := range n.Attr {
			if a.Key == key {
				return a.Val
			}
		}
		return ""
	}
	var charts []int // data paths per chart
	var walk func(n *html.Node, inChart int)
	walk = func(n *html.Node, inChart int) {
		// The wide drawings; the narrow ones are drawn from the same calls.
		if n.Type == html.ElementNode && n.Data == "svg" && attr(n, "class") == "chart" {
			charts = append(charts, 0)
			inChart = len(charts)
		}
		if n.Type == html.ElementNode && n.Data == "path" && inChart > 0 && attr(n, "class") == "data" {
			if d := attr(n, "d"); strings.Count(d, "L") >= 2 && len(d) > 20 {
				charts[inChart-1]++
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inChart)
		}
	}
	walk(doc, 0)
	if len(charts) != want {
		t.Errorf("%d charts in the loaded page, want %d", len(charts), want)
	}
	for i, n := range charts {
		if n == 0 {
			t.Errorf("chart %d has no data path after load", i+1)
		}
	}
}

// checkScreenshot: the page is not blank and the charts' colours are on it.
func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	colours := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			colours[rgba(img, x, y)]++
		}
	}
	if len(colours) < 50 {
		t.Errorf("the screenshot has %d distinct colours: blank?", len(colours))
	}
	for name, hex := range map[string]string{"503 layer": timechart.Colour503, "answered layer": timechart.ColourOK, "failing stretch": timechart.ColourShade, "queue": timechart.ColourQueue} {
		c := parseHex(hex)
		min := 50
		if hex == timechart.ColourShade {
			// The legend's swatch has this colour too (a few hundred
			// pixels): the charts' shading must account for far more.
			min = 10000
		}
		if colours[c] < min {
			t.Errorf("the screenshot shows %d pixels of the %s colour %s", colours[c], name, hex)
		}
	}
}

func rgba(img image.Image, x, y int) color.RGBA {
	r, g, b, _ := img.At(x, y).RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 255}
}

func parseHex(s string) color.RGBA {
	var r, g, b uint8
	fmt.Sscanf(s, "#%02x%02x%02x", &r, &g, &b)
	return color.RGBA{r, g, b, 255}
}

// TestHTMLLayoutInChromium renders report.html in headless Chromium at a
// laptop's width (1366 px) and a phone's (390 px) and measures it in the page:
// nothing overflows the window sideways, every chart fits what shows and so
// does its failing stretch, no table or code block scrolls sideways,
// no text renders below 10 px, no two chart labels overlap, no word in a table
// breaks mid-word, every chart's title is above it, the page body never
// scrolls sideways (charts, tables and code scroll inside themselves), and a
// window across local midnight dates both days on the time axis.
//
// The measured copy lacks the Content-Security-Policy that would forbid the
// probe's script (package layoutcheck says why); TestHTMLInChromium checks the
// page with its policy.
func TestHTMLLayoutInChromium(t *testing.T) {
	layoutcheck.RequireChromium(t)
	// The reference window, 02:00-03:30 in Seoul, is 23:30-01:00 in Yangon:
	// the same evidence across local midnight.
	midnight := referenceReport(t)
	midnight.Window.TZ = "Asia/Yangon"
	pages := []struct {
		name string
		r    *Report
		lang string
		want []string // the dates on each chart's time axis
	}{
		{"reference", referenceReport(t), LangEN, []string{"3 October"}},
		{"midnight", midnight, LangEN, []string{"2 October", "3 October"}},
		// Hangul breaks between any two syllables unless told not to.
		{"reference-ko", referenceReport(t), LangKO, []string{"10월 3일"}},
	}
	dir := t.TempDir()
	widths := []int{1366, 390}
	var frames []layoutcheck.Frame
	for _, pg := range pages {
		page, err := Render(pg.r, FormatHTML, pg.lang)
		if err != nil {
			t.Fatal(err)
		}
		page, err = layoutcheck.WithProbe(page)
		if err != nil {
			t.Fatalf("%s: %v", pg.name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, pg.name+".html"), page, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, width := range widths {
			frames = append(frames, layoutcheck.Frame{Page: pg.name + ".html", Width: width})
		}
	}
	// One Chromium measures every page at every width; each frame is then
	// checked on its own.
	layouts := layoutcheck.MeasureAll(t, dir, frames)
	for i, f := range frames {
		pg := pages[i/len(widths)]
		t.Run(fmt.Sprintf("%s at %d px", pg.name, f.Width), func(t *testing.T) {
			l := layouts[i]
			l.CheckReadable(t, f.Width)
			l.CheckFits(t, f.Width)
			if len(l.Dates) != 6 {
				t.Fatalf("%d charts, want 6", len(l.Dates))
			}
			for i, d := range l.Dates {
				if !slices.Equal(d, pg.want) {
					t.Errorf("chart %d dates its axis %q, want %q", i+1, d, pg.want)
				}
			}
		})
	}
}
