package main

import (
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// runQuiet runs the CLI as run does but keeps what it prints: the test's log
// shows it when the test fails, and a passing test prints nothing.
func runQuiet(t testing.TB, args []string) int {
	t.Helper()
	var out testenv.LockedBuffer
	code := runTo(args, &out, &out)
	if s := out.String(); s != "" {
		t.Logf("aftermath %s (exit %d) printed:\n%s", strings.Join(args, " "), code, s)
	}
	return code
}
