package accesslog

// fpSet is the multiset of fingerprints in an overlap window (fpRun): one
// insert, one look-up and one removal for every line read. A Go map costs
// three map operations there (a count, then a removal that reads it back),
// some 700 instructions a line under callgrind; this table costs a few
// dozen. Fingerprints are maphash sums, uniform in their low bits, so they
// index an open-addressed table directly (linear probing, removal by
// backward shift, no tombstones). A fingerprint held twice (two requests
// with whole-second times that share every field) has two slots. The table
// never shrinks, as a map does not: it is sized by the busiest window.
type fpSet struct {
	slots []uint64 // 0 is an empty slot; a power of two long
	n     int      // fingerprints in slots
	zeros int      // fingerprint 0, which slots cannot hold, times held
}

// fpSetMinSlots is the first table's size: a quiet site's window of a
// minute or two.
const fpSetMinSlots = 256

// has reports whether fp is held.
func (s *fpSet) has(fp uint64) bool {
	if fp == 0 {
		return s.zeros > 0
	}
	if len(s.slots) == 0 {
		return false
	}
	mask := uint64(len(s.slots) - 1)
	for i := fp & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case fp:
			return true
		case 0:
			return false
		}
	}
}

// add holds fp once more.
func (s *fpSet) add(fp uint64) {
	if fp == 0 {
		s.zeros++
		return
	}
	// At most half full: a look-up of an absent fingerprint, the usual
	// case, then probes 2.5 slots on average.
	if 2*(s.n+1) > len(s.slots) {
		s.grow()
	}
	s.place(fp)
	s.n++
}

// place puts fp in the first empty slot from its home.
func (s *fpSet) place(fp uint64) {
	mask := uint64(len(s.slots) - 1)
	i := fp & mask
	for s.slots[i] != 0 {
		i = (i + 1) & mask
	}
	s.slots[i] = fp
}

func (s *fpSet) grow() {
	old := s.slots
	s.slots = make([]uint64, max(2*len(old), fpSetMinSlots))
	for _, fp := range old {
		if fp != 0 {
			s.place(fp)
		}
	}
}

// remove drops one of fp's holdings; one not held is ignored.
func (s *fpSet) remove(fp uint64) {
	if fp == 0 {
		s.zeros = max(s.zeros-1, 0)
		return
	}
	if len(s.slots) == 0 {
		return
	}
	mask := uint64(len(s.slots) - 1)
	i := fp & mask
	for s.slots[i] != fp {
		if s.slots[i] == 0 {
			return
		}
		i = (i + 1) & mask
	}
	// Backward shift: each later fingerprint of the run of full slots
	// whose home is not cyclically in (i, j] moves into the hole, which
	// moves to where it was; a look-up then never meets an empty slot
	// before the fingerprint it looks for.
	for j := (i + 1) & mask; s.slots[j] != 0; j = (j + 1) & mask {
		home := s.slots[j] & mask
		if (j-home)&mask >= (j-i)&mask {
			s.slots[i] = s.slots[j]
			i = j
		}
	}
	s.slots[i] = 0
	s.n--
}

// clear empties the set, keeping its table.
func (s *fpSet) clear() {
	clear(s.slots)
	s.n, s.zeros = 0, 0
}
