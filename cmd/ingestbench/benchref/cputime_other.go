//go:build !unix

package benchref

import "time"

// CPUTime is 0: this system's CPU time is not read here.
func CPUTime() time.Duration { return 0 }

// MinorFaults is 0: this system's page faults are not read here.
func MinorFaults() int64 { return 0 }
