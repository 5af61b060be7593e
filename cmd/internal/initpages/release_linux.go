package initpages

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Release drops the executable's read-only pages from the process, after
// the package initialisers ran (call it first thing in main). It does
// nothing where the executable or /proc/self/maps cannot be read; a mapping
// the kernel refuses to advise is left as it was.
func Release() {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	ranges := readOnlyRanges(f, exe)
	f.Close()
	for _, r := range ranges {
		syscall.Syscall(syscall.SYS_MADVISE, uintptr(r.start), uintptr(r.end-r.start), syscall.MADV_DONTNEED)
	}
}

// addressRange is one mapping, [start, end).
type addressRange struct{ start, end uint64 }

// readOnlyRanges returns the mappings of file exe in maps (the format of
// /proc/PID/maps, proc(5)) that the process can neither write nor share:
// "r-xp" and "r--p", whose pages are always the file's own.
func readOnlyRanges(maps io.Reader, exe string) []addressRange {
	var out []addressRange
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		// address perms offset dev inode pathname (which may hold spaces,
		// and ends in " (deleted)" once the file was replaced).
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		path := strings.TrimSuffix(strings.Join(fields[5:], " "), " (deleted)")
		perms := fields[1]
		if path != exe || len(perms) != 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		out = append(out, addressRange{start, end})
	}
	return out
}
