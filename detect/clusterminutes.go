package detect

import (
	"cmp"
	"math"
	"slices"
)

// clusterMinute is what a cluster's requests added in one minute (unix
// seconds / 60) to its PerMinute (arrivals, by the minute they arrived), Good
// and PHPPerMinute (by the minute they were logged), while the log is read.
// A cluster keeps them in a slice in time order (Cluster.minutes) and
// Traffic.settle moves them into the maps when the reading is done: a
// request then costs a look at the slice's last entry, where it cost three
// map updates, and each map is made once at its size instead of growing
// through every doubling (on the 256 MB benchmark log, 98 clusters' maps
// reach 1,438 minutes, and their growth was most of what the three updates
// cost). A cluster counts fewer than 2^31 requests a minute.
type clusterMinute struct {
	minute         int32
	arrivals, good int32
	php            int32 // PHP's answers, whose seconds phpSeconds sums
	phpSeconds     float64
}

// minuteAt returns the entry of minute m, added empty if new. Requests come
// in log order, so m is nearly always the last entry's minute (the one
// before, for an arrival that a slow answer logged in the next minute) or
// a new one after it. The pointer holds until an entry is added. ok is
// false for a minute that does not fit an int32 (a time some 4,000 years
// away), which the caller counts in the maps themselves.
func (c *Cluster) minuteAt(m int64) (e *clusterMinute, ok bool) {
	if m < math.MinInt32 || m > math.MaxInt32 {
		return nil, false
	}
	m32 := int32(m)
	n := len(c.minutes)
	if n > 0 && c.minutes[n-1].minute == m32 {
		return &c.minutes[n-1], true
	}
	if n == 0 || c.minutes[n-1].minute < m32 {
		c.minutes = append(c.minutes, clusterMinute{minute: m32})
		return &c.minutes[n], true
	}
	if n > 1 && c.minutes[n-2].minute == m32 {
		return &c.minutes[n-2], true
	}
	i, found := slices.BinarySearchFunc(c.minutes, m32, func(e clusterMinute, m int32) int { return cmp.Compare(e.minute, m) })
	if !found {
		c.minutes = slices.Insert(c.minutes, i, clusterMinute{minute: m32})
	}
	return &c.minutes[i], true
}

// observeMinutes counts a request of the cluster that arrived in minute
// arrived and was logged in minute m: in PerMinute, in Good if it was
// goodput, and its PHP seconds in PHPPerMinute if PHP answered it. Before
// the first settle the counts go to the cluster's minutes; after it (a
// request observed once detection began), and for a minute out of their
// range, to the maps, as they did before there were minutes.
func (c *Cluster) observeMinutes(settled bool, arrived, m int64, good, php bool, seconds float64) {
	if !settled {
		if e, ok := c.minuteAt(arrived); ok {
			e.arrivals++
		} else {
			c.PerMinute[arrived]++
		}
		if !good && !php {
			return
		}
		if e, ok := c.minuteAt(m); ok {
			if good {
				e.good++
			}
			if php {
				e.php++
				e.phpSeconds += seconds
			}
			return
		}
	} else {
		c.PerMinute[arrived]++
	}
	if good {
		c.Good[m]++
	}
	if php {
		c.PHPPerMinute[m] += seconds
	}
}

// settle moves the counts of every cluster's minutes into its maps, the
// first time detection asks for the clusters (Clusters, ClusterOf); later
// requests are counted in the maps directly (observeMinutes). A minute's
// PHP seconds were summed in the order the requests came, from zero, as the
// map summed them: the sums are the same to the last bit.
func (t *Traffic) settle() {
	if t.settled {
		return
	}
	t.settled = true
	for _, c := range t.clusters {
		c.settleMinutes()
	}
}

func (c *Cluster) settleMinutes() {
	if len(c.minutes) == 0 {
		return
	}
	var arrivals, good, php int
	for i := range c.minutes {
		e := &c.minutes[i]
		arrivals += min(int(e.arrivals), 1)
		good += min(int(e.good), 1)
		php += min(int(e.php), 1)
	}
	// The maps are empty unless a minute out of range was counted in them.
	if len(c.PerMinute) == 0 {
		c.PerMinute = make(map[int64]int, arrivals)
	}
	if len(c.Good) == 0 {
		c.Good = make(map[int64]int, good)
	}
	if len(c.PHPPerMinute) == 0 {
		c.PHPPerMinute = make(map[int64]float64, php)
	}
	for i := range c.minutes {
		e := &c.minutes[i]
		m := int64(e.minute)
		if e.arrivals > 0 {
			c.PerMinute[m] += int(e.arrivals)
		}
		if e.good > 0 {
			c.Good[m] += int(e.good)
		}
		if e.php > 0 {
			c.PHPPerMinute[m] += e.phpSeconds
		}
	}
	c.minutes = nil
}
