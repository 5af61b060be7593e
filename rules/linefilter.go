package rules

import (
	"bytes"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aftermath-forensics/aftermath/sources"
)

// lineFilter rejects the requests no zone can match, before the work of
// matching them with Caddy's matchers: from a log line's raw bytes (keep, the
// recording pass's accesslog prefilter, before the JSON parse that costs far
// more) or from a parsed request (requestMayMatch, in front of every match).
// It accepts a superset of what the zones' matchers match, reasoning from the
// targets alone (every matcher set of a zone holds exactly one target,
// printTarget, ANDed with the conditions): a path target needs its
// pathToken in the path; a query target one of its
// key=value pairs, a title= target a title its regular expression accepts,
// both as url.ParseQuery reads the query string (Caddy's query matcher and
// the {http.request.uri.query.title} placeholder do). Whatever it cannot read
// plainly it accepts, and the parser and Caddy's matchers decide: the line is
// attacker-controlled text. TestLineFilter and FuzzLineFilter hold it to
// Caddy's matchers.
type lineFilter struct {
	// The path targets' pathTokens, split by whether they are ASCII.
	asciiTokens, otherTokens []string
	// queryTargets are the key=value pairs a query target needs, and
	// titleNames the names a title= target's regular expression accepts.
	queryTargets []queryTarget
	titleNames   []string
	// acceptAll: a target the filter cannot reason about.
	acceptAll bool
}

func newLineFilter(zones []Zone) *lineFilter {
	f := &lineFilter{}
	for _, z := range zones {
		for _, t := range z.Targets {
			switch {
			case len(t.Paths) > 0:
				for _, p := range t.Paths {
					tok := pathToken(p)
					// A glob in the last segment ("/a/*/x*y") is no literal token.
					f.acceptAll = f.acceptAll || strings.ContainsAny(tok, "*?[\\")
					if isASCII(tok) {
						f.asciiTokens = append(f.asciiTokens, tok)
					} else {
						f.otherTokens = append(f.otherTokens, tok)
					}
				}
			case t.QueryKey != "" && t.ValueRegexp != "":
				// The pattern never matches "" (valuePattern), the value of
				// a request without the key: the key must be there, with
				// any value.
				re, err := regexp.Compile(t.ValueRegexp)
				f.acceptAll = f.acceptAll || !safeAction(t.QueryKey) || err != nil || re.MatchString("")
				f.queryTargets = append(f.queryTargets, queryTarget{key: t.QueryKey, values: []string{"*"}})
			case t.QueryKey != "":
				// A key or value that could be written in another form, or
				// that Caddy would expand as a placeholder, defeats a literal
				// comparison.
				f.acceptAll = f.acceptAll || !safeAction(t.QueryKey)
				for _, v := range t.QueryValues {
					f.acceptAll = f.acceptAll || v != "*" && !safeAction(v)
				}
				f.queryTargets = append(f.queryTargets, queryTarget{key: t.QueryKey, values: t.QueryValues})
			case len(t.TitleNames) > 0:
				// The regular expression matches the empty title of a request
				// without one only through an empty name.
				for _, n := range t.TitleNames {
					f.acceptAll = f.acceptAll || n == ""
				}
				f.titleNames = append(f.titleNames, t.TitleNames...)
			default:
				f.acceptAll = true
			}
		}
	}
	return f
}

// pathToken is what a request path must contain, lower-cased, for Caddy's
// path matcher to match pattern p: its last segment (Caddy lower-cases and
// cleans the path, which never changes a segment's characters).
func pathToken(p string) string {
	last := strings.TrimSuffix(strings.TrimSuffix(p, "*"), "/")
	return strings.ToLower(last[strings.LastIndexByte(last, '/')+1:])
}

// keep reports whether the line may hold a request some zone matches.
//
// The line is JSON as Caddy (or anything else) wrote it. A string cannot hold
// an unescaped '"', so the bytes `"uri"` followed by `:"` are a key uri with a
// string value, and every such key is examined: one of them is the request's
// (when there are several, any accepted value accepts the line). Anything
// less plain is accepted: a \u escape anywhere (it could spell the key or a
// target's letters), a key uri not followed by `:"`, a value holding a
// backslash, a line with no uri at all (the parser counts it).
//
// Both `\u` and `"uri"` hold a 'u', so one search for that byte finds them
// all: far cheaper than a search for each, as JSON is full of quotes and
// Chromium's Sec-Ch-Ua of backslashes.
func (f *lineFilter) keep(line []byte) bool {
	if f.acceptAll {
		return true
	}
	found := false
	for i := 0; ; i++ {
		j := bytes.IndexByte(line[i:], 'u')
		if j < 0 {
			return !found
		}
		i += j
		if i == 0 {
			continue
		}
		switch line[i-1] {
		case '\\':
			return true
		case '"':
			key, ok := bytes.CutPrefix(line[i+1:], []byte(`ri"`))
			if !ok {
				continue
			}
			v, ok := bytes.CutPrefix(key, []byte(`:"`))
			if !ok {
				return true
			}
			end := bytes.IndexByte(v, '"')
			if end < 0 {
				return true
			}
			uri := v[:end]
			if bytes.IndexByte(uri, '\\') >= 0 || f.uriMayMatch(uri) {
				return true
			}
			found = true
			// A \u within the value would have been caught above: go on
			// after it.
			i = len(line) - len(v) + end
		}
	}
}

// uriMayMatch judges a raw request URI. The parser splits it at its first '?'
// (sources.Request Path and Query).
func (f *lineFilter) uriMayMatch(uri []byte) bool {
	path, query, _ := bytes.Cut(uri, []byte("?"))
	return f.queryMayMatch(query) || f.pathMayMatch(path)
}

// requestMayMatch is keep for a request already parsed: its Path and Query
// are the logged URI split at its first '?'.
func (f *lineFilter) requestMayMatch(r *sources.Request) bool {
	if f.acceptAll {
		return true
	}
	var buf [512]byte
	if f.queryMayMatch(append(buf[:0], r.Query...)) {
		return true
	}
	return f.pathMayMatch(append(buf[:0], r.Path...))
}

// pathQueryMayMatch is requestMayMatch for a request's Path and Query before
// they are strings (the recording pass's filter on a spill,
// engine.spillFilter); it neither changes nor keeps them.
func (f *lineFilter) pathQueryMayMatch(path, query []byte) bool {
	return f.acceptAll || f.queryMayMatch(query) || f.pathMayMatch(path)
}

// queryTarget is a query target: the key must be present with one of the
// values ("*": any).
type queryTarget struct {
	key    string
	values []string
}

// queryMayMatch reports whether a query or title= target may match the raw
// query string. Caddy's query matcher and the {http.request.uri.query.title}
// placeholder both read url.ParseQuery's pairs, which it splits at '&' and
// unescapes as url.QueryUnescape does; the filter does the same. A pair
// ParseQuery would drop (a ';', a malformed escape) is judged as if read, or
// accepted, which only accepts more.
func (f *lineFilter) queryMayMatch(query []byte) bool {
	if len(f.queryTargets) == 0 && len(f.titleNames) == 0 {
		return false
	}
	var keyBuf, valueBuf [256]byte
	for len(query) > 0 {
		var pair []byte
		pair, query, _ = bytes.Cut(query, []byte("&"))
		rawKey, rawValue, _ := bytes.Cut(pair, []byte("="))
		key, ok := queryUnescape(keyBuf[:0], rawKey)
		if !ok {
			return true
		}
		// The value is only unescaped for a key a target names.
		for _, t := range f.queryTargets {
			if string(key) != t.key {
				continue
			}
			value, ok := queryUnescape(valueBuf[:0], rawValue)
			if !ok {
				return true
			}
			for _, v := range t.values {
				if v == "*" || string(value) == v {
					return true
				}
			}
		}
		if len(f.titleNames) > 0 && string(key) == "title" {
			value, ok := queryUnescape(valueBuf[:0], rawValue)
			if !ok || titleMayMatch(value, f.titleNames) {
				return true
			}
		}
	}
	return false
}

// queryUnescape returns what url.QueryUnescape makes of s ('+' is a blank,
// %XX a byte), in dst when it differs from s, and false where it fails (a
// malformed escape).
func queryUnescape(dst, s []byte) ([]byte, bool) {
	if bytes.IndexByte(s, '%') < 0 && bytes.IndexByte(s, '+') < 0 {
		return s, true
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			dst = append(dst, ' ')
		case '%':
			if i+2 >= len(s) || hexValue[s[i+1]] > 0xf || hexValue[s[i+2]] > 0xf {
				return dst, false
			}
			dst = append(dst, hexValue[s[i+1]]<<4|hexValue[s[i+2]])
			i += 2
		default:
			dst = append(dst, c)
		}
	}
	return dst, true
}

// titleMayMatch is titleRegexp's (?i)^(?:names)(?:/|$) on an unescaped title.
func titleMayMatch(title []byte, names []string) bool {
	for _, n := range names {
		rest, ok := foldPrefix(title, n)
		if ok && (len(rest) == 0 || rest[0] == '/') {
			return true
		}
	}
	return false
}

// foldPrefix reports whether s begins with name as a (?i) literal matches it,
// each rune by its simple case folding orbit (unicode.SimpleFold: k also
// matches the Kelvin sign), an invalid byte of s read as U+FFFD as regexp
// reads it, and returns what follows.
func foldPrefix(s []byte, name string) ([]byte, bool) {
	for _, nr := range name {
		if len(s) == 0 {
			return nil, false
		}
		r, size := utf8.DecodeRune(s)
		if !sameFold(nr, r) {
			return nil, false
		}
		s = s[size:]
	}
	return s, true
}

func sameFold(a, b rune) bool {
	if a == b {
		return true
	}
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return false
}

// pathMayMatch tests strings.Contains(strings.ToLower(decodedPath(path)),
// token) for each path token, without its allocations for ASCII tokens.
func (f *lineFilter) pathMayMatch(raw []byte) bool {
	var buf [512]byte
	decoded := percentDecode(buf[:0], raw)
	if len(f.otherTokens) > 0 {
		lower := strings.ToLower(string(decoded))
		for _, t := range f.otherTokens {
			if strings.Contains(lower, t) {
				return true
			}
		}
	}
	// decoded is a copy in buf: it can be projected in place.
	lower := asciiLowerProjection(decoded)
	for _, t := range f.asciiTokens {
		if bytes.Contains(lower, []byte(t)) {
			return true
		}
	}
	return false
}

// percentDecode appends raw with its %XX escapes decoded, as url.PathUnescape
// does, to dst; when an escape is malformed PathUnescape fails and
// decodedPath keeps the raw path, so it appends raw unchanged.
func percentDecode(dst, raw []byte) []byte {
	start := len(dst)
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '%' {
			dst = append(dst, c)
			continue
		}
		if i+2 >= len(raw) || hexValue[raw[i+1]] > 0xf || hexValue[raw[i+2]] > 0xf {
			return append(dst[:start], raw...)
		}
		dst = append(dst, hexValue[raw[i+1]]<<4|hexValue[raw[i+2]])
		i += 2
	}
	return dst
}

// hexValue is a hex digit's value, 0xff for any other byte.
var hexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c], t[c-'a'+'A'] = byte(c-'a'+10), byte(c-'a'+10)
	}
	return t
}()

// asciiLowerProjection rewrites s, in place, into what an ASCII token can
// see of strings.ToLower(s): its ASCII bytes lowered, the two runes beyond
// ASCII that unicode.ToLower maps into it (U+0130 to i, the Kelvin sign U+212A
// to k; TestLowerProjection checks there are no others), and 0x80 for every
// other byte. An ASCII token is in strings.ToLower(s) exactly when it is in
// the projection: it can only be made of runes lowered into ASCII, which the
// projection keeps in order and apart from the rest. Both runes begin with a
// byte that is never a UTF-8 continuation, so they are found byte by byte as
// utf8.DecodeRune finds them, valid or not around them.
func asciiLowerProjection(s []byte) []byte {
	out := s[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < utf8.RuneSelf:
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
		case c == 0xc4 && i+1 < len(s) && s[i+1] == 0xb0:
			c = 'i'
			i++
		case c == 0xe2 && i+2 < len(s) && s[i+1] == 0x84 && s[i+2] == 0xaa:
			c = 'k'
			i += 2
		default:
			c = utf8.RuneSelf
		}
		out = append(out, c)
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
