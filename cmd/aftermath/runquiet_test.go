package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// runQuiet runs the CLI as run does but keeps what it prints: the test's log
// shows it when the test fails, and a passing test prints nothing.
func runQuiet(t testing.TB, args []string) int {
	t.Helper()
	var out lockedBuffer
	code := runTo(args, &out, &out)
	if s := out.String(); s != "" {
		t.Logf("aftermath %s (exit %d) printed:\n%s", strings.Join(args, " "), code, s)
	}
	return code
}

// lockedBuffer is a bytes.Buffer that stdout and stderr may share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
