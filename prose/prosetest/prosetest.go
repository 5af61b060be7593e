// Package prosetest checks a package's use of its message catalog: every
// message its Go code says exists, and every message its files define is said
// somewhere, so a renamed or forgotten message fails a test instead of
// leaving a report without a sentence (or a file with a dead one).
package prosetest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/prose"
)

// Said lists the message names the non-test Go files of dir pass to calls of
// a method named method with two arguments (name, data), and for a
// catalog's Say to calls of its SayLater too, which says the message when read.
// A name that is not a string literal is an error: it could not be checked.
func Said(dir, method string) (names []string, problems []string, err error) {
	methods := []string{method}
	if method == "Say" {
		methods = append(methods, "SayLater")
	}
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, nil, err
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			return nil, nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !slices.Contains(methods, sel.Sel.Name) {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				problems = append(problems, fset.Position(call.Pos()).String()+": message name is not a string literal")
				return true
			}
			name, err := strconv.Unquote(lit.Value)
			if err != nil {
				problems = append(problems, fset.Position(lit.Pos()).String()+": "+err.Error())
				return true
			}
			names = append(names, name)
			return true
		})
	}
	slices.Sort(names)
	return slices.Compact(names), problems, nil
}

// Check fails t when the Go code of dir says a message c does not define in
// every one of langs, names a message by anything but a literal, or when c
// defines a message the code never says, itself or through a message that
// includes it.
func Check(t *testing.T, c *prose.Catalog, langs []string, dir, method string) {
	t.Helper()
	CheckDirs(t, c, langs, []string{dir}, method)
}

// CheckDirs is Check for a catalog that the code of several directories
// says (package detect's, which the detectors registered from their own
// packages speak too): each message is said in one of them at least.
func CheckDirs(t *testing.T, c *prose.Catalog, langs []string, dirs []string, method string) {
	t.Helper()
	var said []string
	for _, dir := range dirs {
		if _, err := os.Stat(dir); err != nil {
			t.Fatal(err)
		}
		names, problems, err := Said(dir, method)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
		said = append(said, names...)
	}
	slices.Sort(said)
	said = slices.Compact(said)
	dir := strings.Join(dirs, ", ")
	if len(said) == 0 {
		t.Fatalf("no call of %s(name, data) found in %s", method, dir)
	}
	for _, lang := range langs {
		// A run parses each message alone when it first says it.
		if err := c.CheckAlone(lang); err != nil {
			t.Error(err)
		}
		defined := c.Names(lang)
		for _, name := range said {
			if !slices.Contains(defined, name) {
				t.Errorf("%s: the code says %q, which %s.tmpl does not define", dir, name, lang)
			}
		}
		// A message another said one includes ({{template}}) is said
		// with it.
		saidIn := slices.Clone(said)
		for _, name := range said {
			saidIn = append(saidIn, c.Includes(lang, name)...)
		}
		for _, name := range defined {
			if !slices.Contains(saidIn, name) {
				t.Errorf("%s: %s.tmpl defines %q, which the code never says", dir, lang, name)
			}
		}
	}
}
