package live

import (
	"strconv"
	"strings"

	"github.com/aftermath-forensics/aftermath/sources/failure"
)

// Failed lines counted with no parser: a line filter on the raw JSON as Caddy
// writes it, so that the cost model can flag the minutes whose failed lines
// stand out before any query runs | json (Loki's line filters are its
// cheapest stage). The count is exact, not a superset: it matches a line
// exactly when failedGroup would count it from the parsed status and
// duration.
//
// Caddy's access log is zap's JSON encoder: no space around ':' or ',',
// "status" a top-level integer, "duration" a top-level float in seconds
// written by strconv.AppendFloat(f, 'f', -1, 64) (zap's buffer), so with no
// exponent and no leading zero but the "0" before a point. The lower-case
// keys "status" and "duration" appear nowhere else in the line: header names
// are canonical ("Status"), and a quote inside a string value is escaped
// (\"), which the patterns' leading quote cannot follow. The patterns allow
// spaces and a quoted status too, as other JSON writers may.

// failedLineFilter is the line filter that keeps exactly the lines that
// failed as failedGroup counts them: a failed status (failure.StatusPattern),
// or, when the clients' timeout is known (timeoutS > 0), a duration above it
// (failure.Late).
func failedLineFilter(timeoutS float64) string {
	re := `"status"\s*:\s*(?:` + failure.StatusPattern + `|"(?:` + failure.StatusPattern + `)")[\s,}\]]`
	if timeoutS > 0 {
		re += `|"duration"\s*:\s*(?:` + aboveDecimal(timeoutS) + `)`
	}
	return "|~ " + strconv.Quote(re)
}

// aboveDecimal is a regular expression that, read from the first digit of a
// non-negative decimal number as strconv.FormatFloat(x, 'f', -1, 64) writes
// it, matches exactly when x > t (t >= 0). The number's end needs no anchor:
// each alternative either matches a longer integer part, which is larger
// whatever follows, or the same integer part and a fraction with a digit
// above t's at the first place they differ.
func aboveDecimal(t float64) string {
	s := strconv.FormatFloat(t, 'f', -1, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	var alts []string
	// A longer integer part (no leading zero).
	alts = append(alts, `[1-9][0-9]{`+strconv.Itoa(len(intPart))+`,}`)
	// The same length, greater at the first digit that differs.
	for k := 0; k < len(intPart); k++ {
		// A first digit is never 0, so d+1 >= 1 keeps it so.
		if d := intPart[k] - '0'; d < 9 {
			alts = append(alts, intPart[:k]+digitRange(d+1)+repeatDigits(len(intPart)-k-1))
		}
	}
	// The same integer part and a larger fraction: greater at a digit of
	// t's fraction, or t's whole fraction and a non-zero digit after it.
	same := intPart + `\.`
	for k := 0; k < len(frac); k++ {
		if d := frac[k] - '0'; d < 9 {
			alts = append(alts, same+frac[:k]+digitRange(d+1))
		}
	}
	alts = append(alts, same+frac+`[0-9]*[1-9]`)
	return strings.Join(alts, "|")
}

// digitRange is the class of the digits from lo to 9.
func digitRange(lo byte) string {
	if lo == 9 {
		return "9"
	}
	return "[" + string('0'+lo) + "-9]"
}

// repeatDigits is n digits, "" for none.
func repeatDigits(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "[0-9]"
	}
	return "[0-9]{" + strconv.Itoa(n) + "}"
}
