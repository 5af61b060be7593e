package request

import "unsafe"

// An AddressMemo remembers a value derived from each of the strings seen
// lately, finding a string by where its bytes are rather than by hashing
// them: the log's parser and the spill intern the strings that repeat (a
// user agent, a language), so one that comes back comes back at the same
// address, and a memo of a few hundred slots answers most of a log's
// without reading their hundred-odd bytes. A slot's string is compared in
// full, which for the same string stops at its address: a string at the
// address of another, with other bytes or another length, is never taken
// for it. The memo holds the strings it remembers, so their bytes are not
// reused for others meanwhile. The zero AddressMemo is empty and ready.
type AddressMemo[V any] struct {
	slots *[AddressMemoSlots]addressMemoSlot[V]
}

type addressMemoSlot[V any] struct {
	s  string
	v  V
	in bool
}

// AddressMemoSlots is the size of an AddressMemo (a power of two): strings
// past it share slots, each remembered until another takes its slot.
const AddressMemoSlots = 1 << addressMemoBits

const addressMemoBits = 8

// Slot returns s's value and whether it was remembered. When it was not,
// the slot is s's from now on, holding the zero value for the caller to
// set: the value derived from s alone.
func (m *AddressMemo[V]) Slot(s string) (v *V, remembered bool) {
	if m.slots == nil {
		m.slots = new([AddressMemoSlots]addressMemoSlot[V])
	}
	at := uint64(uintptr(unsafe.Pointer(unsafe.StringData(s))))
	e := &m.slots[at*0x9e3779b97f4a7c15>>(64-addressMemoBits)]
	if e.in && e.s == s {
		return &e.v, true
	}
	*e = addressMemoSlot[V]{s: s, in: true}
	return &e.v, false
}
