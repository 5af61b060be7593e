package main

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

// hostile is what an attacker puts in the fields aftermath prints: markup,
// Markdown structure, template syntax, a javascript: link and a line break.
const hostile = "</svg><script>alert(1)</script>|`x`{{.Secret}}](javascript:alert(1))\n# Injected heading"

// writeHostileBundle writes two hours of readers and a distributed crawl whose
// user agent and paths carry hostile text.
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
		if i%2 == 1 {
			uri = "/w/index.php?title=" + hostile + "&action=history"
		}
		line(at, fmt.Sprintf("10.%d.%d.9", i/250, i%250), uri, crawler, "zh-CN,zh;q=0.9", 200)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestHostileLogValuesRenderInert runs analyze on a bundle whose user agents and
// URIs carry markup, Markdown, template syntax and line breaks, and checks every
// output: nothing becomes structure, a script, a link or a Caddy directive.
func TestHostileLogValuesRenderInert(t *testing.T) {
	dir := t.TempDir()
	b, out := filepath.Join(dir, "bundle"), filepath.Join(dir, "out")
	writeHostileBundle(t, b)
	if code := run([]string{"analyze", "--bundle", b, "--out", out}); code != exitOK && code != exitIncomplete {
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
	for _, bad := range []string{"<script", "</svg><", "](javascript:", "\n# Injected", "{{.Secret}}"} {
		if strings.Contains(md, bad) {
			t.Errorf("postmortem.md contains %q", bad)
		}
	}
	for _, bad := range []string{"<script", "javascript:alert(1)\"", "href=\"javascript", "{{.Secret}}"} {
		if strings.Contains(html, bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	var decoded map[string]any
	if err := json.Unmarshal([]byte(js), &decoded); err != nil {
		t.Errorf("report.json: %v", err)
	}
	if strings.Contains(js, "<script") {
		t.Errorf("report.json carries raw markup (JSON must escape < for HTML embedding)")
	}
	if strings.TrimSpace(caddy) != "" && !strings.HasPrefix(caddy, "#") {
		if err := rules.Validate(caddy); err != nil {
			t.Errorf("rules.caddy does not adapt to exactly the intended zones: %v\n%s", err, caddy)
		}
		if strings.Contains(caddy, "\n# Injected") {
			t.Errorf("rules.caddy carries the injected line")
		}
	}
}
