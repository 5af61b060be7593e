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
// for concurrent use.
type TemplateMatcher struct {
	templates []compiledTemplate
	scratch   request.TemplateScratch
	// targets remembers the answers for the targets matched lately
	// (targetmemo.go): the templates never change.
	targets targetMemo
}

type compiledTemplate struct {
	text  string
	segs  []string
	query []string // "key" or "key=value", sorted by key
}

// NewTemplateMatcher compiles templates, tried in order.
func NewTemplateMatcher(templates []string) *TemplateMatcher {
	m := &TemplateMatcher{}
	for _, t := range templates {
		p, q, _ := strings.Cut(t, "?")
		ct := compiledTemplate{text: t, segs: strings.Split(strings.TrimPrefix(p, "/"), "/")}
		if q != "" {
			ct.query = strings.Split(q, "&")
		}
		m.templates = append(m.templates, ct)
	}
	return m
}

// Match returns the first template the target falls under.
func (m *TemplateMatcher) Match(rawPath, rawQuery string) (string, bool) {
	// The shape is cheaper to read than the memo: a target no template fits
	// (most of a crawl, when the expensive routes are a few) neither costs a
	// hash nor takes a slot from one that does.
	if len(m.templates) == 0 || !m.shapeFits(rawPath, rawQuery) {
		return "", false
	}
	s := m.targets.slot(rawPath, rawQuery)
	if !s.hasMatch {
		s.matched, s.matchOK = m.matchSplit(rawPath, rawQuery)
		s.hasMatch = true
	}
	return s.matched, s.matchOK
}

// match is Match without the memo.
func (m *TemplateMatcher) match(rawPath, rawQuery string) (string, bool) {
	if !m.shapeFits(rawPath, rawQuery) {
		return "", false
	}
	return m.matchSplit(rawPath, rawQuery)
}

// shapeFits reports whether some template could match the target, from its
// raw shape alone: the number of segments Segments would split it into, and
// whether it has a query. A target no template fits (most of a crawler's
// pages, when the expensive routes are queries) is then never unescaped and
// split. It is a necessary condition only: matchSplit decides.
func (m *TemplateMatcher) shapeFits(rawPath, rawQuery string) bool {
	segs := request.SegmentCount(rawPath)
	for i := range m.templates {
		t := &m.templates[i]
		// Without a query, Query finds no key; with one it may find none.
		if len(t.segs) == segs && (len(t.query) == 0 || rawQuery != "") {
			return true
		}
	}
	return false
}

// matchSplit is match without shapeFits: the target split and compared
// with every template.
func (m *TemplateMatcher) matchSplit(rawPath, rawQuery string) (string, bool) {
	sc := &m.scratch
	sc.Reset()
	segs := sc.Segments(rawPath)
	items := sc.Query(rawQuery)
	for _, t := range m.templates {
		if t.matches(segs, items) {
			return t.text, true
		}
	}
	return "", false
}

func (t *compiledTemplate) matches(segs []string, items []request.QueryItem) bool {
	if len(t.segs) != len(segs) || len(t.query) != len(items) {
		return false
	}
	for i, w := range t.query {
		k, v, hasV := strings.Cut(w, "=")
		if items[i].Key != k || hasV && items[i].Value != v {
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
			ns, rest, ok := strings.Cut(g, ":")
			if !ok || rest != request.PlaceholderSlug || !strings.HasPrefix(s, ns+":") {
				return false
			}
		}
	}
	return true
}
