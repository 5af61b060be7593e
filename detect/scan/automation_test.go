package scan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
)

// TestAutomatedSaysDetectsReason: the scan calls a fingerprint automated
// exactly when detect.JudgeAutomation does, and says the test that decided:
// a forged Chromium that fetched assets browses (not "forged"), a declared
// tool is named by its user agent whatever it fetched, a real browser on
// expensive pages is said by how it read. A flagged fingerprint is automated
// and an unmeasured one is not, before any reading.
func TestAutomatedSaysDetectsReason(t *testing.T) {
	chrome := request.ClusterKey{UA: "Chrome/121", Lang: "en-us"}
	forged := request.ClusterKey{UA: "Chrome/121", Lang: "zh-cn", NoClientHints: true}
	tool := request.ClusterKey{UA: "python-requests"}
	for _, c := range []struct {
		name              string
		k                 request.ClusterKey
		r                 detect.Reading
		measured, flagged bool
		want              string
	}{
		{"tool fetching assets", tool, detect.Reading{AssetShare: 0.4, ExpensiveShare: 0.1}, true, false, "reason.not_browser"},
		{"forged agent fetching assets", forged, detect.Reading{AssetShare: 0.3, ExpensiveShare: 0.9}, true, false, "reason.browsing"},
		{"forged agent on cheap pages", forged, detect.Reading{AssetShare: 0.01, ExpensiveShare: 0.1}, true, false, "reason.forged"},
		{"browser on cheap pages", chrome, detect.Reading{ExpensiveShare: 0.1}, true, false, "reason.browsing"},
		{"browser on expensive pages", chrome, detect.Reading{AssetShare: 0.01, ExpensiveShare: 0.8}, true, false, "reason.automated"},
		{"flagged", chrome, detect.Reading{AssetShare: 0.3}, true, true, "reason.flagged"},
		{"unmeasured", tool, detect.Reading{}, false, false, "reason.unmeasured"},
	} {
		said, auto := automated(c.k, c.r, c.measured, c.flagged)
		if _, name, _ := said.Message(); name != c.want {
			t.Errorf("%s: the scan says %q, want %q", c.name, name, c.want)
		}
		want := c.flagged || c.measured && detect.JudgeAutomation(c.k, c.r.AssetShare, c.r.ExpensiveShare).Automated()
		if auto != want {
			t.Errorf("%s: the scan calls it automated: %v, detect: %v", c.name, auto, want)
		}
	}
}

// TestScanDoesNotJudgeAutomationItself: no production file of the scan tests
// a fingerprint's user agent or client hints (request.IsBrowser,
// ClusterKey.NoClientHints): what makes a fingerprint automated, and why, is
// detect.JudgeAutomation's alone, and the scan only says its reason.
func TestScanDoesNotJudgeAutomationItself(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		read++
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "IsBrowser" || sel.Sel.Name == "NoClientHints") {
				t.Errorf("%s tests %s itself: judge by detect.JudgeAutomation and say its reason", name, sel.Sel.Name)
			}
			return true
		})
	}
	if read < 10 {
		t.Fatalf("read %d production files: the test runs outside the scan's directory", read)
	}
}
