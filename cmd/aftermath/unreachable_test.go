package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An unreachable Loki is named as such on the last line, with exit 1, by
// fetch and by analyze --config, whether the window is pulled whole or
// pushed down. Before, a full pull ended in "the access logs are empty"
// (exit 2) and a pushdown in a partial report (exit 1) that said neither.
func TestUnreachableLokiLastLine(t *testing.T) {
	t.Parallel()
	config, lk, _, from, to := liveFakes(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte(strings.Replace(string(b), lk.URL(), closed, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	want := "Loki at " + closed + " is unreachable"
	lastLine := func(s string) string {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		return lines[len(lines)-1]
	}
	for _, mode := range []string{"full pull", "pushdown"} {
		if mode == "pushdown" {
			appendConfig(t, config, "pushdown_after: 10m\n")
		}
		window := []string{"--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339)}
		code, msg := runCLI(append([]string{"fetch", "--config", config, "--quiet", "--out", filepath.Join(t.TempDir(), "b")}, window...), nil)
		if code != exitIncomplete || !strings.Contains(lastLine(msg), want) {
			t.Errorf("%s: fetch exit %d, last line %q; want exit %d and %q", mode, code, lastLine(msg), exitIncomplete, want)
		}
		code, msg = runCLI(append([]string{"analyze", "--config", config, "--out", filepath.Join(t.TempDir(), "r")}, window...), nil)
		if code != exitIncomplete || !strings.Contains(lastLine(msg), want) {
			t.Errorf("%s: analyze --config exit %d, last line %q; want exit %d and %q", mode, code, lastLine(msg), exitIncomplete, want)
		}
	}
}
