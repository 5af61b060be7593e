package rules

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
)

// FuzzGenerate feeds hostile strings, as they could come from log lines (a
// special-page name, a path prefix, an action, an API path, a language, a
// user-agent family) or from site facts (the cookie pattern), through
// generation, printing and Caddy's adapter. Whatever survives generation must
// print, and the config Caddy adapts from the print must hold exactly the
// model's zones and matchers: one site, the rate_limit handler and the
// validation sentinel, no other handler, route matcher, directive or site.
//
// go test runs the seeds (f.Add and testdata/fuzz/FuzzGenerate); fuzz with
//
//	go test -run '^$' -fuzz FuzzGenerate -fuzztime 30s ./rules/
func FuzzGenerate(f *testing.F) {
	f.Add("Special:WhatLinksHere", "/w/", "edit", "/w/api.php", "zh-cn", "Chrome", "wikiUserID=")
	f.Add("특수:가리키는문서", "/wiki/", "history", "/api.php", "ko-kr", "Firefox", "_session=")
	f.Add("Special:X\n}\nhttp://evil.example {\n\trespond pwned\n}\n", "/w/\n}\nimport /etc/passwd\n", "edit\nrespond x", "/w/api.php\n}", "zh-cn\n}", "Chrome\n}", "wikiUserID=*\n}\n{")
	f.Add("Special:{$HOME}", "/{env.SECRET}/", "{http.request.header.X}", "/w/{$PATH}", "{$LANG}", "{env.UA}", "{$COOKIE}")
	f.Add("Special:`x`", "/w`/", "ed\"it", "/w/a pi.php", "zh`cn", "Chr\"ome", "wiki\"User`ID=")
	f.Add("Special:X*", "/w/*/", "*", "/w/[a]?.php", "*", "Chrome*", "**")
	f.Add("#Special:X", "<<EOF\n", "#edit", "/%2e%2e/api.php", "zh-cn;q=1", "other bot", "a b")
	f.Add("Special:X", "/w/", "edit", "/w/api.php", "zh-cn", "Chrome", "wordpress_logged_in_[0-9a-f]{32}=")
	f.Add("Special:X", "/w/", "edit", "/w/api.php", "zh-cn", "Chrome", `(^|;\s*)wiki(UserID|UserName)=`)
	f.Add("Special:X", "/w/", "edit", "/w/api.php", "zh-cn", "Chrome", "(a|b)`\\d{2}\n}\nrespond pwned")
	f.Add("Special:X", "/w/", "edit", "/w/api.php", "zh-cn", "Chrome", "(a|\"b\")`{$HOME}[0-9]{3}")
	f.Add("Special:X", "/w/", "edit", "/w/api.php", "zh-cn", "Chrome", "x(y|z)`\n")
	f.Add("Special:X", "/w/", "edit", "/w/api.php", "zh-cn", "Chrome", `(wp|"x y")_[a-z]{2}\.=`)
	f.Add("Special:X", "/w/", "edit", "/w/api.php", "zh-cn", "Chrome", "(wp|`b`)_[a-z]{2,}=")
	f.Add("Special:X\u202e", "/w\u0085/", "edit\u2028", "/w/\u200bapi.php", "zh\x00cn", "Chrome\x1b[2J", "wiki\xffUserID=")
	f.Fuzz(func(t *testing.T, name, prefix, action, apiPath, lang, family, cookie string) {
		c := &crawlerEvidence{
			Finding: "crawler_burst-1",
			Key:     request.ClusterKey{UA: family, Lang: lang, LoggedIn: sources.LoggedInNo, NoClientHints: true},
			Spread:  true, Requests: 100, ToolRequests: 100, UATokenRequests: 100,
			Labels: map[string]*labelEvidence{
				name + " (path)":   {N: 30, Prefixes: map[string]int{prefix: 30}},
				name + " (title=)": {N: 20},
				"action=" + action: {N: 30},
				"api":              {N: 10, Paths: map[string]int{apiPath: 10}},
				"diff":             {N: 5},
			},
			Ordinary: map[string]*[8]int{"action=" + action: {1, 2, 3, 4, 5, 6, 7, 8}},
		}
		site := siteEvidence{SpecialPath: 5, SpecialTitle: 5, Prefixes: map[string]int{prefix: 5}, Cookie: cookie}
		perClient := *c
		perClient.Spread = false
		perClient.Key.Lang += "x"
		zones, _ := generate([]*crawlerEvidence{c, &perClient}, site)
		if len(zones) != 2 {
			t.Fatalf("got %d zones: the diff tool alone makes one per crawler", len(zones))
		}
		for i := range zones {
			zones[i].Window, zones[i].Events = 10*time.Minute, 150
		}
		snippet, err := Caddyfile(zones)
		if err != nil {
			t.Fatalf("generation let an unprintable value through: %v", err)
		}
		if _, err := validateZones(snippet, zones); err != nil {
			t.Fatalf("%v\n%s", err, snippet)
		}
		// Nothing outside the rate_limit block: every line of the print is
		// inside it, and the block has exactly the model's zones.
		if !strings.HasPrefix(snippet, "rate_limit {\n") || !strings.HasSuffix(snippet, "\n}\n") || strings.Count(snippet, "\nrate_limit") > 0 {
			t.Fatalf("the print is not one rate_limit block:\n%s", snippet)
		}
		// The rules file's header is comment lines only, and the file as a
		// whole is still exactly the block.
		p := &Proposal{}
		for _, z := range zones {
			p.Rules = append(p.Rules, Rule{Name: z.Name, Key: z.Key(), Window: CaddyDuration(z.Window), Events: z.Events})
		}
		p.header, p.Block = deployHeader(p, time.Unix(0, 0), time.Unix(3600, 0)), snippet
		for _, lang := range prose.Langs {
			file, err := p.CaddyfileIn(lang)
			if err != nil {
				t.Fatal(err)
			}
			header, ok := strings.CutSuffix(file, "\n"+snippet)
			if !ok {
				t.Fatalf("%s: the rules file does not end with the block:\n%s", lang, file)
			}
			for _, l := range strings.SplitAfter(header, "\n") {
				if l != "" && (!strings.HasPrefix(l, "#") || !strings.HasSuffix(l, "\n") || strings.ContainsAny(strings.TrimSuffix(l, "\n"), "\r\n")) {
					t.Fatalf("%s: header line %q is not one comment line", lang, l)
				}
			}
			if err := sameTokens(file, snippet); err != nil {
				t.Fatalf("%s: with its header: %v", lang, err)
			}
		}
	})
}

// sameTokens says whether Caddy's lexer reads file as exactly the tokens of
// snippet, line numbers aside. Caddy adapts a config from its tokens, so a
// rules file whose header reads as no token adapts as its block does, which
// FuzzGenerate has adapted once already: lexing each language's file instead
// of adapting it again keeps the check and took ~40% of the fuzz step's CPU.
func sameTokens(file, snippet string) error {
	read := func(text string) ([]caddyfile.Token, error) {
		toks, err := caddyfile.Tokenize([]byte(text), "rules.caddy")
		for i := range toks {
			toks[i].Line = 0
		}
		return toks, err
	}
	got, err := read(file)
	if err != nil {
		return fmt.Errorf("Caddy cannot read the file: %w", err)
	}
	want, err := read(snippet)
	if err != nil {
		return fmt.Errorf("Caddy cannot read the block: %w", err)
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("Caddy reads %d tokens in the file and %d in its block: the header is not all comment", len(got), len(want))
	}
	return nil
}

// TestSameTokensSeesWhatTheHeaderAdds holds FuzzGenerate's check of a rules
// file to what Caddy reads: comment lines add nothing, anything else (a
// directive, a quoted word where the block has a bare one) does.
func TestSameTokensSeesWhatTheHeaderAdds(t *testing.T) {
	block := "rate_limit {\n\tzone a {\n\t\tkey a\n\t\tevents 5\n\t\twindow 1m\n\t}\n}\n"
	if err := sameTokens("# rules for example.org\n#\n# {$HOME} \"x\n"+block, block); err != nil {
		t.Errorf("a header of comments: %v", err)
	}
	for _, file := range []string{
		"# rules\nrespond pwned\n" + block,
		"# rules\n" + strings.Replace(block, "key a", `key "a"`, 1),
		"# rules\n" + strings.Replace(block, "events 5", "events 6", 1),
	} {
		if sameTokens(file, block) == nil {
			t.Errorf("no difference seen in\n%s", file)
		}
	}
}
