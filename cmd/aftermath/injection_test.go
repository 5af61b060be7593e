package main

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	htmlparse "golang.org/x/net/html"

	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/changes"
)

// hostile is what an attacker puts in the fields aftermath prints: markup,
// Markdown structure, template syntax, a javascript: link and a line break.
const hostile = "</svg><script>alert(1)</script>|`x`{{.Secret}}](javascript:alert(1))\n# Injected heading"

// writeHostileBundle writes two hours of readers and a distributed crawl whose
// user agent and paths carry hostile text, and a change log whose entry carries
// it in every field: the crawl's text is reduced to labels on the way, but the
// change is reviewed by the config_change check, whose reason every output
// prints.
func writeHostileBundle(t *testing.T, dir string) {
	t.Helper()
	from := time.Date(2026, 10, 2, 17, 0, 0, 0, time.UTC)
	m := &bundle.Manifest{
		Window:   bundle.Window{From: from, To: from.Add(time.Hour)},
		Timezone: "Asia/Seoul",
		Site:     sources.Site{Workers: 16, HealthURI: "/healthz.php", LoggedInCookie: "wikiUserID=", ClientTimeoutS: 10},
	}
	if err := bundle.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, bundle.AccessDir, "access.log.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	enc := json.NewEncoder(zw)
	line := func(at time.Time, ip, uri, ua, lang string, status int) {
		headers := map[string][]string{"User-Agent": {ua}, "Accept-Language": {lang}}
		resp := map[string][]string{"Via": {"0.0 Caddy"}, "X-Powered-By": {"PHP/8.3"}}
		if err := enc.Encode(map[string]any{
			"level": "info", "ts": float64(at.UnixMicro()) / 1e6, "logger": "http.log.access.log0", "msg": "handled request",
			"request": map[string]any{"remote_ip": ip, "client_ip": ip, "proto": "HTTP/2.0", "method": "GET", "host": "wiki.example.org",
				"uri": uri, "headers": headers},
			"duration": 0.2, "size": 5000, "status": status, "resp_headers": resp,
		}); err != nil {
			t.Fatal(err)
		}
	}
	reader := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Firefox/128.0"
	for i := 0; i < 7200; i++ {
		line(from.Add(-time.Hour).Add(time.Duration(i)*time.Second), fmt.Sprintf("192.0.2.%d", i%50), "/w/Article_"+fmt.Sprint(i%300), reader, "ko-KR", 200)
	}
	crawler := "Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36 " + hostile
	for i := 0; i < 6000; i++ {
		at := from.Add(10 * time.Minute).Add(time.Duration(i) * 300 * time.Millisecond)
		uri := "/w/Special:WhatLinksHere/" + hostile
		switch i % 3 {
		case 1:
			uri = "/w/index.php?title=" + hostile + "&action=history"
		case 2:
			uri = "/w/Special:" + strings.ReplaceAll(hostile, "/", "")
		}
		line(at, fmt.Sprintf("10.%d.%d.9", i/250, i%250), uri, crawler, "zh-CN,zh;q=0.9", 200)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	change := sources.Change{Time: from.Add(-30 * time.Minute), Ref: hostile, File: hostile, Key: hostile, Old: hostile, New: hostile, Note: hostile, Author: hostile}
	if err := changes.Write(filepath.Join(dir, bundle.ChangesDir, changes.FileName), []sources.Change{change}); err != nil {
		t.Fatal(err)
	}
}

// TestHostileLogValuesRenderInert runs analyze on a bundle whose user agents,
// URIs, a Special page name and a change log entry carry markup, Markdown,
// template syntax and line breaks, checks that the text reaches every report,
// and that nothing becomes structure, a script, a link or a Caddy directive.
func TestHostileLogValuesRenderInert(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, out := filepath.Join(dir, "bundle"), filepath.Join(dir, "out")
	writeHostileBundle(t, b)
	if code := runQuiet(t, []string{"analyze", "--bundle", b, "--out", out}); code != exitOK && code != exitIncomplete {
		t.Fatalf("analyze exit %d", code)
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	md, html, js, caddy := read("postmortem.md"), read("report.html"), read("report.json"), read("rules.caddy")

	if !strings.Contains(js, "crawler_burst") {
		t.Fatalf("the hostile crawl was not detected, so this test proves nothing:\n%s", js[:min(len(js), 3000)])
	}
	// The hostile text must reach every report, escaped: a check that it is
	// absent proves nothing if it never arrived.
	for _, reached := range []struct{ name, text, want string }{
		{"postmortem.md", md, "&lt;/svg&gt;&lt;script&gt;alert(1)&lt;/script&gt;"},
		{"postmortem.md", md, "Special:&lt;svg&gt;&lt;script&gt;"},
		{"report.html", html, "&lt;/svg&gt;&lt;script&gt;alert(1)&lt;/script&gt;"},
		{"report.html", html, "Special:&lt;svg&gt;&lt;script&gt;"},
		{"report.json", js, `\u003c/svg\u003e\u003cscript\u003ealert(1)\u003c/script\u003e`},
		{"report.json", js, `Special:\u003csvg\u003e\u003cscript\u003e`},
		// rules.caddy must not carry the hostile page name: the rule generator
		// has to see it and leave it out, saying so.
		{"report.json", js, "not safe to put in a Caddyfile"},
	} {
		if !strings.Contains(reached.text, reached.want) {
			t.Errorf("the hostile text never reached %s (no %q), so the checks below prove nothing", reached.name, reached.want)
		}
	}

	for _, bad := range []string{"<script", "</svg><", "\n# Injected", "{{.Secret}}"} {
		if strings.Contains(md, bad) {
			t.Errorf("postmortem.md contains %q", bad)
		}
	}
	// "](javascript:" counts only unescaped: "\](javascript:" is a literal bracket.
	if loc := regexp.MustCompile(`(^|[^\\])(\\\\)*\]\(javascript:`).FindStringIndex(md); loc != nil {
		t.Errorf("postmortem.md contains an unescaped \"](javascript:\": …%s…", md[max(0, loc[0]-60):min(len(md), loc[1]+20)])
	}
	for _, bad := range []string{"<script", "javascript:alert(1)\"", "href=\"javascript"} {
		if strings.Contains(html, bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	// HTML has no template syntax: "{{.Secret}}" is inert as text, but must
	// never land in a tag or attribute.
	for z := htmlparse.NewTokenizer(strings.NewReader(html)); ; {
		tt := z.Next()
		if tt == htmlparse.ErrorToken {
			break
		}
		if (tt == htmlparse.StartTagToken || tt == htmlparse.SelfClosingTagToken || tt == htmlparse.EndTagToken) && strings.Contains(string(z.Raw()), "{{") {
			t.Errorf("report.html has a template action in a tag: %s", z.Raw())
		}
	}
	var decoded map[string]any
	if err := json.Unmarshal([]byte(js), &decoded); err != nil {
		t.Errorf("report.json: %v", err)
	}
	if strings.Contains(js, "<script") {
		t.Errorf("report.json carries raw markup (JSON must escape < for HTML embedding)")
	}
	// rules.caddy opens with a comment (what the block needs, where it
	// goes); with no zone it is a comment alone.
	if strings.Contains(caddy, "\nrate_limit {") {
		if err := rules.Validate(caddy); err != nil {
			t.Errorf("rules.caddy does not adapt to exactly the intended zones: %v\n%s", err, caddy)
		}
		if strings.Contains(caddy, "\n# Injected") {
			t.Errorf("rules.caddy carries the injected line")
		}
	}
}
