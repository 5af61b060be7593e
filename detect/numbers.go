package detect

import (
	"math"
	"strconv"

	"github.com/aftermath-forensics/aftermath/prose"
)

// FormatInt groups thousands with commas ("8,001"), as the reference postmortem
// writes its numbers.
func FormatInt(n int64) string { return prose.GroupDigits(n) }

func fmtInt(n int) string { return FormatInt(int64(n)) }

// fmtNum prints a count that may be fractional (a median): whole numbers with
// thousands separators, others with one decimal.
func fmtNum(v float64) string {
	if v == math.Trunc(v) || math.Abs(v) >= 100 {
		return FormatInt(int64(math.Round(v)))
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// fmtSec prints seconds with precision that suits their size ("0.3 s", "77 s").
func fmtSec(v float64) string {
	switch {
	case v >= 100:
		return FormatInt(int64(math.Round(v))) + " s"
	case v >= 10:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64) + " s"
	}
	return strconv.FormatFloat(v, 'g', 2, 64) + " s"
}

func pct(share float64) string {
	return strconv.FormatFloat(math.Round(share*100), 'f', 0, 64) + "%"
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
