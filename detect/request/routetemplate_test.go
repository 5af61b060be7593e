package request

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRouteTemplate(t *testing.T) {
	tests := []struct{ path, query, want string }{
		// WordPress
		{"/", "s=caddy+rate+limit", "/?s"},
		{"/wp-json/wp/v2/search", "search=php&per_page=10", "/wp-json/wp/v2/search?per_page&search"},
		{"/2026/10/hello_world_again/", "replytocom=4121", "/{n}/{n}/{slug}/?replytocom"},
		{"/2026/10/%EC%B2%A0%EB%8F%84_%EC%9A%B0%EC%A3%BC/", "", "/{n}/{n}/{slug}/"}, // a Korean slug
		{"/wp-content/uploads/2026/03/img-2041-768x512.jpg", "", "/wp-content/uploads/{n}/{n}/{token}.jpg"},
		{"/wp-admin/post.php", "post=812&action=edit", "/wp-admin/post.php?action&post"},
		// Drupal, Laravel, Nextcloud
		{"/node/123/edit", "", "/node/{n}/edit"},
		{"/api/orders/3f2b8c1e-9d4a-4e21-8f7a-2b6c9e0d1a55", "", "/api/orders/{uuid}"},
		{"/commit/9f86d081884c7d65", "", "/commit/{hash}"},
		{"/remote.php/dav/files/alice/Documents", "", "/remote.php/dav/files/alice/Documents"},
		{"/s/aZ3kP9qLmN2xW7", "", "/s/{token}"},
		{"/index.php/apps/files/ajax/download.php", "dir=%2F&files=a.txt", "/index.php/apps/files/ajax/download.php?dir&files"},
		{"/assets/app.5f3e9a1c2b7d.js", "", "/assets/{token}.js"},
		// MediaWiki: namespaces stay, the page after them goes
		{"/w/Special:WhatLinksHere/Seoul", "", "/w/Special:WhatLinksHere/Seoul"},
		{"/w/Special:Contributions/HanSet4242", "", "/w/Special:Contributions/{token}"},
		{"/index.php", "title=Seoul&action=history", "/index.php?action&title"},
		// keys sorted and kept once, values gone, numeric keys folded
		{"/search", "q=x&page=2&q=y", "/search?page&q"},
		{"/x", "123=a", "/x?{n}"},
		{"/feed/", "", "/feed/"},
		{"/", "", "/"},
		{"/wp-json", "", "/wp-json"},
	}
	for _, tt := range tests {
		if got := RouteTemplate(tt.path, tt.query); got != tt.want {
			t.Errorf("RouteTemplate(%q, %q) = %q, want %q", tt.path, tt.query, got, tt.want)
		}
	}
}

// TestLongOrInvalid: a base outside ASCII is a token when it is longToken
// runes or more, or not valid UTF-8, as counting the runes and validating
// the whole string apart would say, at the edges: 23 and 24 runes of two
// bytes (a count of bytes, not of runes, takes 23 for a token), invalid
// bytes before and after the 24th rune (a count of runes alone misses
// them: RuneCount takes an invalid byte for a rune), and an encoded U+FFFD,
// which is valid.
func TestLongOrInvalid(t *testing.T) {
	cases := []string{"", "abc", strings.Repeat("a", 23), strings.Repeat("a", 24), strings.Repeat("가", 7), strings.Repeat("é", 23),
		strings.Repeat("é", 24), strings.Repeat("é", 10) + "\xff", strings.Repeat("é", 24) + "\xff", "\ufffd", strings.Repeat("\ufffd", 30),
		strings.Repeat("a", 22) + "\xe2\x82", "ab\xc3", "\x80\x80\x80"}
	for _, s := range cases {
		want := utf8.RuneCountInString(s) >= longToken || !utf8.ValidString(s)
		if got := basePlaceholder(s) == phToken; got != want {
			t.Errorf("basePlaceholder(%q) is a token: %v, want %v", s, got, want)
		}
	}
}

// TestCutByte: CutByte is strings.Cut with a one-byte separator, at the
// ends of the string and where the separator repeats or is absent.
func TestCutByte(t *testing.T) {
	for _, s := range []string{"", "/", "a/b", "/a/b/", "ab", "a//b", "한국/어", "\xff/"} {
		for _, sep := range []byte{'/', ':', 0xff} {
			b, a, ok := CutByte(s, sep)
			wb, wa, wok := strings.Cut(s, string([]byte{sep}))
			if b != wb || a != wa || ok != wok {
				t.Errorf("CutByte(%q, %q) = %q, %q, %v; strings.Cut gives %q, %q, %v", s, sep, b, a, ok, wb, wa, wok)
			}
		}
	}
}
