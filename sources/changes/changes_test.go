package changes

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    int
		wantErr string
	}{
		{"sorted by time", `changes:
  - time: 2026-10-03T07:07:00+09:00
    ref: deploy-42
    file: www.conf
    key: listen.backlog
    old: "4096"
    new: "64"
  - time: 2026-10-02T23:48:00+09:00
    source: git
    ref: 9d78ccb
    key: listen.backlog
    old: "511"
    new: "4096"
    note: Bump PHP to 8.3
`, 2, ""},
		{"empty file", "", 0, ""},
		{"missing time", "changes:\n  - key: pm.max_children\n", 0, "entry 1"},
		{"unknown field", "changes:\n  - time: 2026-10-02T23:48:00Z\n    kye: x\n", 0, "line 3"},
		{"not yaml", "changes: [", 0, "changes.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode("changes.yaml", strings.NewReader(tt.doc))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Fatalf("got %d changes, want %d", len(got), tt.want)
			}
			for i := 1; i < len(got); i++ {
				if got[i].Time.Before(got[i-1].Time) {
					t.Errorf("changes not sorted: %v before %v", got[i-1].Time, got[i].Time)
				}
			}
			if len(got) == 2 && (got[0].Source != "git" || got[1].Source != "changes.yaml") {
				t.Errorf("sources = %q, %q; want the given one kept and the default filled", got[0].Source, got[1].Source)
			}
		})
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	in := []sources.Change{{Time: time.Date(2026, 10, 2, 14, 48, 0, 0, time.UTC), Source: "git", Ref: "abc", File: "php/www.conf",
		Key: "listen.backlog", Old: "511", New: "4096", Note: "Bump PHP to 8.3", Author: "ops"}}
	path := filepath.Join(t.TempDir(), FileName)
	if err := Write(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0] != in[0] {
		t.Fatalf("round trip = %+v, want %+v", out, in)
	}
}
