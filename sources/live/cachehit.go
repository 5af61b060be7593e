package live

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/aftermath-forensics/aftermath/sources/accesslog"
)

// Loki counts the minutes a pushdown does not pull, and those counts must
// place each line as the access-log readers would (accesslog.OriginOf): PHP
// answered when the response headers carry Via or X-Powered-By, unless a
// cache's headers say it served a stored copy below 500. Loki cannot run
// that reader, so the rule is written as two regular expressions over the
// raw JSON line, built from the words the reader itself reads (exported by
// accesslog), each marking a line with a label through | regexp: phpLabel
// when the headers carry PHP's marks, hitLabel when a cache says it served
// the line. The counts are grouped by both and by status, and
// accesslog.OriginOf places each group, so the decision itself is made once.
//
// Both expressions read resp_headers only: Caddy logs it last, after the
// request's own headers (which a client may fill with anything), and JSON
// escapes every quote inside a value, so `"Name":[` is a key.
const (
	phpLabel = "aftermath_php"
	hitLabel = "aftermath_hit"
)

// respHeaders reaches into the response headers, up to a key.
const respHeaders = `"resp_headers":\s*\{.*`

// markStage is a | regexp stage setting label (to `"`: never empty, as an
// empty label is no label) on the lines that keys matches, which
// must start right after the opening quote of a response header's name.
func markStage(label, keys string) string {
	return "| regexp `" + respHeaders + "(?P<" + label + `>")(?:` + keys + ")`"
}

// phpMarks are the names of the response headers that carry PHP's marks.
var phpMarks = foldCase(accesslog.ViaHeader, true) + `"\s*:|` + foldCase(accesslog.PoweredByHeader, true) + `"\s*:`

// phpStage marks the lines whose response headers carry PHP's marks.
var phpStage = markStage(phpLabel, phpMarks)

// phpLineFilter keeps the lines phpStage marks, as a line filter: for a
// query that wants only those, before any parser runs.
var phpLineFilter = " |~ `" + respHeaders + `"(?:` + phpMarks + ")`"

// hitStage marks the lines a cache says it served: the cache verdict's hit
// (accesslog's cacheEvidence) as a regular expression.
var hitStage = markStage(hitLabel, cacheStatusHit+"|"+xCacheHit+"|"+ageHit)

// foldCase writes s as a regular expression matching it in any case, as the
// reader compares: header and parameter names as bytes.EqualFold does
// (unicode simple folding: "s" matches "ſ" too), X-Cache's words by their
// ASCII upper case (unicode false). RE2's (?i) cannot be told which.
func foldCase(s string, unicodeFold bool) string {
	var b strings.Builder
	for _, r := range s {
		if !unicode.IsLetter(r) {
			b.WriteString(regexp.QuoteMeta(string(r)))
			continue
		}
		b.WriteString("[")
		f := r
		for {
			if unicodeFold || f < 0x80 {
				b.WriteRune(f)
			}
			if f = unicode.SimpleFold(f); f == r {
				break
			}
		}
		b.WriteString("]")
	}
	return b.String()
}

// Pieces of a header's value as the raw line holds it: a JSON string, in
// which a quote is \" and a backslash \\.
const (
	// jsonChar is one character of a JSON string.
	jsonChar = `(?:[^"\\]|\\.)`
	// blank is the spaces and tabs the reader skips (a tab is \t in JSON).
	blank = `(?: |\\t)*`
	// quoted is an RFC 9651 string, to its closing quote (a backslash
	// escapes the character after it).
	quoted = `\\"(?:[^"\\]|\\[^"\\]|\\\\(?:[^"\\]|\\.))*\\"`
	// bare is an unquoted item up to the next ';' or ',' (empty allowed).
	bare = `(?:(?:[^";,\\]|\\[^"])(?:[^";,\\]|\\.)*)?`
)

// headerValue reaches from the name of a header (after its opening quote)
// into one of its values, right after that value's opening quote: Caddy logs
// each header as an array of strings.
func headerValue(name string) string {
	return foldCase(name, true) + `"\s*:\s*\[(?:"` + jsonChar + `*"\s*,\s*)*"`
}

// cacheStatusHit: a Cache-Status member with the hit parameter (bare,
// hit=?1 or with a quoted value), after members and parameters read as the
// reader reads them. A bare key= or detail= value holds the requested URL
// (Souin's key=GET-https-example.com-/wiki?x=;hit), after which the reader
// reads nothing: the parameters before a hit may be those two only with a
// quoted value or none. Parameter names are read as RFC 9651 keys (letters,
// digits, _ - . *), in any case; a line with any other name before its hit
// is not marked (it counts as PHP's when it carries PHP's marks).
var cacheStatusHit = func() string {
	kd := foldCase(accesslog.CacheStatusKey, true) + "|" + foldCase(accesslog.CacheStatusDetail, true)
	param := `(?:(?:` + otherThan(accesslog.CacheStatusKey, accesslog.CacheStatusDetail) + `)` + blank + `(?:=(?:` + quoted + `|` + bare + `))?` +
		`|(?:` + kd + `)` + blank + `(?:=` + quoted + `)?)`
	// Members (a cache's name, then its parameters) are separated by
	// commas, parameters by semicolons: read as one run, what follows a
	// comma is a name and what follows a semicolon a parameter.
	name := `(?:` + quoted + `|` + bare + `)`
	hit := foldCase(accesslog.CacheStatusHit, true) + blank + `(?:[;,"]|=(?:` + quoted + `|\?1` + blank + `[;,"]))`
	return headerValue(accesslog.CacheStatusHeader) + blank + name +
		`(?:` + blank + `(?:,` + blank + name + `|;` + blank + param + `))*` + blank + `;` + blank + hit
}()

// otherThan matches a parameter name read as an RFC 9651 key (letters in
// either case, digits, _ . * -), empty or not, that is none of words (lower
// case) in any case: the names a parameter may have to be read past. It
// walks the words' common prefixes: at each, a character that continues no
// word leads to any name; one that continues a word goes on; a whole word
// needs one more character; a proper prefix is a name itself.
func otherThan(words ...string) string {
	const anyName = `[\w.*-]*`
	alts := []string{""} // the empty name
	var walk func(prefix string, ws []string)
	walk = func(prefix string, ws []string) {
		next := map[byte][]string{}
		whole := false
		for _, w := range ws {
			if w == "" {
				whole = true
				continue
			}
			next[w[0]] = append(next[w[0]], w[1:])
		}
		firsts := slices.Sorted(maps.Keys(next))
		switch {
		case whole:
			alts = append(alts, prefix+`[\w.*-]`+anyName)
		case prefix != "":
			alts = append(alts, prefix)
		}
		if len(firsts) > 0 {
			alts = append(alts, prefix+nameCharExcept(firsts)+anyName)
		}
		for _, c := range firsts {
			walk(prefix+foldCase(string(c), true), next[c])
		}
	}
	walk("", words)
	return strings.Join(alts, "|")
}

// nameCharExcept is a class of one parameter-name character other than the
// letters given (lower case), in either case: [0-9A-JL-Za-jl-z_.*-] without k.
func nameCharExcept(letters []byte) string {
	var b strings.Builder
	b.WriteString("[0-9")
	for _, base := range []byte{'A', 'a'} {
		for c := byte(0); c < 26; {
			if slices.Contains(letters, 'a'+c) {
				c++
				continue
			}
			end := c
			for end+1 < 26 && !slices.Contains(letters, 'a'+end+1) {
				end++
			}
			b.WriteByte(base + c)
			if end > c {
				if end > c+1 {
					b.WriteByte('-')
				}
				b.WriteByte(base + end)
			}
			c = end + 1
		}
	}
	b.WriteString("_.*-]")
	return b.String()
}

// xCacheHit: an X-Cache entry (the value split at commas) whose first word
// holds HIT or is STALE or UPDATING, in any ASCII case. The reader skips a
// first word longer than accesslog.XCacheMaxWord bytes, which this does not.
var xCacheHit = func() string {
	word := `(?:[^"\\ ,]|\\[^t])`
	end := `(?: |\\t|,|")`
	served := word + `*` + foldCase(accesslog.XCacheHit, false) + word + `*|` +
		foldCase(accesslog.XCacheStale, false) + `|` + foldCase(accesslog.XCacheUpdating, false)
	return headerValue(accesslog.XCacheHeader) + `(?:` + jsonChar + `*,)?` + blank + `(?:` + served + `)` + end
}()

// ageHit: an Age value of digits, not all zero (a cache served a copy that
// old; 0 is a fresh fetch).
var ageHit = headerValue(accesslog.AgeHeader) + blank + `0*[1-9][0-9]*` + blank + `"`
