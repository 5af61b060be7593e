package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestLinksBenchrefAlone: the yardstick stays a bare parser. A layer of
// aftermath linked here would bring its initialisers (Caddy's, Chroma's, the
// AWS SDK's) into the loop's CPU time and peak RSS, and every ratio to it
// would look better than it is.
func TestLinksBenchrefAlone(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, stderr.String())
	}
	const module = "github.com/aftermath-forensics/aftermath/"
	allowed := map[string]bool{module + "cmd/bareloop": true, module + "cmd/ingestbench/benchref": true}
	var own, other []string
	for _, p := range strings.Fields(string(out)) {
		switch {
		case allowed[p]:
			own = append(own, p)
		case strings.HasPrefix(p, module):
			t.Errorf("bareloop links %s: the yardstick would pay its start-up", p)
		default:
			other = append(other, p)
		}
	}
	if len(own) != len(allowed) {
		t.Fatalf("go list gives bareloop's own packages as %v: the check reads the wrong list", own)
	}
	// benchref's two extractors and their own dependencies; Caddy, the AWS
	// SDK or Chroma would add hundreds.
	if len(other) > 10 {
		t.Errorf("bareloop links %d packages outside the standard library: %v", len(other), other)
	}
}
