// Package benchreqs gives the hot-path tests of detect and detect/request
// one source of realistic requests: the ingest benchmark's generated traffic
// parsed as aftermath parses it, and request targets of every shape the
// route templates know, hostile ones included.
package benchreqs

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchlog"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
)

// Requests reads a generated log (the benchmark's traffic, small).
func Requests(t testing.TB, size int64) []sources.Request {
	t.Helper()
	var buf bytes.Buffer
	if _, err := benchlog.Generate(&buf, benchlog.GenOptions{Size: size, Clients: 3000, Span: 3 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	var reqs []sources.Request
	_, err := accesslog.ReadReader(context.Background(), "gen.log", &buf, accesslog.Options{LoggedInCookie: "wikiUserID="}, nil,
		func(batch []sources.Request) error {
			reqs = append(reqs, batch...)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

// RouteTargets draws n request targets (raw path, raw query) of every shape
// the templates know, hostile ones included: titles under one place (which
// fold), namespaces, identifiers, files, bad escapes, placeholders written
// by the client, deep paths, many and repeated query keys.
func RouteTargets(n int, seed uint64) [][2]string {
	rng := rand.New(rand.NewPCG(seed, 2))
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	words := []string{"hello", "world", "caddy", "rate", "limit", "Seoul", "%EC%84%9C%EC%9A%B8", "%ED%86%A0%EB%A1%A0", "Main", "Page", "php"}
	title := func() string {
		var b strings.Builder
		for i := range 1 + rng.IntN(4) {
			if i > 0 {
				b.WriteString(pick("_", "-", "+", ",", "%20"))
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.String()
	}
	segment := func() string {
		switch rng.IntN(16) {
		case 0:
			return pick("wiki", "w", "index.php", "wp-json", "wp-admin", "api", "static", "feed", "", "remote.php", "dav")
		case 1:
			return fmt.Sprint(rng.IntN(3000))
		case 2:
			return fmt.Sprintf("%x", rng.Uint64())
		case 3:
			return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<16), rng.IntN(1<<16), rng.Uint64()&(1<<48-1))
		case 4:
			return title()
		case 5:
			return "Page" + string(rune('A'+rng.IntN(26))) + string(rune('a'+rng.IntN(26)))
		case 6:
			return pick("Talk:", "User:", "Special:", "%ED%8A%B9%EC%88%98:", "Category:", "a:{b:") + pick(title(), fmt.Sprint(rng.IntN(99)), "WhatLinksHere", "HanSet4242")
		case 7:
			return pick("img-2041-768x512", "app.5f3e9a1c2b7d", "logo", title()) + pick(".jpg", ".css", ".js", ".tar.gz", ".toolongext", ".")
		case 8:
			return pick("%zz", "%", "%4", "a%2Fb", "{x}", "{slug}", "{rest}", ":123", "x:", ":", "\xff\xfe", "a|b", "%7Bn%7D", "T%C3%BCr", "%C4%B0STANBUL")
		case 9:
			return strings.Repeat(pick("a", "가", "9", "ab1"), 5+rng.IntN(30))
		case 10:
			return pick("aZ3kP9qLmN2xW7", "HanSet4242", "v2", "x86_64", "2026-10-03")
		default:
			return pick("wiki", "w", "2026", "10", "node", "edit", "search", "posts", title())
		}
	}
	value := func() string {
		switch rng.IntN(8) {
		case 0, 1:
			return pick("edit", "history", "view", "raw", "watch", "render", "EDIT")
		case 2:
			return fmt.Sprint(rng.IntN(100000))
		case 3:
			return title()
		case 4:
			return pick("", "%zz", "+", "a/b", "{n}", "a=b", strings.Repeat("x", 41), "Special%3ANewItem", "%2F")
		case 5:
			return "v" + fmt.Sprint(rng.IntN(60))
		default:
			return pick("a", "b", "c", "json", "1")
		}
	}
	key := func() string {
		if rng.IntN(6) == 0 {
			return pick("123", "%zz", "a+b", "{k}", strings.Repeat("k", 41), "", "x%3Dy", "%ff", "k"+fmt.Sprint(rng.IntN(50)), "\xff")
		}
		return pick("action", "title", "s", "q", "page", "replytocom", "per_page", "search", "dir", "files", "p", "oldid", "diff")
	}
	out := make([][2]string, 0, n)
	for range n {
		var p strings.Builder
		switch rng.IntN(20) {
		case 0:
		case 1, 2:
			// pages of a namespace, under one place
			p.WriteString("/wiki/" + pick("Talk:", "User:", "%ED%8A%B9%EC%88%98:") + "Page" + string(rune('A'+rng.IntN(26))) + string(rune('a'+rng.IntN(26))))
		default:
			for range rng.IntN(5) + rng.IntN(2)*rng.IntN(12) {
				p.WriteByte('/')
				p.WriteString(segment())
			}
		}
		if rng.IntN(8) == 0 {
			p.WriteByte('/')
		}
		var q strings.Builder
		if rng.IntN(3) == 0 {
			for i := range rng.IntN(4) + rng.IntN(2)*rng.IntN(12) {
				if i > 0 || rng.IntN(10) == 0 {
					q.WriteByte('&')
				}
				q.WriteString(key())
				if rng.IntN(6) != 0 {
					q.WriteString("=" + value())
				}
			}
			if q.Len() == 0 && rng.IntN(2) == 0 {
				q.WriteString(pick("=", "=x", "&&"))
			}
		}
		out = append(out, [2]string{p.String(), q.String()})
	}
	return out
}

// RouteSeeds are hand-picked request targets (the shapes of the route
// template tests) and those of a small generated log.
func RouteSeeds(t testing.TB) [][2]string {
	seeds := [][2]string{
		{"/", "s=caddy+rate+limit"}, {"/wp-json/wp/v2/search", "search=php&per_page=10"}, {"/2026/10/hello_world_again/", "replytocom=4121"},
		{"/2026/10/%EC%B2%A0%EB%8F%84_%EC%9A%B0%EC%A3%BC/", ""}, {"/wp-content/uploads/2026/03/img-2041-768x512.jpg", ""},
		{"/wp-admin/post.php", "post=812&action=edit"}, {"/node/123/edit", ""}, {"/api/orders/3f2b8c1e-9d4a-4e21-8f7a-2b6c9e0d1a55", ""},
		{"/w/Special:Contributions/HanSet4242", ""}, {"/index.php", "title=Seoul&action=history"}, {"/search", "q=x&page=2&q=y"},
		{"/x", "123=a"}, {"", ""}, {"/", ""}, {"//", "&"}, {"/a//b/", "=x"}, {"/w/\xff", "k=%ff"}, {"/a:{b:123", ""},
	}
	for _, r := range Requests(t, 2<<20) {
		seeds = append(seeds, [2]string{r.Path, r.Query})
	}
	return seeds
}
