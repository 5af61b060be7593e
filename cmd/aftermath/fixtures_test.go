package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// The package's tests share what is costly to make and that they only read:
// the simulated sample incident, the demo's output and each scenario's
// analysis are made once per test binary (each took seconds, and up to six
// tests made the same one again). A test that needs to change one makes its
// own copy. Use these rather than simulating or analyzing again:
//
//   - scenarioBundle(t, sc): sc simulated, seed 1, 2 h of baseline, its
//     gzipped files stored uncompressed (simulate.Options.StoredGzip);
//     analyzedScenario(t, sc): its analysis (*report.Report, shared: change
//     a copy);
//   - referenceBundle(t): scenarioBundle(t, "crawler-backlog"), skipped in
//     -short mode; simulateIncident(t): it with its access-log lines read;
//     referenceReport(t): its report.json as analyze --format json writes it
//     (a new map at each call);
//   - smallCrawlBundle(t): scenarioBundle(t, "wedge-little-baseline"), a
//     crawl that the rules answer with a zone, in 13,000 lines: for tests
//     of what the CLI does around the rules (where they are printed or
//     placed, the exit status), which need a zone, not the reference's
//     day of detail;
//   - scenarioReportJSON(t, sc): analyzedScenario's report.json bytes;
//   - demoOut(t): the --out directory of one `aftermath demo` run;
//     sampleDir(t): the 24 h sample bundle that run simulated;
//   - once[T]: a value of your own made once (its build returns an error
//     rather than failing a test, since any test may be the first to ask).
//
// A test that only reads them and touches no process-wide state (t.Setenv,
// a package variable) calls t.Parallel(): on two cores the package's wall
// time is about half its CPU time only if its slow tests overlap.

// TestMain gives the shared fixtures a directory and removes it at the end.
// It clears the live sources' environment (liveEnv) for the whole binary, so
// that the caller's Loki or Prometheus never answers a test's fake, and the
// tests serving fakes need no t.Setenv and can run in parallel.
//
// Started as a test's child process (helperArgsEnv set), the binary runs
// the CLI and exits with its code, before any fixture directory is made:
// os.Exit would skip removing it, leaving one behind per child.
func TestMain(m *testing.M) {
	for _, k := range liveEnv {
		os.Unsetenv(k)
	}
	if args, ok := os.LookupEnv(helperArgsEnv); ok {
		os.Exit(run(strings.Split(args, "\x1f")))
	}
	// The tests' bundles are written, read many times and removed: gzip
	// without compression spares deflating them once and inflating them at
	// each read (together a seventh of the package's CPU).
	demoIncident.StoredGzip = true
	testenv.SpareCollections()
	os.Exit(testenv.RunWithFixtureDir(m, "aftermath-cmd-test-", &fixtureDir))
}

// liveEnv is the environment the live sources read besides their
// configuration; TestMain clears it.
var liveEnv = []string{"LOKI_ADDR", "LOKI_USERNAME", "LOKI_PASSWORD", "LOKI_BEARER_TOKEN", "LOKI_BEARER_TOKEN_FILE", "PROMETHEUS_BEARER_TOKEN", "PROMETHEUS_PASSWORD", "PROMETHEUS_USERNAME"}

// fixtureDir holds the shared fixtures; TestMain removes it.
var fixtureDir string

// once is a value made at most once, with the error that making it gave.
type once[T any] struct {
	once sync.Once
	v    T
	err  error
}

func (o *once[T]) get(t testing.TB, build func() (T, error)) T {
	t.Helper()
	o.once.Do(func() { o.v, o.err = build() })
	if o.err != nil {
		t.Fatal(o.err)
	}
	return o.v
}

// sampleDir is the sample incident's bundle: the one `aftermath demo`
// simulated and analyzed in demoOut's run (seeded: the same bytes each time),
// kept rather than simulated a second time. Tests must not write into it.
func sampleDir(t *testing.T) string {
	t.Helper()
	demoOut(t)
	return filepath.Join(fixtureDir, "sample", "bundle")
}

// demoRun is one run of `aftermath demo --out DIR`.
type demoRun struct {
	out     string // the --out directory
	code    int
	printed string
}

var demo once[demoRun]

// demoOut runs `aftermath demo` once, leaving its bundle in sampleDir, and
// returns its --out directory after checking its exit status; the tests that
// read the demo's files share it. Tests must not write into it.
func demoOut(t *testing.T) string {
	t.Helper()
	d := demo.get(t, func() (demoRun, error) {
		d := demoRun{out: filepath.Join(fixtureDir, "demo")}
		var out testenv.LockedBuffer
		demoWorkDir = filepath.Join(fixtureDir, "sample")
		defer func() { demoWorkDir = "" }()
		d.code = runTo([]string{"demo", "--out", d.out}, &out, &out)
		d.printed = out.String()
		return d, nil
	})
	if d.code != exitOK && d.code != exitIncomplete {
		t.Fatalf("demo exit %d:\n%s", d.code, d.printed)
	}
	return d.out
}

var (
	scenarioBundles sync.Map // scenario name -> *once[string]
	scenarios       sync.Map // scenario name -> *once[*report.Report]
)

// scenarioBundle is the scenario simulated with seed 1 and two hours of
// baseline, once per test binary: the bundle analyzedScenario analyzes, and
// referenceBundle's. Tests must not write into it.
func scenarioBundle(t testing.TB, scenario string) string {
	t.Helper()
	o, _ := scenarioBundles.LoadOrStore(scenario, &once[string]{})
	return o.(*once[string]).get(t, func() (string, error) {
		b := filepath.Join(fixtureDir, "scenario-"+scenario, "bundle")
		if _, err := simulate.Run(context.Background(), simulate.Options{Scenario: scenario, Out: b, Seed: 1, BaselineHours: 2, StoredGzip: true}); err != nil {
			return "", fmt.Errorf("simulate %s: %w", scenario, err)
		}
		return b, nil
	})
}

// smallCrawlBundle is the smallest simulated crawl whose analysis proposes
// a zone (wedge-little-baseline: 13,000 lines to the reference crawl's
// 48,700, its requests to wiki.example.org as the reference's, its window
// in Asia/Seoul): each run of analyze or rules on it costs about half of
// one on the reference. Skipped in -short mode. Tests must not write into it.
func smallCrawlBundle(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("simulation in -short mode")
	}
	return scenarioBundle(t, "wedge-little-baseline")
}

// analyzedScenario is scenarioBundle's bundle analyzed with the pipeline
// `aftermath analyze` runs, made once; tests that change it must change a
// copy.
func analyzedScenario(t *testing.T, scenario string) *report.Report {
	t.Helper()
	b := scenarioBundle(t, scenario)
	o, _ := scenarios.LoadOrStore(scenario, &once[*report.Report]{})
	return o.(*once[*report.Report]).get(t, func() (*report.Report, error) {
		return analyzeBundleReport(context.Background(), b)
	})
}

var scenarioJSONs sync.Map // scenario name -> *once[[]byte]

// scenarioReportJSON is analyzedScenario's report.json, the bytes `analyze
// --format json` writes for scenarioBundle's bundle (the CLI runs the same
// pipeline and writes with report.WriteAll): tests that read report.json
// share the analysis rather than running analyze again.
func scenarioReportJSON(t *testing.T, scenario string) []byte {
	t.Helper()
	r := analyzedScenario(t, scenario)
	o, _ := scenarioJSONs.LoadOrStore(scenario, &once[[]byte]{})
	return o.(*once[[]byte]).get(t, func() ([]byte, error) {
		out, err := os.MkdirTemp(fixtureDir, "report-json-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(out)
		if _, err := report.WriteAll(out, r, []string{report.FormatJSON}, report.LangEN); err != nil {
			return nil, fmt.Errorf("%s: %w", scenario, err)
		}
		return os.ReadFile(filepath.Join(out, report.Files[report.FormatJSON]))
	})
}

// readTimedLines reads a gzipped Caddy JSON access log: its lines in file
// order and each line's time.
func readTimedLines(path string) ([][]byte, []time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var lines [][]byte
	var times []time.Time
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		ts, err := lineTS(sc.Bytes())
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", path, len(lines)+1, err)
		}
		lines = append(lines, bytes.Clone(sc.Bytes()))
		times = append(times, time.Unix(0, int64(ts*1e9)).UTC())
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return lines, times, nil
}

// lineTS is a Caddy JSON line's ts, read with encoding/json (not with
// aftermath's reader); a line that opens as Caddy's encoder writes it,
// {"level":"...","ts":N, has it read from there without decoding the rest
// (decoding whole lines was seconds of the package's CPU).
func lineTS(line []byte) (float64, error) {
	if from, to, ok := leadingTS(line); ok {
		var ts float64
		if err := json.Unmarshal(line[from:to], &ts); err == nil {
			return ts, nil
		}
	}
	var l struct {
		TS float64 `json:"ts"`
	}
	err := json.Unmarshal(line, &l)
	return l.TS, err
}

// leadingTS is where the number of ts stands in a line that opens as
// Caddy's JSON encoder writes one: {"level":"WORD","ts":NUMBER, and no
// other key before ts, so that the number is the top-level ts.
func leadingTS(line []byte) (from, to int, ok bool) {
	const open, key = `{"level":"`, `","ts":`
	if !bytes.HasPrefix(line, []byte(open)) {
		return 0, 0, false
	}
	i := len(open)
	for i < len(line) && line[i] >= 'a' && line[i] <= 'z' {
		i++
	}
	if !bytes.HasPrefix(line[i:], []byte(key)) {
		return 0, 0, false
	}
	from = i + len(key)
	to = from
	for to < len(line) && (line[to] >= '0' && line[to] <= '9' || line[to] == '.' || line[to] == 'e' || line[to] == 'E' || line[to] == '-' || line[to] == '+') {
		to++
	}
	if to == from || to == len(line) || line[to] != ',' {
		return 0, 0, false
	}
	return from, to, true
}
