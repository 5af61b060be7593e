package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReplaySafety: replay refuses to load a target off loopback unless the
// user says it is theirs, and refuses nonsense before reading anything.
func TestReplaySafety(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--bundle", "x", "--target", "http://staging.example.org"}, "not on loopback"},
		{[]string{"replay", "--bundle", "x", "--target", "http://10.0.0.8:8080"}, "not on loopback"},
		{[]string{"replay", "--bundle", "x", "--target", "http://127.0.0.1:8080", "--only", "readers"}, "--only"},
		{[]string{"replay", "--bundle", "x", "--target", "ftp://127.0.0.1"}, "--target"},
		{[]string{"replay", "--target", "http://127.0.0.1:8080"}, "--bundle"},
		{[]string{"replay", "--bundle", "x", "--target", "http://127.0.0.1:8080", "--speed", "0"}, "positive"},
	}
	for _, tc := range cases {
		root := newRootCmd()
		root.SetArgs(tc.args)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error about %s", tc.args, err, tc.want)
			continue
		}
		if ee, ok := err.(*exitError); !ok || ee.code != exitUsage {
			t.Errorf("%v: want a usage error (exit 2), got %v", tc.args, err)
		}
	}
	// --target-is-mine passes the safety check: the next complaint is the missing bundle.
	root := newRootCmd()
	root.SetArgs([]string{"replay", "--bundle", "/nonexistent", "--target", "http://10.0.0.8:8080", "--target-is-mine"})
	if err := root.Execute(); err == nil || strings.Contains(err.Error(), "loopback") {
		t.Errorf("with --target-is-mine: %v", err)
	}
}

// TestReplayEndToEnd runs the command on a simulated incident against a
// loopback server: it proposes the rule, writes it and the scaled one,
// sends each client from its own address and writes both reports.
func TestReplayEndToEnd(t *testing.T) {
	t.Parallel()
	// The reference incident (crawler-backlog, seed 1), simulated once for
	// the package (skipped in -short mode): replay only reads the bundle, and
	// simulate's own command is TestSimulateThenAnalyze's. Simulating it
	// again here, deflated at the best level, was a third of the test's CPU.
	b := referenceBundle(t)
	dir := t.TempDir()
	var mu sync.Mutex
	sources := map[string]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		sources[host]++
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	srv.Start()
	defer srv.Close()
	out := filepath.Join(dir, "replay")
	// The server answers at once; the client timeout and the lag bound are
	// wide so that a busy machine (a loaded CI host) neither makes answers
	// late, which would fail goodput == sent, nor the run invalid (exit 1).
	code := runQuiet(t, []string{"replay", "--bundle", b, "--target", srv.URL, "--from", "2026-10-02T17:20:00Z", "--to", "2026-10-02T17:21:00Z",
		"--speed", "20", "--client-timeout", "10s", "--max-lag", "10s", "--out", out})
	if code != exitOK {
		t.Fatalf("replay exited %d", code)
	}
	// Every window of the scaled rule is the proposed rule's divided by 20
	// (10m / 20 = 30s for the reference's zones).
	proposed, err := os.ReadFile(filepath.Join(out, rulesFile))
	if err != nil {
		t.Fatalf("the rule as proposed: %v", err)
	}
	scaled, err := os.ReadFile(filepath.Join(out, "rules-speed-20x.caddy"))
	if err != nil {
		t.Fatalf("the scaled rule: %v", err)
	}
	want, got := ruleWindows(t, proposed), ruleWindows(t, scaled)
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("the scaled rule has %d windows, the proposed %d:\n%s", len(got), len(want), scaled)
	}
	for i := range want {
		if got[i] != want[i]/20 {
			t.Errorf("scaled window %d is %s, want the proposed %s / 20", i+1, got[i], want[i])
		}
	}
	js, err := os.ReadFile(filepath.Join(out, "replay.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Schema  string `json:"schema"`
		Classes map[string]struct {
			Sent    int `json:"sent"`
			Goodput int `json:"goodput"`
		} `json:"classes"`
		Backtest struct {
			ScaledRuleFile string `json:"scaled_rule_file"`
		} `json:"backtest"`
	}
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	all := rep.Classes["all"]
	if rep.Schema != "aftermath.replay/v1" || all.Sent == 0 || all.Goodput != all.Sent || rep.Backtest.ScaledRuleFile == "" {
		t.Errorf("replay.json: %s", js)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sources) < all.Sent/2 {
		t.Errorf("%d requests came from %d addresses: each recorded client should have its own", all.Sent, len(sources))
	}
	md, err := os.ReadFile(filepath.Join(out, "replay.md"))
	if err != nil || !strings.Contains(string(md), "rules-speed-20x.caddy") {
		t.Errorf("replay.md must name the rule to run: %v", err)
	}
	page, err := os.ReadFile(filepath.Join(out, "replay.html"))
	if err != nil || !strings.Contains(string(page), "rules-speed-20x.caddy") || !strings.Contains(string(page), `id="chart-in-flight"`) {
		t.Errorf("replay.html must name the rule to run and chart the run: %v", err)
	}
}

// TestReplayReadmeSection: the README's replay section explains every safety
// flag, names only flags replay has, and its example command parses.
func TestReplayReadmeSection(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const heading = "## Replaying an incident at a staging stack\n"
	_, section, ok := strings.Cut(string(data), heading)
	if !ok {
		t.Fatalf("README.md has no %q section", strings.TrimSpace(heading))
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	cmd := newReplayCmd()
	named := regexp.MustCompile("--([a-z][a-z-]*)").FindAllStringSubmatch(section, -1)
	for _, m := range named {
		if cmd.Flags().Lookup(m[1]) == nil {
			t.Errorf("the README names --%s, which replay does not have", m[1])
		}
	}
	if len(named) < 10 {
		t.Errorf("the README's replay section names %d flags: is it the section?", len(named))
	}
	for _, flag := range []string{"--target-is-mine", "--max-requests", "--max-duration", "--max-lag", "--forwarded-header", "--speed", "--client-timeout"} {
		if !strings.Contains(section, "`"+flag+"`") {
			t.Errorf("the README's replay section does not explain %s", flag)
		}
	}
	for _, s := range []string{"Ctrl-C", "replay.html", "rules-speed-10x.caddy", "invalid"} {
		if !strings.Contains(section, s) {
			t.Errorf("the README's replay section does not mention %s", s)
		}
	}
	example := regexp.MustCompile(`(?s)aftermath replay (.*?)\n` + "```").FindStringSubmatch(section)
	if example == nil {
		t.Fatalf("no example command in the README's replay section")
	}
	args := strings.Fields(strings.ReplaceAll(example[1], "\\\n", " "))
	if err := newReplayCmd().ParseFlags(args); err != nil || len(args) < 6 {
		t.Errorf("the README's example %q does not parse: %v", args, err)
	}
}

// caddyWindow is a rate_limit zone's window line.
var caddyWindow = regexp.MustCompile(`(?m)^\s*window (\S+)$`)

// ruleWindows is the window of each zone of a rules file, in file order.
func ruleWindows(t *testing.T, caddyfile []byte) []time.Duration {
	t.Helper()
	var ws []time.Duration
	for _, m := range caddyWindow.FindAllSubmatch(caddyfile, -1) {
		d, err := time.ParseDuration(string(m[1]))
		if err != nil {
			t.Fatalf("window %q: %v", m[1], err)
		}
		ws = append(ws, d)
	}
	return ws
}
