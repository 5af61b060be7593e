package detect

import (
	"net/url"
	"path"
	"sort"
	"strings"
	"unicode/utf8"
)

// A route template is what a request asked for with everything that varies
// per page taken out: "/2026/10/hello_world/?replytocom=4121" and
// "/2026/09/other_post/?replytocom=77" are both "/{n}/{n}/{slug}/?replytocom".
// Numbers, hashes, UUIDs, long tokens and slugs in the path become
// placeholders; query values are dropped and the query keys kept, sorted. Cost
// is measured per template (routecost.go), whatever the application.

// Placeholders of a route template.
const (
	phNumber = "{n}"
	phUUID   = "{uuid}"
	phHash   = "{hash}"
	phToken  = "{token}"
	phSlug   = "{slug}"
)

// Bounds on what one request's URL adds to a template: both come from the
// client and are unbounded otherwise.
const (
	// maxTemplateSegments: deeper paths end in "/{rest}".
	maxTemplateSegments = 12
	// maxTemplateKeys: more query keys end in "&{more}".
	maxTemplateKeys = 8
	// maxKeyLen: a longer query key is a value in disguise ("?aGVsbG8...").
	maxKeyLen = 40
	// longToken: a segment this long (runes) is an identifier, not a route.
	longToken = 24
)

// RouteTemplate returns the template of a request target (raw path as
// logged, percent-encoded, and raw query) by its shape alone: query values
// dropped. The traffic's table (routetable.go) also folds path names that
// vary too much, and keeps the values of query keys that vary little
// ("action=history"), which name a route rather than a page.
func RouteTemplate(rawPath, rawQuery string) string {
	return joinTemplate(templateSegments(rawPath), templateQuery(rawQuery), rawQuery != "", false)
}

// queryItem is one distinct query key with its first value, normalised (""
// when it is a placeholder, empty or too long to be a route's name).
type queryItem struct{ key, value string }

// templateSegments splits a raw path into normalised segments ("" for the
// root and for a trailing slash, which is kept: "/a/" and "/a" are different
// routes on most sites).
func templateSegments(rawPath string) []string {
	if rawPath == "" || rawPath == "/" {
		return []string{""}
	}
	parts := strings.Split(strings.TrimPrefix(rawPath, "/"), "/")
	out := make([]string, 0, min(len(parts), maxTemplateSegments+1))
	for i, p := range parts {
		if i == maxTemplateSegments {
			out = append(out, "{rest}")
			break
		}
		// Each segment is unescaped alone, so an encoded slash stays inside it.
		if s, err := url.PathUnescape(p); err == nil {
			p = s
		}
		out = append(out, normaliseSegment(p))
	}
	return out
}

// templateQuery returns the distinct query keys of a raw query, sorted, with
// their first value.
func templateQuery(rawQuery string) []queryItem {
	if rawQuery == "" {
		return nil
	}
	var items []queryItem
	for part := range strings.SplitSeq(rawQuery, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		if s, err := url.QueryUnescape(k); err == nil {
			k = s
		}
		switch {
		case k == "":
			continue
		case len(k) > maxKeyLen || !utf8.ValidString(k) || strings.ContainsAny(k, "{}&=?"):
			k = phToken
		case allDigits(k):
			k = phNumber
		}
		dup := false
		for _, it := range items {
			dup = dup || it.key == k
		}
		if dup {
			continue
		}
		if s, err := url.QueryUnescape(v); err == nil {
			v = s
		}
		if v != "" && (len(v) > maxKeyLen || strings.ContainsAny(v, "{}&=?/") || isPlaceholder(normaliseSegment(v))) {
			v = ""
		}
		items = append(items, queryItem{k, v})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].key < items[j].key })
	if len(items) > maxTemplateKeys {
		items = append(items[:maxTemplateKeys], queryItem{key: "{more}"})
	}
	return items
}

func joinTemplate(segments []string, items []queryItem, hadQuery, values bool) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(s)
	}
	if hadQuery {
		b.WriteByte('?') // a query without keys ("/?" or "/?=x") still bypasses most page caches
	}
	for i, it := range items {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(it.key)
		if values && it.value != "" {
			b.WriteByte('=')
			b.WriteString(it.value)
		}
	}
	return b.String()
}

// normaliseSegment replaces a path segment that identifies one page or object
// by its placeholder and leaves route names alone ("wp-json", "api.php",
// "Special:WhatLinksHere"). A file name keeps its extension:
// "img-2041-768x512.jpg" is "{token}.jpg". A namespaced name keeps its
// namespace ("Talk:{slug}"), so a site's namespaces stay apart.
func normaliseSegment(s string) string {
	if s == "" {
		return s
	}
	if ns, name, ok := strings.Cut(s, ":"); ok && ns != "" && name != "" && !strings.ContainsAny(ns, "/") && utf8.RuneCountInString(ns) <= 20 {
		n := normaliseSegment(name)
		if isPlaceholder(n) {
			return ns + ":" + n
		}
		return s
	}
	base, ext := s, path.Ext(s)
	if ext != "" && len(ext) <= 6 && ext != s && isAlnum(ext[1:]) {
		base = s[:len(s)-len(ext)]
	} else {
		ext = ""
	}
	ph := ""
	switch {
	case allDigits(base):
		ph = phNumber
	case isUUID(base):
		ph = phUUID
	case len(base) >= 8 && hexString(base) && strings.ContainsAny(base, "0123456789"):
		ph = phHash
	case utf8.RuneCountInString(base) >= longToken || !utf8.ValidString(base):
		ph = phToken
	case hasLetterAndDigit(base) && len(base) >= 6:
		ph = phToken
	case isSlug(base):
		ph = phSlug
	}
	if ph == "" {
		return s
	}
	return ph + ext
}

// isSlug reports whether a segment reads like a title turned into a URL:
// words joined by separators ("hello_world_again", "my-first-post"), or text
// outside ASCII (titles in Korean, Chinese, ...). Short names with one
// separator ("wp-json", "wp-admin") stay route names.
func isSlug(s string) bool {
	seps := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return true
		}
		if c == '-' || c == '_' || c == ' ' || c == '+' || c == ',' {
			seps++
		}
	}
	return seps >= 2 || seps == 1 && len(s) >= 16
}

func isPlaceholder(s string) bool {
	return strings.HasPrefix(s, "{") && strings.Contains(s, "}")
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func hexString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return s != ""
}

func hasLetterAndDigit(s string) bool {
	letter, digit := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			digit = true
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			letter = true
		}
	}
	return letter && digit
}

// isUUID accepts 8-4-4-4-12 hex digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !hexString(s[i : i+1]) {
				return false
			}
		}
	}
	return true
}

// TemplateMatcher tells which of a few templates of the traffic's table a
// request target falls under: the same query keys, the same value wherever
// the template names one ("action=history"), and segment by segment the same
// text or a placeholder that covers it ("/wiki/{slug}" covers
// "/wiki/Main_Page" once the table folded the names under /wiki/).
type TemplateMatcher struct {
	templates []compiledTemplate
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
	if len(m.templates) == 0 {
		return "", false
	}
	segs := templateSegments(rawPath)
	items := templateQuery(rawQuery)
	for _, t := range m.templates {
		if t.matches(segs, items) {
			return t.text, true
		}
	}
	return "", false
}

func (t *compiledTemplate) matches(segs []string, items []queryItem) bool {
	if len(t.segs) != len(segs) || len(t.query) != len(items) {
		return false
	}
	for i, w := range t.query {
		k, v, hasV := strings.Cut(w, "=")
		if items[i].key != k || hasV && items[i].value != v {
			return false
		}
	}
	for i, g := range t.segs {
		s := segs[i]
		switch {
		case g == s:
		case g == phSlug && s != "":
		case strings.HasPrefix(g, phSlug+".") && path.Ext(s) == g[len(phSlug):]:
		default:
			ns, rest, ok := strings.Cut(g, ":")
			if !ok || rest != phSlug || !strings.HasPrefix(s, ns+":") {
				return false
			}
		}
	}
	return true
}
