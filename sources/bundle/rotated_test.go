package bundle

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestListAccessLogsRotations: logrotate's numbered and dated names and
// Caddy's own roll names are access logs, read oldest first with the live
// file last; other files are named as skipped, not dropped silently.
func TestListAccessLogsRotations(t *testing.T) {
	dir := t.TempDir()
	names := []string{
		"access.log", "access.log.1", "access.log.2.gz", "access.log.10.gz",
		"access.log-20261119", "access.log-20261118.gz",
		"access-2026-11-19T10-17-04.475.log.gz", "access-2026-11-18T09-00-00.000.log",
		"site.jsonl", "site.jsonl.1",
		"README.md", "access.log.swp", "core",
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logs, skipped, err := ListAccessLogs(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	base := func(ps []string) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = filepath.Base(p)
		}
		return out
	}
	want := []string{
		"access-2026-11-18T09-00-00.000.log", "access-2026-11-19T10-17-04.475.log.gz",
		"access.log.10.gz", "access.log.2.gz", "access.log.1",
		"access.log-20261118.gz", "access.log-20261119",
		"access.log",
		"site.jsonl.1", "site.jsonl",
	}
	if got := base(logs); !slices.Equal(got, want) {
		t.Errorf("logs\n got %v\nwant %v", got, want)
	}
	if got := base(skipped); !slices.Equal(got, []string{"README.md", "access.log.swp", "core"}) {
		t.Errorf("skipped %v", got)
	}
	notes := SkippedNotes(skipped)
	if len(notes) != 3 || notes[0].Severity != "info" || !strings.Contains(notes[0].Message, "README.md: not read") {
		t.Errorf("notes %+v", notes)
	}
}

// TestLogZone: zone-less log times are UTC unless --log-tz says otherwise or
// a Caddy configuration in changes/ sets time_local (then the bundle's
// timezone); a commented-out time_local changes nothing.
func TestLogZone(t *testing.T) {
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, ChangesDir, "config")
	os.MkdirAll(cfgDir, 0o755)
	cf := filepath.Join(cfgDir, "Caddyfile")
	os.WriteFile(cf, []byte("site {\n\tlog {\n\t\tformat console # time_local\n\t}\n}\n"), 0o644)
	if loc, _, _, err := LogZone(dir, "", "Asia/Seoul"); err != nil || loc != nil {
		t.Errorf("commented time_local: zone %v (%v), want UTC", loc, err)
	}
	os.WriteFile(cf, []byte("site {\n\tlog {\n\t\tformat console {\n\t\t\ttime_local\n\t\t}\n\t}\n}\n"), 0o644)
	if loc, why, _, err := LogZone(dir, "", "Asia/Seoul"); err != nil || loc == nil || loc.String() != "Asia/Seoul" || !strings.Contains(why, "sets time_local") {
		t.Errorf("time_local: zone %v, %q (%v), want Asia/Seoul", loc, why, err)
	}
	if loc, _, warn, _ := LogZone(dir, "", ""); loc != nil || !strings.Contains(warn, "--log-tz") {
		t.Errorf("time_local without a zone: %v, warning %q", loc, warn)
	}
	if loc, why, _, _ := LogZone(dir, "Asia/Tokyo", "Asia/Seoul"); loc == nil || loc.String() != "Asia/Tokyo" || why != "--log-tz" {
		t.Errorf("--log-tz: %v %q", loc, why)
	}
	if loc, _, _, _ := LogZone(t.TempDir(), "", "Asia/Seoul"); loc != nil {
		t.Errorf("no configuration: %v, want UTC: the display zone never moves evidence", loc)
	}
}
