package request

import (
	"net/url"
	"path"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// PathClass groups request targets by cost and cacheability, the way the site's
// cache and PHP see them. It is computed from the URL shape alone, never from a
// list of paths seen in one incident.
type PathClass string

// Path classes.
const (
	ClassAsset   PathClass = "asset"   // static file: css, js, images, fonts
	ClassArticle PathClass = "article" // a page view, cacheable for logged-out readers
	ClassTool    PathClass = "tool"    // a page with an action: edit, history, watch, diff
	ClassSpecial PathClass = "special" // a generated special page (Special:..., 특수:...)
	ClassAPI     PathClass = "api"     // api.php and REST endpoints
	ClassHealth  PathClass = "health"  // the proxy's health check
	ClassOther   PathClass = "other"
)

// classCodes numbers the classes for a compact record of a request (the
// request spill's tag): code i+1 is classCodes[i], 0 is none.
var classCodes = [...]PathClass{ClassAsset, ClassArticle, ClassTool, ClassSpecial, ClassAPI, ClassHealth, ClassOther}

// Code is the class's number in a compact record, 1 to 7 (0 for a string
// that is no class).
func (c PathClass) Code() uint8 {
	for i, k := range classCodes {
		if k == c {
			return uint8(i + 1)
		}
	}
	return 0
}

// ClassOfCode is the class numbered code (PathClass.Code); false for 0 or
// a number no class has.
func ClassOfCode(code uint8) (PathClass, bool) {
	if code == 0 || int(code) > len(classCodes) {
		return "", false
	}
	return classCodes[code-1], true
}

var assetExt = map[string]bool{
	".css": true, ".js": true, ".mjs": true, ".map": true, ".png": true, ".jpg": true,
	".jpeg": true, ".gif": true, ".svg": true, ".ico": true, ".webp": true, ".avif": true,
	".woff": true, ".woff2": true, ".ttf": true, ".otf": true, ".eot": true,
}

// assetExts is assetExt, asked of every target's extension.
var assetExts = newFoldedSet(assetExt)

// specialNamespaces are the canonical and localised names of MediaWiki's Special
// namespace (English, Korean, Chinese, Japanese, German, French, Spanish).
var specialNamespaces = []string{"special:", "특수:", "特殊:", "特別:", "spezial:", "spécial:", "especial:"}

// viewActions are action= values that only render the page as it is.
var viewActions = map[string]bool{"": true, "view": true, "render": true}

// viewActionSet is viewActions, asked of every target's action.
var viewActionSet = newFoldedSet(viewActions)

// ClassifyPath returns the class of a request given its raw path and query.
func ClassifyPath(rawPath, rawQuery, healthURI string) PathClass {
	return ClassifyPathScratch(rawPath, rawQuery, healthURI, nil)
}

// PathClassifier is ClassifyPath for a pass over many requests: it decodes
// every path into one buffer it keeps, so that a percent-encoded path (every
// title outside ASCII) allocates nothing. It is not safe for concurrent use.
type PathClassifier struct {
	HealthURI string
	scratch   []byte
}

// Classify returns ClassifyPath(rawPath, rawQuery, c.HealthURI).
func (c *PathClassifier) Classify(rawPath, rawQuery string) PathClass {
	return ClassifyPathScratch(rawPath, rawQuery, c.HealthURI, &c.scratch)
}

// ClassifyPathScratch is ClassifyPath with a scratch buffer for the unescaped path,
// which detect.Traffic keeps from one request to the next (nil: allocate one).
func ClassifyPathScratch(rawPath, rawQuery, healthURI string, scratch *[]byte) PathClass {
	if healthURI != "" && rawPath == healthURI {
		return ClassHealth
	}
	if scratch == nil {
		scratch = new([]byte)
	}
	*scratch = (*scratch)[:0]
	p := pathUnescape(rawPath, scratch) // p may view *scratch: it must not outlive this call
	if assetExts.has(path.Ext(p)) {
		return ClassAsset
	}
	lp := lower(p)
	if strings.HasSuffix(lp, "/api.php") || strings.HasSuffix(lp, "/rest.php") || strings.Contains(lp, "/api/") {
		return ClassAPI
	}
	var q queryFacts // no query (most page views and assets): nothing to read
	if rawQuery != "" {
		q = readQuery(rawQuery, scratch)
	}
	// The title names a special page only with a namespace, which ends
	// with ':' (lowering makes no ':' and removes none): most titles have
	// none and are not lowered, a rune's case lookup for every rune of a
	// title outside ASCII. Lowering keeps a title non-empty.
	if hasSpecialNamespace(lp) || strings.IndexByte(q.title, ':') >= 0 && hasSpecialNamespace(lower(q.title)) {
		return ClassSpecial
	}
	if !viewActionSet.has(q.action) || q.has&(hasDiff|hasOldid) != 0 || q.has&(hasCurid|hasAction) == hasCurid|hasAction {
		return ClassTool
	}
	if strings.HasSuffix(lp, ".php") && !strings.HasSuffix(lp, "/index.php") {
		return ClassOther
	}
	if q.title != "" || strings.Count(lp, "/") >= 1 && lp != "/" {
		return ClassArticle
	}
	if lp == "/" {
		return ClassArticle
	}
	return ClassOther
}

// queryFacts is what classifyPath reads of a query, as url.ParseQuery would
// give it: the first "title" and "action" values, and which of the keys it
// looks at are present.
type queryFacts struct {
	title, action string
	has           uint8 // hasTitle, hasAction, ...
}

// The keys classifyPath reads, as bits of queryFacts.has.
const (
	hasTitle uint8 = 1 << iota
	hasAction
	hasDiff
	hasOldid
	hasCurid
)

// maxQueryParams is url.ParseQuery's bound on a query's parameters (Go's
// defaultMaxParams): past it, it parses nothing.
const maxQueryParams = 10000

// readQuery is url.ParseQuery(rawQuery) reduced to the keys classifyPath
// reads, without building the map: a query's pairs are split on '&', those
// holding ';' or failing to unescape skipped, keys and values unescaped
// (url.QueryUnescape). The values it returns are views of *scratch, which it
// appends to: they must not outlive the caller's use of it.
func readQuery(rawQuery string, scratch *[]byte) (q queryFacts) {
	if strings.Count(rawQuery, "&") >= maxQueryParams {
		// Rare enough to leave to net/url, whose bound (and GODEBUG) it is.
		v, _ := url.ParseQuery(rawQuery)
		for _, k := range []struct {
			key string
			bit uint8
		}{{"title", hasTitle}, {"action", hasAction}, {"diff", hasDiff}, {"oldid", hasOldid}, {"curid", hasCurid}} {
			if v.Has(k.key) {
				q.has |= k.bit
			}
		}
		q.title, q.action = v.Get("title"), v.Get("action")
		return q
	}
	for rest := rawQuery; rest != ""; {
		var part string
		part, rest, _ = CutByte(rest, '&')
		if part == "" || strings.IndexByte(part, ';') >= 0 {
			continue
		}
		k, v, _ := CutByte(part, '=')
		bit := queryKeyBit(k)
		if bit == 0 {
			continue // not a key read here
		}
		// A value kept is checked as it is decoded (a title is mostly
		// escapes: one pass, not two); the others only checked. A pair
		// that fails is one url.ParseQuery drops.
		if bit == hasTitle && q.has&hasTitle == 0 || bit == hasAction && q.has&hasAction == 0 {
			u, ok := appendQueryUnescaped(scratch, v)
			if !ok {
				continue
			}
			if bit == hasTitle {
				q.title = u
			} else {
				q.action = u
			}
		} else if !validEscapes(v) {
			continue
		}
		q.has |= bit
	}
	return q
}

// queryKeyBit returns the bit of a raw query key classifyPath reads once
// unescaped, 0 for any other key or one that does not unescape.
func queryKeyBit(k string) uint8 {
	if strings.IndexByte(k, '%') >= 0 || strings.IndexByte(k, '+') >= 0 {
		// Each byte of a key read here takes at most 3 escaped ones.
		if len(k) > 3*len("action") {
			return 0
		}
		var buf [3 * len("action")]byte
		u, ok := appendQueryUnescape(buf[:0], k)
		if !ok {
			return 0
		}
		return queryKeyBit(string(u)) // no escapes left: compared, not kept
	}
	switch k {
	case "title":
		return hasTitle
	case "action":
		return hasAction
	case "diff":
		return hasDiff
	case "oldid":
		return hasOldid
	case "curid":
		return hasCurid
	}
	return 0
}

// validEscapes reports whether url.QueryUnescape(s) succeeds: every '%' is
// followed by two hex digits.
func validEscapes(s string) bool {
	for i := strings.IndexByte(s, '%'); i >= 0; {
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return false
		}
		j := strings.IndexByte(s[i+3:], '%')
		if j < 0 {
			break
		}
		i += 3 + j
	}
	return true
}

// appendQueryUnescaped is url.QueryUnescape(s), appended to *scratch and
// returned as a view of it (s itself when it has nothing to unescape);
// false, *scratch as it was, where that fails.
func appendQueryUnescaped(scratch *[]byte, s string) (string, bool) {
	if strings.IndexByte(s, '%') < 0 && strings.IndexByte(s, '+') < 0 {
		return s, true
	}
	start := len(*scratch)
	b, ok := appendQueryUnescape(*scratch, s)
	if !ok {
		return "", false
	}
	*scratch = b
	return unsafe.String(unsafe.SliceData(b[start:]), len(b)-start), true
}

// appendQueryUnescape appends url.QueryUnescape(s) to b; false where that
// fails (an escape without two hex digits), with what it appended so far
// past len(b) only.
func appendQueryUnescape(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return b, false // url.EscapeError
			}
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		case '+':
			b = append(b, ' ')
		default:
			b = append(b, c)
		}
	}
	return b, true
}

func hasSpecialNamespace(s string) bool {
	if strings.IndexByte(s, ':') < 0 {
		return false // every namespace ends with ':'
	}
	for _, ns := range specialNamespaces {
		if strings.Contains(s, ns) {
			return true
		}
	}
	return false
}

// lower is strings.ToLower(s). It skips ToLower's per-rune case lookups for
// the scripts most wiki titles are written in (Hangul syllables, kana, CJK
// ideographs), which have no case: a string of those and ASCII is lowered
// byte by byte ("Special:WhatLinksHere/" before a Korean title), anything
// else goes to strings.ToLower.
func lower(s string) string {
	upper := false
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			upper = upper || 'A' <= c && c <= 'Z'
			i++
			continue
		}
		// Every rune of those scripts takes three bytes: one with the
		// lead byte and continuation bytes of that width is read here,
		// where a call would decode it. A sequence of that form that no
		// valid rune has (an overlong one, a surrogate) decodes outside
		// the scripts, as the error DecodeRune gives does.
		var r rune
		n := 3
		if i+2 < len(s) && c&0xF0 == 0xE0 && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 {
			r = rune(c&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
		} else {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		if !(0xAC00 <= r && r <= 0xD7A3 || 0x3040 <= r && r <= 0x30FF || 0x4E00 <= r && r <= 0x9FFF) {
			return strings.ToLower(s) // invalid UTF-8 (RuneError) included
		}
		i += n
	}
	if !upper {
		return s
	}
	b := make([]byte, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// pathUnescape is url.PathUnescape(s), or s itself where that fails. With
// scratch, it decodes into *scratch and the result views it.
func pathUnescape(s string, scratch *[]byte) string {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s
	}
	if scratch == nil {
		if p, err := url.PathUnescape(s); err == nil {
			return p
		}
		return s
	}
	// One pass over the bytes: a title outside ASCII is mostly escapes
	// ("%EC%9D%8C"), a search for the next '%' per escape costs more than
	// it skips. The decoded path is never longer than s.
	b := (*scratch)[:0]
	if cap(b) < len(s) {
		b = make([]byte, 0, len(s))
	}
	b = b[:len(s)]
	n := copy(b, s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if c == '%' {
			if i+2 >= len(s) {
				return s // url.EscapeError
			}
			hi, lo := hexValue[s[i+1]], hexValue[s[i+2]]
			if hi|lo < 0 {
				return s // url.EscapeError
			}
			c = byte(hi)<<4 | byte(lo)
			i += 2
		}
		b[n] = c
		n++
	}
	b = b[:n]
	*scratch = b
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// hexValue is the value of a hex digit, -1 for any other byte: one load
// where three ranges are compared, for every byte of an escaped title.
var hexValue = func() (v [256]int8) {
	for c := range v {
		v[c] = -1
	}
	for c := '0'; c <= '9'; c++ {
		v[c] = int8(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		v[c], v[c-'a'+'A'] = int8(c-'a'+10), int8(c-'a'+10)
	}
	return v
}()

func isHex(c byte) bool { return hexValue[c] >= 0 }

// unhex is the value of hex digit c (isHex).
func unhex(c byte) byte { return byte(hexValue[c]) }
