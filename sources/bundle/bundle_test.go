package bundle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

func TestOpenLabRecording(t *testing.T) {
	dir := testenv.LabIncident(t, "")
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Access) != 1 || len(b.Metrics) != 1 || len(b.Logs) != 2 {
		t.Errorf("access %v metrics %v logs %v", b.Access, b.Metrics, b.Logs)
	}
	s := b.Manifest.Site
	if s.Workers != 4 || s.HealthURI != "/healthz.php" || s.HealthTimeoutS != 10 || s.LoggedInCookie != "wikiUserID=" || s.ClientTimeoutS != 10 {
		t.Errorf("site = %+v", s)
	}
	if b.Manifest.Timezone != "Asia/Seoul" || b.Manifest.Window.To.Sub(b.Manifest.Window.From) != 14*time.Minute {
		t.Errorf("manifest = %+v", b.Manifest)
	}
}

func TestManifestRoundTripAndErrors(t *testing.T) {
	dir := t.TempDir()
	from := time.Date(2026, 10, 2, 17, 0, 0, 0, time.UTC)
	m := &Manifest{Window: Window{From: from, To: from.Add(90 * time.Minute)}, Timezone: "Asia/Seoul",
		Site:    sources.Site{Workers: 16, Backlog: 4096, HealthURI: "/healthz.php", HealthTimeoutS: 10},
		Queries: []Query{{Source: "simulate", Query: "crawler-backlog", From: from, To: from.Add(time.Hour), File: "access/access.log.gz", Lines: 10, Complete: true}}}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, AccessDir, "access.log.gz"), []byte{}, 0o644)
	os.WriteFile(filepath.Join(dir, AccessDir, "notes.md"), []byte{}, 0o644)
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.Manifest.Site != m.Site || len(b.Manifest.Queries) != 1 || !b.Manifest.Window.From.Equal(from) {
		t.Errorf("round trip = %+v", b.Manifest)
	}
	if len(b.Access) != 1 {
		t.Errorf("access = %v, want only the .log.gz", b.Access)
	}

	tests := []struct{ name, doc, want string }{
		{"no window", "timezone: UTC\n", "window.from and window.to are required"},
		{"reversed", "window: {from: 2026-10-03T00:00:00Z, to: 2026-10-02T00:00:00Z}\n", "not after"},
		{"a number in words", "window: {from: 2026-10-02T00:00:00Z, to: 2026-10-03T00:00:00Z}\nsite: {workers: four}\n", `site.workers: "four" is not a whole number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := t.TempDir()
			os.WriteFile(filepath.Join(d, ManifestFile), []byte(tt.doc), 0o644)
			_, err := Open(d)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
