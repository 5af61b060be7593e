package scan

import (
	"fmt"
	"math"

	"github.com/aftermath-forensics/aftermath/detect"
)

func share(part, whole int) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

func round(v float64, digits int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

func count(n int) string { return detect.FormatInt(int64(n)) }

// num prints a value that may be fractional (a median): whole numbers with
// thousands separators, others with one decimal.
func num(v float64) string {
	if v == math.Trunc(v) || math.Abs(v) >= 100 {
		return detect.FormatInt(int64(math.Round(v)))
	}
	return fmt.Sprintf("%.1f", v)
}

func pct(s float64) string { return fmt.Sprintf("%.0f%%", s*100) }

func secs(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f s", v)
	}
	return fmt.Sprintf("%.2g s", v)
}
