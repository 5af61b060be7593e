package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// Tests that only read a simulated bundle's Input share it: the bundle is
// simulated, loaded and analysed once per test binary (TestWordPressRule and
// TestProfileKeepsCopiesOfBorrowedTargets each simulated and analysed a
// WordPress crawl of their own). Propose must not change the Input it is
// given; the tests that share one are not parallel.

// TestMain gives the shared bundles a directory, and closes what was loaded
// for them (the spills and the config repositories' copies) at the end.
func TestMain(m *testing.M) {
	code := testenv.RunWithFixtureDir(m, "aftermath-rules-test-", &fixtureDir)
	closeSharedInputs()
	os.Exit(code)
}

// fixtureDir holds the shared bundles; TestMain removes it.
var fixtureDir string

// sharedRun is one bundle, simulated once, and its Input, made once.
type sharedRun struct {
	simulated sync.Once
	dir       string
	simErr    error
	analysed  sync.Once
	in        Input
	loaded    *evidence.Loaded
	err       error
}

var (
	sharedRuns  sync.Map // simulate.Options as JSON -> *sharedRun
	sharedCount atomic.Int64
)

// sharedBundle is the directory of the bundle simulated with o (stored
// uncompressed; o.Out is ignored), made once per test binary. Tests must not
// write into it.
func sharedBundle(t *testing.T, o simulate.Options) string {
	t.Helper()
	return sharedRunOf(t, o).dir
}

// sharedInput is inputForBundle of sharedBundle(o), made once per test
// binary.
func sharedInput(t *testing.T, o simulate.Options) Input {
	t.Helper()
	r := sharedRunOf(t, o)
	r.analysed.Do(func() { r.in, r.loaded, r.err = loadBundleInput(r.dir) })
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.in
}

// sharedRunOf is o's shared run, its bundle simulated.
func sharedRunOf(t *testing.T, o simulate.Options) *sharedRun {
	t.Helper()
	if testing.Short() {
		t.Skip("simulation in -short mode")
	}
	o.Out, o.StoredGzip = "", true
	key, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := sharedRuns.LoadOrStore(string(key), &sharedRun{})
	r := v.(*sharedRun)
	r.simulated.Do(func() {
		// A directory per run: options that differ in a crawler or a
		// scale alone are other bundles.
		o.Out = filepath.Join(fixtureDir, fmt.Sprintf("bundle-%d", sharedCount.Add(1)))
		r.dir = o.Out
		_, r.simErr = simulate.Run(context.Background(), o)
	})
	if r.simErr != nil {
		t.Fatal(r.simErr)
	}
	return r
}

// crawlerBacklogHour is the reference incident after an hour of baseline,
// shared by TestReadersOnRecordedTraffic (its truth) and
// TestProfileKeepsCopiesOfBorrowedTargets (its Input).
var crawlerBacklogHour = simulate.Options{Scenario: "crawler-backlog", Seed: 3, BaselineHours: 1}

// closeSharedInputs closes what the shared Inputs loaded.
func closeSharedInputs() {
	sharedRuns.Range(func(_, v any) bool {
		if r := v.(*sharedRun); r.loaded != nil {
			r.loaded.Close()
		}
		return true
	})
}
