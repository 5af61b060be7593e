package detect

import (
	"math"
	"testing"
)

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
