package configchange

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
)

// groupChanges keeps together the changes one edit made to one thing, so
// that it is judged (and reported) once: the keys of one rate-limit zone, or
// a Dockerfile's base image and PHP version, in one commit.
func groupChanges(cs []sources.Change) [][]sources.Change {
	var out [][]sources.Change
	index := map[string]int{}
	for _, c := range cs {
		g := ""
		ck := changes.CanonicalKey(c.Key)
		switch {
		case ck == "rate_limit" || strings.HasPrefix(ck, "rate_limit."):
			// A commit's rate-limit edits are one decision: the directive,
			// its zones and their fields.
			g = "rate_limit"
		case ck == "php_version" || ck == "base_image":
			g = "runtime"
		}
		if g == "" {
			out = append(out, []sources.Change{c})
			continue
		}
		id := commitOf(c) + "\x00" + g
		if i, ok := index[id]; ok {
			out[i] = append(out[i], c)
			continue
		}
		index[id] = len(out)
		out = append(out, []sources.Change{c})
	}
	for _, g := range out {
		// The representative: the zone itself (added or removed), else the
		// PHP version, else the first.
		sort.SliceStable(g, func(i, j int) bool { return groupRank(g[i].Key) < groupRank(g[j].Key) })
	}
	return out
}

func groupRank(key string) int {
	ck := changes.CanonicalKey(key)
	switch {
	case ck == "php_version":
		return 0
	case strings.HasPrefix(ck, "rate_limit.zone.") && !strings.Contains(strings.TrimPrefix(ck, "rate_limit.zone."), "."):
		return 0
	case ck == "rate_limit":
		return 1
	}
	return 2
}

// supersededBy returns a later change of the same setting, still before the
// onset: then c was not the value in force.
func supersededBy(c sources.Change, all []sources.Change, onset time.Time) *sources.Change {
	var best *sources.Change
	for i := range all {
		o := &all[i]
		// A later record of the same new value is the same change seen again
		// (a deploy after the commit), not a replacement.
		if changes.CanonicalKey(o.Key) != changes.CanonicalKey(c.Key) || !o.Time.After(c.Time) || changes.SameValue(o.New, c.New) {
			continue
		}
		if !onset.IsZero() && o.Time.After(onset) {
			continue
		}
		if best == nil || o.Time.After(best.Time) {
			best = o
		}
	}
	return best
}

// commitOf names the edit a change was made in: its ref, so that the same
// commit seen through git and changes.yaml is one edit, or for a record
// without one, its moment.
func commitOf(c sources.Change) string {
	if c.Ref != "" {
		return c.Ref
	}
	return c.Time.UTC().Format(time.RFC3339)
}

// backlogBefore is listen.backlog before c, when the same commit (the same
// ref, or the same moment for records without one) changed it too: 0 when
// c is the backlog's own change, when no change beside c touched it, or
// when its old value is not a positive count (-1 asks the kernel for its
// maximum, which the log does not state). applied is the backlog in force
// during the incident as the kernel applied it: when the new value was
// above it, the kernel capped it there, and it caps the old one too.
func backlogBefore(c sources.Change, all []sources.Change, applied int) int {
	if k := knobFor(c.Key); k == nil || k.name == "listen.backlog" {
		return 0
	}
	for _, o := range all {
		k := knobFor(o.Key)
		if k == nil || k.name != "listen.backlog" {
			continue
		}
		if commitOf(o) != commitOf(c) {
			continue
		}
		old, ok := settingValue(o.Old, k)
		if !ok || old <= 0 || math.IsInf(old, 0) {
			return 0
		}
		if nw, ok := settingValue(o.New, k); ok && applied > 0 && nw > float64(applied) {
			old = min(old, float64(applied))
		}
		return int(old)
	}
	return 0
}
