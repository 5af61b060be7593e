package accesslog

import (
	"fmt"
	"hash/maphash"
	"testing"
	"unsafe"
)

// Two targets of one length in one slot: each read gives its own bytes,
// and a string handed out stays what it was when a newer target takes its
// slot (a cache that told targets apart by slot and length, or wrote a new
// target into the old one's memory, would answer with the other page).
func TestURICacheTellsTargetsSharingASlot(t *testing.T) {
	var c uriCache
	c.get([]byte("/")) // sets the seed
	slotOf := func(s string) uint64 { return maphash.String(c.seed, s) & (uriSlots - 1) }
	first := map[uint64]string{}
	var a, b string
	for i := 0; b == ""; i++ {
		s := fmt.Sprintf("/w/Page_%05d", i)
		if o, ok := first[slotOf(s)]; ok {
			a, b = o, s
		}
		first[slotOf(s)] = s
	}
	gotA := c.get([]byte(a))
	if gotB := c.get([]byte(b)); gotB != b {
		t.Fatalf("get(%q) = %q", b, gotB)
	}
	if gotA != a {
		t.Fatalf("the string handed out for %q became %q when %q took its slot", a, gotA, b)
	}
	if again := c.get([]byte(a)); again != a {
		t.Fatalf("get(%q) after %q = %q", a, b, again)
	}
}

// A target that comes again is handed the string of its first time, not a
// copy: what the cache is for.
func TestURICacheSharesARepeatedTarget(t *testing.T) {
	var c uriCache
	buf := []byte("/index.php?title=Special:Search&search=x")
	first := c.get(buf)
	buf[len(buf)-1] = 'y' // the line's buffer is reused: the string must not view it
	if first != "/index.php?title=Special:Search&search=x" {
		t.Fatalf("the string handed out views the line: %q", first)
	}
	buf[len(buf)-1] = 'x'
	again := c.get(buf)
	if first != "/index.php?title=Special:Search&search=x" || again != first {
		t.Fatalf("got %q then %q", first, again)
	}
	if unsafe.StringData(again) != unsafe.StringData(first) {
		t.Errorf("the repeated target was copied again")
	}
	long := make([]byte, maxCachedURI+1)
	for i := range long {
		long[i] = 'a'
	}
	if s := c.get(long); s != string(long) {
		t.Errorf("a long target came back as %d bytes", len(s))
	}
}
