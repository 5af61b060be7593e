package detect

import (
	"os"
	"testing"
)

// fixtureDir holds the bundles tests share (simulateBundle's); TestMain
// removes it at the end.
var fixtureDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "aftermath-detect-test-")
	if err != nil {
		panic(err)
	}
	fixtureDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
