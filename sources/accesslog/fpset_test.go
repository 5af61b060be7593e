package accesslog

import (
	"math/rand/v2"
	"testing"
)

// TestFPSetAgainstMap runs a window's operations (add the newest, remove
// the oldest, look up) on fpSet and on the map of counts it replaced. The
// fingerprints are drawn from a few homes near the table's end, so that
// runs of full slots wrap around it and removals shift fingerprints back
// across other homes' runs: a removal that shifts a fingerprint before its
// home, or leaves a hole in a run, makes a later look-up miss. Fingerprint
// 0 (no slot can hold it) and fingerprints held twice (whole-second
// repeats) are among them.
func TestFPSetAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	homes := []uint64{fpSetMinSlots - 3, fpSetMinSlots - 1, 0, 1, 5}
	draw := func() uint64 {
		if rng.IntN(50) == 0 {
			return 0
		}
		return homes[rng.IntN(len(homes))] + fpSetMinSlots*uint64(rng.IntN(40))
	}
	var s fpSet
	want := map[uint64]int{}
	var queue []uint64
	for step := range 20000 {
		// The window breathes between empty and more than half of the
		// first table, so that it grows once and runs wrap at both sizes.
		if len(queue) > 0 && (rng.IntN(2) == 0 || len(queue) > 150) {
			fp := queue[0]
			queue = queue[1:]
			s.remove(fp)
			if want[fp]--; want[fp] == 0 {
				delete(want, fp)
			}
		} else {
			fp := draw()
			if rng.IntN(8) == 0 && len(queue) > 0 {
				fp = queue[rng.IntN(len(queue))] // held twice
			}
			queue = append(queue, fp)
			s.add(fp)
			want[fp]++
		}
		for range 4 {
			fp := draw()
			if got := s.has(fp); got != (want[fp] > 0) {
				t.Fatalf("step %d: has(%#x) = %v, the map holds it %d times", step, fp, got, want[fp])
			}
		}
		for fp := range want {
			if !s.has(fp) {
				t.Fatalf("step %d: %#x held %d times, not found", step, fp, want[fp])
			}
		}
	}
	if len(s.slots) <= fpSetMinSlots {
		t.Errorf("the table never grew (%d slots): the test does not cover growing", len(s.slots))
	}
	for _, fp := range queue {
		s.remove(fp)
	}
	if s.n != 0 || s.zeros != 0 {
		t.Errorf("emptied set holds %d fingerprints and %d zeros", s.n, s.zeros)
	}
	for _, fp := range s.slots {
		if fp != 0 {
			t.Fatalf("emptied set has %#x in a slot", fp)
		}
	}
}

// TestFPSetRemoveAbsent: removing a fingerprint not held changes nothing,
// though its home's run of slots is full of others.
func TestFPSetRemoveAbsent(t *testing.T) {
	var s fpSet
	for k := range uint64(5) {
		s.add(7 + k*fpSetMinSlots)
	}
	s.remove(7 + 9*fpSetMinSlots)
	s.remove(0)
	for k := range uint64(5) {
		if !s.has(7 + k*fpSetMinSlots) {
			t.Fatalf("%d lost after removing absent fingerprints", k)
		}
	}
	if s.n != 5 || s.zeros != 0 {
		t.Errorf("n = %d, zeros = %d; want 5, 0", s.n, s.zeros)
	}
}
