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

func pct(share float64) string {
	return strconv.FormatFloat(math.Round(share*100), 'f', 0, 64) + "%"
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
