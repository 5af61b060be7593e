// Package testenv is what aftermath's tests need from outside the repository:
// the lab recording (real Caddy, php-fpm and Prometheus, kept beside the
// repository in shared/data/lab-incident because it is too large to commit)
// and Debian programs (prometheus, promtool, chromium, git). One rule applies
// when one is missing: under CI=true the test fails, because CI promises them
// and a skip would hide that the test never ran; elsewhere it is skipped,
// saying what is missing. Go's own internal/testenv does the same job for the
// standard library; this one lives under sources, the layer every other
// package may import.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// CI reports whether the tests run under CI (CI=true), where nothing a test
// needs may be missing.
func CI() bool { return os.Getenv("CI") == "true" }

// Missing ends t because something it needs is absent: it fails under CI and
// skips elsewhere.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("CI=true but %s", msg)
		return
	}
	t.Skip(msg)
}

// LabIncident returns the path of rel (slash-separated; "" for the directory
// itself) inside the lab recording, which sits beside the repository in
// shared/data/lab-incident. When it is not there, t ends as Missing says.
func LabIncident(t testing.TB, rel string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("testenv: %v", err)
		return ""
	}
	p := filepath.Join(filepath.Dir(root), "shared", "data", "lab-incident", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		Missing(t, "the lab recording is not there (it lives beside the repository in shared/data/lab-incident): %v", err)
	}
	return p
}

// Independent returns the directory of the incidents written by the
// independent generator (one bundle with its truth.json per directory),
// which sits beside the repository in shared/data/independent. When it is
// not there, t ends as Missing says.
func Independent(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("testenv: %v", err)
		return ""
	}
	p := filepath.Join(filepath.Dir(root), "shared", "data", "independent")
	if _, err := os.Stat(p); err != nil {
		Missing(t, "the independent incidents are not there (they live beside the repository in shared/data/independent): %v", err)
	}
	return p
}

// Program returns the path of the named program on PATH. When it is not
// installed, t ends as Missing says; install tells how to get it.
func Program(t testing.TB, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s is not installed (%s): %v", name, install, err)
	}
	return p
}

// moduleRoot is the directory of the go.mod above the working directory (go
// test runs each package's tests in the package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}
