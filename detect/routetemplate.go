package detect

import (
	"path"
	"strings"

	"github.com/aftermath-forensics/aftermath/detect/request"
)

// TemplateMatcher tells which of a few templates of the traffic's table a
// request target falls under: the same query keys, the same value wherever
// the template names one ("action=history"), and segment by segment the same
// text or a placeholder that covers it ("/wiki/{slug}" covers
// "/wiki/Main_Page" once the table folded the names under /wiki/).
//
// A matcher keeps the pieces of the last target it split, so that a pass
// over millions of requests allocates nothing per request; it is not safe
// for concurrent use. It remembers no answers: the targets whose shape fits
// a template are mostly a crawler's, each sent once (on the benchmark logs a
// memo of the last 4096 answered 8.6% of them and cost more in hashing than
// it saved).
type TemplateMatcher struct {
	templates []compiledTemplate
	scratch   request.TemplateScratch
	// segCounts has bit n set when a template has n segments: most targets
	// have a count no template has (shapeFits).
	segCounts uint64
}

type compiledTemplate struct {
	text  string
	segs  []string
	query []templateWord // sorted by key
	// literal[i] says segs[i] holds no placeholder: only a segment that
	// normalises to exactly its text matches it, which one without an
	// escape does only by being that text (shapeFits).
	literal []bool
}

// templateWord is one word of a template's query, "key" or "key=value",
// cut once here rather than at every target matched against it.
type templateWord struct {
	key, value string
	hasValue   bool
}

// NewTemplateMatcher compiles templates, tried in order.
func NewTemplateMatcher(templates []string) *TemplateMatcher {
	m := &TemplateMatcher{}
	for _, t := range templates {
		p, q, _ := request.CutByte(t, '?')
		ct := compiledTemplate{text: t, segs: strings.Split(strings.TrimPrefix(p, "/"), "/")}
		if q != "" {
			for _, w := range strings.Split(q, "&") {
				k, v, hasV := request.CutByte(w, '=')
				ct.query = append(ct.query, templateWord{key: k, value: v, hasValue: hasV})
			}
		}
		for _, g := range ct.segs {
			ct.literal = append(ct.literal, !strings.Contains(g, "{"))
		}
		m.templates = append(m.templates, ct)
		m.segCounts |= 1 << len(ct.segs)
	}
	return m
}

// Match returns the first template the target falls under.
func (m *TemplateMatcher) Match(rawPath, rawQuery string) (string, bool) {
	// The shape is cheaper to read than the split: a target no template fits
	// (most of a crawl, when the expensive routes are a few) is not split.
	if len(m.templates) == 0 || !m.shapeFits(rawPath, rawQuery) {
		return "", false
	}
	return m.matchSplit(rawPath, rawQuery)
}

// shapeFits reports whether some template could match the target, from its
// raw shape alone: the number of segments Segments would split it into,
// whether it has a query, and the raw segments where the template's are
// literal. A target no template fits (most of a crawler's pages, when the
// expensive routes are queries; the other scripts of a site, "/api.php?..."
// against "/index.php?...") is then never unescaped and split. It is a
// necessary condition only: matchSplit decides.
func (m *TemplateMatcher) shapeFits(rawPath, rawQuery string) bool {
	segs := request.SegmentCount(rawPath)
	if m.segCounts&(1<<segs) == 0 {
		return false
	}
	for i := range m.templates {
		t := &m.templates[i]
		// Without a query, Query finds no key; with one it may find none.
		if len(t.segs) == segs && (len(t.query) == 0 || rawQuery != "") && t.literalsFit(rawPath) {
			return true
		}
	}
	return false
}

// literalsFit reports whether every raw segment of the path (cut as Segments
// cuts it; the template has as many) could match the template's segment
// where that is literal. Segments unescapes a segment, then normalises it
// to itself or to text holding a placeholder ('{'): one without a '%' that
// differs from a literal segment cannot match it.
func (t *compiledTemplate) literalsFit(rawPath string) bool {
	rest := strings.TrimPrefix(rawPath, "/")
	for i, g := range t.segs {
		var seg string
		seg, rest, _ = request.CutByte(rest, '/')
		if t.literal[i] && seg != g && strings.IndexByte(seg, '%') < 0 {
			return false
		}
	}
	return true
}

// matchSplit is Match without shapeFits and the memo: the target split and
// compared with every template.
func (m *TemplateMatcher) matchSplit(rawPath, rawQuery string) (string, bool) {
	sc := &m.scratch
	sc.Reset()
	segs := sc.Segments(rawPath)
	// The values stay raw: only those a template names are normalised
	// (matches), most of a query's work when a page's title is one.
	items := sc.QueryKeys(rawQuery)
	for _, t := range m.templates {
		if t.matches(segs, items, sc) {
			return t.text, true
		}
	}
	return "", false
}

// matches reports whether the target's segments and query items (with raw
// values, as TemplateScratch.QueryKeys gives them) fall under the template.
func (t *compiledTemplate) matches(segs []string, items []request.QueryItem, sc *request.TemplateScratch) bool {
	if len(t.segs) != len(segs) || len(t.query) != len(items) {
		return false
	}
	for i, w := range t.query {
		if items[i].Key != w.key {
			return false
		}
	}
	for i, w := range t.query {
		if w.hasValue && sc.QueryValue(items[i].Value) != w.value {
			return false
		}
	}
	for i, g := range t.segs {
		s := segs[i]
		switch {
		case g == s:
		case g == request.PlaceholderSlug && s != "":
		case strings.HasPrefix(g, request.PlaceholderSlug+".") && path.Ext(s) == g[len(request.PlaceholderSlug):]:
		default:
			ns, rest, ok := request.CutByte(g, ':')
			if !ok || rest != request.PlaceholderSlug || !strings.HasPrefix(s, ns+":") {
				return false
			}
		}
	}
	return true
}
