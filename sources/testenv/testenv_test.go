package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordingTB is a testing.TB that records how a test would have ended.
type recordingTB struct {
	testing.TB
	fatal, skip string
}

func (r *recordingTB) Helper()                      {}
func (r *recordingTB) Fatalf(f string, args ...any) { r.fatal = fmt.Sprintf(f, args...) }
func (r *recordingTB) Skip(args ...any)             { r.skip = fmt.Sprint(args...) }

func TestMissingFailsUnderCI(t *testing.T) {
	for _, ci := range []string{"true", "", "false"} {
		t.Setenv("CI", ci)
		r := &recordingTB{}
		LabIncident(r, "no-such-file.gz")
		if ci == "true" {
			if r.fatal == "" || r.skip != "" || !strings.Contains(r.fatal, "CI=true") || !strings.Contains(r.fatal, "lab recording") {
				t.Errorf("CI=%q: fatal %q, skip %q; want a failure naming the lab recording", ci, r.fatal, r.skip)
			}
			continue
		}
		if r.skip == "" || r.fatal != "" || !strings.Contains(r.skip, "no-such-file.gz") {
			t.Errorf("CI=%q: fatal %q, skip %q; want a skip naming the file", ci, r.fatal, r.skip)
		}
	}
	t.Setenv("CI", "true")
	r := &recordingTB{}
	Program(r, "aftermath-no-such-program", "apt-get install nothing")
	if !strings.Contains(r.fatal, "aftermath-no-such-program is not installed (apt-get install nothing)") {
		t.Errorf("Program under CI: fatal %q, skip %q", r.fatal, r.skip)
	}
}

func TestLabIncidentIsBesideTheRepository(t *testing.T) {
	t.Setenv("CI", "")
	r := &recordingTB{}
	p := LabIncident(r, "access/access.log.gz")
	want := filepath.Join("shared", "data", "lab-incident", "access", "access.log.gz")
	if !strings.HasSuffix(p, want) || !filepath.IsAbs(p) {
		t.Errorf("path %q, want an absolute path ending in %s", p, want)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil || filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(p))))) != filepath.Dir(root) {
		t.Errorf("module root %s; lab path %s is not beside it", root, p)
	}
}
