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

// bucketByLog is the bucket of v by its definition: one logarithm. bucketOf
// answers the same from tables built with it, without a logarithm per value
// (three per request in Traffic.observe).
func bucketByLog(v float64) int {
	if v <= histMin {
		return 0
	}
	b := int(math.Log(v/histMin)/histLogGrowth) + 1
	if b >= histBuckets {
		return histBuckets - 1
	}
	return b
}

// histEdges[b] is the least value bucketByLog puts in bucket b or above,
// for b in 1..histBuckets-1; histEdges[histBuckets] is +Inf, so that a
// step up past the last edge never happens.
//
// histCellBucket is the bucket of the least value of each cell of the
// range: a cell is one value of a float64's top 16 bits (sign, exponent,
// four bits of mantissa), a span of at most 1/16 = 6.25% above its least
// value, narrower than a bucket's 10%, so that a value lies in its cell's
// bucket or, past one edge, the next.
var (
	histEdges      [histBuckets + 1]float64
	histCellFirst  uint64
	histCellBucket []uint8
)

const histCellShift = 48

func init() {
	for b := 1; b < histBuckets; b++ {
		histEdges[b] = leastInBucket(b)
	}
	histEdges[histBuckets] = math.Inf(1)
	histCellFirst = math.Float64bits(histMin) >> histCellShift
	last := math.Float64bits(histEdges[histBuckets-1]) >> histCellShift
	histCellBucket = make([]uint8, last-histCellFirst+1)
	for i := range histCellBucket {
		histCellBucket[i] = uint8(bucketByLog(math.Float64frombits((histCellFirst + uint64(i)) << histCellShift)))
	}
}

// leastInBucket is the least positive float64 that bucketByLog puts in
// bucket b or above, found by bisecting the bits of positive floats (whose
// order is that of their values).
func leastInBucket(b int) float64 {
	// 1e300 s is in the last bucket; near MaxFloat64, v/histMin overflows
	// and the logarithm's bucket is garbage.
	lo, hi := math.Float64bits(histMin), math.Float64bits(1e300)
	for lo+1 < hi { // bucketByLog(lo) < b <= bucketByLog(hi)
		mid := lo + (hi-lo)/2
		if bucketByLog(math.Float64frombits(mid)) >= b {
			hi = mid
		} else {
			lo = mid
		}
	}
	return math.Float64frombits(hi)
}

// bucketOf is the histogram bucket of v, as bucketByLog puts it.
func bucketOf(v float64) int {
	if v <= histMin {
		return 0
	}
	if v >= histEdges[histBuckets-1] {
		return histBuckets - 1
	}
	b := int(histCellBucket[math.Float64bits(v)>>histCellShift-histCellFirst])
	for v >= histEdges[b+1] {
		b++
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
