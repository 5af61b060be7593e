package testenv

import (
	"os"
	"runtime/debug"
)

// testGCPercent is the heap growth, in percent of the live heap, that lets
// the collector start a cycle in a test binary that calls SpareCollections
// (Go's default is 100).
const testGCPercent = 200

// SpareCollections has the collector wait for the heap to triple, not
// double, before its next cycle, unless GOGC is set: a package whose
// parallel tests each load and detect a bundle spent about a tenth of its
// CPU collecting, and the tests' CPU on the shared 2-core machine is what
// the suite is short of, not memory. Only the test binary's collector
// changes: aftermath itself keeps Go's default.
func SpareCollections() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(testGCPercent)
	}
}
