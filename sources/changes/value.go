package changes

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/aftermath-forensics/aftermath/sources/duration"
)

// A change carries a setting's old and new values as the source wrote them:
// a pool file's "4096", a changes.yaml written by a person ("4,096"), a
// Caddyfile's "10s". Number and Seconds are the one reading of those strings
// as numbers; detect (the ranking, the facts, the prose) and the report use
// them and never parse a value themselves.

// grouped is a decimal number with its thousands grouped by commas, as people
// write them in a change log: "4,096", "1,000,000", "-2,048.5".
var grouped = regexp.MustCompile(`^[+-]?[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?$`)

// Number reads a setting's value as a decimal number: "4096", "4096.0",
// "-1", or grouped by thousands ("4,096"). Anything else is not a number:
// "4k" (php-fpm rejects unit suffixes in a pool's integers), a list such as
// "1,2" (a comma that does not group thousands), "0x10", "inf", text.
func Number(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	if grouped.MatchString(v) {
		v = strings.ReplaceAll(v, ",", "")
	}
	if v == "" || strings.Trim(v, "0123456789.eE+-") != "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// Seconds reads a duration setting in seconds, as Caddy and php-fpm write
// one: "10s", "1m30s", "500ms", "2d", a bare number (php-fpm's
// request_terminate_timeout = 30 means seconds), or "inf" (no limit, +Inf).
func Seconds(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	if v == "inf" {
		return math.Inf(1), true
	}
	if f, ok := Number(v); ok {
		return f, true
	}
	d, err := duration.Parse(v)
	return d.Seconds(), err == nil
}
