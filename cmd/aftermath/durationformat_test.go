package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/live/livetest"
)

// TestDurationFormatFlag: --duration-format overrides the detection in
// analyze, rules and scan, and data_quality says which was used. The log is
// one the detection misreads: Caddy's duration_format ms during a slowdown
// where no answer took under a second, which reads as nanoseconds.
func TestDurationFormatFlag(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	var b strings.Builder
	start := time.Date(2026, 10, 2, 14, 0, 0, 0, time.UTC)
	ms := regexp.MustCompile(`"duration":[0-9.e-]+`)
	i := 0
	for ts := start; ts.Before(start.Add(time.Hour)); ts = ts.Add(3 * time.Second) {
		line := livetest.CaddyLine(ts, fmt.Sprintf("198.51.100.%d", i%200), "Mozilla/5.0 Firefox/131.0", "en-US", "/wiki/Main_Page", 200, 0, 12000)
		b.WriteString(ms.ReplaceAllString(line, fmt.Sprintf(`"duration":%d`, 1200+(i*37)%4000)))
		b.WriteByte('\n')
		i++
	}
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		// in report.json's data_quality (analyze), or in the error (exit 2)
		want string
	}{
		{name: "detected", args: []string{"analyze", "--access", log, "--format", "md,json"}, code: exitIncomplete,
			want: "read as nanoseconds, Caddy's duration_format ns"},
		{name: "given", args: []string{"analyze", "--access", log, "--format", "md,json", "--duration-format", "ms"}, code: exitIncomplete,
			want: "whole-number durations read as milliseconds, the duration format given (ms), not detected"},
		{name: "auto", args: []string{"analyze", "--access", log, "--format", "md,json", "--duration-format", "auto"}, code: exitIncomplete,
			want: "read as nanoseconds"},
		{name: "a format Caddy has not", args: []string{"analyze", "--access", log, "--duration-format", "minutes"}, code: exitUsage,
			want: `duration format "minutes": want s, ms, ns or string`},
		{name: "string refuses numbers", args: []string{"analyze", "--access", log, "--duration-format", "string"}, code: exitUsage,
			want: "durations are numbers, though the duration format given is string"},
		{name: "rules", args: []string{"rules", "--access", log, "--from", "2026-10-02T14:00:00Z", "--to", "2026-10-02T15:00:00Z", "--duration-format", "nanos"}, code: exitOK},
		{name: "rules refuses a bad format", args: []string{"rules", "--access", log, "--duration-format", "hours"}, code: exitUsage,
			want: `duration format "hours"`},
		{name: "scan refuses a bad format", args: []string{"scan", "--duration-format", "hours"}, code: exitUsage,
			want: `duration format "hours"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			args := tt.args
			switch args[0] {
			case "analyze":
				args = append(args, "--out", out)
			case "rules":
				args = append(args, "--out", filepath.Join(out, "rules.caddy"))
			}
			code, msg := runCLI(args, nil)
			if code != tt.code && !(tt.code == exitOK && code == exitIncomplete) {
				t.Fatalf("exit %d (%s), want %d", code, msg, tt.code)
			}
			if code == exitUsage {
				if !strings.Contains(msg, tt.want) {
					t.Errorf("message %q, want it to say %q", msg, tt.want)
				}
				return
			}
			if tt.want == "" {
				return
			}
			r, _ := readReport(t, out)
			found := false
			for _, n := range r.DataQuality {
				found = found || strings.Contains(n.Message, tt.want)
			}
			if !found {
				t.Errorf("data_quality does not say %q: %+v", tt.want, r.DataQuality)
			}
		})
	}
}
