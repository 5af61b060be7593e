package configchange

import (
	"math"
	"strings"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
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

// settingValue reads a value in the knob's unit; "" means the knob's default.
// The strings themselves are read by package changes (Number, Seconds), the
// one reading of a setting's value; what is added here is the knob's: its
// unit, its default and a zero that switches the limit off.
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
		f, ok = changes.Number(v)
	case "seconds":
		f, ok = changes.Seconds(v)
	default:
		return 0, false
	}
	if ok && k.zeroIsInf && f == 0 {
		f = math.Inf(1)
	}
	return f, ok
}
