package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
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

// sharedRun is one bundle's shared Input, made once.
type sharedRun struct {
	once   sync.Once
	in     Input
	loaded *evidence.Loaded
	err    error
}

var sharedRuns sync.Map // simulate.Options as JSON -> *sharedRun

// sharedInput is inputForBundle of the bundle simulated with o (stored
// uncompressed; o.Out is ignored), made once per test binary.
func sharedInput(t *testing.T, o simulate.Options) Input {
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
	r.once.Do(func() {
		o.Out = filepath.Join(fixtureDir, fmt.Sprintf("%s-%d-%g", o.Scenario, o.Seed, o.BaselineHours))
		if _, r.err = simulate.Run(context.Background(), o); r.err != nil {
			return
		}
		r.in, r.loaded, r.err = loadBundleInput(o.Out)
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.in
}

// closeSharedInputs closes what the shared Inputs loaded.
func closeSharedInputs() {
	sharedRuns.Range(func(_, v any) bool {
		if r := v.(*sharedRun); r.loaded != nil {
			r.loaded.Close()
		}
		return true
	})
}
