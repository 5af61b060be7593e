package bundle

import (
	"os"
	"path/filepath"
	"strings"
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

// Bundles written by hand: what people write is read or named, never a Go
// type name, and a time without a zone takes the bundle's.
func TestHandWrittenManifest(t *testing.T) {
	seoul, _ := time.LoadLocation("Asia/Seoul")
	tests := []struct {
		name string
		doc  string
		// from is the window's start read, when the manifest is valid.
		from time.Time
		// warnings must each appear in one warning; err in the error.
		warnings []string
		err      string
	}{
		{name: "notes and the site's host and application have places",
			doc:  "note: copied from web-3 by hand\nwindow: {from: 2026-10-02T23:00:00Z, to: 2026-10-03T01:00:00Z}\nsite: {host: wiki.example.org, application: MediaWiki 1.42, workers: 16}\n",
			from: time.Date(2026, 10, 2, 23, 0, 0, 0, time.UTC)},
		{name: "near misses are warnings with a suggestion",
			doc:      "window: {from: 2026-10-02T23:00:00Z, to: 2026-10-03T01:00:00Z}\nsite:\n  worker: 16\n  client_timeout: 10\n  colour: blue\n",
			from:     time.Date(2026, 10, 2, 23, 0, 0, 0, time.UTC),
			warnings: []string{`bundle.yaml:3: unknown key "worker" in site, ignored (did you mean "workers"?)`, `did you mean "client_timeout_s"?`, `unknown key "colour" in site, ignored`}},
		{name: "a time without a zone is in the bundle's timezone",
			doc:  "timezone: Asia/Seoul\nwindow:\n  from: 2026-10-02 23:48\n  to: 2026-10-03T01:00:00\n",
			from: time.Date(2026, 10, 2, 23, 48, 0, 0, seoul)},
		{name: "a time without a zone and no timezone says what to add",
			doc: "window:\n  from: 2026-10-02 23:48\n  to: 2026-10-03 01:00\n",
			err: `bundle.yaml:2: window.from: "2026-10-02 23:48" has no time zone: add one`},
		{name: "a number in words names the key and line, not a Go type",
			doc: "window: {from: 2026-10-02T23:00:00Z, to: 2026-10-03T01:00:00Z}\nsite:\n  workers: sixteen\n",
			err: `bundle.yaml:3: site.workers: "sixteen" is not a whole number`},
		{name: "a zone that does not exist",
			doc: "timezone: Asia/Sesoul\nwindow: {from: 2026-10-02T23:00:00Z, to: 2026-10-03T01:00:00Z}\n",
			err: `timezone "Asia/Sesoul" is not a time zone name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(tt.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := Open(dir)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to say %q", err, tt.err)
				}
				if strings.Contains(err.Error(), "bundle.Manifest") || strings.Contains(err.Error(), "sources.Site") || strings.Contains(err.Error(), "design.md") {
					t.Errorf("err names Go types or a document users lack: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !b.Manifest.Window.From.Equal(tt.from) {
				t.Errorf("window.from = %s, want %s", b.Manifest.Window.From, tt.from)
			}
			if len(b.Warnings) != len(tt.warnings) {
				t.Errorf("warnings = %v, want %d", b.Warnings, len(tt.warnings))
			}
			for _, w := range tt.warnings {
				found := false
				for _, n := range b.Warnings {
					found = found || strings.Contains(n.Message, w)
				}
				if !found {
					t.Errorf("no warning says %q in %v", w, b.Warnings)
				}
			}
		})
	}
}
