package sources

import (
	"maps"
	"reflect"
	"testing"
	"time"
)

// TestCoverageMeterCountsEveryBucket: the meter holds the count of the
// bucket evidence came in last aside (pending). Evidence that goes back to
// an earlier bucket, comes to bucket 0 first, or counts nothing must land
// where a plain count per bucket puts it, and what is still pending counts
// in Measure and in a Merge into another meter: the last minute of a log
// is always pending when the read ends.
func TestCoverageMeterCountsEveryBucket(t *testing.T) {
	at := func(min, sec int) time.Time { return time.Unix(int64(min)*60+int64(sec), 0).UTC() }
	type ev struct {
		t time.Time
		n int
	}
	evs := []ev{{at(0, 5), 1}, {at(0, 50), 2}, {at(1, 0), 1}, {at(1, 59), 0}, {at(0, 59), 4}, {at(1, 30), 1},
		{at(3, 1), 1}, {at(3, 2), -1}, {at(2, 10), 1}, {at(3, 40), 5}}
	want := map[int64]int{}
	m := NewCoverageMeter(time.Minute)
	for _, e := range evs {
		m.Observe(e.t, e.n)
		if e.n > 0 {
			want[e.t.Unix()/60] += e.n
		}
	}

	merged := NewCoverageMeter(time.Minute)
	merged.Observe(at(3, 0), 2)
	merged.Merge(m)
	merged.flush()
	wantMerged := maps.Clone(want)
	wantMerged[3] += 2
	if !reflect.DeepEqual(merged.buckets, wantMerged) {
		t.Errorf("merged buckets %v, want %v", merged.buckets, wantMerged)
	}

	c := m.Measure("access", at(0, 0), at(4, 0), 0, false)
	if c.Last == nil || !c.Last.Equal(at(4, 0)) {
		t.Errorf("coverage ends at %v, want the end of the last bucket (minute 3): %v", c.Last, at(4, 0))
	}
	if !reflect.DeepEqual(m.buckets, want) {
		t.Errorf("buckets %v, want %v", m.buckets, want)
	}
}
