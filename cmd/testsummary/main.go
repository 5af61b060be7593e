// Command testsummary is what `make test` prints: it runs `go test -json`
// (or reads its events from standard input) and says only what a reader must
// act on. A passing package is one line, as plain `go test` prints it; a
// failing test is printed in full (its output and its subtests'); a build
// failure is printed as the compiler said it. It ends with a one-line count of
// the tests that were skipped and why, so that "ok" never hides a test that did
// not run (issue 26), and it names passing tests that printed outside t.Log
// (a passing test prints nothing).
//
//	testsummary [-budget 1m] [-v] -- go test -json ./...   run it; exit with its status
//	testsummary < events.json                              summarize a recorded run
//
// Run with a command, it exits with the command's exit status (1 if the
// command succeeded but an event said something failed); reading standard
// input, it exits 1 when anything failed. It lives under cmd/ beside the other
// programs that are not shipped (make build builds cmd/aftermath alone) and
// needs nothing but Go, so CI needs no other tool to run it.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"time"
)

func main() {
	budget := flag.Duration("budget", time.Minute, "name packages whose tests took longer than this (0: none)")
	verbose := flag.Bool("v", false, "list every skipped test with its reason")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: testsummary [-budget D] [-v] [-- go test -json PKGS...]  (without a command: events on standard input)")
		flag.PrintDefaults()
	}
	flag.Parse()
	s := newSummary(os.Stdout, *budget, *verbose)
	if flag.NArg() == 0 {
		if err := s.read(os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, "testsummary: reading standard input:", err)
			os.Exit(2)
		}
		s.finish()
		if s.failed() {
			os.Exit(1)
		}
		return
	}
	os.Exit(runCommand(s, flag.Args(), os.Stderr))
}

// runCommand runs args with its standard output read as test events and its
// standard error passed to stderr, and returns the exit status to end with.
func runCommand(s *summary, args []string, stderr io.Writer) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stderr = os.Stdin, stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testsummary:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "testsummary: starting %s: %v\n", strings.Join(args, " "), err)
		return 2
	}
	readErr := s.read(out)
	if readErr != nil {
		io.Copy(io.Discard, out) // let the command finish rather than block on a full pipe
	}
	waitErr := cmd.Wait()
	s.finish()
	if readErr != nil {
		fmt.Fprintln(stderr, "testsummary: reading the test events:", readErr)
	}
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(waitErr, &ee):
		code = ee.ExitCode()
		if code < 0 { // killed by a signal
			code = 1
		}
	case waitErr != nil:
		fmt.Fprintf(stderr, "testsummary: %s: %v\n", strings.Join(args, " "), waitErr)
		code = 2
	}
	if code == 0 && (s.failed() || readErr != nil) {
		code = 1
	}
	return code
}

// event is one line of `go test -json`: a TestEvent (cmd/test2json) or a
// BuildEvent (go help buildjson), told apart by Action.
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string // build events
	FailedBuild string
}

// testKey names one test of one package.
type testKey struct{ pkg, test string }

// skip is one skipped test and the reason it gave.
type skip struct {
	testKey
	reason string
}

// strayPrint is a passing test (or package, test "") that printed outside t.Log.
type strayPrint struct {
	testKey
	line string
}

type summary struct {
	w       io.Writer
	budget  time.Duration
	verbose bool

	output     map[testKey][]string // each unfinished test's output, top-level tests gathering their subtests'
	pkgOutput  map[string][]string  // each package's output that no test owns
	buildOut   map[string][]string  // each failing build's output, by import path
	buildOrder []string
	done       map[string]bool // packages with a final pass, fail or skip

	skips       []skip
	stray       []strayPrint
	slow        []string
	failedPkgs  []string
	nonJSON     []string
	passed      int
	buildFailed bool
}

func newSummary(w io.Writer, budget time.Duration, verbose bool) *summary {
	return &summary{w: w, budget: budget, verbose: verbose,
		output: map[testKey][]string{}, pkgOutput: map[string][]string{}, buildOut: map[string][]string{}, done: map[string]bool{}}
}

// read consumes the events on r, printing as packages finish.
func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// go test prints some early errors (a bad pattern, a missing
			// module) as plain text: keep them, they explain a failure.
			s.nonJSON = append(s.nonJSON, string(line))
			fmt.Fprintln(s.w, string(line))
			continue
		}
		s.event(e)
	}
	return sc.Err()
}

func (s *summary) event(e event) {
	switch e.Action {
	case "build-output":
		if _, ok := s.buildOut[e.ImportPath]; !ok {
			s.buildOrder = append(s.buildOrder, e.ImportPath)
		}
		s.buildOut[e.ImportPath] = append(s.buildOut[e.ImportPath], e.Output)
		return
	case "build-fail":
		s.buildFailed = true
		fmt.Fprint(s.w, strings.Join(s.buildOut[e.ImportPath], ""))
		delete(s.buildOut, e.ImportPath)
		return
	}
	if e.Test == "" {
		s.packageEvent(e)
		return
	}
	top := testKey{e.Package, topLevel(e.Test)}
	switch e.Action {
	case "output":
		s.output[top] = append(s.output[top], e.Output)
	case "skip":
		s.skips = append(s.skips, skip{testKey{e.Package, e.Test}, skipReason(s.output[top], e.Test)})
		if e.Test == top.test {
			delete(s.output, top)
		}
	case "pass":
		s.passed++
		if e.Test == top.test {
			if l, ok := firstStray(s.output[top]); ok {
				s.stray = append(s.stray, strayPrint{top, l})
			}
			delete(s.output, top)
		}
	case "fail":
		if e.Test == top.test {
			fmt.Fprint(s.w, strings.Join(s.output[top], ""))
			delete(s.output, top)
		}
	}
}

func (s *summary) packageEvent(e event) {
	switch e.Action {
	case "output":
		s.pkgOutput[e.Package] = append(s.pkgOutput[e.Package], e.Output)
	case "pass", "skip":
		s.done[e.Package] = true
		var rest []string
		for _, l := range s.pkgOutput[e.Package] {
			if isResult(l) {
				fmt.Fprint(s.w, l)
			} else if l != "PASS\n" {
				rest = append(rest, l)
			}
		}
		if l, ok := firstStray(rest); ok {
			s.stray = append(s.stray, strayPrint{testKey{e.Package, ""}, l})
		}
		if s.budget > 0 && time.Duration(e.Elapsed*float64(time.Second)) > s.budget {
			s.slow = append(s.slow, fmt.Sprintf("%s %.0fs", e.Package, e.Elapsed))
		}
		delete(s.pkgOutput, e.Package)
	case "fail":
		s.done[e.Package] = true
		s.failedPkgs = append(s.failedPkgs, e.Package)
		// Tests still running when the package failed (a panic, a timeout)
		// never got their own fail event: print what they said.
		var unfinished []testKey
		for k := range s.output {
			if k.pkg == e.Package {
				unfinished = append(unfinished, k)
			}
		}
		sort.Slice(unfinished, func(i, j int) bool { return unfinished[i].test < unfinished[j].test })
		for _, k := range unfinished {
			fmt.Fprint(s.w, strings.Join(s.output[k], ""))
			delete(s.output, k)
		}
		fmt.Fprint(s.w, strings.Join(s.pkgOutput[e.Package], ""))
		delete(s.pkgOutput, e.Package)
	}
}

// finish prints what is left: output of packages that never finished, build
// output never followed by a failure, and the closing lines.
func (s *summary) finish() {
	for _, p := range s.buildOrder {
		if out, ok := s.buildOut[p]; ok && len(out) > 0 {
			fmt.Fprint(s.w, strings.Join(out, ""))
		}
	}
	var unfinished []string
	for k, out := range s.output {
		if !s.done[k.pkg] {
			unfinished = append(unfinished, strings.Join(out, ""))
		}
	}
	sort.Strings(unfinished)
	for _, out := range unfinished {
		fmt.Fprint(s.w, out)
	}
	if len(s.stray) > 0 {
		fmt.Fprintf(s.w, "%d passing tests printed outside t.Log (a passing test prints nothing):\n", len(s.stray))
		for _, p := range s.stray {
			name := p.test
			if name == "" {
				name = "(package)"
			}
			fmt.Fprintf(s.w, "  %s %s: %q\n", p.pkg, name, p.line)
		}
	}
	if len(s.slow) > 0 {
		fmt.Fprintf(s.w, "over the %s budget for one package: %s\n", s.budget, strings.Join(s.slow, ", "))
	}
	if len(s.failedPkgs) > 0 {
		fmt.Fprintf(s.w, "FAIL: %s\n", strings.Join(s.failedPkgs, ", "))
	}
	fmt.Fprintln(s.w, s.skipLine())
}

// skipLine is the closing count: "N tests skipped: reason (count); ...", the
// most frequent reason first.
func (s *summary) skipLine() string {
	if s.verbose {
		for _, k := range s.skips {
			fmt.Fprintf(s.w, "skipped %s %s: %s\n", k.pkg, k.test, k.reason)
		}
	}
	if len(s.skips) == 0 {
		return fmt.Sprintf("%d tests passed, none skipped", s.passed)
	}
	counts := map[string]int{}
	for _, k := range s.skips {
		counts[reasonKind(k.reason)]++
	}
	kinds := make([]string, 0, len(counts))
	for r := range counts {
		kinds = append(kinds, r)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if counts[kinds[i]] != counts[kinds[j]] {
			return counts[kinds[i]] > counts[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, len(kinds))
	for i, r := range kinds {
		parts[i] = fmt.Sprintf("%s (%d)", r, counts[r])
	}
	return fmt.Sprintf("%d tests passed, %d skipped: %s", s.passed, len(s.skips), strings.Join(parts, "; "))
}

// failed reports whether a package or a build failed.
func (s *summary) failed() bool { return len(s.failedPkgs) > 0 || s.buildFailed }

// firstStray is the first line of out that go test's framing and t.Log do
// not explain. test2json splits long lines over several events, so out is
// joined before it is split into lines.
func firstStray(out []string) (string, bool) {
	for _, l := range strings.SplitAfter(strings.Join(out, ""), "\n") {
		if strings.TrimSpace(l) != "" && !framing(l) && !logged(l) {
			return strings.TrimRight(l, "\n"), true
		}
	}
	return "", false
}

// topLevel is the top-level test of a (sub)test name.
func topLevel(name string) string {
	if i := strings.IndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return name
}

// logLine is the start of what t.Log, t.Error and t.Skip print: the indented
// file:line of the call.
var logLine = regexp.MustCompile(`^\s+[^\s:]+\.go:\d+: `)

// skipReason is what a skipped test said last before "--- SKIP": t.Skip's
// message (its first line).
func skipReason(out []string, test string) string {
	// Subtests share their top-level test's output: only lines after this
	// test's own header belong to it.
	start := 0
	for i, l := range out {
		if strings.HasPrefix(l, "=== RUN   "+test+"\n") || strings.HasPrefix(l, "=== CONT  "+test+"\n") || strings.HasPrefix(l, "=== NAME  "+test+"\n") {
			start = i
		}
	}
	reason := ""
	for _, l := range out[start:] {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "--- SKIP: "+test+" ") {
			break
		}
		if logLine.MatchString(l) {
			reason = strings.TrimSpace(logLine.ReplaceAllString(l, ""))
		}
	}
	if reason == "" {
		return "no reason given"
	}
	return reason
}

// reasonKind groups skip reasons: the part before the first ": " (the
// testenv helpers say what is missing, then the error that showed it).
func reasonKind(reason string) string {
	if i := strings.Index(reason, ": "); i > 0 {
		return reason[:i]
	}
	return reason
}

// framing reports lines go test writes around a test's own output.
func framing(l string) bool {
	t := strings.TrimLeft(l, " ")
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- FAIL", "--- SKIP"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// logged reports lines that t.Log printed (plain go test hides them when the
// test passes): the indented file:line, and the deeper-indented continuation
// lines of a multi-line message.
func logged(l string) bool {
	return logLine.MatchString(l) || strings.HasPrefix(l, "        ")
}

// isResult reports the package result lines plain go test prints.
func isResult(l string) bool {
	return strings.HasPrefix(l, "ok  \t") || strings.HasPrefix(l, "?   \t") || strings.HasPrefix(l, "FAIL\t") || strings.HasPrefix(l, "--- FAIL")
}
