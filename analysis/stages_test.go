package analysis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// module is the module path every package of the project starts with.
const module = "github.com/aftermath-forensics/aftermath"

// stages are the pipeline's stages in the order data flows through them
// (design.md: sources -> detect -> (rules, report); analysis composes them,
// the commands call it). A package belongs to the stage of its longest
// matching directory; prose and templates are leaves every stage may read.
// The request vocabulary (detect/request) is a stage of its own, below
// detect: what one request is, said without any detector's help, which
// detect, the scan and the rules read.
var stages = []struct {
	name string
	dirs []string
}{
	{"sources", []string{"sources", "prose", "templates"}},
	{"request", []string{"detect/request"}},
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
	Dir        string
	// GoFiles are the production files (tests are not listed).
	GoFiles []string
	Imports []string
	// Deps are its transitive imports (TestReadersLinkNoHeavyDependency):
	// asked in the same go list, which costs about 0.4 s of CPU less than a
	// second go list of the five packages it checks.
	Deps []string
}

// projected is go list's answer, asked once per test binary (it takes
// seconds on a loaded machine).
var projected struct {
	once sync.Once
	pkgs []listed
	err  error
}

// projectPackages lists the module's packages with their production imports
// and files (go list -json ./... with listed's fields, run at the module's
// root; test files are not read).
func projectPackages(t *testing.T) []listed {
	t.Helper()
	projected.once.Do(func() { projected.pkgs, projected.err = listPackages() })
	if projected.err != nil {
		t.Fatal(projected.err)
	}
	return projected.pkgs
}

// listJSON asks go list for the fields of listed alone: it then skips the
// rest of its work (1.0 s of CPU where the whole -json took 2.0 s).
const listJSON = "-json=ImportPath,Dir,GoFiles,Imports,Deps"

func listPackages() ([]listed, error) {
	cmd := exec.Command("go", "list", listJSON, "./...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s ./...: %w\n%s", listJSON, err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list %s ./...: %w", listJSON, err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		return nil, fmt.Errorf("go list found %d packages: is the test run inside the module?", len(pkgs))
	}
	return pkgs, nil
}

// TestImportsFollowTheStages: no production import runs from a later stage
// of the pipeline back to an earlier one (a renderer in rules, a detector
// reading the report), and every package sits in a stage.
func TestImportsFollowTheStages(t *testing.T) {
	for _, v := range stageViolations(projectPackages(t)) {
		t.Error(v)
	}
}

// TestStagesRefuseABackImport: the check above finds an import back up the
// pipeline (also from the request vocabulary into the detect package tree
// that holds it) and a package outside every stage (it cannot pass by
// finding nothing).
func TestStagesRefuseABackImport(t *testing.T) {
	pkgs := []listed{
		{ImportPath: module + "/detect", Imports: []string{module + "/sources", module + "/report/timechart", "fmt"}},
		{ImportPath: module + "/report", Imports: []string{module + "/detect"}},
		{ImportPath: module + "/elsewhere"},
		{ImportPath: module + "/detect/request", Imports: []string{module + "/sources", module + "/detect/prose"}},
	}
	got := stageViolations(pkgs)
	want := []string{
		"detect (detect) imports report/timechart (report): an import back up the pipeline",
		"elsewhere is in no stage of the pipeline: add its directory to stages",
		"detect/request (request) imports detect/prose (detect): an import back up the pipeline",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// stageViolations lists each package of pkgs in no stage, and each of their
// imports from a later stage back to an earlier one.
func stageViolations(pkgs []listed) []string {
	var out []string
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		from := stageOf(rel)
		if from < 0 {
			out = append(out, fmt.Sprintf("%s is in no stage of the pipeline: add its directory to stages", rel))
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := stageOf(strings.TrimPrefix(imp, module+"/"))
			if to > from {
				out = append(out, fmt.Sprintf("%s (%s) imports %s (%s): an import back up the pipeline", rel, stages[from].name, strings.TrimPrefix(imp, module+"/"), stages[to].name))
			}
		}
	}
	return out
}

// stageEntries are the functions that run a stage of the pipeline, and the
// packages whose production code may call each: analysis composes the
// pipeline, so it alone loads, detects, builds the report and proposes the
// rules. A scan too: analysis.Scan runs the detectors between the scan's
// readying of a window (scan.Set.Window) and its judging (scan.Set.Judge),
// over evidence analysis.Load read (LoadScans).
var stageEntries = []struct {
	pkg, fn string
	callers []string
}{
	{"sources/ingest", "Load", []string{"analysis"}},
	{"detect", "Run", []string{"analysis"}},
	{"report", "Build", []string{"analysis"}},
	{"rules", "Propose", []string{"analysis"}},
}

// TestOneCallerOfEachStage: no command, bench, scan or other package
// composes the pipeline itself; each stage's entry is called from analysis
// alone (stageEntries).
func TestOneCallerOfEachStage(t *testing.T) {
	pkgs := projectPackages(t)
	for _, e := range stageEntries {
		callers := callersOf(t, pkgs, module+"/"+e.pkg, e.fn)
		if len(callers) == 0 {
			t.Errorf("nothing calls %s.%s: the test finds no call (or the stage moved)", e.pkg, e.fn)
			continue
		}
		for _, c := range callers {
			if !slices.Contains(e.callers, c) {
				t.Errorf("%s calls %s.%s: only %s compose the pipeline (call package analysis instead)", c, e.pkg, e.fn, strings.Join(e.callers, ", "))
			}
		}
	}
}

// callersOf lists the packages (relative to the module) whose production
// files call the function fn of the package at path, by whatever name they
// import it.
func callersOf(t *testing.T, pkgs []listed, path, fn string) []string {
	t.Helper()
	var out []string
	for _, p := range pkgs {
		if !slices.Contains(p.Imports, path) {
			continue
		}
		for _, name := range p.GoFiles {
			file := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if callsIn(f, path, fn) {
				out = append(out, strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/"))
				break
			}
		}
	}
	return out
}

// callsIn reports whether f calls (or takes as a value) the function fn of
// the package it imports from path.
func callsIn(f *ast.File, path, fn string) bool {
	local := ""
	for _, imp := range f.Imports {
		if strings.Trim(imp.Path.Value, `"`) != path {
			continue
		}
		local = path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			local = imp.Name.Name
		}
	}
	if local == "" || local == "_" {
		return false
	}
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == fn {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == local {
				found = true
			}
		}
		return !found
	})
	return found
}

// linkRefusals are the dependencies that the packages reading the evidence
// (detect, its config-change detector, the scan, the report) must not link,
// each with the package that owns it: a dependency is linked only by the
// packages that use it (issue 26). Measured with go list -deps at 2c4e1e4,
// before the TSDB, the git history reader and the evidence types moved to
// packages of their own: detect linked 824 packages, report 849, among them
// Prometheus' TSDB and, through its configuration package, the AWS, Azure and
// Google Cloud SDKs and grpc; and Caddy's core and certmagic through the
// Caddyfile parser. A prefix ending in "/" matches a path tree; otherwise the
// path itself or its subpackages.
var linkRefusals = []struct{ prefix, owner string }{
	{"github.com/prometheus/prometheus/tsdb", "sources/metrics/promstore (the loaders read bundles into it)"},
	{"github.com/prometheus/prometheus/config", "sources/metrics/promstore (the TSDB imports it)"},
	{"github.com/aws/", "sources/cloudwatch"},
	{"github.com/Azure/", "sources/metrics/promstore (the TSDB's remote-write configuration)"},
	{"cloud.google.com/", "sources/metrics/promstore (the TSDB's remote-write configuration)"},
	{"google.golang.org/grpc", "sources/metrics/promstore (the TSDB's remote-write configuration)"},
	{"github.com/caddyserver/", "sources/configrepo (the Caddyfile parser) and rules (validation and backtest)"},
	{"github.com/mholt/caddy-ratelimit", "rules"},
	{"github.com/prometheus/client_golang/api", "sources/prometheus (the live source)"},
	{module + "/rules", "rules (the report renders rules/rule)"},
	{module + "/rules/replay", "rules/replay (its engine; report/replayview renders rules/replay/replayreport)"},
	{module + "/sources/ingest", "sources/ingest (detect, report and scan read sources/evidence)"},
	{module + "/sources/metrics/promstore", "the loaders (detect, report and scan query metrics.Querier)"},
	{module + "/sources/configrepo", "sources/ingest"},
}

// lightPackages are the packages linkRefusals applies to.
var lightPackages = []string{"detect", "detect/configchange", "detect/scan", "report", "report/replayview"}

// refusedLinks lists, for each package of deps (its transitive imports, as
// go list's Deps), what it links that linkRefusals refuses.
func refusedLinks(deps map[string][]string) []string {
	var out []string
	for _, p := range lightPackages {
		for _, d := range deps[p] {
			for _, r := range linkRefusals {
				under := strings.HasSuffix(r.prefix, "/") && strings.HasPrefix(d, r.prefix)
				if under || d == r.prefix || strings.HasPrefix(d, r.prefix+"/") && !strings.HasPrefix(r.prefix, module) {
					out = append(out, fmt.Sprintf("%s links %s: only %s should", p, d, r.owner))
					break
				}
			}
		}
	}
	return out
}

// linkedDeps is go list's Deps of each of the packages (relative to the
// module), from projectPackages' listing.
func linkedDeps(t *testing.T, pkgs ...string) map[string][]string {
	t.Helper()
	deps := map[string][]string{}
	for _, p := range projectPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if slices.Contains(pkgs, rel) {
			deps[rel] = p.Deps
		}
	}
	return deps
}

// TestReadersLinkNoHeavyDependency: detect, the config-change detector, the
// scan, the report and the replay's renderer link none of what linkRefusals
// gives to other packages (the TSDB, cloud SDKs, Caddy, the rules'
// validation, the replay's engine, the live clients). The
// loader (sources/ingest) is listed beside them and must link the TSDB and
// Caddy's Caddyfile parser: the check sees real dependencies, so it can fail.
func TestReadersLinkNoHeavyDependency(t *testing.T) {
	deps := linkedDeps(t, append([]string{"sources/ingest"}, lightPackages...)...)
	for _, p := range lightPackages {
		if len(deps[p]) < 20 {
			t.Fatalf("go list gives %s %d dependencies: the test checks nothing", p, len(deps[p]))
		}
	}
	for _, want := range []string{"github.com/prometheus/prometheus/tsdb", "github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"} {
		if !slices.Contains(deps["sources/ingest"], want) {
			t.Errorf("sources/ingest does not link %s: the loader moved, or the check reads the wrong packages", want)
		}
	}
	if !slices.Contains(deps["report"], module+"/rules/rule") {
		t.Errorf("report does not link rules/rule: the check reads the wrong packages")
	}
	for _, v := range refusedLinks(deps) {
		t.Error(v)
	}
}

// TestLinkRefusalsFindAHeavyDependency: the check above names what a light
// package should not link (the TSDB, a cloud SDK under a tree, Caddy's HTTP
// modules, the rules) and lets through what it may (rules/rule, the leaf
// metrics package, Prometheus' model).
func TestLinkRefusalsFindAHeavyDependency(t *testing.T) {
	got := refusedLinks(map[string][]string{
		"detect": {"github.com/prometheus/prometheus/tsdb/chunks", "github.com/prometheus/common/model", module + "/sources/metrics"},
		"report": {module + "/rules/rule", module + "/rules", "github.com/caddyserver/caddy/v2/modules/caddyhttp", "github.com/aws/aws-sdk-go-v2/aws"},
	})
	want := []string{
		"detect links github.com/prometheus/prometheus/tsdb/chunks: only sources/metrics/promstore (the loaders read bundles into it) should",
		"report links " + module + "/rules: only rules (the report renders rules/rule) should",
		"report links github.com/caddyserver/caddy/v2/modules/caddyhttp: only sources/configrepo (the Caddyfile parser) and rules (validation and backtest) should",
		"report links github.com/aws/aws-sdk-go-v2/aws: only sources/cloudwatch should",
	}
	if !slices.Equal(got, want) {
		t.Errorf("refusals:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
