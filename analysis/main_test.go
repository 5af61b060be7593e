package analysis_test

import (
	"os"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// testDir holds what the tests of this package share (the simulated week);
// TestMain removes it.
var testDir string

func tempDir() (string, error) { return testDir, nil }

func TestMain(m *testing.M) {
	testenv.SpareCollections()
	os.Exit(testenv.RunWithFixtureDir(m, "aftermath-analysis-test-", &testDir))
}
