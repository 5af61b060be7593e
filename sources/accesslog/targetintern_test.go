package accesslog

import (
	"strings"
	"testing"
	"unsafe"
)

// TestTargetIntern: equal targets share one string, which is a copy (the
// buffer it was read from is overwritten by the next line); a different
// target is itself; a target past maxInternTarget is copied, not kept.
func TestTargetIntern(t *testing.T) {
	var in targetIntern
	buf := []byte("/w/Main_Page?action=history")
	first := in.str(buf)
	copy(buf, "/x/")
	if first != "/w/Main_Page?action=history" {
		t.Fatalf("the interned target changed with its buffer: %q", first)
	}
	again := in.str([]byte("/w/Main_Page?action=history"))
	if again != first || unsafe.StringData(again) != unsafe.StringData(first) {
		t.Errorf("an equal target got a string of its own")
	}
	if got := in.str(buf); got != "/x/Main_Page?action=history" {
		t.Errorf("str(%q) = %q", buf, got)
	}
	long := []byte("/" + strings.Repeat("a", maxInternTarget))
	got := in.str(long)
	if got != string(long) {
		t.Fatalf("str of a long target = %q", got)
	}
	for _, s := range in.slots {
		if s == got {
			t.Errorf("a %d-byte target was kept", len(got))
		}
	}
	if len(in.slots) != internSlots {
		t.Errorf("%d slots, want %d", len(in.slots), internSlots)
	}
}
