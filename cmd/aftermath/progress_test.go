package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// helperArgsEnv carries the arguments of a run of the CLI in a child process
// (this test binary again, which TestMain turns into the CLI), so that its
// stderr can be a terminal or a pipe.
const helperArgsEnv = "AFTERMATH_TEST_RUN_ARGS"

// TestProgressOnlyOnATerminal: analyze under a pseudo-terminal (script(1))
// draws its stages on stderr, with the bytes of the access log read and the
// percent; piped, or with --quiet on a terminal, stderr carries no progress.
func TestProgressOnlyOnATerminal(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) from util-linux is not installed")
	}
	// Any bundle whose analysis passes every stage shows the progress; the
	// slow database's (23,000 lines, no crawler: no zone to backtest) costs
	// each child about half of the reference crawl's, and the package's
	// Korean test has simulated it already.
	b := scenarioBundle(t, "slow-database")
	// Each run is a parallel subtest with its own --out: the three analyses
	// are independent processes.
	analyze := func(t *testing.T, extra ...string) []string {
		return append([]string{"analyze", "--bundle", b, "--out", filepath.Join(t.TempDir(), "out"), "--format", "json"}, extra...)
	}
	child := func(t *testing.T, args []string, onTerminal bool) string {
		t.Helper()
		env := append(os.Environ(), helperArgsEnv+"="+strings.Join(args, "\x1f"))
		self := os.Args[0]
		var cmd *exec.Cmd
		if onTerminal {
			// script gives the child a pseudo-terminal for stdin, stdout
			// and stderr, and copies what it writes to its own stdout.
			cmd = exec.Command(script, "-qec", self+" 2>&1 >/dev/null", "/dev/null")
		} else {
			cmd = exec.Command(os.Args[0])
		}
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() > exitIncomplete) {
			t.Fatalf("%v: %v\n%s\n%s", args, err, stdout.String(), stderr.String())
		}
		if onTerminal {
			return stdout.String()
		}
		return stderr.String()
	}
	t.Run("on a terminal", func(t *testing.T) {
		t.Parallel()
		bar := regexp.MustCompile(`reading the access log\s+\d+% \|`)
		tty := child(t, analyze(t), true)
		for _, want := range []string{"detecting", "proposing and backtesting rules", " MB"} {
			if !strings.Contains(tty, want) {
				t.Errorf("on a terminal, stderr lacks %q:\n%q", want, tty)
			}
		}
		if !bar.MatchString(tty) || !strings.Contains(tty, "100% |") {
			t.Errorf("on a terminal, no percent of the access log read:\n%q", tty)
		}
	})
	for _, c := range []struct {
		name       string
		extra      []string
		onTerminal bool
	}{{"piped", nil, false}, {"--quiet on a terminal", []string{"--quiet"}, true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := child(t, analyze(t, c.extra...), c.onTerminal)
			if strings.Contains(got, "reading the access log") || strings.Contains(got, "detecting") || strings.Contains(got, "%") || strings.Contains(got, "\r") {
				t.Errorf("%s: stderr carries progress:\n%q", c.name, got)
			}
		})
	}
}
