package request

import (
	"strings"
	"testing"
)

// TestAddressMemoComparesTheString: a memo finds a string by its address,
// and must still tell apart two strings at one address: a prefix of a
// string starts where the string does. A memo that took the address for the
// string would hand the prefix the string's value. Equal bytes elsewhere
// are the same string, remembered or not as their own slot says.
func TestAddressMemoComparesTheString(t *testing.T) {
	var m AddressMemo[int]
	whole := strings.Repeat("Mozilla/5.0 ", 4)
	v, remembered := m.Slot(whole)
	if remembered || *v != 0 {
		t.Fatalf("an empty memo remembered %q: %d", whole, *v)
	}
	*v = 1
	if v, remembered := m.Slot(whole); !remembered || *v != 1 {
		t.Errorf("%q asked again: %d, %v; want 1, true", whole, *v, remembered)
	}
	prefix := whole[:len(whole)/2]
	if v, remembered := m.Slot(prefix); remembered || *v != 0 {
		t.Errorf("the prefix at the same address was taken for the whole: %d, %v", *v, remembered)
	}
	// The prefix took the slot: the whole is derived again, not mistaken.
	if v, remembered := m.Slot(whole); remembered || *v != 0 {
		t.Errorf("the whole after its prefix took the slot: %d, %v", *v, remembered)
	}
	// More strings than slots: each is remembered until another takes its slot,
	// and never answered with another's value.
	values := map[string]int{}
	for i := range 3 * AddressMemoSlots {
		s := strings.Repeat("x", i+1)
		v, remembered := m.Slot(s)
		if remembered {
			t.Fatalf("%d-byte string remembered before it was seen", i+1)
		}
		*v = i + 1
		values[s] = i + 1
	}
	for s, want := range values {
		if v, remembered := m.Slot(s); remembered && *v != want {
			t.Errorf("a %d-byte string answered with %d", len(s), *v)
		}
	}
}
