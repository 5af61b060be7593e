package scan

import (
	"math"

	"github.com/aftermath-forensics/aftermath/detect"
)

// madScale turns a median absolute deviation into the standard deviation it
// estimates for normally distributed data.
const madScale = 1.4826

// Baseline is one measure over the baseline slots: its median and spread.
type Baseline struct {
	// Median of the slots' values.
	Median float64 `json:"median"`
	// MAD is the median absolute deviation from Median (unscaled).
	MAD float64 `json:"mad"`
	// N is how many slots it was computed from.
	N int `json:"slots"`
}

// robust computes a Baseline from the slots' values (xs is reordered).
func robust(xs []float64) Baseline {
	if len(xs) == 0 {
		return Baseline{}
	}
	m := median(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - m)
	}
	return Baseline{Median: m, MAD: median(dev), N: len(xs)}
}

func median(xs []float64) float64 { return detect.Median(xs) }

// measure says how one quantity is judged.
type measure struct {
	// count: the values are event counts, so counting noise (Poisson: the
	// square root of the median) bounds the spread from below.
	count bool
	// relFloor bounds the spread from below as a share of the median: the
	// day-to-day drift (weekdays, holidays) that a week of slots cannot show.
	relFloor float64
	// absFloor bounds the spread from below in the measure's own unit.
	absFloor float64
	// ratio is how many times the median an observation must be.
	ratio float64
	// minExcess is the least excess over the median that can alarm: tiny
	// numbers never do, however large their ratio.
	minExcess float64
}

// noise is the spread an observation is measured in.
func (m measure) noise(b Baseline) float64 {
	n := madScale * b.MAD
	if m.count {
		n = math.Max(n, math.Sqrt(b.Median+1))
	}
	return math.Max(n, math.Max(m.relFloor*b.Median, m.absFloor))
}

// score is the excess of o over the baseline's median in units of noise.
func (m measure) score(o float64, b Baseline) float64 {
	n := m.noise(b)
	if n <= 0 {
		n = 1
	}
	return (o - b.Median) / n
}

// rises reports whether o stands out: score at least z, at least ratio times
// the median, and an excess of at least minExcess.
func (m measure) rises(o float64, b Baseline, z float64) bool {
	return b.N > 0 && m.score(o, b) >= z && o >= m.ratio*b.Median && o-b.Median >= m.minExcess
}
