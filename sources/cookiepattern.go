package sources

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"unicode"
)

// CookiePattern is a site's logged-in cookie pattern, compiled once for
// matching Cookie header values line after line. Sites write it as a plain
// substring ("wikiUserID=") or as a regular expression
// ("wordpress_logged_in_[0-9a-f]{32}=", `(^|;\s*)wiki(UserID|UserName)=`);
// both are read as RE2, which a substring without metacharacters matches as
// itself. A value that does not compile is taken as a substring.
type CookiePattern struct {
	// literal is a substring every match holds ("" when the expression has
	// none): a Cookie value without it is rejected without the expression.
	literal string
	// re is nil when literal is the whole pattern.
	re *regexp.Regexp
}

// CompileCookiePattern compiles a logged-in cookie pattern; "" gives nil (the
// site's pattern is unknown).
func CompileCookiePattern(p string) *CookiePattern {
	if p == "" {
		return nil
	}
	parsed, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return &CookiePattern{literal: p}
	}
	parsed = parsed.Simplify()
	if lit, ok := plainLiteral(parsed); ok {
		return &CookiePattern{literal: lit}
	}
	c := &CookiePattern{re: regexp.MustCompile(p)} // it parsed above
	if parsed.Op == syntax.OpConcat {
		for _, sub := range parsed.Sub {
			if lit, ok := plainLiteral(sub); ok && len(lit) > len(c.literal) {
				c.literal = lit
			}
		}
	}
	return c
}

func plainLiteral(re *syntax.Regexp) (string, bool) {
	if re.Op != syntax.OpLiteral || re.Flags&syntax.FoldCase != 0 {
		return "", false
	}
	return string(re.Rune), true
}

// Match reports whether one Cookie header value marks a logged-in user.
func (c *CookiePattern) Match(value []byte) bool {
	if c.literal != "" && !bytes.Contains(value, []byte(c.literal)) {
		return false
	}
	return c.re == nil || c.re.Match(value)
}

// Literal returns the pattern when it is a plain substring (what a Caddy
// header matcher's *substring* can say), with false for an expression.
func (c *CookiePattern) Literal() (string, bool) {
	if c == nil || c.re != nil {
		return "", false
	}
	return c.literal, true
}

// Example returns a Cookie header value the pattern matches, for requests
// rebuilt from a log (which keeps no cookie value): a plain substring with "1"
// after it ("wikiUserID=1"), an expression's shortest reading (the first
// alternative, the least repetitions, a printable character of each class,
// "wordpress_logged_in_000…0=1"). It reports false when no printable value
// that the pattern matches can be built; a rule that exempts logged-in users
// by the pattern cannot then be checked on the recorded requests.
func (c *CookiePattern) Example() (string, bool) {
	if c == nil {
		return "", false
	}
	if c.re == nil {
		v := c.literal + "1"
		return v, printableASCII(v)
	}
	parsed, err := syntax.Parse(c.re.String(), syntax.Perl)
	if err != nil {
		return "", false
	}
	var b []rune
	if !appendExample(&b, parsed.Simplify()) {
		return "", false
	}
	for _, v := range []string{string(b) + "1", string(b)} {
		if printableASCII(v) && c.Match([]byte(v)) {
			return v, true
		}
	}
	return "", false
}

// appendExample appends to b a shortest string re matches, taking the first
// alternative that can be written; empty-width assertions write nothing and
// Example checks the whole value against the pattern afterwards.
func appendExample(b *[]rune, re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				// The parser keeps a folded letter's upper case.
				r = unicode.ToLower(r)
			}
			*b = append(*b, r)
		}
		return true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		*b = append(*b, 'a')
		return true
	case syntax.OpCharClass:
		r, ok := classExample(re.Rune)
		if ok {
			*b = append(*b, r)
		}
		return ok
	case syntax.OpCapture, syntax.OpPlus:
		return appendExample(b, re.Sub[0])
	case syntax.OpRepeat:
		for i := 0; i < re.Min; i++ {
			if !appendExample(b, re.Sub[0]) {
				return false
			}
		}
		return true
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !appendExample(b, sub) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			mark := len(*b)
			if appendExample(b, sub) {
				return true
			}
			*b = (*b)[:mark]
		}
	}
	return false
}

// classExample picks a character of a class (pairs of inclusive ranges) that
// a Cookie value can hold: a digit or letter first, then other printable
// ASCII except the cookie's own separators.
func classExample(ranges []rune) (rune, bool) {
	for _, ok := range []func(rune) bool{
		func(r rune) bool { return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' },
		func(r rune) bool { return r > ' ' && r < 0x7f && r != ';' && r != ',' && r != '"' && r != '\\' },
	} {
		for i := 0; i+1 < len(ranges); i += 2 {
			for r := ranges[i]; r <= ranges[i+1] && r < 0x7f; r++ {
				if ok(r) {
					return r, true
				}
			}
		}
	}
	return 0, false
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return s != ""
}
