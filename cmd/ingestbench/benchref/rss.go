package benchref

import (
	"os"
	"strconv"
	"strings"
)

// PeakRSSKiB returns this process's peak resident set size in KiB (VmHWM from
// /proc), or 0 where /proc does not say. Unlike getrusage's maxrss, which is
// kept across execve (a child started by a bigger parent starts at the
// parent's), it is this process's own.
func PeakRSSKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
