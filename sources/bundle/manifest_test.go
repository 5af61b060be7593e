package bundle

import (
	"path/filepath"
	"testing"
	"time"
)

func TestQueryHasFailed(t *testing.T) {
	tests := []struct {
		name string
		q    Query
		want bool
	}{
		{"failed field, plain note", Query{Failed: true, Note: "the server went away"}, true},
		{"incomplete, answered", Query{Note: "3 sub-ranges (1 incomplete), truncated"}, false},
		{"complete", Query{Complete: true, Note: "failed: ignored on a complete record"}, false},
		// Bundles written before the field said so only in the note.
		{"legacy failed", Query{Note: "x; failed: boom"}, true},
		{"legacy not fetched", Query{Note: "not fetched: context canceled"}, true},
		{"legacy failed after", Query{Note: "failed after 10 lines: EOF"}, true},
	}
	for _, tt := range tests {
		if got := tt.q.HasFailed(); got != tt.want {
			t.Errorf("%s: HasFailed() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestManifestKeepsFailed(t *testing.T) {
	dir := t.TempDir()
	from := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	m := &Manifest{Window: Window{From: from, To: from.Add(time.Hour)}, Queries: []Query{
		{Source: "loki", Query: `{job="caddy"}`, From: from, To: from.Add(time.Hour), Failed: true, Note: "server gone"},
		{Source: "loki", Query: `{job="php"}`, From: from, To: from.Add(time.Hour), Complete: true},
	}}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(filepath.Join(dir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Queries) != 2 || !got.Queries[0].Failed || got.Queries[1].Failed {
		t.Errorf("queries read back: %+v", got.Queries)
	}
}
