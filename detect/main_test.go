package detect

import (
	"os"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// fixtureDir holds the bundles tests share (simulateBundle's); TestMain
// removes it at the end.
var fixtureDir string

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithFixtureDir(m, "aftermath-detect-test-", &fixtureDir))
}
