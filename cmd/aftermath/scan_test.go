package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/live/livetest"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// runScanCLI runs the scan command as main's run does and returns its exit code.
func runScanCLI(t *testing.T, args ...string) (code int, stdout string) {
	t.Helper()
	var out, errw bytes.Buffer
	cmd := newScanCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errw)
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		fmt.Fprintln(&errw, "aftermath:", err)
	}
	return exitCode(err), out.String() + errw.String()
}

var seoul = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Seoul")
	if err != nil {
		panic(err)
	}
	return loc
}()

// scanDay is the first day of the small bundle; the crawler comes on the
// fourth evening, so its scans have three days of baseline.
var scanDay = time.Date(2026, 11, 2, 0, 0, 0, 0, seoul)

// crawlRate is the small bundle's crawler: requests a minute and the share the
// proxy answers with 503 itself. It walks the tools from 20:00 on the fourth
// day, bursts (half its requests refused with 503) from 22:00 and is gone at 23:00.
func crawlRate(t time.Time) (int, float64) {
	d := t.Sub(scanDay.AddDate(0, 0, 3))
	switch {
	case d >= 20*time.Hour && d < 22*time.Hour:
		return 30, 0
	case d >= 22*time.Hour && d < 23*time.Hour:
		return 200, 0.5
	}
	return 0, 0
}

var scanBundleOnce once[string]

// scanBundle is writeScanBundle's bundle, written once per test binary for
// the tests that only read it (they write their outputs elsewhere).
func scanBundle(t *testing.T) string {
	t.Helper()
	b := scanBundleOnce.get(t, func() (string, error) {
		b := filepath.Join(fixtureDir, "scan", "bundle")
		writeScanBundle(t, b) // on failure it ends the first test and leaves b empty
		return b, nil
	})
	if b == "" {
		t.Fatal("the shared scan bundle could not be written: see the first test that asked for it")
	}
	return b
}

// writeScanBundle writes four and a half days of a small site's access log:
// readers (a page and two assets a minute, a little more in the evening) and
// the crawler of crawlRate, as Caddy logs them.
func writeScanBundle(t *testing.T, dir string) {
	t.Helper()
	from, to := scanDay, scanDay.AddDate(0, 0, 4).Add(3*time.Hour)
	m := &bundle.Manifest{Window: bundle.Window{From: to.Add(-time.Hour).UTC(), To: to.UTC()}, Timezone: "Asia/Seoul",
		Site: sources.Site{Workers: 16, HealthURI: "/healthz.php", LoggedInCookie: "wikiUserID=", ClientTimeoutS: 10}}
	if err := bundle.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, bundle.AccessDir, "access.log.gz"))
	if err != nil {
		t.Fatal(err)
	}
	// Stored, not deflated: the tests read it many times (as the
	// simulated bundles are, simulate.Options.StoredGzip).
	zw, err := gzip.NewWriterLevel(f, gzip.NoCompression)
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(zw)
	line := func(ts time.Time, ip, ua, lang, uri string, status int, dur float64, php bool) {
		headers := map[string][]string{"User-Agent": {ua}}
		if lang != "" {
			headers["Accept-Language"] = []string{lang}
		}
		resp := map[string][]string{"Content-Type": {"text/html"}}
		if php {
			resp["X-Powered-By"] = []string{"PHP/8.3.12"}
		}
		level := "info"
		if status >= 500 {
			level = "error"
		}
		if err := enc.Encode(scanLogLine{Level: level, TS: float64(ts.UnixMicro()) / 1e6, Logger: "http.log.access.log0",
			Msg: "handled request", Request: scanLogRequest{RemoteIP: ip, ClientIP: ip, Proto: "HTTP/1.1", Method: "GET",
				Host: "wiki.example.org", URI: uri, Headers: headers},
			Duration: dur, Size: 12000, Status: status, RespHeaders: resp}); err != nil {
			t.Fatal(err)
		}
	}
	crawled := 0
	for m, i := from, 0; m.Before(to); m, i = m.Add(time.Minute), i+1 {
		readers := 1
		if h := m.Hour(); h >= 19 && h < 23 {
			readers = 2
		}
		for k := range readers {
			ts := m.Add(time.Duration(10+20*k) * time.Second)
			ip := fmt.Sprintf("10.%d.%d.%d", i%7, (i/7)%250, k+1)
			ff := "Mozilla/5.0 (X11; Linux x86_64; rv:131.0) Gecko/20100101 Firefox/131.0"
			line(ts, ip, ff, "ko-KR,ko;q=0.9", fmt.Sprintf("/w/Article_%d", i%97), 200, 0.12, true)
			line(ts.Add(time.Second), ip, ff, "ko-KR,ko;q=0.9", "/static/skin.css", 200, 0.001, false)
			line(ts.Add(2*time.Second), ip, ff, "ko-KR,ko;q=0.9", "/static/site.js", 200, 0.001, false)
		}
		n, refused := crawlRate(m)
		for k := range n {
			crawled++
			ts := m.Add(time.Duration(k) * time.Minute / time.Duration(n))
			ip := fmt.Sprintf("203.%d.%d.%d", crawled/65536%256, crawled/256%256, crawled%256)
			ua := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"
			uri := fmt.Sprintf("/index.php?title=Page_%d&action=edit", crawled)
			if float64(k) < refused*float64(n) {
				line(ts, ip, ua, "zh-CN,zh;q=0.9", uri, 503, 0.0002, false)
			} else {
				line(ts, ip, ua, "zh-CN,zh;q=0.9", uri, 200, 0.4, true)
			}
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// scanLogLine is a line of writeScanBundle's access log, its fields in the
// order encoding/json writes a map's keys: the bytes the map it was wrote,
// encoded without reflecting over a map of interfaces for each of the 4.5
// days' lines.
type scanLogLine struct {
	Duration    float64             `json:"duration"`
	Level       string              `json:"level"`
	Logger      string              `json:"logger"`
	Msg         string              `json:"msg"`
	Request     scanLogRequest      `json:"request"`
	RespHeaders map[string][]string `json:"resp_headers"`
	Size        int                 `json:"size"`
	Status      int                 `json:"status"`
	TS          float64             `json:"ts"`
}

// scanLogRequest is scanLogLine's request, its fields in key order.
type scanLogRequest struct {
	ClientIP string              `json:"client_ip"`
	Headers  map[string][]string `json:"headers"`
	Host     string              `json:"host"`
	Method   string              `json:"method"`
	Proto    string              `json:"proto"`
	RemoteIP string              `json:"remote_ip"`
	URI      string              `json:"uri"`
}

// hookServer is a Slack-style incoming webhook that fails its first failures
// requests with 503.
type hookServer struct {
	mu       sync.Mutex
	failures int
	calls    int
	messages []string
}

func (h *hookServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	if h.calls <= h.failures {
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	var msg struct{ Text string }
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &msg); err != nil || msg.Text == "" {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	h.messages = append(h.messages, msg.Text)
	io.WriteString(w, "ok")
}

func (h *hookServer) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.messages
	h.messages = nil
	return m
}

func readScanJSON(t *testing.T, dir string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "scan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestScanSchedule runs `aftermath scan` as a schedule would over the small
// bundle, with a state file and a webhook: one message when the crawler
// starts, one when it worsens, one when it ends, none for quiet hours; a
// webhook that fails twice gets its message once; one that stays down makes
// the scan exit 2 with the report on disk, and the next scan announces again.
func TestScanSchedule(t *testing.T) {
	defer func(d time.Duration) { webhookBackoff = d }(webhookBackoff)
	webhookBackoff = 10 * time.Millisecond
	dir := t.TempDir()
	b := scanBundle(t)
	hook := &hookServer{}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	webhook := srv.URL + "/services/T0/B0/secretpath"
	state := filepath.Join(dir, "state.json")
	at := func(d, h int) string {
		return scanDay.AddDate(0, 0, d).Add(time.Duration(h) * time.Hour).Format(time.RFC3339)
	}

	steps := []struct {
		name     string
		now      string
		failures int // the webhook's failures before it answers
		wantCode int
		wantMsgs []string // a substring of each message received
		wantKind string   // an anomaly scan.json must hold
	}{
		{"a quiet evening", at(2, 21), 0, exitOK, nil, ""},
		{"the crawler starts: announced", at(3, 21), 2, exitIncomplete, []string{"1 new, 0 worse, 0 ended"}, "crawler_burst"},
		{"it goes on: nothing new", at(3, 22), 0, exitIncomplete, nil, "crawler_burst"},
		{"it bursts and the proxy refuses: worse", at(3, 23), 0, exitIncomplete,
			[]string{"WORSE warning->critical crawler_burst"}, "error_rate"},
		{"it is gone: ended", at(4, 0), 0, exitOK, []string{"0 new, 0 worse, 2 ended"}, ""},
		{"quiet again: nothing", at(4, 1), 0, exitOK, nil, ""},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			hook.mu.Lock()
			hook.failures, hook.calls = st.failures, 0
			hook.mu.Unlock()
			out := filepath.Join(dir, "out", strings.ReplaceAll(st.now, ":", ""))
			code, stdout := runScanCLI(t, "--bundle", b, "--now", st.now, "--since", "1h", "--baseline", "7d",
				"--out", out, "--webhook", webhook, "--state", state)
			if code != st.wantCode {
				t.Fatalf("exit %d, want %d:\n%s", code, st.wantCode, stdout)
			}
			msgs := hook.take()
			if len(msgs) != len(st.wantMsgs) {
				t.Fatalf("%d messages, want %d: %q\n%s", len(msgs), len(st.wantMsgs), msgs, stdout)
			}
			for i, want := range st.wantMsgs {
				if !strings.Contains(msgs[i], want) || !strings.Contains(msgs[i], filepath.Join(out, "scan.md")) {
					t.Errorf("message %q lacks %q or the report's path", msgs[i], want)
				}
			}
			if st.failures > 0 && hook.calls != st.failures+1 {
				t.Errorf("the webhook was called %d times, want %d (fails %d times, then accepts)", hook.calls, st.failures+1, st.failures)
			}
			doc := readScanJSON(t, out)
			if doc["schema"] != "aftermath.scan/v1" || doc["anomalous"] != (st.wantCode == exitIncomplete) {
				t.Errorf("scan.json: schema %v, anomalous %v", doc["schema"], doc["anomalous"])
			}
			kinds := map[string]bool{}
			for _, a := range doc["anomalies"].([]any) {
				kinds[a.(map[string]any)["kind"].(string)] = true
			}
			if st.wantKind != "" && !kinds[st.wantKind] {
				t.Errorf("scan.json has no %s anomaly: %v", st.wantKind, kinds)
			}
			if strings.Contains(stdout, "secretpath") {
				t.Errorf("the webhook's secret path is printed:\n%s", stdout)
			}
			if _, err := os.Stat(filepath.Join(out, "scan.md")); err != nil {
				t.Error(err)
			}
		})
	}

	// A webhook that stays down: exit 2, the report on disk with the failure,
	// the state untouched, and the next scan announces the same change.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer down.Close()
	state2 := filepath.Join(dir, "state2.json")
	out := filepath.Join(dir, "out-down")
	code, stdout := runScanCLI(t, "--bundle", b, "--now", at(3, 21), "--out", out, "--webhook", down.URL+"/services/x/y/secretpath",
		"--state", state2, "--webhook-attempts", "2")
	if code != exitUsage {
		t.Fatalf("a webhook that stays down: exit %d, want %d\n%s", code, exitUsage, stdout)
	}
	doc := readScanJSON(t, out)
	delivery, _ := doc["delivery"].(map[string]any)
	if delivery == nil || delivery["sent"] != false || delivery["attempts"] != float64(2) || !strings.Contains(fmt.Sprint(delivery["error"]), "HTTP 502") {
		t.Errorf("scan.json delivery: %v", doc["delivery"])
	}
	if !strings.Contains(fmt.Sprint(doc["data_quality"]), "notify") || strings.Contains(fmt.Sprint(doc), "secretpath") {
		t.Errorf("data_quality does not report the failed delivery, or shows the secret: %v", doc["data_quality"])
	}
	if _, err := os.Stat(state2); !os.IsNotExist(err) {
		t.Errorf("the state was saved although nothing was delivered: %v", err)
	}
	code, stdout = runScanCLI(t, "--bundle", b, "--now", at(3, 21), "--out", out, "--webhook", webhook, "--state", state2)
	if msgs := hook.take(); code != exitIncomplete || len(msgs) != 1 || !strings.Contains(msgs[0], "NEW warning crawler_burst") {
		t.Errorf("after the outage: exit %d, messages %q; want the crawler announced\n%s", code, msgs, stdout)
	}
}

func TestScanUsageErrors(t *testing.T) {
	dir := t.TempDir()
	b := filepath.Join(dir, "bundle")
	if err := bundle.WriteManifest(b, &bundle.Manifest{Window: bundle.Window{From: scanDay, To: scanDay.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no evidence", nil, "nothing to scan"},
		{"both sources", []string{"--bundle", b, "--config", "x.yaml"}, "not both"},
		{"missing config", []string{"--config", filepath.Join(dir, "x.yaml")}, "x.yaml"},
		{"window too long", []string{"--bundle", b, "--since", "25h"}, "at most 24h"},
		{"baseline in bad units", []string{"--bundle", b, "--baseline", "a week"}, "days"},
		{"baseline too short", []string{"--bundle", b, "--baseline", "12h"}, "at least one day"},
		{"now not RFC 3339", []string{"--bundle", b, "--now", "yesterday"}, "--now"},
		{"missing bundle", []string{"--bundle", filepath.Join(dir, "nope")}, "no such file"},
		{"unknown zone", []string{"--bundle", b, "--tz", "Mars/Olympus"}, "--tz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := runScanCLI(t, append(tt.args, "--out", filepath.Join(dir, "out"))...)
			if code != exitUsage || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, output %q; want %d and a message about %q", code, out, exitUsage, tt.want)
			}
		})
	}
}

// TestDeployExamplesUseRealFlags: the scheduling examples of the README
// (report/testdata/deploy) only pass flags that scan has.
func TestDeployExamplesUseRealFlags(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "report", "testdata", "deploy", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no deploy examples: %v", err)
	}
	re := regexp.MustCompile(`/usr/local/bin/aftermath scan ([^;'>]*)`)
	seen := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// YAML folds the CronJob's script onto one line; join lines likewise.
		// A command substitution is one word of the path it builds.
		text := strings.Join(strings.Fields(string(data)), " ")
		text = regexp.MustCompile(`\$\$?\([^)]*\)`).ReplaceAllString(text, "DATE")
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			seen++
			var args []string
			for _, a := range strings.Fields(m[1]) {
				args = append(args, strings.Trim(a, `"`))
			}
			cmd := newScanCmd()
			if err := cmd.ParseFlags(args); err != nil {
				t.Errorf("%s: %v (args %q)", filepath.Base(f), err, args)
			}
		}
	}
	if seen < 3 {
		t.Errorf("found %d scan command lines in the deploy examples, want one per example", seen)
	}
}

// serveScanBundle pushes the small bundle's access log into a fake Loki and
// writes a configuration reading it.
func serveScanBundle(t *testing.T, b string) (config string, lk *lokitest.Loki) {
	t.Helper()
	lk = lokitest.New(t)
	lk.PushFile(t, map[string]string{"job": "caddy"}, filepath.Join(b, bundle.AccessDir, "access.log.gz"), livetest.CaddyTime)
	config = filepath.Join(t.TempDir(), "aftermath.yaml")
	doc := fmt.Sprintf("timezone: Asia/Seoul\nsite:\n  workers: 16\n  health_uri: /healthz.php\n  logged_in_cookie: wikiUserID=\n  client_timeout_s: 10\nloki:\n  addr: %s\n  selector: '{job=\"caddy\"}'\n  retries: -1\n", lk.URL())
	if err := os.WriteFile(config, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return config, lk
}

// bundleScanRun is one `scan --bundle` of scanBundle with --since 1h and
// --baseline 3d.
type bundleScanRun struct {
	out    string // its --out directory
	code   int
	stdout string
}

var bundleScans sync.Map // --now -> *once[bundleScanRun]

// bundleScan scans scanBundle at now with --since 1h and --baseline 3d, once
// per test binary: the live scan tests compare against the same scans.
// Tests must not write into its directory.
func bundleScan(t *testing.T, now string) bundleScanRun {
	t.Helper()
	b := scanBundle(t)
	o, _ := bundleScans.LoadOrStore(now, &once[bundleScanRun]{})
	return o.(*once[bundleScanRun]).get(t, func() (bundleScanRun, error) {
		r := bundleScanRun{out: filepath.Join(fixtureDir, "scan", "offline-"+strings.ReplaceAll(now, ":", ""))}
		r.code, r.stdout = runScanCLI(t, "--bundle", b, "--now", now, "--since", "1h", "--baseline", "3d", "--out", r.out)
		return r, nil
	})
}

// TestScanLive runs the live scans of scanBundle against one fake Loki
// holding its access log: both subtests only read from it, and pushing the
// log was a tenth of each one's CPU.
func TestScanLive(t *testing.T) {
	t.Parallel()
	config, lk := serveScanBundle(t, scanBundle(t))
	t.Run("matches the bundle", func(t *testing.T) {
		t.Parallel()
		scanLiveMatchesBundle(t, config, lk)
	})
	t.Run("profile cache", func(t *testing.T) {
		t.Parallel()
		scanLiveProfileCache(t, config, lk)
	})
}

// scanLiveMatchesBundle: `scan --config` fetches the window with its
// lookback and each baseline slot from Loki, never the days between, and
// judges them as the scan of the whole recorded bundle does.
func scanLiveMatchesBundle(t *testing.T, config string, lk *lokitest.Loki) {
	dir := t.TempDir()
	kinds := func(doc map[string]any) []string {
		var out []string
		for _, a := range doc["anomalies"].([]any) {
			am := a.(map[string]any)
			out = append(out, fmt.Sprintf("%s %s %v", am["kind"], am["severity"], am["observed"]))
		}
		sort.Strings(out)
		return out
	}
	for _, tt := range []struct {
		name, now string
		wantCode  int
	}{
		{"a quiet evening", scanDay.AddDate(0, 0, 2).Add(21 * time.Hour).Format(time.RFC3339), exitOK},
		{"the crawler bursts", scanDay.AddDate(0, 0, 3).Add(23 * time.Hour).Format(time.RFC3339), exitIncomplete},
	} {
		t.Run(tt.name, func(t *testing.T) {
			live := filepath.Join(dir, "live-"+tt.name)
			bs := bundleScan(t, tt.now)
			offline, code, stdout := bs.out, bs.code, bs.stdout
			if code != tt.wantCode {
				t.Fatalf("bundle scan: exit %d, want %d\n%s", code, tt.wantCode, stdout)
			}
			code, stdout = runScanCLI(t, "--config", config, "--now", tt.now, "--since", "1h", "--baseline", "3d", "--out", live)
			if code != tt.wantCode {
				t.Fatalf("live scan: exit %d, want %d\n%s", code, tt.wantCode, stdout)
			}
			want, got := readScanJSON(t, offline), readScanJSON(t, live)
			if w, g := kinds(want), kinds(got); !reflect.DeepEqual(w, g) {
				t.Errorf("anomalies live %v, from the bundle %v", g, w)
			}
			if w, g := fmt.Sprint(want["baseline"]), fmt.Sprint(got["baseline"]); w != g {
				t.Errorf("baseline live %s\nfrom the bundle %s", g, w)
			}
			// The window with 3 h of lookback, and three 1 h slots: 7 h of
			// the 75 h the bundle holds.
			read := got["read"].(map[string]any)
			now, _ := time.Parse(time.RFC3339, tt.now)
			wantLines, wantBytes := 0, int64(0)
			for _, r := range [][2]time.Time{{now.Add(-4 * time.Hour), now}, {now.AddDate(0, 0, -1).Add(-time.Hour), now.AddDate(0, 0, -1)},
				{now.AddDate(0, 0, -2).Add(-time.Hour), now.AddDate(0, 0, -2)}, {now.AddDate(0, 0, -3).Add(-time.Hour), now.AddDate(0, 0, -3)}} {
				n, by := lk.Bytes(`{job="caddy"}`, r[0], r[1])
				wantLines += int(n)
				wantBytes += by
			}
			if int(read["access_lines"].(float64)) != wantLines {
				t.Errorf("the live scan read %v lines, want the window's, its lookback's and the slots' %d", read["access_lines"], wantLines)
			}
			t.Logf("%s: pulled %d lines, %d bytes (the bundle holds %v lines)", tt.name, wantLines, wantBytes, want["read"].(map[string]any)["access_lines"])
		})
	}
}

// scanLiveProfileCache: with --profiles, each scan keeps its window's
// profile; the scan at the same time the next day finds its slots there and
// fetches only its window and lookback, judging as the bundle scan does.
func scanLiveProfileCache(t *testing.T, config string, lk *lokitest.Loki) {
	dir := t.TempDir()
	profiles := filepath.Join(dir, "profiles")
	at := func(d int) string { return scanDay.AddDate(0, 0, d).Add(23 * time.Hour).Format(time.RFC3339) }
	linesOf := func(from, to time.Time) int {
		n, _ := lk.Bytes(`{job="caddy"}`, from, to)
		return int(n)
	}
	for _, st := range []struct {
		name string
		day  int
		// slotsFetched: the baseline slots pulled raw (not in the cache), in
		// days back.
		slotsFetched []int
		wantCode     int
	}{
		{"cold: every slot is fetched", 1, []int{1, 2, 3}, exitOK},
		{"a day later: the last scan's window and slot are cached, the day before the logs is fetched again", 2, []int{3}, exitOK},
		{"the crawler: every slot is cached", 3, nil, exitIncomplete},
	} {
		t.Run(st.name, func(t *testing.T) {
			out := filepath.Join(dir, "live", strconv.Itoa(st.day))
			code, stdout := runScanCLI(t, "--config", config, "--now", at(st.day), "--since", "1h", "--baseline", "3d",
				"--profiles", profiles, "--out", out)
			if code != st.wantCode {
				t.Fatalf("exit %d, want %d\n%s", code, st.wantCode, stdout)
			}
			now, _ := time.Parse(time.RFC3339, at(st.day))
			want := linesOf(now.Add(-4*time.Hour), now)
			for _, k := range st.slotsFetched {
				want += linesOf(now.AddDate(0, 0, -k).Add(-time.Hour), now.AddDate(0, 0, -k))
			}
			got := readScanJSON(t, out)
			if read := int(got["read"].(map[string]any)["access_lines"].(float64)); read != want {
				t.Errorf("read %d lines, want %d (the window with its lookback%s)", read, want, map[bool]string{true: " and the slots", false: " only"}[len(st.slotsFetched) > 0])
			}
			bs := bundleScan(t, at(st.day))
			if bs.code != st.wantCode {
				t.Fatalf("bundle scan: exit %d\n%s", bs.code, bs.stdout)
			}
			w := readScanJSON(t, bs.out)
			if a, b := fmt.Sprint(w["anomalies"]), fmt.Sprint(got["anomalies"]); a != b {
				t.Errorf("anomalies live %s\nfrom the bundle %s", b, a)
			}
			if a, b := fmt.Sprint(w["baseline"]), fmt.Sprint(got["baseline"]); a != b {
				t.Errorf("baseline live %s\nfrom the bundle %s", b, a)
			}
		})
	}
	entries, err := os.ReadDir(profiles)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d profiles cached", len(entries))
}
