package changes

import (
	"sort"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// SourceChangesYAML is the Source Decode gives entries that name none.
const SourceChangesYAML = "changes.yaml"

// MergeWindow is how far apart two records of one change may be: a commit is
// usually deployed within hours, and the metric steps when it is.
const MergeWindow = 6 * time.Hour

// sourceRank orders evidence in a merged Source ("git+changes.yaml+metrics") and
// decides whose fields win: the commit names the file, author and message; the
// time comes from the metric step (when the setting took effect), else from
// the change log (a deploy), else from the commit.
var sourceRank = map[string]int{SourceGit: 0, SourceChangesYAML: 1, SourceMetrics: 2}

// Merge combines the changes of several sources into one list, sorted by time.
// Records of the same change from different sources become one change with
// all of them as evidence: same key (pool-file, env and metric spellings meet
// on the canonical key), same new value (numerically equal counts as equal,
// "4096" and "4096.0"), compatible old values, and at most MergeWindow apart.
// The merged change's Source joins its sources ("git+metrics"); its Time is
// when the metric stepped if a metric saw it (the deploy), else the change
// log's, else the commit's; its Ref, File, Author and Old come from the commit
// when there is one; Notes are joined. Exact duplicates are dropped.
func Merge(changes ...[]sources.Change) []sources.Change {
	var all []sources.Change
	seen := map[sources.Change]bool{}
	for _, cs := range changes {
		for _, c := range cs {
			c.Time = c.Time.Round(0)
			if seen[c] {
				continue
			}
			seen[c] = true
			all = append(all, c)
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if !all[i].Time.Equal(all[j].Time) {
			return all[i].Time.Before(all[j].Time)
		}
		return rankOf(all[i].Source) < rankOf(all[j].Source)
	})

	type group struct{ parts []sources.Change }
	var groups []*group
	for _, c := range all {
		var best *group
		var bestGap time.Duration
		if c.Key != "" && c.Key != KeyRestart {
			for _, g := range groups {
				if !mergeable(g.parts, c) {
					continue
				}
				gap := absDur(c.Time.Sub(g.parts[0].Time))
				if best == nil || gap < bestGap {
					best, bestGap = g, gap
				}
			}
		}
		if best == nil {
			groups = append(groups, &group{parts: []sources.Change{c}})
			continue
		}
		best.parts = append(best.parts, c)
	}
	out := make([]sources.Change, 0, len(groups))
	for _, g := range groups {
		out = append(out, combine(g.parts))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// mergeable reports whether c is another record of the change in parts.
func mergeable(parts []sources.Change, c sources.Change) bool {
	for _, p := range parts {
		if p.Source == c.Source || strings.Contains(p.Source, "+") || strings.Contains(c.Source, "+") {
			return false // one source does not confirm itself
		}
		if CanonicalKey(p.Key) != CanonicalKey(c.Key) || !SameValue(p.New, c.New) {
			return false
		}
		if p.Old != "" && c.Old != "" && !SameValue(p.Old, c.Old) {
			return false
		}
		if absDur(p.Time.Sub(c.Time)) > MergeWindow {
			return false
		}
	}
	return true
}

func combine(parts []sources.Change) sources.Change {
	if len(parts) == 1 {
		return parts[0]
	}
	sort.SliceStable(parts, func(i, j int) bool { return rankOf(parts[i].Source) < rankOf(parts[j].Source) })
	m := parts[0]
	srcs := make([]string, 0, len(parts))
	var notes []string
	for i, p := range parts {
		srcs = append(srcs, p.Source)
		if p.Note != "" {
			if i == 0 {
				notes = append(notes, p.Note)
			} else {
				notes = append(notes, p.Source+": "+p.Note)
			}
		}
		if p.Source == SourceMetrics || (p.Source == SourceChangesYAML && m.Source == SourceGit) {
			m.Time = p.Time // when it took effect beats when it was written
		}
		if m.Ref == "" {
			m.Ref = p.Ref
		}
		if m.File == "" {
			m.File = p.File
		}
		if m.Old == "" {
			m.Old = p.Old
		}
		if m.Author == "" {
			m.Author = p.Author
		}
	}
	m.Source = strings.Join(srcs, "+")
	m.Note = strings.Join(notes, "\n")
	return m
}

// CanonicalKey is the name under which different sources record one setting:
// a Caddy key set in several sites ("health_timeout@http://:8080") or a pool
// key in a multi-pool file ("[www]listen.backlog") is reduced to the setting.
func CanonicalKey(key string) string {
	k := strings.TrimSpace(key)
	if i := strings.LastIndexByte(k, '@'); i > 0 {
		k = k[:i]
	}
	if strings.HasPrefix(k, "[") {
		if i := strings.IndexByte(k, ']'); i > 0 {
			k = k[i+1:]
		}
	}
	return strings.ToLower(k)
}

// SameValue compares setting values numerically when both are numbers
// ("4096", "4096.0" and "4,096"), as text without case otherwise.
func SameValue(a, b string) bool {
	if fa, ok := Number(a); ok {
		if fb, ok := Number(b); ok {
			return fa == fb
		}
	}
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

func rankOf(source string) int {
	if r, ok := sourceRank[source]; ok {
		return r
	}
	return len(sourceRank)
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
