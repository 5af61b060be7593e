package bundle

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
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
	// Access lists Caddy access logs (*.log, *.jsonl, *.json, optionally .gz).
	Access []string
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
}

// Open reads dir/bundle.yaml and lists the evidence files. A missing bundle.yaml
// is an error: without a window nothing can be analyzed reproducibly.
func Open(dir string) (*Bundle, error) {
	m, err := ReadManifest(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	b := &Bundle{Dir: dir, Manifest: *m}
	if b.Access, err = list(dir, AccessDir, ".log", ".jsonl", ".json"); err != nil {
		return nil, err
	}
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

// ReadManifest parses a bundle.yaml. Unknown keys are errors so that a typo in a
// hand-written bundle does not silently lose a site fact.
func ReadManifest(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	var m Manifest
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	if m.Window.From.IsZero() || m.Window.To.IsZero() {
		return nil, fmt.Errorf("bundle %s: window.from and window.to are required", path)
	}
	if !m.Window.To.After(m.Window.From) {
		return nil, fmt.Errorf("bundle %s: window.to (%s) is not after window.from (%s)", path, m.Window.To, m.Window.From)
	}
	return &m, nil
}

// WriteManifest writes m as dir/bundle.yaml, creating dir and its sub-directories.
func WriteManifest(dir string, m *Manifest) error {
	for _, sub := range []string{"", AccessDir, MetricsDir, ChangesDir, LogsDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("bundle: %w", err)
		}
	}
	var buf bytes.Buffer
	buf.WriteString("# Evidence bundle for aftermath (see design.md, \"Evidence bundle\").\n")
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
