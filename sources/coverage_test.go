package sources

import (
	"maps"
	"reflect"
	"testing"
	"time"
)

// TestCoverageMeterCountsEveryBucket: the meter adds to the page of buckets
// evidence came in last without looking it up. Evidence that goes back to an
// earlier bucket or page, comes to bucket 0 first, comes before 1970 (bucket
// -1 is the last of page -1, not the first of page 0), in the next page, or
// counts nothing must land where a plain count per bucket puts it, in the
// meter and in a Merge into another meter.
func TestCoverageMeterCountsEveryBucket(t *testing.T) {
	at := func(min, sec int) time.Time { return time.Unix(int64(min)*60+int64(sec), 0).UTC() }
	type ev struct {
		t time.Time
		n int
	}
	evs := []ev{{at(0, 5), 1}, {at(0, 50), 2}, {at(1, 0), 1}, {at(1, 59), 0}, {at(0, 59), 4}, {at(1, 30), 1},
		{at(3, 1), 1}, {at(3, 2), -1}, {at(2, 10), 1}, {at(bucketsPerPage+1, 0), 3}, {at(-1, -30), 2}, {at(3, 40), 5}}
	want := map[int64]int{}
	m := NewCoverageMeter(time.Minute)
	for _, e := range evs {
		m.Observe(e.t, e.n)
		if e.n > 0 {
			want[e.t.UnixNano()/int64(time.Minute)] += e.n
		}
	}

	merged := NewCoverageMeter(time.Minute)
	merged.Observe(at(3, 0), 2)
	merged.Merge(m)
	wantMerged := maps.Clone(want)
	wantMerged[3] += 2
	if got := bucketCounts(merged); !reflect.DeepEqual(got, wantMerged) {
		t.Errorf("merged buckets %v, want %v", got, wantMerged)
	}
	if m.count(-1) != 2 || m.count(bucketsPerPage-1) != 0 {
		t.Errorf("bucket -1 holds %d and bucket %d holds %d, want 2 and 0", m.count(-1), bucketsPerPage-1, m.count(bucketsPerPage-1))
	}

	c := m.Measure("access", at(0, 0), at(4, 0), 0, false)
	if c.Last == nil || !c.Last.Equal(at(4, 0)) {
		t.Errorf("coverage ends at %v, want the end of the last bucket (minute 3): %v", c.Last, at(4, 0))
	}
	if got := bucketCounts(m); !reflect.DeepEqual(got, want) {
		t.Errorf("buckets %v, want %v", got, want)
	}
}

// bucketCounts is m's count of each bucket that holds evidence.
func bucketCounts(m *CoverageMeter) map[int64]int {
	out := map[int64]int{}
	m.eachBucket(func(k int64, n int) { out[k] = n })
	return out
}
