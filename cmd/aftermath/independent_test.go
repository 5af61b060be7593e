package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// The independent incidents (shared/data/independent): bundles written by a
// generator that shares no code with aftermath, each with its truth.json.
// The simulator and the detectors were written together and agree by
// construction; these were not, so every one of them must score all its
// expectations. The score is shared/tools/score_findings.py's, ported here
// check for check so that CI needs no Python: indCheck and scoreTruth below
// keep its semantics (read that script before changing either).

// indTruth is the part of truth.json the score reads.
type indTruth struct {
	ExpectedFindings []indExpected `json:"expected_findings"`
	Crawler          *struct {
		DistinctIPs float64 `json:"distinct_ips"`
	} `json:"crawler"`
	Phases *struct {
		Onset string `json:"onset"`
	} `json:"phases"`
	ConfigChange *struct {
		Commit  string `json:"commit"`
		Verdict string `json:"verdict"`
	} `json:"config_change"`
}

// indExpected is one expected finding; Must is true when absent.
type indExpected struct {
	Kind   string `json:"kind"`
	Must   *bool  `json:"must"`
	Commit string `json:"commit"`
}

// indFinding is the part of a report.json finding the score reads.
type indFinding struct {
	ID         string             `json:"id"`
	Kind       string             `json:"kind"`
	Role       string             `json:"role"`
	Start      string             `json:"start"`
	Confidence float64            `json:"confidence"`
	Facts      map[string]float64 `json:"facts"`
	Change     *struct {
		Ref string `json:"ref"`
	} `json:"change"`
}

// indCheck is one expectation: met or not, and the line the script prints.
type indCheck struct {
	OK  bool
	Msg string
}

func (c indCheck) String() string {
	if c.OK {
		return "ok   " + c.Msg
	}
	return "MISS " + c.Msg
}

// scoreTruth is score_findings.py: the checks of one report against one truth.
func scoreTruth(tr indTruth, findings []indFinding) []indCheck {
	// A finding the report calls context or ruled out blames nothing (but
	// config_change findings are kept, whatever their role, for the change
	// checks below).
	kinds := map[string][]indFinding{}
	for _, f := range findings {
		if f.Kind != "config_change" && (f.Role == "context" || f.Role == "ruled_out") {
			continue
		}
		kinds[f.Kind] = append(kinds[f.Kind], f)
	}
	presence := func(b bool) string {
		if b {
			return "present"
		}
		return "absent"
	}
	var checks []indCheck
	for _, e := range tr.ExpectedFindings {
		must := e.Must == nil || *e.Must
		got := false
		for _, alt := range strings.Split(e.Kind, "|") {
			_, ok := kinds[alt]
			got = got || ok
		}
		if e.Kind == "config_change" && !must {
			continue // judged below
		}
		checks = append(checks, indCheck{got == must, fmt.Sprintf("%s: %s (want %s)", e.Kind, presence(got), presence(must))})
	}
	crawlers := kinds["crawler_burst"]
	if tr.Crawler != nil && tr.Crawler.DistinctIPs != 0 && len(crawlers) > 0 {
		want, got := tr.Crawler.DistinctIPs, 0.0
		for _, f := range crawlers {
			got = max(got, f.Facts["distinct_ips"])
		}
		checks = append(checks, indCheck{math.Abs(got-want) <= 0.05*want, fmt.Sprintf("crawler distinct_ips %v vs truth %v", got, want)})
	}
	if tr.Phases != nil && tr.Phases.Onset != "" && len(crawlers) > 0 {
		onset, err := time.Parse(time.RFC3339Nano, tr.Phases.Onset)
		d, any := math.Inf(1), false
		for _, f := range crawlers {
			if s, err2 := time.Parse(time.RFC3339Nano, f.Start); f.Start != "" && err == nil && err2 == nil {
				d, any = math.Min(d, math.Abs(s.Sub(onset).Seconds())), true
			}
		}
		if any {
			checks = append(checks, indCheck{d <= 120, fmt.Sprintf("crawler onset off by %.0f s", d)})
		}
	}

	// The change: "enabler" (the most confident config_change finding
	// that blames a change names the commit) or "ruled_out" (named and not
	// blamed); an expectation {config_change, must: false} without a
	// commit: no change blamed at all.
	blame := func(role string) bool { return role == "enabler" || role == "trigger" || role == "candidate" }
	ccs := kinds["config_change"]
	names := func(f indFinding, sha string) bool {
		ref := ""
		if f.Change != nil {
			ref = f.Change.Ref
		}
		return ref != "" && (strings.HasPrefix(ref, sha[:min(7, len(sha))]) || strings.HasPrefix(sha, ref[:min(7, len(ref))]))
	}
	sha, verdict := "", "enabler"
	if tr.ConfigChange != nil && tr.ConfigChange.Commit != "" {
		sha = tr.ConfigChange.Commit
		if tr.ConfigChange.Verdict != "" {
			verdict = tr.ConfigChange.Verdict
		}
	}
	for _, e := range tr.ExpectedFindings {
		if e.Kind == "config_change" && e.Commit != "" && sha == "" {
			sha, verdict = e.Commit, "ruled_out"
			if e.Must == nil || *e.Must {
				verdict = "enabler"
			}
		}
	}
	if sha != "" {
		if verdict == "enabler" {
			var blamed []indFinding
			for _, f := range ccs {
				if f.Role == "enabler" || f.Role == "trigger" {
					blamed = append(blamed, f)
				}
			}
			sort.SliceStable(blamed, func(i, j int) bool { return blamed[i].Confidence > blamed[j].Confidence })
			got := "none"
			if len(blamed) > 0 {
				got = ""
				if blamed[0].Change != nil {
					got = blamed[0].Change.Ref[:min(10, len(blamed[0].Change.Ref))]
				}
			}
			checks = append(checks, indCheck{len(blamed) > 0 && names(blamed[0], sha),
				fmt.Sprintf("change blamed first %s vs truth %s (enabler)", got, sha[:min(10, len(sha))])})
		} else {
			var roles []string
			cleared := true
			for _, f := range ccs {
				if names(f, sha) {
					roles = append(roles, f.Role)
					cleared = cleared && !blame(f.Role)
				}
			}
			ok := len(roles) > 0 && cleared
			checks = append(checks, indCheck{ok, fmt.Sprintf("change %s named and cleared: %v", sha[:min(10, len(sha))], roles)})
		}
	}
	for _, e := range tr.ExpectedFindings {
		if e.Kind == "config_change" && e.Must != nil && !*e.Must && e.Commit == "" {
			var blamed []string
			for _, f := range ccs {
				if blame(f.Role) {
					blamed = append(blamed, f.ID)
				}
			}
			checks = append(checks, indCheck{len(blamed) == 0, fmt.Sprintf("no change blamed: %v", blamed)})
		}
	}
	return checks
}

// indResult is one independent incident analyzed and scored.
type indResult struct {
	Name   string
	Checks []indCheck
	Err    error
	Code   int    // analyze's exit status: 0, or 1 for evidence it called incomplete
	Out    string // analyze's --out directory, holding report.json
}

// Met counts the checks met.
func (r indResult) Met() int {
	n := 0
	for _, c := range r.Checks {
		if c.OK {
			n++
		}
	}
	return n
}

// scoreIndependent analyzes every bundle under root with `aftermath
// analyze` (the CLI in process), parallel at a time, and scores each.
func scoreIndependent(root, out string, parallel int) ([]indResult, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(root, e.Name(), "truth.json")); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s holds no bundle with a truth.json", root)
	}
	results := make([]indResult, len(names))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = scoreOneIndependent(filepath.Join(root, names[i]), filepath.Join(out, names[i]))
				results[i].Name = names[i]
			}
		}()
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()
	return results, nil
}

func scoreOneIndependent(bundleDir, out string) indResult {
	code, err := analyzeBundleCode(bundleDir, out)
	if err != nil {
		return indResult{Err: err}
	}
	var tr indTruth
	if err := readJSON(filepath.Join(bundleDir, "truth.json"), &tr); err != nil {
		return indResult{Err: err}
	}
	var rep struct {
		Findings []indFinding `json:"findings"`
	}
	if err := readJSON(filepath.Join(out, "report.json"), &rep); err != nil {
		return indResult{Err: err}
	}
	return indResult{Checks: scoreTruth(tr, rep.Findings), Code: code, Out: out}
}

var independentRuns once[[]indResult]

// independentResults is every independent incident analyzed (into the
// fixture directory) and scored, once per test binary: each is a day-long
// bundle, and the tests that read one share the run.
func independentResults(t *testing.T) []indResult {
	t.Helper()
	root := testenv.Independent(t)
	return independentRuns.get(t, func() ([]indResult, error) {
		return scoreIndependent(root, filepath.Join(fixtureDir, "independent"), 2)
	})
}

// indSummary is one line per incident: "name: M/N expectations met", and
// the expectations missed.
func indSummary(r indResult) string {
	if r.Err != nil {
		return fmt.Sprintf("%s: could not score: %v", r.Name, r.Err)
	}
	line := fmt.Sprintf("%s: %d/%d expectations met", r.Name, r.Met(), len(r.Checks))
	for _, c := range r.Checks {
		if !c.OK {
			line += "; " + c.String()
		}
	}
	return line
}

// TestIndependentIncidents: every independent incident scores all its
// expectations.
func TestIndependentIncidents(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("analyzes five day-long bundles")
	}
	for _, r := range independentResults(t) {
		if r.Err != nil || r.Met() != len(r.Checks) {
			t.Error(indSummary(r))
		}
	}
}

// TestScoreTruth: the port tells a right report from each way
// score_findings.py calls one wrong, as the script does.
func TestScoreTruth(t *testing.T) {
	yes, no := true, false
	tr := indTruth{}
	tr.ExpectedFindings = []indExpected{{Kind: "crawler_burst", Must: &yes}, {Kind: "healthcheck_starved", Must: &no},
		{Kind: "config_change", Must: &yes, Commit: "55781d4e3483546429cab7ede01ee8c846da9004"}}
	tr.Crawler = &struct {
		DistinctIPs float64 `json:"distinct_ips"`
	}{4165}
	tr.Phases = &struct {
		Onset string `json:"onset"`
	}{"2026-11-03T13:47:00.000Z"}
	change := func(ref string) *struct {
		Ref string `json:"ref"`
	} {
		return &struct {
			Ref string `json:"ref"`
		}{ref}
	}
	right := func() []indFinding {
		return []indFinding{
			{ID: "c1", Kind: "crawler_burst", Role: "trigger", Start: "2026-11-03T13:48:00Z", Facts: map[string]float64{"distinct_ips": 4200}},
			{ID: "c2", Kind: "crawler_burst", Role: "context", Start: "2026-11-03T04:53:00Z", Facts: map[string]float64{"distinct_ips": 10}},
			{ID: "h1", Kind: "healthcheck_starved", Role: "context"},
			{ID: "x1", Kind: "config_change", Role: "enabler", Confidence: 0.6, Change: change("55781d4")},
			{ID: "x2", Kind: "config_change", Role: "candidate", Confidence: 0.4, Change: change("af3bfe9")},
		}
	}
	met := func(fs []indFinding) (n, of int, missed []string) {
		cs := scoreTruth(tr, fs)
		for _, c := range cs {
			if c.OK {
				n++
			} else {
				missed = append(missed, c.Msg)
			}
		}
		return n, len(cs), missed
	}
	if n, of, missed := met(right()); n != of || of != 6 {
		t.Errorf("a right report: %d/%d, missed %v", n, of, missed)
	}
	for _, c := range []struct {
		name   string
		change func([]indFinding)
		missed string
	}{
		{"the crawler only as context", func(fs []indFinding) { fs[0].Role = "context" }, "crawler_burst: absent"},
		{"too many addresses", func(fs []indFinding) { fs[0].Facts["distinct_ips"] = 4400 }, "distinct_ips 4400"},
		{"a start hours early", func(fs []indFinding) { fs[0].Start = "2026-11-03T02:47:00Z" }, "onset off by 39600 s"},
		{"a forbidden kind blamed", func(fs []indFinding) { fs[2].Role = "mechanism" }, "healthcheck_starved: present"},
		{"another change blamed first", func(fs []indFinding) { fs[4].Role, fs[4].Confidence = "enabler", 0.9 }, "change blamed first af3bfe9"},
	} {
		fs := right()
		c.change(fs)
		if _, _, missed := met(fs); len(missed) != 1 || !strings.Contains(missed[0], c.missed) {
			t.Errorf("%s: missed %v, want one saying %q", c.name, missed, c.missed)
		}
	}
}

// analyzeBundle runs `aftermath analyze --format json` on a bundle as a user
// would and returns an error unless it wrote its report: exit 0, or 1 for
// evidence it called incomplete.
func analyzeBundle(bundleDir, out string) error {
	_, err := analyzeBundleCode(bundleDir, out)
	return err
}

// analyzeBundleCode is analyzeBundle with the exit status it ended with.
func analyzeBundleCode(bundleDir, out string) (int, error) {
	root := newRootCmd()
	root.SetArgs([]string{"analyze", "--bundle", bundleDir, "--out", out, "--format", "json"})
	var stderr bytes.Buffer
	root.SetOut(io.Discard)
	root.SetErr(&stderr)
	if err := root.Execute(); err != nil {
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitIncomplete {
			return exitCode(err), fmt.Errorf("analyze: %w (%s)", err, stderr.String())
		}
		return ee.code, nil
	}
	return exitOK, nil
}

// A complete bundle that does not give the clients' timeout
// (site.client_timeout_s) is analysed with the timeout estimated from its
// own answers: nothing the analysis needed is missing, so the exit status
// is 0, and the report says the late count rests on an estimate. The
// estimate's note was a warning and failed every independent bundle with
// "evidence incomplete".
func TestEstimatedTimeoutIsNoMissingEvidence(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("analyzes a day-long bundle")
	}
	// The run TestIndependentIncidents scores (analyze --format json).
	var run *indResult
	for _, x := range independentResults(t) {
		if x.Name == "idle-pinning" {
			run = &x
		}
	}
	if run == nil || run.Err != nil {
		t.Fatalf("the independent idle-pinning bundle was not analyzed: %+v", run)
	}
	if run.Code != exitOK {
		t.Errorf("exit %d, want 0 on complete evidence", run.Code)
	}
	var r map[string]any
	if err := json.Unmarshal(mustRead(t, filepath.Join(run.Out, "report.json")), &r); err != nil {
		t.Fatal(err)
	}
	noted := false
	for _, n := range r["data_quality"].([]any) {
		if m := n.(map[string]any); strings.Contains(m["message"].(string), "the clients' timeout is unknown") {
			noted = true
			if m["severity"] != "info" {
				t.Errorf("the estimated timeout is noted as %v: %v", m["severity"], m["message"])
			}
		}
	}
	if !noted {
		t.Error("data_quality does not say the clients' timeout was estimated")
	}
	caveats, _ := json.Marshal(r["impact"].(map[string]any)["caveats"])
	if !strings.Contains(string(caveats), "(estimated from the log: site.client_timeout_s is not given)") {
		t.Errorf("the late count's caveat does not say its timeout is an estimate: %s", caveats)
	}
}
