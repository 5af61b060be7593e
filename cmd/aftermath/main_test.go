package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// TestSimulateThenAnalyze is the foundation's acceptance path: a simulated
// incident written as a bundle, analyzed into report.json. One hour of
// baseline is enough for the findings it asks for (the CLI's simulate
// deflates at the best level: each hour costs).
func TestSimulateThenAnalyze(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := filepath.Join(dir, "bundle")
	out := filepath.Join(dir, "out")
	if code := runQuiet(t, []string{"simulate", "--scenario", "crawler-backlog", "--seed", "3", "--baseline-hours", "1", "--out", b}); code != exitOK {
		t.Fatalf("simulate exit %d", code)
	}
	code := runQuiet(t, []string{"analyze", "--bundle", b, "--out", out})
	if code != exitOK && code != exitIncomplete {
		t.Fatalf("analyze exit %d", code)
	}
	var rep map[string]any
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep["schema"] != "aftermath.report/v1" {
		t.Errorf("schema = %v", rep["schema"])
	}
	if g, _ := rep["generator"].(map[string]any); g["name"] != "aftermath" || g["version"] == "" || g["go_version"] == "" {
		t.Errorf("generator = %v, want aftermath's name, version and Go version", rep["generator"])
	}
	if _, ok := rep["data_quality"].([]any); !ok {
		t.Errorf("data_quality missing or not a list: %v", rep["data_quality"])
	}
	kinds := map[string]bool{}
	for _, f := range rep["findings"].([]any) {
		kinds[f.(map[string]any)["kind"].(string)] = true
	}
	for _, k := range []string{"crawler_burst", "worker_saturation", "healthcheck_starved", "upstream_errors"} {
		if !kinds[k] {
			t.Errorf("no %s finding in %v", k, kinds)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "postmortem.md")); err != nil {
		t.Error(err)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no input", []string{"analyze"}, exitUsage},
		{"files without a window", []string{"analyze", "--access", "x.log"}, exitUsage},
		{"missing bundle", []string{"analyze", "--bundle", "/nonexistent/bundle"}, exitUsage},
		{"unknown scenario", []string{"simulate", "--scenario", "nope", "--out", "x"}, exitUsage},
		{"unknown flag", []string{"analyze", "--nope"}, exitUsage},
		{"version", []string{"version"}, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runQuiet(t, tt.args); got != tt.want {
				t.Errorf("exit %d, want %d", got, tt.want)
			}
		})
	}
}

// TestDemo runs the sample incident end to end and checks the postmortem's
// sections and its headline numbers against a count made here, independently
// of aftermath's reader, from the same simulated bundle (seeded: the demo's
// run and this one write the same bytes).
func TestDemo(t *testing.T) {
	t.Parallel()
	out := demoOut(t)
	mdBytes, err := os.ReadFile(filepath.Join(out, "postmortem.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(mdBytes)
	for _, section := range []string{"## Summary", "## Impact", "## Timeline", "## Cause", "## What to fix", "## What remains", "## Where the numbers come from"} {
		if !strings.Contains(md, section) {
			t.Errorf("postmortem.md lacks %q (a section of the reference postmortem)", section)
		}
	}
	for _, f := range []string{"report.html", "report.json", "rules.caddy"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}

	b, err := bundle.Open(sampleDir(t))
	if err != nil {
		t.Fatal(err)
	}
	counts := countStatuses(t, b.Access[0], b.Manifest.Window.From, b.Manifest.Window.To)
	for _, status := range []int{502, 503, 504} {
		if counts[status] == 0 {
			continue
		}
		want := fmt.Sprintf("| %d | %s |", status, detect.FormatInt(int64(counts[status])))
		if !strings.Contains(md, want) {
			t.Errorf("postmortem.md lacks the row %q counted from the bundle", want)
		}
	}
	if counts[503] == 0 {
		t.Errorf("the sample incident has no 503: %v", counts)
	}
}

// countStatuses counts access-log lines by status in [from, to) with
// encoding/json, not with aftermath's own reader. Lines are decoded whole
// only in the window: the sample's 24 h of baseline are told apart by their
// ts alone.
func countStatuses(t *testing.T, path string, from, to time.Time) map[int]int {
	t.Helper()
	counts := map[int]int{}
	sc := bufio.NewScanner(testenv.OpenGzip(t, path))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	in := func(ts float64) bool {
		at := time.Unix(0, int64(ts*1e9))
		return !at.Before(from) && at.Before(to)
	}
	for n := 1; sc.Scan(); n++ {
		ts, err := lineTS(sc.Bytes())
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		if !in(ts) {
			continue
		}
		var l struct {
			TS     float64 `json:"ts"`
			Status int     `json:"status"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		if in(l.TS) {
			counts[l.Status]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return counts
}

// TestIncompleteNamesDataQualityFile: the exit-1 message of analyze names the
// report whose data_quality says what is missing: report.json when it was
// written, else the last report written, never rules.caddy.
func TestIncompleteNamesDataQualityFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := filepath.Join(dir, "bundle")
	writeHostileBundle(t, b) // no metrics: the evidence is incomplete
	for _, tt := range []struct{ format, want string }{
		{"md,json,html", "report.json"},
		{"html,md", "postmortem.md"},
	} {
		out := filepath.Join(dir, "out-"+strings.ReplaceAll(tt.format, ",", "-"))
		cmd := newAnalyzeCmd()
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		cmd.SetArgs([]string{"--bundle", b, "--out", out, "--format", tt.format})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if code := exitCode(err); code != exitIncomplete {
			t.Fatalf("--format %s: exit %d (%v), want %d", tt.format, code, err, exitIncomplete)
		}
		if want := "see data_quality in " + filepath.Join(out, tt.want); !strings.Contains(err.Error(), want) {
			t.Errorf("--format %s: %q does not say %q", tt.format, err, want)
		}
	}
}

// TestRulesPartialLiveBundle: a bundle whose manifest says a live query
// failed makes rules exit 1 and print the note, as analyze does.
func TestRulesPartialLiveBundle(t *testing.T) {
	t.Parallel()
	// A copy of the shared small crawl's bundle: this test edits its manifest.
	b := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(b, os.DirFS(smallCrawlBundle(t))); err != nil {
		t.Fatal(err)
	}
	rulesOn := func() (int, string) {
		var out bytes.Buffer
		cmd := newRulesCmd()
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		cmd.SetArgs([]string{"--bundle", b})
		cmd.SetOut(io.Discard) // the rules file; the notes go to stderr
		cmd.SetErr(&out)
		return exitCode(cmd.Execute()), out.String()
	}
	// The bundle as copied is smallCrawlBundle's: rules on it is the run
	// the tests share.
	if run := smallCrawlRules(t); run.code != exitOK {
		t.Fatalf("rules on the complete bundle: exit %d, want %d, so this test proves nothing:\n%s", run.code, exitOK, run.stderr)
	}
	mpath := filepath.Join(b, bundle.ManifestFile)
	m, err := bundle.ReadManifest(mpath)
	if err != nil {
		t.Fatal(err)
	}
	m.Queries = append(m.Queries, bundle.Query{Source: "loki", Query: `{job="caddy"}`, From: m.Window.From, To: m.Window.To,
		File: "access/access.log.gz", Complete: false, Note: "failed: 2 sub-ranges"})
	if err := bundle.WriteManifest(b, m); err != nil {
		t.Fatal(err)
	}
	code, out := rulesOn()
	if code != exitIncomplete {
		t.Errorf("rules on a partial live bundle: exit %d, want %d", code, exitIncomplete)
	}
	if !strings.Contains(out, "error (loki): {job=\"caddy\"}") || !strings.Contains(out, "is incomplete") {
		t.Errorf("rules does not print the manifest's note:\n%s", out)
	}
}
