package simulate

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// The package's tests share the bundles they only read: each scenario at
// seed 1 after two hours of baseline is simulated once per test binary
// (TestBundles, TestExistingScenariosUnchanged and TestShapeLikeLab each made
// one, seconds a run). Two hours, not less: the wedge's first 5xx comes
// before its queue fills after only half an hour of baseline. A test that
// needs other options runs its own.

// TestMain gives the shared bundles a directory and removes it at the end.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithFixtureDir(m, "aftermath-simulate-test-", &fixtureDir))
}

// fixtureDir holds the shared bundles; TestMain removes it.
var fixtureDir string

// seedOneOptions are the shared bundles' options.
func seedOneOptions(scenario string) Options {
	return Options{Scenario: scenario, Seed: 1, BaselineHours: 2, StoredGzip: true}
}

// seedOneRun is one scenario's shared run, made once.
type seedOneRun struct {
	once sync.Once
	sum  Summary
	err  error
}

var seedOneRuns sync.Map // scenario -> *seedOneRun

// seedOne is the scenario's run with seedOneOptions, simulated once. Tests
// must not write into its bundle.
func seedOne(t *testing.T, scenario string) Summary {
	t.Helper()
	v, _ := seedOneRuns.LoadOrStore(scenario, &seedOneRun{})
	r := v.(*seedOneRun)
	r.once.Do(func() {
		o := seedOneOptions(scenario)
		o.Out = filepath.Join(fixtureDir, scenario)
		r.sum, r.err = Run(context.Background(), o)
	})
	if r.err != nil {
		t.Fatalf("Run(%s): %v", scenario, r.err)
	}
	return r.sum
}
