package analysis

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the module path every package of the project starts with.
const module = "github.com/aftermath-forensics/aftermath"

// stages are the pipeline's stages in the order data flows through them
// (design.md: sources -> detect -> (rules, report); analysis composes them,
// the commands call it). A package belongs to the stage of its longest
// matching directory; prose and templates are leaves every stage may read.
var stages = []struct {
	name string
	dirs []string
}{
	{"sources", []string{"sources", "prose", "templates"}},
	{"detect", []string{"detect"}},
	{"rules", []string{"rules"}},
	{"report", []string{"report"}},
	{"analysis", []string{"analysis"}},
	{"cmd", []string{"cmd"}},
}

// stageOf returns the index in stages of the package at path (relative to
// the module), or -1.
func stageOf(rel string) int {
	best, bestLen := -1, -1
	for i, s := range stages {
		for _, d := range s.dirs {
			if (rel == d || strings.HasPrefix(rel, d+"/")) && len(d) > bestLen {
				best, bestLen = i, len(d)
			}
		}
	}
	return best
}

// listed is what go list says of one package.
type listed struct {
	ImportPath string
	Imports    []string
}

// projectPackages lists the module's packages with their production imports
// (go list -json ./..., run at the module's root; test files are not read).
func projectPackages(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -json ./...: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -json ./...: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages: is the test run inside the module?", len(pkgs))
	}
	return pkgs
}

// TestImportsFollowTheStages: no production import runs from a later stage
// of the pipeline back to an earlier one (a renderer in rules, a detector
// reading the report), and every package sits in a stage.
func TestImportsFollowTheStages(t *testing.T) {
	for _, p := range projectPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		from := stageOf(rel)
		if from < 0 {
			t.Errorf("%s is in no stage of the pipeline: add its directory to stages", rel)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := stageOf(strings.TrimPrefix(imp, module+"/"))
			if to > from {
				t.Errorf("%s (%s) imports %s (%s): an import back up the pipeline", rel, stages[from].name, strings.TrimPrefix(imp, module+"/"), stages[to].name)
			}
		}
	}
}

// TestReportLinksNoCaddyValidation: the report renders rules (package
// rules/rule) without linking what generates and validates them against
// Caddy (package rules, Caddy's HTTP modules, caddy-ratelimit): with them a
// build of the report compiled 1,281 packages, without them 848.
func TestReportLinksNoCaddyValidation(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./report")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./report: %v\n%s", err, stderr.String())
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"/rules/rule") {
		t.Fatalf("the report does not depend on %s/rules/rule: the test checks nothing (deps: %d)", module, len(deps))
	}
	for _, d := range deps {
		if d == module+"/rules" || strings.HasPrefix(d, "github.com/caddyserver/caddy/v2/modules/") || strings.HasPrefix(d, "github.com/mholt/caddy-ratelimit") {
			t.Errorf("package report links %s", d)
		}
	}
}
