package live

import (
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

// A record's severity comes from its Failed field, not from phrases in its
// free-text note.
func TestManifestNotesFailedField(t *testing.T) {
	from := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	m := bundle.Manifest{Queries: []bundle.Query{
		{Source: "loki", Query: `{job="caddy"}`, From: from, To: from.Add(time.Hour), Failed: true, Note: "the server went away"},
		{Source: "prometheus", Query: `up`, From: from, To: from.Add(time.Hour), Note: "server warnings: slow"},
	}}
	for _, q := range m.Queries {
		for _, p := range []string{"failed: ", "not fetched: ", "failed after"} {
			if strings.Contains(q.Note, p) {
				t.Fatalf("test note %q holds %q", q.Note, p)
			}
		}
	}
	notes := ManifestNotes(m)
	if len(notes) != 2 {
		t.Fatalf("notes: %v", notes)
	}
	if notes[0].Source != "loki" || notes[0].Severity != sources.SeverityError || !strings.Contains(notes[0].Message, "the server went away") {
		t.Errorf("failed record: %+v", notes[0])
	}
	if notes[1].Source != "prometheus" || notes[1].Severity != sources.SeverityWarning {
		t.Errorf("incomplete record: %+v", notes[1])
	}
}

// A record without a query (a source that could not start) is not named by
// its source a second time: notes are shown as "source: message".
func TestManifestNotesNoDoublePrefix(t *testing.T) {
	from := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	m := bundle.Manifest{Queries: []bundle.Query{{Source: "loki", From: from, To: from.Add(time.Hour), Failed: true, Note: "failed: no address"}}}
	notes := ManifestNotes(m)
	if len(notes) != 1 || strings.HasPrefix(notes[0].Message, "loki") || !strings.Contains(notes[0].Message, "no address") {
		t.Errorf("notes %v", notes)
	}
	cfg := &Config{Loki: &Loki{Addr: "ftp://nowhere", Selector: `{job="caddy"}`}}
	_, fnotes, err := Fetch(t.Context(), cfg, from, from.Add(time.Hour), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range fnotes {
		if n.Source == "loki" && strings.Contains(n.Message, "loki: ") {
			t.Errorf("note repeats its source: %s: %s", n.Source, n.Message)
		}
	}
}
