package bundle

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/aftermath-forensics/aftermath/sources"
)

// Sub-directories of a bundle.
const (
	AccessDir  = "access"
	MetricsDir = "metrics"
	ChangesDir = "changes"
	LogsDir    = "logs"
)

// Bundle is an opened evidence directory: its manifest and the files found in it.
// Paths are absolute or relative to the working directory, ready to open.
type Bundle struct {
	Dir      string
	Manifest Manifest
	// Access lists Caddy access logs (*.log, *.jsonl, *.json, their
	// rotations, optionally .gz), oldest first (see ListAccessLogs).
	Access []string
	// AccessSkipped lists the other files of access/, not read (each is
	// named in Warnings).
	AccessSkipped []string
	// Metrics lists OpenMetrics files (*.om, *.prom, *.txt, optionally .gz).
	Metrics []string
	// ChangeLogs lists changes.yaml files.
	ChangeLogs []string
	// ConfigRepos lists git repositories of configuration (directories with .git).
	ConfigRepos []string
	// ConfigArchives lists tar archives under changes/ (*.tar, *.tar.gz, *.tgz)
	// holding configuration repositories; UnpackConfigArchives extracts them.
	ConfigArchives []string
	// Logs lists other logs (Caddy's own log, php-fpm's log).
	Logs []string
	// MinuteStatus is MinuteStatusFile when the bundle has one (a pushed-down
	// fetch): per-minute counts of the minutes whose lines are not in Access.
	MinuteStatus string
	// Warnings are what reading bundle.yaml left out (unknown keys), for
	// data_quality.
	Warnings []sources.QualityNote
}

// Open reads dir/bundle.yaml and lists the evidence files. A missing bundle.yaml
// is an error: without a window nothing can be analyzed reproducibly.
func Open(dir string) (*Bundle, error) { return OpenIn(dir, nil) }

// OpenIn is Open where a time written without a zone in a bundle.yaml that
// names no timezone of its own is in loc (--tz); nil leaves such a time an
// error that says to give one. A bundle's own timezone always wins: its
// times were written in it.
func OpenIn(dir string, loc *time.Location) (*Bundle, error) {
	m, warnings, err := readManifest(filepath.Join(dir, ManifestFile), loc)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Dir: dir, Manifest: *m, Warnings: warnings}
	if b.Access, b.AccessSkipped, err = ListAccessLogs(dir, AccessDir); err != nil {
		return nil, err
	}
	b.Warnings = append(b.Warnings, SkippedNotes(b.AccessSkipped)...)
	if b.Metrics, err = list(dir, MetricsDir, ".om", ".prom", ".txt"); err != nil {
		return nil, err
	}
	if b.ChangeLogs, err = list(dir, ChangesDir, ".yaml", ".yml"); err != nil {
		return nil, err
	}
	if b.ConfigArchives, err = list(dir, ChangesDir, ".tar", ".tgz"); err != nil {
		return nil, err
	}
	if b.Logs, err = list(dir, LogsDir, ".log"); err != nil {
		return nil, err
	}
	if p := filepath.Join(dir, MinuteStatusFile); isRegular(p) {
		b.MinuteStatus = p
	}
	entries, err := os.ReadDir(filepath.Join(dir, ChangesDir))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, ChangesDir, e.Name())
		if e.IsDir() && isGitRepo(p) {
			b.ConfigRepos = append(b.ConfigRepos, p)
		}
	}
	if r := m.ConfigRepo; r != "" {
		if !filepath.IsAbs(r) {
			r = filepath.Join(dir, r)
		}
		b.ConfigRepos = append(b.ConfigRepos, r)
	}
	return b, nil
}

// AccessLogs lists the access logs in dir as a bundle's access/ is listed
// (ListAccessLogs), and the files it does not read.
func AccessLogs(dir string) (logs, skipped []string, err error) {
	return ListAccessLogs(dir, "")
}

// SkippedNotes says, for each file of an access-log directory that is not
// read, that it was not and why: nothing given is left out silently.
func SkippedNotes(skipped []string) []sources.QualityNote {
	var out []sources.QualityNote
	for _, p := range skipped {
		out = append(out, sources.QualityNote{Source: "access", Severity: sources.SeverityInfo, Message: fmt.Sprintf(
			"%s: not read: its name is not an access log's (*.log, *.jsonl or *.json, a rotation of one such as .1, .2.gz or -20261119.gz, optionally .gz); give it with --access to read it", p)})
	}
	return out
}

func isRegular(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func isGitRepo(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ".git"))
	return err == nil
}

// list returns the regular files in dir/sub whose name ends in one of exts,
// optionally followed by ".gz", sorted by name. A missing sub-directory is empty.
func list(dir, sub string, exts ...string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, sub))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ".gz")
		for _, ext := range exts {
			if strings.HasSuffix(name, ext) {
				out = append(out, filepath.Join(dir, sub, e.Name()))
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// ReadManifest parses a bundle.yaml (see readManifest), dropping its warnings.
func ReadManifest(path string) (*Manifest, error) {
	m, _, err := readManifest(path, nil)
	return m, err
}

// readManifest parses a bundle.yaml written by fetch, simulate or by hand.
// Keys it does not know are warnings (with "did you mean" for a near miss),
// not errors: people write notes there. Times without a zone are in the
// manifest's timezone, else in fallback (--tz). Errors name the file, the line and the key.
func readManifest(path string, fallback *time.Location) (*Manifest, []sources.QualityNote, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil, fmt.Errorf("%s: no such file: a bundle is a directory with a bundle.yaml that gives at least the window (window: from: ..., to: ...)", path)
		}
		return nil, nil, fmt.Errorf("bundle: %w", err)
	}
	var zone struct {
		Timezone string `yaml:"timezone"`
	}
	_ = yaml.Unmarshal(data, &zone) // errors are reported by the decode below
	loc := fallback
	if zone.Timezone != "" {
		if loc, err = time.LoadLocation(zone.Timezone); err != nil {
			return nil, nil, fmt.Errorf("%s: timezone %q is not a time zone name (write e.g. Asia/Seoul, Europe/Berlin or UTC)", path, zone.Timezone)
		}
	}
	var m Manifest
	warnings, err := sources.DecodeYAML(path, data, &m, loc)
	if err != nil {
		return nil, warnings, err
	}
	if m.Window.From.IsZero() || m.Window.To.IsZero() {
		return nil, warnings, fmt.Errorf("%s: window.from and window.to are required (window: {from: 2026-10-03T02:00:00+09:00, to: 2026-10-03T04:00:00+09:00})", path)
	}
	if !m.Window.To.After(m.Window.From) {
		return nil, warnings, fmt.Errorf("%s: window.to (%s) is not after window.from (%s)", path,
			m.Window.To.Format(time.RFC3339), m.Window.From.Format(time.RFC3339))
	}
	return &m, warnings, nil
}

// WriteManifest writes m as dir/bundle.yaml, creating dir and its sub-directories.
func WriteManifest(dir string, m *Manifest) error {
	for _, sub := range []string{"", AccessDir, MetricsDir, ChangesDir, LogsDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("bundle: %w", err)
		}
	}
	var buf bytes.Buffer
	buf.WriteString("# Evidence bundle for aftermath: the window, the time zone, the site's facts and the queries that filled access/, metrics/, changes/ and logs/.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("bundle %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	return nil
}
