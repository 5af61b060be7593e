package sources

import (
	"strings"
	"testing"
)

// Sites write the logged-in cookie as a substring or as an expression; the
// obvious reading (a substring) misses every logged-in user of the second.
func TestCookiePattern(t *testing.T) {
	cases := []struct {
		pattern, value string
		want           bool
	}{
		{"wikiUserID=", "wikiUserID=12; wikiSession=x", true},
		{"wikiUserID=", "wikiSession=x", false},
		{`wordpress_logged_in_[0-9a-f]{32}=`, "wordpress_test_cookie=1; wordpress_logged_in_0123456789abcdef0123456789abcdef=admin", true},
		{`wordpress_logged_in_[0-9a-f]{32}=`, "wordpress_logged_in_short=admin", false},
		{`(^|;\s*)stagewiki(UserID|UserName)=`, "_ga=1; stagewikiUserName=Kim", true},
		{`(^|;\s*)stagewiki(UserID|UserName)=`, "stagewikiSession=abc", false},
		{`(^|;\s*)stagewiki(UserID|UserName)=`, "xstagewikiUserID=1", false},
		{"[unclosed", "a=[unclosed", true}, // not an expression: a substring
	}
	for _, c := range cases {
		if got := CompileCookiePattern(c.pattern).Match([]byte(c.value)); got != c.want {
			t.Errorf("%q on %q: %v, want %v", c.pattern, c.value, got, c.want)
		}
	}
	if lit, ok := CompileCookiePattern("wikiUserID=").Literal(); !ok || lit != "wikiUserID=" {
		t.Errorf("a plain substring is its own literal: %q %v", lit, ok)
	}
	if _, ok := CompileCookiePattern(`wordpress_logged_in_[0-9a-f]{32}=`).Literal(); ok {
		t.Error("an expression passed for a substring")
	}
	if CompileCookiePattern("") != nil {
		t.Error("an unknown pattern compiled")
	}
}

// TestCookiePatternExample: the value a rebuilt logged-in request carries is
// one the pattern matches, for substrings and expressions alike; a pattern no
// printable value matches has none.
func TestCookiePatternExample(t *testing.T) {
	for _, tc := range []struct{ pattern, want string }{
		{"wikiUserID=", "wikiUserID=1"},
		{"wordpress_logged_in_[0-9a-f]{32}=", "wordpress_logged_in_" + strings.Repeat("0", 32) + "=1"},
		{`(^|;\s*)railwiki(UserID|UserName)=`, "railwikiUserID=1"},
		{`^sess_[a-z]+$`, "sess_a"},
		{`(?i)laravel_session=`, "laravel_session=1"},
		{`wp_[\x00-\x1f]=`, ""},
		{`a\z|b`, "a"},
	} {
		got, ok := CompileCookiePattern(tc.pattern).Example()
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%q: example %q, %v; want %q", tc.pattern, got, ok, tc.want)
		}
		if ok && !CompileCookiePattern(tc.pattern).Match([]byte(got)) {
			t.Errorf("%q does not match its own example %q", tc.pattern, got)
		}
	}
}
