package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/live/livetest"
)

// zonelessBundle writes a bundle as people write one by hand: bundle.yaml's
// window and changes.yaml's entry without a zone, timezone: given or not
// (zone ""), and two hours of Caddy lines ending at 2026-10-02 16:00 UTC
// (01:00 on the 3rd in Seoul).
func zonelessBundle(t *testing.T, zone string) string {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"access", "changes"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	manifest := "window:\n  from: 2026-10-03 00:30\n  to: 2026-10-03T01:00:00\nsite:\n  workers: 8\n"
	if zone != "" {
		manifest = "timezone: " + zone + "\n" + manifest
	}
	var log strings.Builder
	start := time.Date(2026, 10, 2, 14, 0, 0, 0, time.UTC)
	for ts := start; ts.Before(start.Add(2 * time.Hour)); ts = ts.Add(2 * time.Second) {
		log.WriteString(livetest.CaddyLine(ts, fmt.Sprintf("198.51.100.%d", ts.Second()), "Mozilla/5.0 Firefox/131.0", "en-US", "/wiki/Main_Page", 200, 0.08, 12000))
		log.WriteByte('\n')
	}
	changes := "changes:\n  - time: 2026-10-02 23:48\n    key: pm.max_children\n    old: \"16\"\n    new: \"8\"\n"
	for name, text := range map[string]string{"bundle.yaml": manifest, "access/access.log": log.String(), "changes/changes.yaml": changes} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestZonelessTimes: a time written without a zone, in bundle.yaml's window,
// in changes.yaml or in --from/--to, is in the bundle's timezone or --tz; with
// neither, it is a usage error that says to give one. The times are chosen
// so that reading them as UTC would put the window nine hours off (and
// outside the logs).
func TestZonelessTimes(t *testing.T) {
	t.Parallel()
	seoulFrom := time.Date(2026, 10, 2, 15, 30, 0, 0, time.UTC) // 00:30 in Seoul
	seoulChange := time.Date(2026, 10, 2, 14, 48, 0, 0, time.UTC)
	tests := []struct {
		name       string
		bundleZone string
		args       []string
		code       int       // no metrics: 1 at best
		msg        string    // in the error, for exit 2
		from       time.Time // window.from, zero: not checked
		change     time.Time // the changes.yaml entry's time, zero: not checked
	}{
		{name: "bundle.yaml and changes.yaml in the bundle's timezone", bundleZone: "Asia/Seoul",
			code: exitIncomplete, from: seoulFrom, change: seoulChange},
		{name: "bundle.yaml and changes.yaml in --tz when the bundle names none", args: []string{"--tz", "Asia/Seoul"},
			code: exitIncomplete, from: seoulFrom, change: seoulChange},
		{name: "the bundle's own timezone wins over --tz for bundle.yaml", bundleZone: "Asia/Seoul", args: []string{"--tz", "Asia/Tokyo"},
			code: exitIncomplete, from: seoulFrom},
		{name: "no zone anywhere", code: exitUsage, msg: `bundle.yaml:2: window.from: "2026-10-03 00:30" has no time zone`},
		{name: "--from/--to in the bundle's timezone", bundleZone: "Asia/Seoul", args: []string{"--from", "2026-10-03 00:40", "--to", "2026-10-03 00:55"},
			code: exitIncomplete, from: seoulFrom.Add(10 * time.Minute)},
		{name: "--from/--to in --tz", args: []string{"--tz", "Asia/Seoul", "--from", "2026-10-03T00:40:00", "--to", "2026-10-03T00:55:00"},
			code: exitIncomplete, from: seoulFrom.Add(10 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := zonelessBundle(t, tt.bundleZone)
			out := t.TempDir()
			args := append([]string{"analyze", "--bundle", b, "--out", out, "--format", "json"}, tt.args...)
			code, msg := runCLI(args, nil)
			if code != tt.code {
				t.Fatalf("exit %d (%s), want %d", code, msg, tt.code)
			}
			if tt.code == exitUsage {
				if !strings.Contains(msg, tt.msg) {
					t.Errorf("message %q, want it to say %q", msg, tt.msg)
				}
				return
			}
			data, err := os.ReadFile(filepath.Join(out, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Window struct {
					From time.Time `json:"from"`
				} `json:"window"`
				Changes []struct {
					Time time.Time `json:"time"`
				} `json:"changes"`
			}
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatal(err)
			}
			if !tt.from.IsZero() && !r.Window.From.Equal(tt.from) {
				t.Errorf("window.from %s, want %s", r.Window.From.UTC(), tt.from)
			}
			if !tt.change.IsZero() && (len(r.Changes) != 1 || !r.Changes[0].Time.Equal(tt.change)) {
				t.Errorf("changes %+v, want one at %s", r.Changes, tt.change)
			}
		})
	}

	// rules reads --from/--to like analyze.
	b := zonelessBundle(t, "")
	access := filepath.Join(b, "access", "access.log")
	code, msg := runCLI([]string{"rules", "--access", access, "--from", "2026-10-03 00:30", "--to", "2026-10-03 01:00", "--tz", "Asia/Seoul", "--out", filepath.Join(t.TempDir(), "rules.caddy")}, nil)
	if code == exitUsage {
		t.Errorf("rules with zone-less --from and --tz: exit 2 (%s)", msg)
	}
	code, msg = runCLI([]string{"rules", "--access", access, "--from", "2026-10-03 00:30", "--to", "2026-10-03 01:00", "--out", filepath.Join(t.TempDir(), "rules.caddy")}, nil)
	if code != exitUsage || !strings.Contains(msg, "has no time zone") {
		t.Errorf("rules with zone-less --from and no zone: exit %d (%s), want 2 saying so", code, msg)
	}
}
