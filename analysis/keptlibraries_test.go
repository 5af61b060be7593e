package analysis

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// archivedModules are dependencies the project left for their maintained
// continuation (issue 27): gopkg.in/yaml.v3 is archived, go.yaml.in/yaml/v3
// carries it on. Another module may still pull the old one in (indirect);
// the project's own code must not.
var archivedModules = map[string]string{"gopkg.in/yaml.v3": "go.yaml.in/yaml/v3"}

// TestNoArchivedModule: go.mod requires no archived module directly, but its
// continuation, and no production package imports the archived one.
func TestNoArchivedModule(t *testing.T) {
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	direct := directRequirements(string(gomod))
	for old, kept := range archivedModules {
		if slices.Contains(direct, old) {
			t.Errorf("go.mod requires %s directly: use %s", old, kept)
		}
		if !slices.Contains(direct, kept) {
			t.Errorf("go.mod does not require %s directly (%s's continuation)", kept, old)
		}
		for _, p := range projectPackages(t) {
			if slices.Contains(p.Imports, old) {
				t.Errorf("%s imports %s: use %s", p.ImportPath, old, kept)
			}
		}
	}
}

// directRequirements lists the module paths go.mod requires without an
// "// indirect" comment, in single-line and block form.
func directRequirements(gomod string) []string {
	var out []string
	inBlock := false
	for _, line := range strings.Split(gomod, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			inBlock = true
			continue
		case inBlock && line == ")":
			inBlock = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !inBlock:
			continue
		}
		if f := strings.Fields(line); len(f) >= 2 && !strings.Contains(line, "// indirect") {
			out = append(out, f[0])
		}
	}
	return out
}

// TestDirectRequirements: the reading above finds direct requirements in
// both forms and skips indirect ones (it cannot pass by reading nothing).
func TestDirectRequirements(t *testing.T) {
	got := directRequirements("module m\n\nrequire a.example/x v1.0.0\n\nrequire (\n\tgopkg.in/yaml.v3 v3.0.1\n\tb.example/y v0.1.0 // indirect\n)\n")
	if want := []string{"a.example/x", "gopkg.in/yaml.v3"}; !slices.Equal(got, want) {
		t.Errorf("direct requirements %v, want %v", got, want)
	}
}
