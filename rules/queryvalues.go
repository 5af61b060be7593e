package rules

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aftermath-forensics/aftermath/prose"
)

// A query target `query s=*` holds every request that carries the key, the
// readers' searches with the crawler's. Where the crawler's values of the key
// follow a shape that ordinary requests' values do not (32 hex digits where
// readers type words, Han script where readers write Hangul), a vars_regexp on
// the key's values holds the crawler alone. The shape is measured: the
// values each side sent, matched with the very regular expression Caddy will
// run, on the very string Caddy's placeholder gives it.

// Bounds of a value sample: values come from URLs, which a client varies
// without limit. Shapes are few (a class, a script, a length) however many
// values there are, so every value is counted by its shape; the values
// themselves only while they fit.
const (
	maxSampleValues = 2048
	maxSampleLen    = 256
	maxShapes       = 4096
)

// Thresholds of a value pattern: the crawler must have sent the key often
// enough, with enough distinct values, for a shape to be a shape and not a
// list of values.
const (
	minPatternRequests = 50
	minPatternValues   = 10
)

// valueShape is what a value pattern can say of a value: the ASCII classes
// (asciiClasses, by bit) it is made of throughout, the scripts (scripts, by
// bit) it holds a character of, and its length in characters, as RE2
// counts them.
type valueShape struct {
	classes, scripts uint16
	runes            int
}

func shapeOf(v string) valueShape {
	sh := valueShape{runes: utf8.RuneCountInString(v)}
	for i, c := range asciiClasses {
		in := v != ""
		for _, r := range v {
			if in = c.in(r); !in {
				break
			}
		}
		if in {
			sh.classes |= 1 << i
		}
	}
	for i, name := range scripts {
		table := unicode.Scripts[name]
		if strings.IndexFunc(v, func(r rune) bool { return unicode.Is(table, r) }) >= 0 {
			sh.scripts |= 1 << i
		}
	}
	return sh
}

// valueSample counts the values one side sent for one query key: every one
// by shape (past maxShapes shapes, as unshaped), and by value while they fit
// (the rest as unsampled). No pattern is credited with a value it cannot
// see.
type valueSample struct {
	values    map[string]int
	shapes    map[valueShape]int
	total     int
	unsampled int
	unshaped  int
}

func (s *valueSample) add(v string) {
	s.total++
	if s.values == nil {
		s.values, s.shapes = map[string]int{}, map[valueShape]int{}
	}
	if sh := shapeOf(v); s.shapes[sh] > 0 || len(s.shapes) < maxShapes {
		s.shapes[sh]++
	} else {
		s.unshaped++
	}
	if _, ok := s.values[v]; !ok && (len(v) > maxSampleLen || len(s.values) >= maxSampleValues) {
		s.unsampled++
		return
	}
	// The value counted is a copy, new or not: v may view a borrowed query
	// (readClassified), and s.values[v]++ on a value held stores v over it.
	s.values[strings.Clone(v)]++
}

// candidate is a value pattern and how it is counted: by shape (every
// value) or, for a literal, by its regular expression on the sampled values.
type candidate struct {
	pattern string
	byShape func(valueShape) bool
}

// held counts the requests whose value the candidate's pattern matches, and
// those it cannot tell (unshaped, or unsampled for a literal).
func (s *valueSample) held(c candidate, re *regexp.Regexp) (n, unknown int) {
	if c.byShape != nil {
		for sh, k := range s.shapes {
			if c.byShape(sh) {
				n += k
			}
		}
		return n, s.unshaped
	}
	for v, k := range s.values {
		if re.MatchString(v) {
			n += k
		}
	}
	return n, s.unsampled
}

// queryValueVar is the placeholder a value pattern matches: every value of
// the key, percent-decoded as url.ParseQuery reads them, joined by ','
// (Caddy's replacer for http.request.uri.query.*). A request without the key
// gives "", which no pattern matches.
func queryValueVar(key string) string { return "{http.request.uri.query." + key + "}" }

// queryValue is what queryValueVar gives for a raw query string.
func queryValue(rawQuery, key string) string {
	vals, _ := url.ParseQuery(rawQuery)
	return joinedValue(vals, key)
}

// joinedValue is key's values in vals as queryValueVar gives them: every
// value, joined by ','.
func joinedValue(vals url.Values, key string) string { return strings.Join(vals[key], ",") }

// hasQueryKey reports whether the raw query string names key, as
// url.ParseQuery reads keys; cheap enough for every request of a pass.
func hasQueryKey(rawQuery, key string) bool {
	var buf [64]byte
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		k, _, _ := strings.Cut(pair, "=")
		if uk, ok := queryUnescape(buf[:0], []byte(k)); !ok || string(uk) == key {
			return true // a malformed key: let ParseQuery decide
		}
	}
	return false
}

// observeValues adds the values r gives the keys it carries to samples.
func observeValues(samples map[string]*valueSample, keys []string, rawQuery string) {
	if rawQuery == "" {
		return
	}
	// Parsed once, and only when the query carries one of the keys: most
	// requests carry none.
	var vals url.Values
	for _, k := range keys {
		if !hasQueryKey(rawQuery, k) {
			continue
		}
		s := samples[k]
		if s == nil {
			s = &valueSample{}
			samples[k] = s
		}
		if vals == nil {
			vals, _ = url.ParseQuery(rawQuery)
		}
		s.add(joinedValue(vals, k))
	}
}

// wildcardKeys are the query keys the crawlers' expensive templates would be
// matched by as `query key=*` (routeTarget): the keys whose values are worth
// sampling.
func wildcardKeys(refs []crawlerRef) []string {
	var keys []string
	for _, ref := range refs {
		for _, tpl := range ref.expensive {
			if t, ok := routeTarget(tpl); ok && t.QueryKey != "" && slices.Equal(t.QueryValues, []string{"*"}) {
				keys = appendNew(keys, t.QueryKey)
			}
		}
	}
	return keys
}

// valuePattern is the regular expression that holds the crawler's values of
// a key and spares the ordinary ones, with why; ok is false when the data
// does not support one (too few values, no shape, no ordinary request to
// spare, or a shape the ordinary values share), and `query key=*` stands.
//
// Candidates come from the crawler's values alone, narrowest first: one
// ASCII character class throughout (digits, hex, letters, alphanumerics,
// token characters), at one length, within the lengths seen, or at any;
// a script every value holds (Han, Hangul, Cyrillic, ...); a literal prefix
// or suffix they all share. The first that holds at least 1-maxMisses of
// the crawler's requests and at most maxMisses of the ordinary ones
// (counting every unsampled ordinary value as held) is taken.
func valuePattern(key string, crawler, ordinary *valueSample) (pattern string, why prose.Text, ok bool) {
	if crawler == nil || crawler.total < minPatternRequests || len(crawler.values) < minPatternValues {
		return "", why, false
	}
	if ordinary == nil || ordinary.total == 0 {
		return "", why, false // key=* spares nobody less: nothing to narrow for
	}
	for _, c := range patternCandidates(crawler) {
		re, err := regexp.Compile(c.pattern)
		if err != nil || re.MatchString("") {
			continue // "" is every request without the key
		}
		held, _ := crawler.held(c, re)
		if float64(held) < (1-maxMisses)*float64(crawler.total) {
			continue
		}
		matched, unknown := ordinary.held(c, re)
		if float64(matched+unknown) > maxMisses*float64(ordinary.total) {
			continue
		}
		why = Messages.Say("rules.target_why", struct{ Key, Pattern, Held, Crawler, Matched, Ordinary string }{
			key, c.pattern, fmtInt(held), fmtInt(crawler.total), fmtInt(matched + unknown), fmtInt(ordinary.total)})
		return c.pattern, why, true
	}
	return "", why, false
}

// asciiClasses are the character classes a value may be made of, narrowest
// first.
var asciiClasses = []struct {
	class string
	in    func(r rune) bool
}{
	{`[0-9]`, func(r rune) bool { return '0' <= r && r <= '9' }},
	{`[0-9a-f]`, func(r rune) bool { return '0' <= r && r <= '9' || 'a' <= r && r <= 'f' }},
	{`[0-9A-F]`, func(r rune) bool { return '0' <= r && r <= '9' || 'A' <= r && r <= 'F' }},
	{`[a-z]`, func(r rune) bool { return 'a' <= r && r <= 'z' }},
	{`[A-Z]`, func(r rune) bool { return 'A' <= r && r <= 'Z' }},
	{`[0-9a-z]`, func(r rune) bool { return '0' <= r && r <= '9' || 'a' <= r && r <= 'z' }},
	{`[0-9A-Z]`, func(r rune) bool { return '0' <= r && r <= '9' || 'A' <= r && r <= 'Z' }},
	{`[0-9A-Za-z]`, func(r rune) bool { return r < utf8.RuneSelf && (unicode.IsDigit(r) || unicode.IsLetter(r)) }},
	{`[0-9A-Za-z_-]`, func(r rune) bool {
		return r < utf8.RuneSelf && (unicode.IsDigit(r) || unicode.IsLetter(r) || r == '_' || r == '-')
	}},
}

// scripts are the writing systems a value may contain, by RE2's name.
var scripts = []string{"Han", "Hangul", "Hiragana", "Katakana", "Cyrillic", "Arabic", "Hebrew", "Thai", "Greek", "Devanagari"}

// patternCandidates lists the candidate patterns of a crawler's values,
// narrowest first.
func patternCandidates(s *valueSample) []candidate {
	var out []candidate
	quorum := func(n int) bool { return float64(n) >= (1-maxMisses)*float64(s.total) }
	for i := range asciiClasses {
		bit := uint16(1) << i
		in, lo, hi := 0, 0, 0
		lengths := map[int]int{}
		for sh, n := range s.shapes {
			if sh.classes&bit == 0 {
				continue
			}
			in += n
			lengths[sh.runes] += n
			if lo == 0 || sh.runes < lo {
				lo = sh.runes
			}
			hi = max(hi, sh.runes)
		}
		if !quorum(in) {
			continue
		}
		for l, n := range lengths {
			if quorum(n) && l <= maxSampleLen {
				out = append(out, classCandidate(i, l, l))
			}
		}
		if lo != hi && hi <= maxSampleLen {
			out = append(out, classCandidate(i, lo, hi))
		}
		out = append(out, classCandidate(i, 0, 0))
	}
	for i := range scripts {
		bit := uint16(1) << i
		in := 0
		for sh, n := range s.shapes {
			if sh.scripts&bit != 0 {
				in += n
			}
		}
		if quorum(in) {
			out = append(out, scriptCandidate(i))
		}
	}
	if p := literalAffix(s, true); p != "" {
		out = append(out, candidate{pattern: `^` + regexp.QuoteMeta(p)})
	}
	if p := literalAffix(s, false); p != "" {
		out = append(out, candidate{pattern: regexp.QuoteMeta(p) + `$`})
	}
	return out
}

// classCandidate is a value made of asciiClasses[i] throughout, lo to hi
// characters long (lo 0: any length, at least one).
func classCandidate(i, lo, hi int) candidate {
	c, bit := asciiClasses[i], uint16(1)<<i
	switch {
	case lo == 0:
		return candidate{`^` + c.class + `+$`, func(sh valueShape) bool { return sh.classes&bit != 0 }}
	case lo == hi:
		return candidate{fmt.Sprintf(`^%s{%d}$`, c.class, lo), func(sh valueShape) bool { return sh.classes&bit != 0 && sh.runes == lo }}
	}
	return candidate{fmt.Sprintf(`^%s{%d,%d}$`, c.class, lo, hi),
		func(sh valueShape) bool { return sh.classes&bit != 0 && sh.runes >= lo && sh.runes <= hi }}
}

// scriptCandidate is a value holding a character of scripts[i].
func scriptCandidate(i int) candidate {
	bit := uint16(1) << i
	return candidate{`\p{` + scripts[i] + `}`, func(sh valueShape) bool { return sh.scripts&bit != 0 }}
}

// literalAffix is the longest prefix (or suffix) every sampled value shares,
// cut to its part made of token characters (a value is the client's text: a
// brace or a quote in a Caddyfile token is no literal), when it is at least
// three characters long.
func literalAffix(s *valueSample, prefix bool) string {
	var common string
	first := true
	for v := range s.values {
		if first {
			common, first = v, false
			continue
		}
		if prefix {
			for !strings.HasPrefix(v, common) {
				common = common[:len(common)-1]
			}
		} else {
			for !strings.HasSuffix(v, common) {
				common = common[1:]
			}
		}
	}
	token := func(r rune) bool { return !asciiClasses[len(asciiClasses)-1].in(r) && r != '.' }
	if prefix {
		if i := strings.IndexFunc(common, token); i >= 0 {
			common = common[:i]
		}
	} else if i := strings.LastIndexFunc(common, token); i >= 0 {
		common = common[i+1:]
	}
	if len(common) < 3 {
		return ""
	}
	return common
}
