package request

import (
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// A route template is what a request asked for with everything that varies
// per page taken out: "/2026/10/hello_world/?replytocom=4121" and
// "/2026/09/other_post/?replytocom=77" are both "/{n}/{n}/{slug}/?replytocom".
// Numbers, hashes, UUIDs, long tokens and slugs in the path become
// placeholders; query values are dropped and the query keys kept, sorted. Cost
// is measured per template (detect/routecost.go), whatever the application.

// Placeholders of a route template.
const (
	phNumber        = "{n}"
	phUUID          = "{uuid}"
	phHash          = "{hash}"
	phToken         = "{token}"
	PlaceholderSlug = "{slug}"
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
// dropped. The traffic's table (detect/routetable.go) also folds path names that
// vary too much, and keeps the values of query keys that vary little
// ("action=history"), which name a route rather than a page.
func RouteTemplate(rawPath, rawQuery string) string {
	var sc TemplateScratch
	segs := sc.Segments(rawPath)
	return string(AppendTemplate(nil, segs, sc.Query(rawQuery), rawQuery != "", false))
}

// QueryItem is one distinct query key with its first value, normalised (""
// when it is a placeholder, empty or too long to be a route's name).
type QueryItem struct{ Key, Value string }

// TemplateScratch holds the pieces of one request target's template while it
// is built. The route table keeps one and reuses it for every request
// (detect.Traffic.Observe builds a template per request), so that a request whose
// template was seen before allocates nothing. Until reset, the strings in
// segs and items are views of arena, of unescaped, or of the target itself:
// whoever keeps one past the next reset, or past the target's life, clones
// it.
type TemplateScratch struct {
	// arena holds the normalised segments and the unescaped query parts. It
	// only grows until reset: a view of it is never overwritten meanwhile.
	arena []byte
	// unescaped holds the segment pathUnescape decoded last (which
	// Segments copies to arena before it decodes the next).
	unescaped []byte
	segs      []string
	items     []QueryItem
}

// Reset forgets the last target: its views are invalid from now on.
func (sc *TemplateScratch) Reset() {
	sc.arena, sc.segs, sc.items = sc.arena[:0], sc.segs[:0], sc.items[:0]
}

// stringView is b as a string, without a copy; b must not change while it is used.
func stringView(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Segments splits a raw path into normalised segments ("" for the root and
// for a trailing slash, which is kept: "/a/" and "/a" are different routes
// on most sites).
func (sc *TemplateScratch) Segments(rawPath string) []string {
	if rawPath == "" || rawPath == "/" {
		sc.segs = append(sc.segs, "")
		return sc.segs
	}
	rest := strings.TrimPrefix(rawPath, "/")
	for i := 0; ; i++ {
		if i == maxTemplateSegments {
			sc.segs = append(sc.segs, "{rest}")
			break
		}
		p, after, more := CutByte(rest, '/')
		// Each segment is unescaped alone, so an encoded slash stays inside
		// it; one with an escape is shorter unescaped.
		u := pathUnescape(p, &sc.unescaped)
		sc.segs = append(sc.segs, sc.normalised(u, len(u) == len(p)))
		if !more {
			break
		}
		rest = after
	}
	return sc.segs
}

// normalised is appendNormalised of segment s as a string: the
// placeholder, or s itself where s is a view of the target (raw) and
// normalises to itself, and a view of the arena otherwise.
func (sc *TemplateScratch) normalised(s string, raw bool) string {
	ph, ext, colon := segmentPlaceholder(s)
	switch {
	case colon:
		start := len(sc.arena)
		sc.arena = appendNamespaced(sc.arena, s)
		return stringView(sc.arena[start:])
	case ph == "" && raw:
		return s
	case ph != "" && ext == "":
		return ph
	}
	start := len(sc.arena)
	if ph == "" {
		sc.arena = append(sc.arena, s...)
	} else {
		sc.arena = append(append(sc.arena, ph...), ext...)
	}
	return stringView(sc.arena[start:])
}

// SegmentCount is len(Segments(rawPath)) without splitting or unescaping:
// Segments cuts at every raw '/' after a leading one (an encoded slash stays
// inside its segment), up to maxTemplateSegments and "{rest}".
func SegmentCount(rawPath string) int {
	if rawPath == "" || rawPath == "/" {
		return 1
	}
	return min(strings.Count(strings.TrimPrefix(rawPath, "/"), "/")+1, maxTemplateSegments+1)
}

// Query returns the distinct query keys of a raw query, sorted, with their
// first value.
func (sc *TemplateScratch) Query(rawQuery string) []QueryItem {
	items := sc.QueryKeys(rawQuery)
	for i := range items {
		items[i].Value = sc.QueryValue(items[i].Value)
	}
	return items
}

// QueryKeys is Query with each item's value left as it was written (raw,
// still escaped): QueryValue normalises one. A matcher that compares a few
// keys' values (detect.TemplateMatcher) then unescapes and normalises only
// those, which are most of Query's work on a page title.
func (sc *TemplateScratch) QueryKeys(rawQuery string) []QueryItem {
	if rawQuery == "" {
		return nil
	}
	items := sc.items[:0]
	for rest, more := rawQuery, true; more; {
		var part string
		part, rest, more = CutByte(rest, '&')
		if part == "" {
			continue
		}
		k, v, _ := CutByte(part, '=')
		// One pass over the key (segmentKindsOf) tells most keys
		// ("title", "action") apart: no escape, no byte outside ASCII to
		// validate.
		kinds := segmentKindsOf(k)
		if kinds&kindEscape != 0 {
			k = sc.queryUnescape(k)
			kinds = segmentKindsOf(k)
		}
		switch {
		case k == "":
			continue
		case len(k) > maxKeyLen || kinds&kindSyntax != 0 || kinds&kindNonASCII != 0 && !utf8.ValidString(k):
			k = phToken
		case kinds&kindNotDigit == 0:
			k = phNumber
		}
		if slices.ContainsFunc(items, func(it QueryItem) bool { return it.Key == k }) {
			continue
		}
		items = append(items, QueryItem{k, v})
	}
	// The keys are distinct: any sort puts them in one order.
	slices.SortFunc(items, func(a, b QueryItem) int { return strings.Compare(a.Key, b.Key) })
	if len(items) > maxTemplateKeys {
		items = append(items[:maxTemplateKeys], QueryItem{Key: "{more}"})
	}
	sc.items = items
	return items
}

// QueryValue is the value Query gives a raw value (as QueryKeys leaves it):
// unescaped, or "" when it is a placeholder, empty or too long to be a
// route's name. A decoded value is a view of the arena.
func (sc *TemplateScratch) QueryValue(raw string) string {
	v := sc.queryUnescape(raw)
	if v == "" {
		return v
	}
	if len(v) > maxKeyLen {
		return ""
	}
	// A value's base is read once, as a segment's is (segmentPlaceholder),
	// its bytes' kinds telling the template's syntax and a path too (an
	// extension is letters and digits only).
	base, _ := splitExt(v)
	kinds := segmentKindsOf(base)
	switch {
	case kinds&(kindSyntax|kindSlash) != 0:
		return ""
	case kinds&kindColon != 0:
		if sc.normalisesToPlaceholder(v) {
			return ""
		}
	case placeholderOf(base, kinds) != "":
		return ""
	}
	return v
}

// queryUnescape is url.QueryUnescape(s), or s itself where that fails; a
// decoded s is a view of the arena.
func (sc *TemplateScratch) queryUnescape(s string) string {
	if strings.IndexByte(s, '%') < 0 && strings.IndexByte(s, '+') < 0 {
		return s
	}
	start := len(sc.arena)
	b, ok := appendQueryUnescape(sc.arena, s)
	if !ok {
		return s // url.EscapeError: the arena keeps its length
	}
	sc.arena = b
	return stringView(b[start:])
}

// normalisesToPlaceholder reports whether segment s normalises to a placeholder.
func (sc *TemplateScratch) normalisesToPlaceholder(s string) bool {
	start := len(sc.arena)
	sc.arena = appendNormalised(sc.arena, s)
	ph := IsPlaceholder(stringView(sc.arena[start:]))
	sc.arena = sc.arena[:start]
	return ph
}

// AppendTemplate appends the template of segments and query items to dst;
// values writes the items' values where they have one.
func AppendTemplate(dst []byte, segments []string, items []QueryItem, hadQuery, values bool) []byte {
	for _, s := range segments {
		dst = append(dst, '/')
		dst = append(dst, s...)
	}
	if hadQuery {
		dst = append(dst, '?') // a query without keys ("/?" or "/?=x") still bypasses most page caches
	}
	for i, it := range items {
		if i > 0 {
			dst = append(dst, '&')
		}
		dst = append(dst, it.Key...)
		if values && it.Value != "" {
			dst = append(dst, '=')
			dst = append(dst, it.Value...)
		}
	}
	return dst
}

// appendNormalised appends path segment s to dst with what identifies one
// page or object replaced by its placeholder, and route names left alone
// ("wp-json", "api.php", "Special:WhatLinksHere"). A file name keeps its
// extension: "img-2041-768x512.jpg" is "{token}.jpg". A namespaced name keeps
// its namespace ("Talk:{slug}"), so a site's namespaces stay apart.
func appendNormalised(dst []byte, s string) []byte {
	ph, ext, colon := segmentPlaceholder(s)
	switch {
	case colon:
		return appendNamespaced(dst, s)
	case ph == "":
		return append(dst, s...)
	}
	return append(append(dst, ph...), ext...)
}

// appendNamespaced is appendNormalised of a segment holding ':', which may
// be a namespace's name ("Talk:Seoul").
func appendNamespaced(dst []byte, s string) []byte {
	if ns, name, ok := CutByte(s, ':'); ok && ns != "" && name != "" && strings.IndexByte(ns, '/') < 0 && utf8.RuneCountInString(ns) <= 20 {
		start := len(dst)
		dst = append(append(dst, ns...), ':')
		n := len(dst)
		if dst = appendNormalised(dst, name); IsPlaceholder(stringView(dst[n:])) {
			return dst
		}
		return append(dst[:start], s...)
	}
	base, ext := splitExt(s)
	ph := basePlaceholder(base)
	if ph == "" {
		return append(dst, s...)
	}
	return append(append(dst, ph...), ext...)
}

// segmentPlaceholder is the placeholder segment s's base normalises to ("" for
// a route name or an empty s) and the extension kept after it, with one pass
// over the base's bytes (segmentKindsOf), which also finds a ':'. A segment
// holding one may be namespaced: colon reports it, and ph and ext are then
// not read (appendNamespaced).
func segmentPlaceholder(s string) (ph, ext string, colon bool) {
	base, ext := splitExt(s)
	kinds := segmentKindsOf(base)
	if kinds&kindColon != 0 { // an extension holds none
		return "", "", true
	}
	if ph = placeholderOf(base, kinds); ph == "" {
		ext = ""
	}
	return ph, ext, false
}

// splitExt cuts a file name's extension off segment s: path.Ext's (from the
// last '.') when one to five ASCII letters and digits follow the '.' and
// something comes before it; ext is "" otherwise. Only the last six bytes
// are read: a '.' before them starts a longer extension than that.
func splitExt(s string) (base, ext string) {
	for i := len(s) - 1; i > 0 && i >= len(s)-6; i-- {
		if segmentKinds[s[i]]&(kindLetter|kindDigit) != 0 { // an ASCII letter or digit
			continue
		}
		if s[i] != '.' || i == len(s)-1 {
			// A byte no letter nor digit: the last '.' is it, with no
			// letter after it, or before it, with more than letters and
			// digits after.
			return s, ""
		}
		return s[:i], s[i:]
	}
	return s, ""
}

// basePlaceholder is the placeholder of a segment's base (its name without
// the extension), "" for a route name. The first that fits of: all digits
// ({n}); a UUID; eight or more hex digits with a digit among them ({hash});
// longToken runes or more, or not valid UTF-8 ({token}); six or more bytes
// mixing ASCII letters and digits ({token}); a title turned into a URL
// ({slug}): words joined by separators ("hello_world_again",
// "my-first-post"), or text outside ASCII (titles in Korean, Chinese, ...),
// where short names with one separator ("wp-json", "wp-admin") stay route
// names. Every base of a template's segments and query values comes here,
// most of them titles seen once: what the tests need is read in one pass
// over the bytes (segmentKindsOf), and only a base outside ASCII is read
// again, as UTF-8.
func basePlaceholder(base string) string {
	return placeholderOf(base, segmentKindsOf(base))
}

// segmentKindsOf returns the kinds of the bytes of s (segmentKinds), OR-ed.
func segmentKindsOf(s string) (kinds uint16) {
	for i := 0; i < len(s); i++ {
		kinds |= segmentKinds[s[i]]
	}
	return kinds
}

// placeholderOf is basePlaceholder of a base whose bytes' kinds, OR-ed, are
// kinds. Only an ASCII base with a separator that fits no other placeholder
// has its separators counted, in a pass of their own: a title outside ASCII
// is a slug, whatever separators it holds.
func placeholderOf(base string, kinds uint16) string {
	n := len(base)
	switch {
	case n > 0 && kinds&kindNotDigit == 0:
		return phNumber
	case isUUID(base):
		return phUUID
	case n >= 8 && kinds&kindNotHex == 0 && kinds&kindDigit != 0:
		return phHash
	case kinds&kindNonASCII == 0 && n >= longToken:
		// ASCII is valid UTF-8, one rune a byte.
		return phToken
	case kinds&kindNonASCII != 0 && (n >= longToken && utf8.RuneCountInString(base) >= longToken || !utf8.ValidString(base)):
		// Fewer bytes than longToken are fewer runes; an invalid base is a
		// token however many runes RuneCount takes it for.
		return phToken
	case kinds&(kindLetter|kindDigit) == kindLetter|kindDigit && n >= 6:
		return phToken
	case kinds&kindNonASCII != 0:
		return PlaceholderSlug
	case kinds&kindSep != 0:
		if seps := separators(base); seps >= 2 || seps == 1 && n >= 16 {
			return PlaceholderSlug
		}
	}
	return ""
}

// separators counts the slug's word separators in s.
func separators(s string) (n int) {
	for i := 0; i < len(s); i++ {
		n += int(segmentKinds[s[i]] & kindSep)
	}
	return n
}

// The kinds of byte basePlaceholder tells apart, as bits: a slug's word
// separator (the low bit, so that a sum of kinds&kindSep counts them), an
// ASCII digit or letter, a byte of a rune outside ASCII, and the bytes that
// are no hex digit and no decimal digit. The bytes a query's key and value
// are told by (QueryKeys, QueryValue) have bits of their own.
const (
	kindSep uint16 = 1 << iota
	kindDigit
	kindLetter
	kindNonASCII
	kindNotHex
	kindNotDigit
	// kindColon marks ':', which may end a namespace (appendNamespaced).
	kindColon
	// kindSyntax marks the template's own syntax ("{}&=?"), which makes a
	// query key a token and a value no route's name; kindSlash marks '/',
	// a path in a value; kindEscape '%' and '+', which a query key
	// unescapes.
	kindSyntax
	kindSlash
	kindEscape
)

// segmentKinds is the kind of every byte (basePlaceholder).
var segmentKinds = func() (kinds [256]uint16) {
	for c := range kinds {
		b := byte(c)
		switch {
		case '0' <= b && b <= '9':
			kinds[c] = kindDigit
		case 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F':
			kinds[c] = kindLetter | kindNotDigit
		case 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z':
			kinds[c] = kindLetter | kindNotHex | kindNotDigit
		case b == '-' || b == '_' || b == ' ' || b == '+' || b == ',':
			kinds[c] = kindSep | kindNotHex | kindNotDigit
		case b >= utf8.RuneSelf:
			kinds[c] = kindNonASCII | kindNotHex | kindNotDigit
		case b == ':':
			kinds[c] = kindColon | kindNotHex | kindNotDigit
		default:
			kinds[c] = kindNotHex | kindNotDigit
		}
		switch {
		case strings.IndexByte("{}&=?", b) >= 0:
			kinds[c] |= kindSyntax
		case b == '/':
			kinds[c] |= kindSlash
		case b == '%' || b == '+':
			kinds[c] |= kindEscape
		}
	}
	return kinds
}()

func IsPlaceholder(s string) bool {
	return strings.HasPrefix(s, "{") && strings.Contains(s, "}")
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
			if !isHex(s[i]) {
				return false
			}
		}
	}
	return true
}
