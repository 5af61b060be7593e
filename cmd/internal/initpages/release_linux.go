package initpages

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Release drops the executable's read-only pages from the process, after
// the package initialisers ran (call it first thing in main). It does
// nothing where the executable or /proc/self/smaps cannot be read; a mapping
// the kernel refuses to advise is left as it was.
func Release() {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return
	}
	ranges := unwrittenRanges(f, exe)
	f.Close()
	for _, r := range ranges {
		syscall.Syscall(syscall.SYS_MADVISE, uintptr(r.start), uintptr(r.end-r.start), syscall.MADV_DONTNEED)
	}
}

// addressRange is one mapping, [start, end).
type addressRange struct{ start, end uint64 }

// unwrittenRanges returns the mappings of file exe in smaps (the format of
// /proc/PID/smaps, proc(5)) that hold nothing but the file's own pages:
// private, not writable ("r-xp", "r--p"), and with no anonymous page. A
// read-only mapping can still hold written pages: a position-independent
// build's relocated data (RELRO), written by the loader before it was made
// read-only, shows as Anonymous, and dropping it would read the file's
// unrelocated bytes back. A mapping whose Anonymous line is missing is left
// alone too.
func unwrittenRanges(smaps io.Reader, exe string) []addressRange {
	var out []addressRange
	var cur addressRange
	candidate := false
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		// Most lines are a mapping's "Key: value" lines, whose keys start
		// upper case: only a line that starts with a lower-case hex digit
		// can start a mapping, and is looked at further (a third of the
		// release's CPU went to splitting every line into fields).
		line := sc.Bytes()
		if len(line) == 0 || !isLowerHexDigit(line[0]) {
			if v, ok := bytes.CutPrefix(line, []byte("Anonymous:")); ok {
				if candidate && string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))) == "0" {
					out = append(out, cur)
				}
				candidate = false
			}
			continue
		}
		text := string(line)
		if r, ok := mappingOf(text, exe); ok {
			cur, candidate = r, true
		} else if isMappingLine(text) {
			candidate = false
		}
	}
	return out
}

func isLowerHexDigit(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// isMappingLine reports whether line starts a mapping ("start-end perms
// ..."), not one of its "Key: value" lines.
func isMappingLine(line string) bool {
	addr, _, ok := strings.Cut(line, " ")
	lo, hi, ok2 := strings.Cut(addr, "-")
	if !ok || !ok2 {
		return false
	}
	_, err1 := strconv.ParseUint(lo, 16, 64)
	_, err2 := strconv.ParseUint(hi, 16, 64)
	return err1 == nil && err2 == nil
}

// mappingOf returns the range of a mapping line of file exe that is private
// and readable but neither writable nor executable-and-writable: "r-xp" or
// "r--p".
func mappingOf(line, exe string) (addressRange, bool) {
	// address perms offset dev inode pathname (which may hold spaces,
	// and ends in " (deleted)" once the file was replaced).
	fields := strings.Fields(line)
	if len(fields) < 6 || !isMappingLine(line) {
		return addressRange{}, false
	}
	path := strings.TrimSuffix(strings.Join(fields[5:], " "), " (deleted)")
	perms := fields[1]
	if path != exe || len(perms) != 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
		return addressRange{}, false
	}
	lo, hi, _ := strings.Cut(fields[0], "-")
	start, _ := strconv.ParseUint(lo, 16, 64)
	end, _ := strconv.ParseUint(hi, 16, 64)
	if end <= start {
		return addressRange{}, false
	}
	return addressRange{start, end}, true
}
