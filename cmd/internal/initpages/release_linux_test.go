package initpages

import (
	"hash/crc32"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// A Go executable's mappings as /proc/self/smaps lists them (most of each
// mapping's lines left out): text, read-only data, written data, the heap,
// another file; then a position-independent build's relocated read-only
// data (RELRO), which the loader wrote. Only the first two hold nothing but
// the file's pages.
func TestUnwrittenRangesTakesTheExecutablesFilePagesOnly(t *testing.T) {
	smaps := `00400000-02011000 r-xp 00000000 fd:01 123 /opt/my tools/aftermath
Size:              28740 kB
Rss:               19560 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
02011000-04179000 r--p 01c11000 fd:01 123 /opt/my tools/aftermath
Rss:               21688 kB
Anonymous:             0 kB
04179000-041d1000 rw-p 03d79000 fd:01 123 /opt/my tools/aftermath
Rss:                1288 kB
Anonymous:           256 kB
041d1000-06259000 rw-p 00000000 00:00 0
Anonymous:           512 kB
c000000000-c004000000 rw-p 00000000 00:00 0                              [heap]
Anonymous:         40000 kB
7f0000000000-7f0000020000 r--p 00000000 fd:01 456 /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous:             0 kB
7f0000020000-7f0000030000 r-xp 00000000 fd:01 789 /opt/my tools/aftermath-old
Anonymous:             0 kB
7f0000030000-7f0000040000 r--s 00000000 fd:01 123 /opt/my tools/aftermath
Anonymous:             0 kB
7f0000040000-7f0000050000 r--p 00000000 fd:01 123 /opt/my tools/aftermath
Rss:                  64 kB
Anonymous:            64 kB
7f0000050000-7f0000060000 r--p 00000000 fd:01 123 /opt/my tools/aftermath
Rss:                  64 kB
`
	want := []addressRange{{0x400000, 0x2011000}, {0x2011000, 0x4179000}}
	if got := unwrittenRanges(strings.NewReader(smaps), "/opt/my tools/aftermath"); !reflect.DeepEqual(got, want) {
		t.Errorf("ranges = %x, want %x", got, want)
	}
	// A binary replaced on disk while it runs is still the one mapped.
	deleted := strings.ReplaceAll(smaps, "/opt/my tools/aftermath\n", "/opt/my tools/aftermath (deleted)\n")
	if got := unwrittenRanges(strings.NewReader(deleted), "/opt/my tools/aftermath"); !reflect.DeepEqual(got, want) {
		t.Errorf("deleted: ranges = %x, want %x", got, want)
	}
}

// Release gives back resident pages of this test binary, and the process
// runs on: the pages come back from the file as they are used.
func TestReleaseLowersTheResidentFilePages(t *testing.T) {
	// Read-only data (this string's bytes lie in the binary's read-only
	// data) reads back the same once its page was given back and faulted in
	// again from the file.
	const text = "read-only data the release gives back and the file restores"
	sum := crc32.ChecksumIEEE([]byte(text))
	before := rssFileKiB(t)
	Release()
	after := rssFileKiB(t)
	if after >= before {
		t.Errorf("RssFile %d KiB after Release, %d KiB before: nothing was given back", after, before)
	}
	if got := crc32.ChecksumIEEE([]byte(text)); got != sum {
		t.Errorf("read-only data changed across Release: crc %08x, was %08x", got, sum)
	}
}

func rssFileKiB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("RssFile %q: %v", v, err)
			}
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status (kernel before 4.5)")
	return 0
}
