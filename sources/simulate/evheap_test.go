package simulate

import (
	"math/rand/v2"
	"testing"
)

// TestEvHeapOrder: events come out by time, ties in push order, whatever
// the pushes and pops interleaved (the run's determinism rests on it); many
// share a time, as a minute's arrivals do.
func TestEvHeapOrder(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var h evHeap
	var seq uint64
	last := event{at: -1}
	popped := 0
	for round := range 2000 {
		for range rnd.IntN(8) {
			seq++
			// Never before the last event popped, as the engine schedules.
			h.push(event{at: max(last.at, 0) + rnd.Int64N(5), seq: seq})
		}
		for range rnd.IntN(8) {
			if len(h) == 0 {
				break
			}
			e := h.pop()
			if e.less(&last) {
				t.Fatalf("round %d: popped (%d, %d) after (%d, %d)", round, e.at, e.seq, last.at, last.seq)
			}
			last = e
			popped++
		}
	}
	for len(h) > 0 {
		e := h.pop()
		if e.less(&last) {
			t.Fatalf("draining: popped (%d, %d) after (%d, %d)", e.at, e.seq, last.at, last.seq)
		}
		last = e
		popped++
	}
	if uint64(popped) != seq {
		t.Errorf("popped %d of %d events", popped, seq)
	}
}
