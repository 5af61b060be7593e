//go:build unix

package benchref

import (
	"syscall"
	"time"
)

// CPUTime is this process's user+system CPU time, 0 where the system does not
// say: on a shared machine it measures the work done, where wall time also
// measures the neighbours.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// MinorFaults is how many pages this process touched for the first time
// (minor page faults, with the start-up's), 0 where the system does not
// say. On a virtual machine each costs microseconds of system time, so a
// program's memory footprint is part of its CPU time.
func MinorFaults() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Minflt
}
