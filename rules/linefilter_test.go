package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
)

// filterZones are zones with every kind of target, ASCII and localised, and
// the conditions generate writes: what the line filter must never hide a match of.
var filterZones = []Zone{
	{Name: "a", Window: time.Minute, Events: 10, Targets: []Target{
		{Paths: []string{"/w/Special:WhatLinksHere", "/w/Special:WhatLinksHere/*", "/wiki/특수:기여/*", "/w/rest.php/v1/search/title"}},
		{TitleNames: []string{"Special:CiteThisPage", "Special:Ask"}},
		{QueryKey: "action", QueryValues: []string{"edit", "history"}},
		{QueryKey: "oldid", QueryValues: []string{"*"}},
	}, Cond: Conditions{NotCookie: "wikiUserID=", Lang: "zh-cn", NoClientHints: true, UserAgent: "Chrome/"}},
	{Name: "b", Window: time.Minute, Events: 10, Targets: []Target{
		{TitleNames: []string{"특수:가리키는문서"}},
		{Paths: []string{"/index.php/Special:Ask"}},
	}},
}

func loadFilterZones(t testing.TB) *zoneMatchers {
	t.Helper()
	_, m := adaptedZoneMatchers(t, filterZones, "wikiUserID=")
	return m
}

// filterLine is an access log line for a request the zones' conditions admit.
func filterLine(t testing.TB, uri string) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as Caddy writes: a \u0026 would make the filter keep the line
	err := enc.Encode(map[string]any{"level": "info", "ts": 1795966450.5, "logger": "http.log.access.log0", "msg": "handled request",
		"request": map[string]any{"remote_ip": "192.0.2.1", "client_ip": "192.0.2.1", "proto": "HTTP/1.1", "method": "GET",
			"host": "wiki.example.org", "uri": uri, "headers": map[string][]string{
				"User-Agent":      {"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"},
				"Accept-Language": {"zh-CN,zh;q=0.9"}}},
		"duration": 0.2, "size": 100, "status": 200})
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// checkFilter holds the filter to its promise on one line: whatever Caddy's
// matchers match (after the parser), the filter keeps, as a raw line and as a
// parsed request (requestMayMatch, in front of match). It returns whether the
// filter kept the line and whether a zone matched.
func checkFilter(t *testing.T, m *zoneMatchers, f *lineFilter, line []byte) (kept, matched bool) {
	t.Helper()
	var reqs []sources.Request
	if _, err := accesslog.ReadReader(context.Background(), "t", strings.NewReader(string(line)+"\n"), accesslog.Options{LoggedInCookie: "wikiUserID=", Workers: 1}, nil,
		func(b []sources.Request) error {
			reqs = append(reqs, b...)
			return nil
		}); err != nil {
		t.Fatal(err)
	}
	kept = f.keep(line)
	for i := range reqs {
		mask, err := m.match(&reqs[i])
		if err != nil {
			t.Fatal(err)
		}
		direct := false
		for _, s := range m.sets {
			direct = direct || s.AnyMatch(httpRequest(&reqs[i], m.cookie))
		}
		if mask != 0 || direct {
			matched = true
		}
		if direct && (mask == 0 || !f.requestMayMatch(&reqs[i])) {
			t.Errorf("the request filter rejects a request Caddy matches: %s", line)
		}
	}
	if matched && !kept {
		t.Errorf("the filter rejects a line Caddy matches: %s", line)
	}
	return kept, matched
}

// TestLineFilter: the filter keeps every line a zone matches, written in any
// way the parser reads, and rejects the ordinary lines it can rule out.
func TestLineFilter(t *testing.T) {
	m := loadFilterZones(t)
	f := newLineFilter(filterZones)
	for _, tc := range []struct {
		name string
		line string
		// kept: what the filter must say (for lines it may not keep, false
		// means it must reject them: it is worth its cost).
		kept bool
	}{
		{"a path target", string(filterLine(t, "/w/Special:WhatLinksHere/Foo")), true},
		{"a path target, another case", string(filterLine(t, "/W/SPECIAL:whatlinkshere")), true},
		{"a path target, percent-encoded", string(filterLine(t, "/w/%53pecial%3AWhatLinksHere/Foo")), true},
		{"a path target, Kelvin sign", string(filterLine(t, "/w/Special:WhatLin\u212aSHere")), true},
		{"a path target, encoded Kelvin sign", string(filterLine(t, "/w/Special:WhatLin%E2%84%AAsHere")), true},
		{"a path target, dotted capital I", string(filterLine(t, "/w/Special:WhatL\u0130nksHere")), true},
		{"a path target, uncleaned", string(filterLine(t, "/x/..//w/./Special:WhatLinksHere")), true},
		{"a localised path target", string(filterLine(t, "/wiki/%ED%8A%B9%EC%88%98:%EA%B8%B0%EC%97%AC/X")), true},
		{"an API path", string(filterLine(t, "/w/rest.php/v1/search/title?q=a")), true},
		{"a title target", string(filterLine(t, "/index.php?title=Special:CiteThisPage/Foo")), true},
		{"a title target, another case", string(filterLine(t, "/index.php?title=special:citethispage")), true},
		{"a title target, encoded", string(filterLine(t, "/index.php?title=Special%3ACiteThisPage%2FX")), true},
		{"a title target, encoded key", string(filterLine(t, "/index.php?%74itle=Special:Ask")), true},
		{"a title target, long s", string(filterLine(t, "/index.php?title=%C5%BFpecial:Ask")), true},
		{"a title target, second title", string(filterLine(t, "/index.php?title=A&title=Special:Ask")), true},
		{"a title target after a semicolon pair", string(filterLine(t, "/index.php?a=1;b&title=Special:Ask")), true},
		{"a localised title target", string(filterLine(t, "/index.php?title=%ED%8A%B9%EC%88%98:%EA%B0%80%EB%A6%AC%ED%82%A4%EB%8A%94%EB%AC%B8%EC%84%9C")), true},
		{"a query target", string(filterLine(t, "/index.php?title=A&action=edit")), true},
		{"a query target, encoded value", string(filterLine(t, "/index.php?action=%65dit")), true},
		{"a query target, encoded key", string(filterLine(t, "/index.php?ac%74ion=history")), true},
		{"a wildcard query target", string(filterLine(t, "/index.php?title=A&oldid=12")), true},
		{"an empty wildcard value", string(filterLine(t, "/index.php?oldid")), true},
		{"an escaped uri", strings.Replace(string(filterLine(t, "/w/Special:WhatLinksHere")), "Special", `Sp\u0065cial`, 1), true},
		{"an escaped key", strings.Replace(string(filterLine(t, "/w/Special:WhatLinksHere")), `"uri"`, `"ur\u0069"`, 1), true},
		{"a decoy uri first", strings.Replace(string(filterLine(t, "/w/Special:WhatLinksHere")), `{"level"`, `{"uri":"/a","level"`, 1), true},
		{"spaced JSON", strings.Replace(string(filterLine(t, "/w/Special:WhatLinksHere")), `"uri":`, `"uri" : `, 1), true},

		{"an article", string(filterLine(t, "/w/Main_Page")), false},
		{"an encoded article", string(filterLine(t, "/w/%EC%82%BC%EA%B5%AD%EC%8B%9C%EB%8C%80")), false},
		{"another action", string(filterLine(t, "/index.php?title=A&action=info")), false},
		{"an article by title", string(filterLine(t, "/index.php?title=Special_relativity")), false},
		{"another special page by title", string(filterLine(t, "/index.php?title=Special:Random")), false},
		{"a longer special page by title", string(filterLine(t, "/index.php?title=Special:Asking")), false},
		{"a path target name in the query", string(filterLine(t, "/w/index.php?x=Special:WhatLinksHere")), false},
		{"an asset", string(filterLine(t, "/load.php?modules=ext.a%7Cext.b&lang=ko")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, _ := checkFilter(t, m, f, []byte(tc.line))
			if kept != tc.kept {
				t.Errorf("kept %v, want %v", kept, tc.kept)
			}
		})
	}
	// A line without a uri is the parser's to count.
	if !f.keep([]byte(`{"level":"info","msg":"not a request"}`)) {
		t.Error("a line without a uri was rejected")
	}
}

// FuzzLineFilter: for any request URI, the filter keeps the line whenever a
// zone matches the parsed request. The URI is written as an encoder escapes
// it, or (raw) pasted into the line as is, which tries the JSON forms a
// writer other than Caddy might use (and lines the parser rejects).
//
//	go test -run '^$' -fuzz FuzzLineFilter -fuzztime 30s ./rules/
func FuzzLineFilter(f *testing.F) {
	for _, uri := range []string{"/w/Special:WhatLinksHere/X", "/index.php?title=Special:Ask&action=edit", "/index.php?%74itle=%C5%BFpecial%3Aask",
		"/w/Special:WhatLin\u212aSHere", "/wiki/%ED%8A%B9%EC%88%98:%EA%B8%B0%EC%97%AC/X", "/index.php?oldid=1", "/w/a?b=c&d", "/%zz?%zz=1",
		`/w/Sp\u0065cial:WhatLinksHere`, `/a","uri":"/w/Special:Ask`, `/w/Special:Ask\/x`} {
		f.Add(uri, false)
		f.Add(uri, true)
	}
	m := loadFilterZones(f)
	filter := newLineFilter(filterZones)
	f.Fuzz(func(t *testing.T, uri string, raw bool) {
		line := filterLine(t, "URI")
		if raw {
			if strings.Contains(uri, "\n") {
				t.Skip("a newline makes two lines")
			}
			line = bytes.Replace(line, []byte(`"URI"`), []byte(`"`+uri+`"`), 1)
		} else {
			line = filterLine(t, uri)
		}
		checkFilter(t, m, filter, line)
	})
}

// TestLowerProjection: U+0130 and U+212A are the only runes beyond ASCII that
// unicode.ToLower maps into it, as asciiLowerProjection assumes.
func TestLowerProjection(t *testing.T) {
	for r := rune(utf8RuneSelf); r <= unicode.MaxRune; r++ {
		if l := unicode.ToLower(r); l < utf8RuneSelf && r != '\u0130' && r != '\u212a' {
			t.Errorf("%U lowers to %q", r, l)
		}
	}
	for _, s := range []string{"/W/SPECIAL:X", "/w/\u212a\u0130k", "/w/\xc4\xb0\xe2\x84\xaa\xff\xc4", "\xe2\x84\xc4\xb0", "/특수:기여"} {
		got := string(asciiLowerProjection([]byte(s)))
		var want []byte
		for _, r := range strings.ToLower(s) {
			if r >= utf8RuneSelf {
				r = utf8RuneSelf
			}
			want = append(want, byte(r))
		}
		// Runes beyond ASCII may leave several 0x80s where the rune-wise
		// projection has one: compare with the runs of 0x80 merged.
		if squeeze(got) != squeeze(string(want)) {
			t.Errorf("projection of %q = %q, want %q", s, got, want)
		}
	}
}

const utf8RuneSelf = 0x80

func squeeze(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == utf8RuneSelf && b.Len() > 0 && b.String()[b.Len()-1] == utf8RuneSelf {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TestTitleMayMatch holds titleMayMatch to Go's regular expression, which
// Caddy's vars_regexp runs, on titles that fold in every way (the Kelvin sign,
// the long s, the three sigmas, a dotless i, Hangul, invalid bytes).
func TestTitleMayMatch(t *testing.T) {
	names := [][]string{{"Special:Ask"}, {"Special:WhatLinksHere", "Special:CiteThisPage"}, {"특수:가리키는문서"}, {"Ειδικό:Σύνδεσμοι"}, {"Spécial:Kiss"}}
	titles := []string{"", "Special:Ask", "special:ask", "SPECIAL:ASK/x", "Special:Asking", "Special:Ask/", "ſpecial:Ask",
		"Special:Aſk", "Special:WhatLinKsHere/Foo", "special:citethispage", "Special:CiteThisPag", "특수:가리키는문서/가",
		"특수:가리키는문서x", "ειδικό:σύνδεσμοι", "ΕΙΔΙΚΌ:ΣΎΝΔΕΣΜΟΙ/x", "Ειδικό:ςύνδεσμοι", "spécial:Kiss", "SPÉCIAL:KIſſ",
		"Special:ÿAsk", "Specıal:Ask", "x/Special:Ask"}
	for _, ns := range names {
		re := regexp.MustCompile(titleRegexp(ns))
		for _, title := range titles {
			if got, want := titleMayMatch([]byte(title), ns), re.MatchString(title); got != want {
				t.Errorf("titleMayMatch(%q, %q) = %v, the regular expression says %v", title, ns, got, want)
			}
		}
	}
}

// TestUnescapesAgreeWithNetURL: the filter unescapes paths as decodedPath
// (url.PathUnescape) and query keys and values as url.QueryUnescape.
func TestUnescapesAgreeWithNetURL(t *testing.T) {
	for _, s := range []string{"", "/w/a", "/w/%41%62", "/w/%4", "/w/%zz", "%", "a%2", "%e2%84%aa", "%E2%84%AA", "a+b", "a%2Bb", "%%41",
		"/w/%ED%8A%B9%EC%88%98:x", "\xff%ff", "100%", "%0g"} {
		if got, want := string(percentDecode(nil, []byte(s))), decodedPath(s); got != want {
			t.Errorf("percentDecode(%q) = %q, decodedPath %q", s, got, want)
		}
		got, ok := queryUnescape(nil, []byte(s))
		want, err := url.QueryUnescape(s)
		if ok != (err == nil) || ok && string(got) != want {
			t.Errorf("queryUnescape(%q) = %q, %v; url.QueryUnescape %q, %v", s, got, ok, want, err)
		}
	}
}
