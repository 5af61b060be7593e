//go:build accuracy

package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/olekukonko/tablewriter"

	"github.com/aftermath-forensics/aftermath/sources/simulate"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// `make accuracy`: every simulate scenario over several seeds, each bundle
// analyzed by `aftermath analyze` itself (the CLI in process, so the same
// pipeline and flags), each report scored against the bundle's truth.json
// (accuracy_score_test.go). It measures; it does not judge: a wrong trigger
// is a row of the table, not a failure. The test fails only when a
// simulation or an analysis cannot run or writes no readable report.
var (
	accSeeds     = flag.Int("accuracy.seeds", 5, "seeds per scenario")
	accFirstSeed = flag.Int64("accuracy.first-seed", 1, "first seed of each scenario (seeds first-seed .. first-seed+seeds-1); 1-5 have been tuned against, later ones have not")
	accBaseline  = flag.Float64("accuracy.baseline-hours", 3, "hours of ordinary traffic simulated before each window")
	accParallel  = flag.Int("accuracy.parallel", 2, "runs at a time")
	accScenarios = flag.String("accuracy.scenarios", "", "comma-separated scenarios (default: all)")
)

func TestAccuracy(t *testing.T) {
	scenarios := simulate.Scenarios()
	if *accScenarios != "" {
		scenarios = strings.Split(*accScenarios, ",")
	}
	type job struct {
		scenario string
		seed     int64
	}
	var jobs []job
	for _, sc := range scenarios {
		for seed := *accFirstSeed; seed < *accFirstSeed+int64(*accSeeds); seed++ {
			jobs = append(jobs, job{sc, seed})
		}
	}
	dir := t.TempDir()
	t0 := time.Now()
	scores := make([]accScore, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(*accParallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j := jobs[i]
				scores[i], errs[i] = accuracyRun(filepath.Join(dir, fmt.Sprintf("%s-%d", j.scenario, j.seed)), j.scenario, j.seed)
				if errs[i] == nil {
					// The row as it comes: on a busy machine a run in
					// pieces reads the finished runs before the table.
					t.Logf("%s seed %d done: %s", j.scenario, j.seed, strings.Join(scores[i].row()[2:], " | "))
				}
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s seed %d: %v", jobs[i].scenario, jobs[i].seed, err)
		}
	}

	var out bytes.Buffer
	tw := tablewriter.NewWriter(&out)
	tw.Header(accHeader)
	for i, s := range scores {
		if errs[i] == nil {
			_ = tw.Append(s.row())
		}
	}
	_ = tw.Render()
	fmt.Fprintln(&out)
	for _, sc := range scenarios {
		var rows []accScore
		for i, s := range scores {
			if errs[i] == nil && jobs[i].scenario == sc {
				rows = append(rows, s)
			}
		}
		fmt.Fprintln(&out, summary(sc, rows))
	}
	fmt.Fprintf(&out, "\n%d runs (%d seeds from %d, %.3g h baseline, %d at a time) in %s\n", len(jobs), *accSeeds, *accFirstSeed, *accBaseline,
		*accParallel, time.Since(t0).Round(time.Second))

	// Beside the simulator's scores, the independent incidents' (written by
	// a generator that shares no code with aftermath), scored as
	// score_findings.py scores them (independent_test.go).
	// The simulator's table is printed first: Independent ends the test
	// (a skip, outside CI) when the incidents are not there.
	os.Stdout.Write(out.Bytes())
	t1 := time.Now()
	root := testenv.Independent(t)
	results, err := scoreIndependent(root, filepath.Join(dir, "independent"), *accParallel)
	if err != nil {
		t.Errorf("independent incidents: %v", err)
	}
	out.Reset()
	fmt.Fprintln(&out, "\nindependent incidents (shared/data/independent, score_findings.py's checks):")
	for _, r := range results {
		fmt.Fprintln(&out, indSummary(r))
	}
	fmt.Fprintf(&out, "%d incidents in %s\n", len(results), time.Since(t1).Round(time.Second))
	os.Stdout.Write(out.Bytes())
}

// accuracyRun simulates one bundle, analyzes it with the CLI and scores it.
func accuracyRun(dir, scenario string, seed int64) (accScore, error) {
	b, out := filepath.Join(dir, "bundle"), filepath.Join(dir, "out")
	if _, err := simulate.Run(context.Background(), simulate.Options{Scenario: scenario, Out: b, Seed: seed,
		BaselineHours: *accBaseline}); err != nil {
		return accScore{}, err
	}
	if err := analyzeBundle(b, out); err != nil {
		return accScore{}, err
	}
	var tr simulate.Truth
	if err := readJSON(filepath.Join(b, "truth.json"), &tr); err != nil {
		return accScore{}, err
	}
	var rep accReport
	if err := readJSON(filepath.Join(out, "report.json"), &rep); err != nil {
		return accScore{}, err
	}
	s := score(scenario, seed, tr, rep)
	return s, os.RemoveAll(dir) // bundles add up over 70 runs
}
