package detect

import (
	"math"
	"testing"
)

// TestLongestQueueWait holds the queue run to its arithmetic: 3 workers at
// 0.6 s take 5 requests a second; 9 a second for 10 s leave 40 queued, whom
// the 3 take 8 s to reach (QueueWait), and the queue is deepest at the
// burst's last second. Arrivals within the rate leave no queue, and a queue
// drains once the burst ends, however many seconds follow.
func TestLongestQueueWait(t *testing.T) {
	burst := []int{5, 5, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 0, 0, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}
	w, at, refused := LongestQueueWait(burst, 1, 0.6, 3, 0)
	if math.Abs(w-QueueWait(40, 0.6, 3)) > 1e-9 || at != 11 {
		t.Errorf("longest wait %v s at step %d, want %v s at 11", w, at, QueueWait(40, 0.6, 3))
	}
	if refused != 0 {
		t.Errorf("an unbounded queue refused %v, want none", refused)
	}
	// A 24-connection backlog: the burst's queue grows 4 a second, fills
	// it at the burst's sixth second (step 7), and its last four seconds'
	// 4 a second are refused: 16 connections, however the queue drains
	// after. The wait stops at the full queue's, 24 x 0.6 / 3 = 4.8 s.
	w, at, refused = LongestQueueWait(burst, 1, 0.6, 3, 24)
	if math.Abs(w-QueueWait(24, 0.6, 3)) > 1e-9 || at != 7 || math.Abs(refused-16) > 1e-9 {
		t.Errorf("backlog 24: longest wait %v s at step %d, %v refused; want %v s at 7, 16 refused", w, at, refused, QueueWait(24, 0.6, 3))
	}
	// A cap the queue never reaches changes nothing.
	if w, at, refused := LongestQueueWait(burst, 1, 0.6, 3, 40); math.Abs(w-QueueWait(40, 0.6, 3)) > 1e-9 || at != 11 || refused != 0 {
		t.Errorf("backlog 40, the deepest queue: wait %v s at %d, %v refused; want %v s at 11, none", w, at, refused, QueueWait(40, 0.6, 3))
	}
	if w, at, _ := LongestQueueWait([]int{5, 4, 5, 3, 5}, 1, 0.6, 3, 0); w != 0 || at != -1 {
		t.Errorf("arrivals within the rate: wait %v at %d, want none", w, at)
	}
	// The same load in 2 s steps: the workers take 10 a step.
	if w, _, _ := LongestQueueWait([]int{18, 18, 18, 18, 18}, 2, 0.6, 3, 0); math.Abs(w-QueueWait(40, 0.6, 3)) > 1e-9 {
		t.Errorf("2 s steps: longest wait %v s, want %v s", w, QueueWait(40, 0.6, 3))
	}
}

// TestQueueingFormsAgree: the three forms of Little's law are one law (what
// one gives, the others give back), a full queue of the drainable backlog
// waits exactly the timeout, and the reference numbers hold: 16 workers at
// 0.2 s a request finish 80 a second, and a 4,096-deep queue in front of
// them waits 51.2 s, far past a 10 s client timeout (a backlog of 800 would
// drain within it).
func TestQueueingFormsAgree(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	for _, c := range []struct{ perS, timeS float64 }{{80, 0.2}, {3.5, 12}, {1200, 0.015}} {
		held := LittleHeld(c.perS, c.timeS)
		if !near(LittleTime(held, c.perS), c.timeS) || !near(LittleRate(held, c.timeS), c.perS) {
			t.Errorf("%v a second for %v s holds %v; back: time %v, rate %v", c.perS, c.timeS, held, LittleTime(held, c.perS), LittleRate(held, c.timeS))
		}
	}
	if got := LittleRate(16, 0.2); !near(got, 80) {
		t.Errorf("16 workers at 0.2 s: %v a second, want 80", got)
	}
	if got := QueueWait(4096, 0.2, 16); !near(got, 51.2) {
		t.Errorf("a full 4096 queue waits %v s, want 51.2", got)
	}
	if got := DrainableBacklog(10, 0.2, 16); !near(got, 800) || !near(QueueWait(got, 0.2, 16), 10) {
		t.Errorf("drainable backlog %v (waits %v s), want 800 waiting the 10 s timeout", got, QueueWait(got, 0.2, 16))
	}
}
