package request

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"path"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// The route table (detect/routetable.go) builds a template for every request,
// so the template code was made to allocate nothing for a template it holds
// already, without changing one: these tests hold it to the code it
// replaced, kept here as the reference (the table's own is detect's
// routetemplate_hotpath_test.go).

func routeTemplateOriginal(rawPath, rawQuery string) string {
	return joinTemplateOriginal(templateSegmentsOriginal(rawPath), templateQueryOriginal(rawQuery), rawQuery != "", false)
}

func templateSegmentsOriginal(rawPath string) []string {
	if rawPath == "" || rawPath == "/" {
		return []string{""}
	}
	parts := strings.Split(strings.TrimPrefix(rawPath, "/"), "/")
	out := make([]string, 0, min(len(parts), maxTemplateSegments+1))
	for i, p := range parts {
		if i == maxTemplateSegments {
			out = append(out, "{rest}")
			break
		}
		// Each segment is unescaped alone, so an encoded slash stays inside it.
		if s, err := url.PathUnescape(p); err == nil {
			p = s
		}
		out = append(out, normaliseSegmentOriginal(p))
	}
	return out
}

func templateQueryOriginal(rawQuery string) []QueryItem {
	if rawQuery == "" {
		return nil
	}
	var items []QueryItem
	for part := range strings.SplitSeq(rawQuery, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		if s, err := url.QueryUnescape(k); err == nil {
			k = s
		}
		switch {
		case k == "":
			continue
		case len(k) > maxKeyLen || !utf8.ValidString(k) || strings.ContainsAny(k, "{}&=?"):
			k = phToken
		case allDigits(k):
			k = phNumber
		}
		dup := false
		for _, it := range items {
			dup = dup || it.Key == k
		}
		if dup {
			continue
		}
		if s, err := url.QueryUnescape(v); err == nil {
			v = s
		}
		if v != "" && (len(v) > maxKeyLen || strings.ContainsAny(v, "{}&=?/") || IsPlaceholder(normaliseSegmentOriginal(v))) {
			v = ""
		}
		items = append(items, QueryItem{k, v})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Key < items[j].Key })
	if len(items) > maxTemplateKeys {
		items = append(items[:maxTemplateKeys], QueryItem{Key: "{more}"})
	}
	return items
}

func joinTemplateOriginal(segments []string, items []QueryItem, hadQuery, values bool) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(s)
	}
	if hadQuery {
		b.WriteByte('?') // a query without keys ("/?" or "/?=x") still bypasses most page caches
	}
	for i, it := range items {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(it.Key)
		if values && it.Value != "" {
			b.WriteByte('=')
			b.WriteString(it.Value)
		}
	}
	return b.String()
}

func normaliseSegmentOriginal(s string) string {
	if s == "" {
		return s
	}
	if ns, name, ok := strings.Cut(s, ":"); ok && ns != "" && name != "" && !strings.ContainsAny(ns, "/") && utf8.RuneCountInString(ns) <= 20 {
		n := normaliseSegmentOriginal(name)
		if IsPlaceholder(n) {
			return ns + ":" + n
		}
		return s
	}
	base, ext := s, path.Ext(s)
	if ext != "" && len(ext) <= 6 && ext != s && isAlnum(ext[1:]) {
		base = s[:len(s)-len(ext)]
	} else {
		ext = ""
	}
	ph := ""
	switch {
	case allDigits(base):
		ph = phNumber
	case isUUID(base):
		ph = phUUID
	case len(base) >= 8 && hexString(base) && strings.ContainsAny(base, "0123456789"):
		ph = phHash
	case utf8.RuneCountInString(base) >= longToken || !utf8.ValidString(base):
		ph = phToken
	case hasLetterAndDigit(base) && len(base) >= 6:
		ph = phToken
	case isSlug(base):
		ph = PlaceholderSlug
	}
	if ph == "" {
		return s
	}
	return ph + ext
}

// routeTargets draws n request targets (raw path, raw query) of every shape
// the templates know, hostile ones included: titles under one place (which
// fold), namespaces, identifiers, files, bad escapes, placeholders written
// by the client, deep paths, many and repeated query keys.
func routeTargets(n int, seed uint64) [][2]string {
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

// routeSeeds are the targets of TestRouteTemplate and the generated log's.
func routeSeeds(t testing.TB) [][2]string {
	seeds := [][2]string{
		{"/", "s=caddy+rate+limit"}, {"/wp-json/wp/v2/search", "search=php&per_page=10"}, {"/2026/10/hello_world_again/", "replytocom=4121"},
		{"/2026/10/%EC%B2%A0%EB%8F%84_%EC%9A%B0%EC%A3%BC/", ""}, {"/wp-content/uploads/2026/03/img-2041-768x512.jpg", ""},
		{"/wp-admin/post.php", "post=812&action=edit"}, {"/node/123/edit", ""}, {"/api/orders/3f2b8c1e-9d4a-4e21-8f7a-2b6c9e0d1a55", ""},
		{"/w/Special:Contributions/HanSet4242", ""}, {"/index.php", "title=Seoul&action=history"}, {"/search", "q=x&page=2&q=y"},
		{"/x", "123=a"}, {"", ""}, {"/", ""}, {"//", "&"}, {"/a//b/", "=x"}, {"/w/\xff", "k=%ff"}, {"/a:{b:123", ""},
	}
	for _, r := range generatedRequests(t, 2<<20) {
		seeds = append(seeds, [2]string{r.Path, r.Query})
	}
	return seeds
}

// TestNormaliseSegmentMatchesOriginal holds every segment of the stream, raw
// and unescaped, to the original.
func TestNormaliseSegmentMatchesOriginal(t *testing.T) {
	for _, tg := range append(routeSeeds(t), routeTargets(20000, 2)...) {
		for _, s := range strings.Split(tg[0]+"/"+strings.ReplaceAll(tg[1], "&", "/"), "/") {
			u, err := url.PathUnescape(s)
			if err != nil {
				u = s
			}
			for _, s := range []string{s, u} {
				if got, want := normaliseSegment(s), normaliseSegmentOriginal(s); got != want {
					t.Fatalf("normaliseSegment(%q) = %q, the original %q", s, got, want)
				}
			}
		}
	}
}

// TestRouteTemplateMatchesOriginal holds the template of every target of
// the stream to the original's: by shape alone (RouteTemplate), and with
// the query values the route table keeps.
func TestRouteTemplateMatchesOriginal(t *testing.T) {
	for _, tg := range append(routeSeeds(t), routeTargets(60000, 1)...) {
		checkTemplate(t, tg[0], tg[1])
	}
}

// FuzzRouteTemplate holds one target's templates to the original's.
func FuzzRouteTemplate(f *testing.F) {
	f.Add("/wiki/Talk:Seoul", "action=history&%zz=1&k=v")
	f.Add("/2026/10/hello_world_again/", "replytocom=4121")
	f.Add("/w/%ED%8A%B9%EC%88%98:%EC%B5%9C%EA%B7%BC", "")
	f.Fuzz(func(t *testing.T, p, q string) { checkTemplate(t, p, q) })
}

// checkTemplate compares the template of one target with the original's,
// without and with query values.
func checkTemplate(t *testing.T, p, q string) {
	t.Helper()
	if got, want := RouteTemplate(p, q), routeTemplateOriginal(p, q); got != want {
		t.Fatalf("RouteTemplate(%q, %q) = %q, the original %q", p, q, got, want)
	}
	var sc TemplateScratch
	got := string(AppendTemplate(nil, sc.Segments(p), sc.Query(q), q != "", true))
	if want := joinTemplateOriginal(templateSegmentsOriginal(p), templateQueryOriginal(q), q != "", true); got != want {
		t.Fatalf("the template of (%q, %q) with values = %q, the original %q", p, q, got, want)
	}
}

// normaliseSegment is appendNormalised as a string, for comparing with the
// original's.
func normaliseSegment(s string) string { return string(appendNormalised(nil, s)) }
