package testenv

import (
	"fmt"
	"os"
	"testing"
)

// RunWithFixtureDir is a package's TestMain for tests that share costly
// fixtures they only read (a simulated bundle, an analysis): it makes a
// directory named after prefix, sets *dir to it for the fixtures to be
// written there, runs the tests and removes the directory, so that nothing
// is left in the temporary directory whatever the tests did.
func RunWithFixtureDir(m *testing.M, prefix string, dir *string) int {
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv: the shared fixtures' directory:", err)
		return 1
	}
	*dir = d
	code := m.Run()
	os.RemoveAll(d)
	return code
}
