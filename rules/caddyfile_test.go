package rules

import (
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{in: "/w/Special:WhatLinksHere", want: "/w/Special:WhatLinksHere"},
		{in: "*wikiUserID=*", want: "*wikiUserID=*"},
		{in: "특수:기여", want: "특수:기여"},
		{in: `(?i)^[ \t]*zh-cn`, want: "`(?i)^[ \\t]*zh-cn`"},
		{in: "a b", want: "`a b`"},
		{in: `say "hi"`, want: "`say \"hi\"`"},
		{in: "#not-a-comment", want: "`#not-a-comment`"},
		{in: "<<EOF", want: "`<<EOF`"},
		{in: "back`tick", want: "\"back`tick\""},
		{in: "back`tick \"and quote\"", want: "\"back`tick \\\"and quote\\\"\""},
		{in: "back`tick\\slash", err: true},
		{in: "", err: true},
		{in: "{$HOME}", err: true},
		{in: "{env.SECRET}", err: true},
		{in: "a}", err: true},
		{in: "line\nbreak", err: true},
		{in: "nul\x00", err: true},
		{in: "nel\u0085", err: true},
		{in: "ls\u2028", err: true},
		{in: "bad\xff", err: true},
	} {
		got, err := quote(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("quote(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// FuzzQuote: whatever quote accepts, Caddy's lexer reads back as exactly one
// token with exactly that text, between two others.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"plain", "a b", `"q"`, "`b`", `\`, `\"`, "#c", "<<EOF", "x\\", "`\"\\", "{", "tab\tx", "é 한"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := quote(s)
		if err != nil {
			return
		}
		toks, err := caddyfile.Tokenize([]byte("before "+q+" after\n"), "fuzz")
		if err != nil {
			t.Fatalf("quote(%q) = %s: %v", s, q, err)
		}
		if len(toks) != 3 || toks[0].Text != "before" || toks[1].Text != s || toks[2].Text != "after" {
			var texts []string
			for _, tk := range toks {
				texts = append(texts, tk.Text)
			}
			t.Fatalf("quote(%q) = %s lexes as %q", s, q, texts)
		}
		if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) || strings.ContainsAny(s, "{}") {
			t.Fatalf("quote accepted %q", s)
		}
	})
}

func TestCaddyfilePrinter(t *testing.T) {
	z := Zone{Name: "tools_chrome_zh_cn", Window: 10 * time.Minute, Events: 150,
		Targets: []Target{
			{Paths: []string{"/w/Special:WhatLinksHere", "/w/Special:WhatLinksHere/*"}},
			{TitleNames: []string{"Special:WhatLinksHere"}},
			{QueryKey: "action", QueryValues: []string{"edit", "watch"}},
		},
		Cond: Conditions{NotCookie: "wikiUserID=", Lang: "zh-cn", NoClientHints: true, UserAgent: "Chrome/"}}
	got, err := Caddyfile([]Zone{z})
	if err != nil {
		t.Fatal(err)
	}
	want := "rate_limit {\n" +
		"\tzone tools_chrome_zh_cn {\n" +
		"\t\tmatch {\n" +
		"\t\t\tpath /w/Special:WhatLinksHere /w/Special:WhatLinksHere/*\n" +
		"\t\t\tnot header Cookie *wikiUserID=*\n" +
		"\t\t\theader_regexp Accept-Language `(?i)^[ \\t]*zh-cn[ \\t]*(?:[,;]|$)`\n" +
		"\t\t\theader !Sec-Ch-Ua\n" +
		"\t\t\theader User-Agent *Chrome/*\n" +
		"\t\t}\n" +
		"\t\tmatch {\n" +
		"\t\t\tvars_regexp {http.request.uri.query.title} `(?i)^(?:Special:WhatLinksHere)(?:/|$)`\n" +
		"\t\t\tnot header Cookie *wikiUserID=*\n" +
		"\t\t\theader_regexp Accept-Language `(?i)^[ \\t]*zh-cn[ \\t]*(?:[,;]|$)`\n" +
		"\t\t\theader !Sec-Ch-Ua\n" +
		"\t\t\theader User-Agent *Chrome/*\n" +
		"\t\t}\n" +
		"\t\tmatch {\n" +
		"\t\t\tquery action=edit action=watch\n" +
		"\t\t\tnot header Cookie *wikiUserID=*\n" +
		"\t\t\theader_regexp Accept-Language `(?i)^[ \\t]*zh-cn[ \\t]*(?:[,;]|$)`\n" +
		"\t\t\theader !Sec-Ch-Ua\n" +
		"\t\t\theader User-Agent *Chrome/*\n" +
		"\t\t}\n" +
		"\t\tkey tools_chrome_zh_cn\n" +
		"\t\twindow 10m\n" +
		"\t\tevents 150\n" +
		"\t}\n" +
		"\tlog_key\n" +
		"\tjitter 0.2\n" +
		"}\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Formatted as caddy fmt formats it: formatting again changes nothing.
	if again := string(caddyfile.Format([]byte(got))); again != got {
		t.Errorf("not in caddy fmt's format:\n%s", again)
	}
	if _, err := validateZones(got, []Zone{z}); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []Zone{
		{Name: "a b", Window: time.Minute, Events: 1, Targets: z.Targets},
		{Name: "ok", Window: 0, Events: 1, Targets: z.Targets},
		{Name: "ok", Window: time.Minute, Events: 0, Targets: z.Targets},
		{Name: "ok", Window: time.Minute, Events: 1},
		{Name: "ok", Window: time.Minute, Events: 1, Targets: []Target{{Paths: []string{"/x {$HOME}"}}}},
	} {
		if s, err := Caddyfile([]Zone{bad}); err == nil {
			t.Errorf("printed a bad zone %+v:\n%s", bad, s)
		}
	}
	if _, err := Caddyfile(nil); err == nil {
		t.Error("printed no zone")
	}
}

func TestCaddyDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Minute: "1m", 10 * time.Minute: "10m", time.Hour: "1h",
		90 * time.Second: "90s", 1500 * time.Millisecond: "1.5s"} {
		if got := CaddyDuration(d); got != want {
			t.Errorf("CaddyDuration(%v) = %s, want %s", d, got, want)
		}
	}
}
