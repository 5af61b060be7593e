package detect

import (
	"math"
	"strconv"
	"strings"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/duration"
)

// ChangedValues names the setting a change sets as the mechanism table knows
// it ("listen.backlog"; "" for one it does not know) and reads its old and
// new values as numbers the way the ranking does (an absent value is the
// setting's default); ok is false when either is not a number.
func ChangedValues(c sources.Change) (setting string, old, nw float64, ok bool) {
	k := knobFor(c.Key)
	if k == nil {
		return "", 0, 0, false
	}
	old, okOld := settingValue(c.Old, k)
	nw, okNew := settingValue(c.New, k)
	return k.name, old, nw, okOld && okNew
}

// settingValue parses a value for comparison; "" means the knob's default.
func settingValue(v string, k *knob) (float64, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		v = k.def
	}
	if v == "" {
		return 0, false
	}
	var f float64
	var ok bool
	switch k.unit {
	case "count":
		var err error
		f, err = strconv.ParseFloat(v, 64)
		ok = err == nil
	case "seconds":
		f, ok = parseDurationS(v)
	default:
		return 0, false
	}
	if ok && k.zeroIsInf && f == 0 {
		f = math.Inf(1)
	}
	return f, ok
}

// parseSeconds reads Caddy and php-fpm durations: "10s", "1m30s", "500ms",
// "2d", a bare number (seconds) or "inf".
func parseDurationS(v string) (float64, bool) {
	if v == "inf" {
		return math.Inf(1), true
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return f, true
	}
	d, err := duration.Parse(v)
	return d.Seconds(), err == nil
}
