package main

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/summary.golden")

// testdata/events.json is `go test -json` over a small module: a package that
// does not build, a failing subtest beside a skipped parallel one, skips with
// and without a reason, a passing test that logs (a long line test2json splits
// over several events) and one that prints with fmt.
func TestSummary(t *testing.T) {
	f, err := os.Open("testdata/events.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	s := newSummary(&out, time.Minute, false)
	if err := s.read(f); err != nil {
		t.Fatal(err)
	}
	s.finish()
	if !s.failed() {
		t.Error("failed() = false for a run with a failing test and a failed build")
	}
	got := out.String()
	if *update {
		if err := os.WriteFile("testdata/summary.golden", out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/summary.golden")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("summary differs from testdata/summary.golden (go test -update to accept):\n%s", got)
	}
	// What the golden file must keep saying, whatever else changes.
	for _, must := range []string{
		"b/b.go:2:23: cannot use",                                   // the compiler's error
		"    a_test.go:4: boom\n        line2\n--- FAIL: TestSub/y", // a failure in full
		"x/a TestLoud: \"a table nobody asked for\"",
		"2 tests passed, 3 skipped: chromium is not installed (apt-get install chromium) (1); no reason given (1); the lab recording is not there (x) (1)\n",
	} {
		if !strings.Contains(got, must) {
			t.Errorf("summary lacks %q", must)
		}
	}
	for _, mustNot := range []string{"only on failure", "long long", "=== RUN   TestQuiet"} {
		if strings.Contains(got, mustNot) {
			t.Errorf("summary prints a passing test's log %q", mustNot)
		}
	}
}

func TestSkipReasonOfAParallelSubtest(t *testing.T) {
	out := []string{
		"=== RUN   TestA\n", "=== RUN   TestA/x\n", "    a_test.go:3: said while running x\n", "=== PAUSE TestA/x\n",
		"=== RUN   TestA/y\n", "    a_test.go:9: y's own log\n",
		"=== CONT  TestA/x\n", "    a_test.go:4: chromium is not installed (apt-get install chromium): exec: no\n", "--- SKIP: TestA/x (0.00s)\n",
	}
	if got, want := skipReason(out, "TestA/x"), "chromium is not installed (apt-get install chromium): exec: no"; got != want {
		t.Errorf("skipReason = %q, want %q", got, want)
	}
	if got := skipReason(out[:6], "TestA/y"); got != "y's own log" {
		t.Errorf("skipReason(y) = %q", got)
	}
	if got := skipReason([]string{"=== RUN   TestB\n", "--- SKIP: TestB (0.00s)\n"}, "TestB"); got != "no reason given" {
		t.Errorf("skipReason of t.SkipNow = %q", got)
	}
}

// The command's exit status is the summary's, even when its events all pass.
func TestExitStatusIsTheCommands(t *testing.T) {
	for _, tt := range []struct {
		script string
		want   int
	}{
		{`echo '{"Action":"pass","Package":"x","Elapsed":1}'; exit 0`, 0},
		{`echo '{"Action":"pass","Package":"x","Elapsed":1}'; exit 3`, 3},
		{`echo 'go: no such pattern' >&2; exit 1`, 1},
		{`echo '{"Action":"fail","Package":"x","Elapsed":1}'; exit 0`, 1},
	} {
		var out, stderr bytes.Buffer
		if got := runCommand(newSummary(&out, 0, false), []string{"sh", "-c", tt.script}, &stderr); got != tt.want {
			t.Errorf("%s: exit %d, want %d (printed %q, %q)", tt.script, got, tt.want, out.String(), stderr.String())
		}
	}
}
