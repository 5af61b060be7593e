package detect

import (
	"math"
	"testing"
)

// TestHistogramMean: the mean of durations is within the buckets' 5% of the
// true one, for a spread of values and for one repeated value.
func TestHistogramMean(t *testing.T) {
	var h Histogram
	sum := 0.0
	for i := 1; i <= 1000; i++ {
		v := 0.05 * float64(i%40+1)
		h.Add(v)
		sum += v
	}
	if got, want := h.Mean(), sum/1000; math.Abs(got-want) > 0.05*want {
		t.Errorf("mean %v, want %v within 5%%", got, want)
	}
	var one Histogram
	one.Add(0.63)
	if got := one.Mean(); math.Abs(got-0.63) > 0.05*0.63 {
		t.Errorf("mean of 0.63 alone %v", got)
	}
	if !math.IsNaN((&Histogram{}).Mean()) {
		t.Error("empty histogram's mean is not NaN")
	}
}
