package detect

import "math"

// Histogram is a fixed log-scale histogram of durations in seconds: 10% wide
// buckets from 1 ms to about 20 minutes. Fixed size keeps per-minute latency
// memory constant however many requests a minute holds.
type Histogram struct {
	Counts [histBuckets]uint32
	N      int
}

const (
	histBuckets = 150
	histMin     = 0.001
	histGrowth  = 1.1
)

var histLogGrowth = math.Log(histGrowth)

func bucketOf(v float64) int {
	if v <= histMin {
		return 0
	}
	b := int(math.Log(v/histMin)/histLogGrowth) + 1
	if b >= histBuckets {
		return histBuckets - 1
	}
	return b
}

// upper bound of bucket b in seconds.
func bucketUpper(b int) float64 {
	return histMin * math.Pow(histGrowth, float64(b))
}

// Add records one duration.
func (h *Histogram) Add(v float64) {
	h.Counts[bucketOf(v)]++
	h.N++
}

// Merge adds other into h.
func (h *Histogram) Merge(other *Histogram) {
	for i, c := range other.Counts {
		h.Counts[i] += c
	}
	h.N += other.N
}

// Quantile returns the upper bound of the bucket holding quantile q (0-1): an
// overestimate by at most 10%. It returns NaN for an empty histogram.
func (h *Histogram) Quantile(q float64) float64 {
	if h.N == 0 {
		return math.NaN()
	}
	rank := uint32(math.Ceil(q * float64(h.N)))
	if rank == 0 {
		rank = 1
	}
	var seen uint32
	for b, c := range h.Counts {
		seen += c
		if seen >= rank {
			return bucketUpper(b)
		}
	}
	return bucketUpper(histBuckets - 1)
}

// Mean is the mean of the recorded durations, each taken at its bucket's
// geometric middle (within 5% of the true value); NaN for an empty histogram.
// A queue drains at the workers' mean time per request, not their median.
func (h *Histogram) Mean() float64 {
	if h.N == 0 {
		return math.NaN()
	}
	sum := 0.0
	for b, c := range h.Counts {
		if c == 0 {
			continue
		}
		mid := bucketUpper(b) / math.Sqrt(histGrowth)
		if b == 0 {
			mid = histMin
		}
		sum += float64(c) * mid
	}
	return sum / float64(h.N)
}
