// Package changes reads and writes changes.yaml, the explicit log of
// configuration changes and deploys that a team keeps (or a bundle carries).
// It also finds changes by itself: FromGit walks a configuration repository's
// history and diffs each known file format setting by setting (php-fpm pools,
// php.ini, Caddyfiles through Caddy's own parser, Dockerfiles, env files,
// Terraform variables); FromMetrics infers changes from php-fpm's metrics (a
// backlog or pool-size step, a restart); Merge joins the records of one change
// from several sources into one change with all of them as evidence.
package changes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/aftermath-forensics/aftermath/sources"
)

// Lookback is how far before the window configuration changes are reviewed
// (issue #4: a backlog raised the evening before is the classic case): the
// history read from git and the metric steps looked for both reach this far.
const Lookback = 72 * time.Hour

// FileName is the conventional name of the change log inside a bundle's changes/.
const FileName = "changes.yaml"

// document is the on-disk shape: a top-level list under "changes" so the file can
// grow other sections without breaking readers.
type document struct {
	Changes []sources.Change `yaml:"changes"`
}

// Read parses a changes.yaml file. Every entry needs a time; entries are returned
// sorted by time. Errors name the file and, for YAML errors, the line.
func Read(path string) ([]sources.Change, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("changes: %w", err)
	}
	defer f.Close()
	return Decode(path, f)
}

// ReadIn is Read for a file written by hand: a time without a zone
// ("2026-10-02 23:48") is in loc (the bundle's time zone, or --tz), and
// errors name the file, the line and the key in the user's words. Keys it
// does not know are warnings (returned), not errors.
func ReadIn(path string, loc *time.Location) ([]sources.Change, []sources.QualityNote, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("changes: %w", err)
	}
	var doc document
	warnings, err := sources.DecodeYAML(path, data, &doc, loc)
	if err != nil {
		return nil, warnings, err
	}
	cs, err := finish(path, doc)
	return cs, warnings, err
}

// Decode parses a changes.yaml document from r; name is used in errors.
func Decode(name string, r io.Reader) ([]sources.Change, error) {
	var doc document
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("changes %s: %w", name, err)
	}
	return finish(name, doc)
}

// finish checks and sorts a decoded document.
func finish(name string, doc document) ([]sources.Change, error) {
	for i, c := range doc.Changes {
		if c.Time.IsZero() {
			return nil, fmt.Errorf("changes %s: entry %d (%s %s): no time", name, i+1, c.File, c.Key)
		}
		if doc.Changes[i].Source == "" {
			doc.Changes[i].Source = "changes.yaml"
		}
	}
	sort.SliceStable(doc.Changes, func(i, j int) bool { return doc.Changes[i].Time.Before(doc.Changes[j].Time) })
	return doc.Changes, nil
}

// Write stores changes as a changes.yaml file.
func Write(path string, cs []sources.Change) error {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(document{Changes: cs}); err != nil {
		return fmt.Errorf("changes %s: %w", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("changes: %w", err)
	}
	return nil
}
