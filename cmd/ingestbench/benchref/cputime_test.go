//go:build linux

package benchref

import (
	"runtime"
	"testing"
	"time"
)

// TestMinorFaultsCountFirstTouches: touching 16 MiB the process never used
// takes a page fault a page, and Measure records them.
func TestMinorFaultsCountFirstTouches(t *testing.T) {
	before := MinorFaults()
	b := make([]byte, 16<<20) // a large allocation: fresh pages, untouched until written
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	runtime.KeepAlive(b)
	var r Result
	r.Measure(time.Now())
	if touched := r.Faults - before; touched < 2048 {
		t.Errorf("touching 4,096 fresh pages counted %d page faults (%d then %d)", touched, before, r.Faults)
	}
}
