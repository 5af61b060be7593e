package configchange

import (
	"strings"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
)

// riskOf compares old and new along the knob's direction.
func riskOf(c sources.Change, k *knob) int {
	ck := changes.CanonicalKey(c.Key)
	if strings.HasPrefix(ck, "rate_limit") {
		return rateLimitRisk(ck, c)
	}
	if k.name == "read_timeout" && c.New == "" && c.Old != "" {
		// No read timeout at all: a queued health check can no longer fail,
		// and the outage turns silent (design.md). Not safer.
		return +1
	}
	if k.raises == 0 {
		return 0
	}
	o, ok1 := settingValue(c.Old, k)
	n, ok2 := settingValue(c.New, k)
	if !ok1 || !ok2 || o == n {
		return 0
	}
	if n > o {
		return k.raises
	}
	return -k.raises
}

// rateLimitRisk: a zone removed or loosened (more events, a shorter window)
// lets more through; added or tightened lets less; a changed matcher or key
// may do either.
func rateLimitRisk(ck string, c sources.Change) int {
	rest := strings.TrimPrefix(ck, "rate_limit.zone.")
	if ck == "rate_limit" || rest != ck && !strings.Contains(rest, ".") { // the directive or a zone itself
		switch {
		case c.New == "" && c.Old != "":
			return +1
		case c.Old == "" && c.New != "":
			return -1
		}
		return 0
	}
	if c.New == "" && c.Old != "" && strings.HasSuffix(ck, ".events") {
		return +1
	}
	var dir int
	switch {
	case strings.HasSuffix(ck, ".events"):
		dir = +1
	case strings.HasSuffix(ck, ".window"):
		dir = -1
	default:
		return 0
	}
	unit := "count"
	if dir < 0 {
		unit = "seconds"
	}
	o, ok1 := settingValue(c.Old, &knob{unit: unit})
	n, ok2 := settingValue(c.New, &knob{unit: unit})
	if !ok1 || !ok2 || o == n {
		return 0
	}
	if n > o {
		return dir
	}
	return -dir
}
