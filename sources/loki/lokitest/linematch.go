package lokitest

// How the fake runs a line filter's or | regexp's expression on a line.

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"sync/atomic"
)

// lineRegexp is a stage's regular expression, with what it made of the
// lines it has seen, by the part of a line a match can start in.
//
// When the expression's program starts by matching a literal text (its
// prefix), every match starts with it, so the leftmost match, and each
// sub-match's place in it, depend only on the line from the prefix's first
// occurrence on: no empty-width assertion can look before it, as the
// program's first step is the prefix's first character. That tail is
// what the memo keys: the pushdown's marks (a header name after
// "resp_headers":) read the tail Caddy logs last, which a handful of
// responses share, while the whole line (time, address, request) is
// unique. Running the mark of a cache hit on each line was a quarter of
// the live tests' time (its program is large and RE2 walks it per byte);
// keeping results by whole line cost more than it saved (concurrent.go).
type lineRegexp struct {
	re     *regexp.Regexp
	prefix string
	// texts, when not nil, are the expression's alternatives when it is
	// nothing but texts in ASCII, each in any case or as written (the
	// pushdown's family filters: (?i:chrome), (?i:zh)). On a line all in
	// ASCII it matches where one of them is in the line, which a search
	// finds without RE2 walking a folded text's program per byte (most of
	// the fake's time on the simulated crawler day); a line with other
	// bytes goes to the regexp, as (?i)k also matches the Kelvin sign.
	texts []literalText

	mu sync.Mutex
	// found holds FindStringSubmatchIndex of each tail seen (nil: no
	// match), matched MatchString's; n counts both, bounded by maxLineMemo.
	found   map[string][]int
	matched map[string]bool
	n       atomic.Int32
}

// maxLineMemo bounds a memo: tails that differ on every line (a prefix
// early in the line) would otherwise grow it with the lines.
const maxLineMemo = 1 << 14

func newLineRegexp(re *regexp.Regexp) *lineRegexp {
	return &lineRegexp{re: re, prefix: literalStart(re), texts: literalTexts(re)}
}

// literalText is one alternative of an expression of texts: text, lowered
// when fold (it matches in any case).
type literalText struct {
	text string
	fold bool
}

// literalTexts is re's alternatives when re is one text or an alternation
// of texts, all in ASCII (nil otherwise): a text in any case ((?i:zh)) or
// as written.
func literalTexts(re *regexp.Regexp) []literalText {
	parsed, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil
	}
	alts := []*syntax.Regexp{parsed}
	if parsed.Op == syntax.OpAlternate {
		alts = parsed.Sub
	}
	var out []literalText
	for _, a := range alts {
		if a.Op != syntax.OpLiteral || len(a.Rune) == 0 {
			return nil
		}
		text := string(a.Rune)
		if !isASCII(text) {
			return nil
		}
		fold := a.Flags&syntax.FoldCase != 0
		if fold {
			text = strings.ToLower(text)
		}
		out = append(out, literalText{text: text, fold: fold})
	}
	return out
}

// matchTexts is whether one of texts is in line, a line all in ASCII.
func matchTexts(line string, texts []literalText) bool {
	for _, x := range texts {
		if x.fold && containsLowered(line, x.text) || !x.fold && strings.Contains(line, x.text) {
			return true
		}
	}
	return false
}

// containsLowered is whether lower (in ASCII lower case) is in s (ASCII) in
// any case.
func containsLowered(s, lower string) bool {
	n := len(lower)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for j < n && asciiLower(s[i+j]) == lower[j] {
			j++
		}
		if j == n {
			return true
		}
	}
	return false
}

func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// literalStart is the literal text re's program starts by matching, "" when
// it starts otherwise (an assertion, a class, an alternation, folded case).
// Not regexp's LiteralPrefix: for an anchored expression (^abc) that is the
// text after the anchor, which a tail from the text's first "abc" would
// wrongly match.
func literalStart(re *regexp.Regexp) string {
	// regexp.Compile parses with syntax.Perl.
	parsed, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return ""
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return ""
	}
	prefix, _ := prog.Prefix()
	return prefix
}

// tail is the line from the prefix's first occurrence, false when the
// line holds no prefix (so no match).
func (l *lineRegexp) tail(line string) (string, bool) {
	i := strings.Index(line, l.prefix)
	if i < 0 {
		return "", false
	}
	return line[i:], true
}

// MatchString is l.re.MatchString(line).
func (l *lineRegexp) MatchString(line string) bool {
	if l.texts != nil && isASCII(line) {
		return matchTexts(line, l.texts)
	}
	if l.prefix == "" {
		return l.re.MatchString(line)
	}
	tail, ok := l.tail(line)
	if !ok {
		return false
	}
	return memo(l, &l.matched, tail, l.re.MatchString)
}

// FindStringSubmatch is l.re.FindStringSubmatch(line).
func (l *lineRegexp) FindStringSubmatch(line string) []string {
	if l.prefix == "" {
		return l.re.FindStringSubmatch(line)
	}
	tail, ok := l.tail(line)
	if !ok {
		return nil
	}
	loc := memo(l, &l.found, tail, l.re.FindStringSubmatchIndex)
	if loc == nil {
		return nil
	}
	m := make([]string, len(loc)/2)
	for k := range m {
		if a := loc[2*k]; a >= 0 {
			m[k] = tail[a:loc[2*k+1]]
		}
	}
	return m
}

// memo is run(tail), kept in *m by tail while the memo has room (its
// entries in found and matched together bounded by maxLineMemo).
func memo[T any](l *lineRegexp, m *map[string]T, tail string, run func(string) T) T {
	l.mu.Lock()
	v, hit := (*m)[tail]
	l.mu.Unlock()
	if hit {
		return v
	}
	v = run(tail)
	if l.n.Load() >= maxLineMemo {
		return v
	}
	l.mu.Lock()
	if *m == nil {
		*m = map[string]T{}
	}
	(*m)[tail] = v
	l.mu.Unlock()
	l.n.Add(1)
	return v
}
