package sources

import (
	"bytes"
	"regexp"
	"regexp/syntax"
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
