package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestMakefileStampsCommit reads the command `make build` would run with
// GOFLAGS=-buildvcs=false (the toolchain then records no VCS revision) and
// checks it stamps the checkout's commit, its describe name and a build date
// into the variables versionString reads.
func TestMakefileStampsCommit(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout (git rev-parse HEAD: %v)", err)
	}
	cmd := exec.Command("make", "-C", "../..", "-n", "build")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, out)
	}
	line := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "go build") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("make -n build runs no go build:\n%s", out)
	}
	want := map[string]string{
		"main.commit":    "^" + strings.TrimSpace(string(head)) + "$",
		"main.version":   `^[0-9a-f]{7,}|v\d`,
		"main.buildDate": `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`,
	}
	for name, pattern := range want {
		m := regexp.MustCompile(`-X ` + regexp.QuoteMeta(name) + `=(\S+)`).FindStringSubmatch(line)
		if m == nil {
			t.Errorf("make build does not set %s: %s", name, line)
			continue
		}
		if !regexp.MustCompile(pattern).MatchString(strings.Trim(m[1], `'"`)) {
			t.Errorf("make build sets %s=%s, want %s", name, m[1], pattern)
		}
	}
}

// TestVersionNamesStampedBuild: with the linker's stamps set (as make build
// sets them), version names the version, commit and build date and the Go
// version, and report.json's generator carries the same.
func TestVersionNamesStampedBuild(t *testing.T) {
	defer func(v, c, d string) { version, commit, buildDate = v, c, d }(version, commit, buildDate)
	version, commit, buildDate = "v0.9.0-3-g0123abc-dirty", "0123abcdef0123abcdef0123abcdef0123abcdef", "2026-12-05T12:00:00Z"

	s := versionString()
	for _, want := range []string{"v0.9.0-3-g0123abc-dirty", "commit 0123abcdef0123abcdef0123abcdef0123abcdef", "built 2026-12-05T12:00:00Z", "go1."} {
		if !strings.Contains(s, want) {
			t.Errorf("version %q lacks %q", s, want)
		}
	}
	if strings.Contains(s, "unknown") {
		t.Errorf("version %q calls a stamped build unknown", s)
	}
	g := buildInfo()
	if g.Name != "aftermath" || g.Version != version || g.Commit != commit || g.BuildDate != buildDate || !g.Modified || !strings.HasPrefix(g.GoVersion, "go1.") {
		t.Errorf("generator %+v does not carry the stamps", g)
	}

	// Unstamped, a test binary has no VCS revision: version says so and how to fix it.
	version, commit, buildDate = "", "", ""
	if s := versionString(); !strings.Contains(s, "commit unknown") || !strings.Contains(s, "make build") {
		t.Errorf("unstamped version %q does not say the commit is unknown and how to stamp it", s)
	}
}
