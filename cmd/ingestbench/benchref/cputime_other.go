//go:build !unix

package benchref

import "time"

// CPUTime is 0: this system's CPU time is not read here.
func CPUTime() time.Duration { return 0 }
