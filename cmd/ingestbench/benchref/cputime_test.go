//go:build linux

package benchref

import (
	"syscall"
	"testing"
	"time"
)

// TestMinorFaultsCountFirstTouches: touching 16 MiB the process never used
// takes a page fault a 4 KiB page, and Measure records them. The memory is
// mapped here and kept to small pages (MADV_NOHUGEPAGE), so that a machine
// whose kernel backs memory with huge pages by default counts the same.
func TestMinorFaultsCountFirstTouches(t *testing.T) {
	const size, page = 16 << 20, 4096
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	if err := syscall.Madvise(b, syscall.MADV_NOHUGEPAGE); err != nil {
		t.Logf("MADV_NOHUGEPAGE: %v (the kernel has no huge pages)", err)
	}
	before := MinorFaults()
	for i := 0; i < len(b); i += page {
		b[i] = 1
	}
	var r Result
	r.Measure(time.Now())
	if touched := r.Faults - before; touched < size/page*9/10 {
		t.Errorf("touching %d fresh pages counted %d page faults (%d then %d)", size/page, touched, before, r.Faults)
	}
}
