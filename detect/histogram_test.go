package detect

import (
	"math"
	"math/rand/v2"
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

// TestBucketOfIsBucketByLog: the table lookup puts every value in the bucket
// the logarithm does, at and around every edge (ten floats each way), at the
// bounds, and over a million values spread log-uniformly from 0.1 ms to an
// hour. The edges are where rounding decides: an edge computed as
// histMin*1.1^b instead of found with the logarithm is off by a float at some
// of them, and this test fails on it.
func TestBucketOfIsBucketByLog(t *testing.T) {
	check := func(v float64) {
		t.Helper()
		if got, want := bucketOf(v), bucketByLog(v); got != want {
			t.Fatalf("bucketOf(%v) = %d, the logarithm's bucket is %d", v, got, want)
		}
	}
	for b := 1; b < histBuckets; b++ {
		edge := histEdges[b]
		if bucketByLog(edge) != b || bucketByLog(math.Nextafter(edge, 0)) != b-1 {
			t.Fatalf("edge %d at %v is not where the logarithm's bucket %d starts", b, edge, b)
		}
		below, above := edge, edge
		for range 10 {
			check(below)
			check(above)
			below, above = math.Nextafter(below, 0), math.Nextafter(above, math.Inf(1))
		}
		// the formula's own idea of the edge, which rounding may put a
		// float or two off the edge found
		check(histMin * math.Pow(histGrowth, float64(b-1)))
	}
	// Not above 1e305: there v/histMin overflows and the logarithm's
	// bucket is out of range (Add panicked), where bucketOf says the last.
	for _, v := range []float64{math.Inf(-1), -1, 0, math.SmallestNonzeroFloat64, histMin, math.Nextafter(histMin, 1),
		0.0011, 1, 10, 1e4, 1e300} {
		check(v)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		check(math.Exp(math.Log(1e-4) + rnd.Float64()*(math.Log(3600)-math.Log(1e-4))))
	}
}

// TestBucketEdgesAreNotTheFormulas shows why the edges are searched for, not
// computed: somewhere histMin*1.1^(b-1) and the logarithm disagree about
// which side of the edge a value is on. Were they to agree everywhere, the
// edges test would check less than it claims.
func TestBucketEdgesAreNotTheFormulas(t *testing.T) {
	differ := 0
	for b := 1; b < histBuckets; b++ {
		if histEdges[b] != histMin*math.Pow(histGrowth, float64(b-1)) {
			differ++
		}
	}
	if differ == 0 {
		t.Error("every edge is histMin*1.1^(b-1): the search for them tests nothing the formula does not")
	}
	t.Logf("%d of %d edges differ from histMin*1.1^(b-1)", differ, histBuckets-1)
}

// BenchmarkBucketOf is the bucket of durations spread as a site's are,
// by the table (Table) and by the logarithm it replaced (Log).
func BenchmarkBucketOf(b *testing.B) {
	rnd := rand.New(rand.NewPCG(1, 2))
	durations := make([]float64, 4096)
	for i := range durations {
		durations[i] = math.Exp(math.Log(1e-3) + rnd.Float64()*(math.Log(30)-math.Log(1e-3)))
	}
	for _, bc := range []struct {
		name   string
		bucket func(float64) int
	}{{"Table", bucketOf}, {"Log", bucketByLog}} {
		b.Run(bc.name, func(b *testing.B) {
			sum := 0
			i := 0
			for b.Loop() {
				sum += bc.bucket(durations[i&4095])
				i++
			}
			if sum < 0 {
				b.Fatal(sum)
			}
		})
	}
}
