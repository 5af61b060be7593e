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
	w, at := LongestQueueWait(burst, 1, 0.6, 3)
	if math.Abs(w-QueueWait(40, 0.6, 3)) > 1e-9 || at != 11 {
		t.Errorf("longest wait %v s at step %d, want %v s at 11", w, at, QueueWait(40, 0.6, 3))
	}
	if w, at := LongestQueueWait([]int{5, 4, 5, 3, 5}, 1, 0.6, 3); w != 0 || at != -1 {
		t.Errorf("arrivals within the rate: wait %v at %d, want none", w, at)
	}
	// The same load in 2 s steps: the workers take 10 a step.
	if w, _ := LongestQueueWait([]int{18, 18, 18, 18, 18}, 2, 0.6, 3); math.Abs(w-QueueWait(40, 0.6, 3)) > 1e-9 {
		t.Errorf("2 s steps: longest wait %v s, want %v s", w, QueueWait(40, 0.6, 3))
	}
}
