package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulateThenAnalyze is the foundation's acceptance path: a simulated
// incident written as a bundle, analyzed into report.json.
func TestSimulateThenAnalyze(t *testing.T) {
	dir := t.TempDir()
	b := filepath.Join(dir, "bundle")
	out := filepath.Join(dir, "out")
	if code := run([]string{"simulate", "--scenario", "crawler-backlog", "--seed", "3", "--baseline-hours", "4", "--out", b}); code != exitOK {
		t.Fatalf("simulate exit %d", code)
	}
	code := run([]string{"analyze", "--bundle", b, "--out", out})
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
			if got := run(tt.args); got != tt.want {
				t.Errorf("exit %d, want %d", got, tt.want)
			}
		})
	}
}

// TestDemo runs the embedded sample incident end to end.
func TestDemo(t *testing.T) {
	out := t.TempDir()
	code := run([]string{"demo", "--out", out})
	if code != exitOK && code != exitIncomplete {
		t.Fatalf("demo exit %d", code)
	}
	md, err := os.ReadFile(filepath.Join(out, "postmortem.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "crawler") {
		t.Errorf("the demo's postmortem does not mention the crawler:\n%s", md[:min(len(md), 2000)])
	}
}
