package scan_test

import (
	"os"
	"testing"
)

// testDir holds what the tests of this package share (the simulated week);
// TestMain removes it.
var testDir string

func tempDir() (string, error) { return testDir, nil }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "aftermath-scan-test-")
	if err != nil {
		panic(err)
	}
	testDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
