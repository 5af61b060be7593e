package request

import (
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources"
)

// The hot path of ingest (issue 9) was made faster without changing a result:
// these tests hold the new code to the old, kept here as the reference (the
// rest of it, Observe's, is detect's hotpath_test.go).

// classifyPathOriginal is ClassifyPath before issue 9.
func classifyPathOriginal(rawPath, rawQuery, healthURI string) PathClass {
	if healthURI != "" && rawPath == healthURI {
		return ClassHealth
	}
	p, err := url.PathUnescape(rawPath)
	if err != nil {
		p = rawPath
	}
	if assetExt[strings.ToLower(path.Ext(p))] {
		return ClassAsset
	}
	lp := strings.ToLower(p)
	if strings.HasSuffix(lp, "/api.php") || strings.HasSuffix(lp, "/rest.php") || strings.Contains(lp, "/api/") {
		return ClassAPI
	}
	q, _ := url.ParseQuery(rawQuery)
	title := strings.ToLower(q.Get("title"))
	if hasSpecialNamespaceOriginal(lp) || hasSpecialNamespaceOriginal(title) {
		return ClassSpecial
	}
	if !viewActions[strings.ToLower(q.Get("action"))] || q.Has("diff") || q.Has("oldid") || q.Has("curid") && q.Has("action") {
		return ClassTool
	}
	if strings.HasSuffix(lp, ".php") && !strings.HasSuffix(lp, "/index.php") {
		return ClassOther
	}
	if title != "" || strings.Count(lp, "/") >= 1 && lp != "/" {
		return ClassArticle
	}
	if lp == "/" {
		return ClassArticle
	}
	return ClassOther
}

func hasSpecialNamespaceOriginal(s string) bool {
	for _, ns := range specialNamespaces {
		if strings.Contains(s, ns) {
			return true
		}
	}
	return false
}

// TestKeyerLastAgent: the agent asked for last is answered without the
// map, but only for the same agent: one of the same length that differs in
// its last digit (a crawler rotating versions) is another.
func TestKeyerLastAgent(t *testing.T) {
	var k Keyer
	run := []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
		"",
		"curl/8.5.0",
	}
	for _, ua := range run {
		if _, want := SplitFamily(UAFamily(ua)); k.Agent(ua).Version != want {
			t.Errorf("version of %q after the run = %q, want %q", ua, k.Agent(ua).Version, want)
		}
	}
}

// TestKeyerAgentByAddress: the agent remembered at a string's address is
// taken only for that string. A prefix of an agent starts at its address
// ("curl/8.5.0" of "curl/8.5.0 Googlebot/2.1", a Googlebot by the first
// family listed): a careless version that compares addresses alone takes
// one for the other. A copy at another address is the same agent.
func TestKeyerAgentByAddress(t *testing.T) {
	whole := "curl/8.5.0 Googlebot/2.1"
	prefix := whole[:len("curl/8.5.0")]
	other := "Wget/1.21"
	copied := strings.Clone(whole)
	var k Keyer
	for _, ua := range []string{prefix, other, whole, other, prefix, whole, copied, prefix} {
		if got, want := k.Agent(ua).Version, UAFamily(ua); got == "" || !strings.HasSuffix(want, " "+got) {
			t.Errorf("Agent(%q): version %q, family %q", ua, got, want)
		}
		if got, want := k.Key(&sources.Request{UserAgent: ua}), Key(&sources.Request{UserAgent: ua}); got != want {
			t.Errorf("Key(%q) = %v, want %v", ua, got, want)
		}
	}
}

// TestKeyerMatchesKey: a Keyer's cache of user agents (detect.Traffic.Observe's) changes no
// fingerprint and no version, also when its bound clears it again and again
// (3), and holds no more agents than its bound.
func TestKeyerMatchesKey(t *testing.T) {
	defer func(n int) { maxAgents = n }(maxAgents)
	seeds := uaSeeds()
	for _, bound := range []int{maxAgents, 3} {
		maxAgents = bound
		var k Keyer
		for i := range 3 * len(seeds) {
			r := &sources.Request{UserAgent: seeds[i*7%len(seeds)], TLS: i%2 == 0, Lang: "ko-kr", LoggedIn: sources.LoggedInNo}
			if got, want := k.Key(r), Key(r); got != want {
				t.Errorf("cache %d: Keyer.Key(%q) = %v, Key %v", bound, r.UserAgent, got, want)
			}
			if _, want := SplitFamily(UAFamily(r.UserAgent)); k.Agent(r.UserAgent).Version != want {
				t.Errorf("cache %d: version of %q = %q, want %q", bound, r.UserAgent, k.Agent(r.UserAgent).Version, want)
			}
			if len(k.agents) > bound {
				t.Fatalf("agent cache holds %d, bound %d", len(k.agents), bound)
			}
		}
	}
}

func classifySeeds() [][2]string {
	return [][2]string{
		{"/healthz.php", ""}, {"/static/skin.css", ""}, {"/favicon.ICO", ""}, {"/w/%EB%8C%80%EB%AC%B8", ""},
		{"/", ""}, {"", ""}, {"/w/index.php", "title=Foo&action=edit"}, {"/w/index.php", "title=Foo;action=edit"},
		{"/w/index.php", "title=Foo&diff=12&oldid=11"}, {"/w/index.php", "title=Foo&action=view"},
		{"/w/Special%3AWhatLinksHere/Foo", ""}, {"/w/index.php", "title=Special%3ANewItem"},
		{"/w/%ED%8A%B9%EC%88%98:%EC%B5%9C%EA%B7%BC%EB%B0%94%EB%80%9C", ""}, {"/w/%E7%89%B9%E6%AE%8A:X", ""},
		{"/W/API.PHP", "x=%zz"}, {"/w/load.php", "modules=site"}, {"/w/%zz", ""}, {"/w/%C4%B0", ""},
		{"/w/\xff%FF", "title=%ff"}, {"/w/SP%C3%89CIAL:x", ""}, {"/x.PNG", ""}, {"/index.php", "curid=3&action="},
		{"/w/%E3%81%82%E4%B8%80%ED%9E%A3", "title=+&&=&action=Render"},
		// readQuery against url.ParseQuery: escaped keys, repeated keys (the
		// first valid value counts), pairs it drops, and a case rule of Unicode.
		{"/w/index.php", "%74itle=Special%3AX"}, {"/w/index.php", "%61%63%74%69%6F%6E=edit"}, {"/w/index.php", "act%69on=view&curid=2"},
		{"/w/index.php", "title=%zz&title=Special:Log"}, {"/w/index.php", "action=edit%&action=view"}, {"/w/index.php", "action=V%C4%B0EW"},
		// A title is lowered only when it has a namespace: one outside
		// ASCII whose namespace lowers to a special one by Unicode's rules
		// only, one that is special only once lowered, and titles without
		// a ':' that are articles all the same.
		{"/index.php", "title=SP%C3%89CIAL:Log"}, {"/index.php", "title=SPEC%C4%B0AL:Log"}, {"/index.php", "title=%EC%82%BC%EA%B5%AD"},
		{"/index.php", "title=SPECIAL%3ALog"}, {"/index.php", "title=%ED%8A%B9%EC%88%98%3AX"}, {"/index.php", "title=\xff"}, {"", "title=%EC%82%BC"},
		{"/w/index.php", "diff;=1"}, {"/w/index.php", "oldid"}, {"/w/index.php", "curid&action"}, {"/w/index.php", "ti+tle=x&acti%6Fn=history"},
		{"/w/index.php", "title=a+b%2Fc&action=&action=edit"}, {"/w/index.php", strings.Repeat("&", 9999) + "action=edit"},
		{"/w/index.php", strings.Repeat("&", 10000) + "action=edit"}, // past net/url's bound on parameters
	}
}

func TestClassifyPathMatchesOriginal(t *testing.T) {
	for _, s := range classifySeeds() {
		for _, health := range []string{"", "/healthz.php"} {
			want := classifyPathOriginal(s[0], s[1], health)
			if got := ClassifyPath(s[0], s[1], health); got != want {
				t.Errorf("ClassifyPath(%q, %q, %q) = %q, the original %q", s[0], s[1], health, got, want)
			}
			scratch := []byte("x")
			if got := ClassifyPathScratch(s[0], s[1], health, &scratch); got != want {
				t.Errorf("classifyPath(%q, %q, %q) with a scratch buffer = %q, the original %q", s[0], s[1], health, got, want)
			}
		}
	}
}

// toolLabelOriginal is ToolLabel as it was before it read the query
// without url.ParseQuery's map (issue 26).
func toolLabelOriginal(rawPath, rawQuery string, class PathClass) string {
	switch class {
	case ClassSpecial:
		p, err := url.PathUnescape(rawPath)
		if err != nil {
			p = rawPath
		}
		if name := specialName(p); name != "" {
			return name + " (path)"
		}
		q, _ := url.ParseQuery(rawQuery)
		if name := specialName(q.Get("title")); name != "" {
			return name + " (title=)"
		}
		return "special"
	case ClassTool:
		q, _ := url.ParseQuery(rawQuery)
		if a := q.Get("action"); a != "" {
			return "action=" + strings.ToLower(a)
		}
		if q.Has("diff") {
			return "diff"
		}
		return "oldid"
	}
	return string(class)
}

// toolLabelSeeds are classifySeeds and targets that name a special page or a
// tool every way ToolLabel reads one.
func toolLabelSeeds() [][2]string {
	return append(classifySeeds(),
		[2]string{"/wiki/Special:WhatLinksHere/Foo", ""}, [2]string{"/w/%ED%8A%B9%EC%88%98:%EC%B5%9C%EA%B7%BC%EB%B0%94%EB%80%9C", ""},
		[2]string{"/index.php", "title=Special%3ARecentChanges&x=1"}, [2]string{"/index.php", "title=Special:Search/a&title=Special:Log"},
		[2]string{"/index.php", "title=%zz&title=Special:Log"}, [2]string{"/index.php", "title;=Special:Log&title=Special:Export/X"},
		[2]string{"/index.php", "action=HISTORY&action=edit"}, [2]string{"/index.php", "act%69on=Raw"}, [2]string{"/index.php", "action=%zz&diff"},
		[2]string{"/index.php", "diff=&oldid=3"}, [2]string{"/index.php", "oldid=3"}, [2]string{"/w/Special:%zz", "title=Special:Log"},
		[2]string{"/index.php", strings.Repeat("&", 10000) + "action=edit"}, [2]string{"/index.php", "title=Special:Log&" + strings.Repeat("&", 10000)},
		// Runes whose lowered width differs before the name (İ: 2 bytes to 3,
		// K: 3 to 1, an invalid byte: 1 to 3) and after it, where the
		// mapping back stops reading.
		[2]string{"/w/İİ/Spécial:Log/İ", ""}, [2]string{"/w/\u212a\xff/SPECIAL:Export/가\xff", ""}, [2]string{"/index.php", "title=%C4%B0Special%3ALog/%E2%84%AA"},
	)
}

func TestToolLabelMatchesOriginal(t *testing.T) {
	scratch := []byte("left over from another target")
	for _, s := range toolLabelSeeds() {
		for _, class := range []PathClass{ClassifyPath(s[0], s[1], ""), ClassSpecial, ClassTool, ClassArticle} {
			want := toolLabelOriginal(s[0], s[1], class)
			if got := ToolLabel(s[0], s[1], class); got != want {
				t.Errorf("ToolLabel(%q, %q, %q) = %q, the original %q", s[0], s[1], class, got, want)
			}
			if got := ToolLabelScratch(s[0], s[1], class, &scratch); got != want {
				t.Errorf("ToolLabelScratch(%q, %q, %q) = %q, the original %q", s[0], s[1], class, got, want)
			}
		}
	}
}

func FuzzClassifyPath(f *testing.F) {
	for _, s := range classifySeeds() {
		f.Add(s[0], s[1])
	}
	scratch := []byte("left over from another path")
	f.Fuzz(func(t *testing.T, p, q string) {
		want := classifyPathOriginal(p, q, "/healthz.php")
		if got := ClassifyPath(p, q, "/healthz.php"); got != want {
			t.Errorf("ClassifyPath(%q, %q) = %q, the original %q", p, q, got, want)
		}
		if got := ClassifyPathScratch(p, q, "/healthz.php", &scratch); got != want {
			t.Errorf("classifyPath(%q, %q) with a scratch buffer = %q, the original %q", p, q, got, want)
		}
		for _, class := range []PathClass{ClassSpecial, ClassTool} {
			if got, want := ToolLabelScratch(p, q, class, &scratch), toolLabelOriginal(p, q, class); got != want {
				t.Errorf("ToolLabelScratch(%q, %q, %q) = %q, the original %q", p, q, class, got, want)
			}
		}
		if got, want := lower(p), strings.ToLower(p); got != want {
			t.Errorf("lower(%q) = %q, want %q", p, got, want)
		}
	})
}

// uaFamilyOriginal is UAFamily before issue 9: one strings.Index per family.
func uaFamilyOriginal(ua string) string {
	if ua == "" {
		return "none"
	}
	for _, f := range uaFamilies {
		i := strings.Index(ua, f.token)
		if i < 0 {
			continue
		}
		if !strings.HasSuffix(f.token, "/") {
			return f.family
		}
		rest := ua[i+len(f.token):]
		end := 0
		for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		if end == 0 {
			return f.family
		}
		return f.family + " " + rest[:end]
	}
	if strings.Contains(strings.ToLower(ua), "bot") {
		return "other bot"
	}
	return "other"
}

func uaSeeds() []string {
	return []string{
		"", "curl/7.88.1", "SomethingBot", "<script>", "Chrome/", "Chrome/x", "HeadlessChrome/120 Chrome/120",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36 Edg/121.0",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; +http://www.google.com/bot.html) Chrome/129.0.6668.89 Safari/537.36",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1",
		"Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)", "SemrushBotCriOS/3", "Version/Version/9",
		"OPR/1 OPR/2 Edg/", "python-requests/2.31 Go-http-client/1.1", "facebookexternalhit/1.1", "Wget/1.21 curl/8",
		"Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S921N) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 Chrome/122.0.0.0 Mobile Safari/537.36",
	}
}

func TestUAFamilyMatchesOriginal(t *testing.T) {
	for _, ua := range uaSeeds() {
		if got, want := UAFamily(ua), uaFamilyOriginal(ua); got != want {
			t.Errorf("UAFamily(%q) = %q, the original %q", ua, got, want)
		}
	}
}

func FuzzUAFamily(f *testing.F) {
	for _, ua := range uaSeeds() {
		f.Add(ua)
	}
	f.Fuzz(func(t *testing.T, ua string) {
		if got, want := UAFamily(ua), uaFamilyOriginal(ua); got != want {
			t.Errorf("UAFamily(%q) = %q, the original %q", ua, got, want)
		}
	})
}

// TestLowerMatchesToLower: lower lowers ASCII byte by byte only in strings
// whose other runes have no case; a rune with case outside ASCII (Latin,
// fullwidth, the Kelvin sign), a rune ToLower maps into ASCII ("İ") or an
// invalid byte (a cut, overlong or surrogate sequence) sends the whole
// string to strings.ToLower.
func TestLowerMatchesToLower(t *testing.T) {
	for _, s := range []string{
		"", "/w/index.php", "/W/Special:Log", "/w/Special:WhatLinksHere/웹툰_1902", "特別:新しいページ", "/w/特殊:X",
		"/w/Special:É", "SPÉCIAL:가", "SPECİAL:가", "가Ａ", "Kelvin:\u212a가", "Special:가\xff", "\xe3\x81", "ÀB가",
		// A lead byte of a three-byte rune whose next bytes continue none:
		// read as a rune regardless, "\xebA\x80" would be a Hangul
		// syllable, its 'A' skipped and left upper case.
		"\xebA\x80", "가\xeb\x80A", "\xe0\x80\x80", "\xed\xa0\x80가", "\xea\xb0",
	} {
		if got, want := lower(s), strings.ToLower(s); got != want {
			t.Errorf("lower(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestLowerToOriginal maps offsets of the lowered string back by lowering
// every prefix of s that ends at a rune: runes that lower to another width
// (İ 2 bytes to 1, K 3 to 1, an invalid byte 1 to 3) before the name shift
// its offsets, and those after it are not read.
func TestLowerToOriginal(t *testing.T) {
	for _, s := range []string{
		"/w/Special:Log", "/w/İİ/Spécial:Log/İ", "/w/\u212a\xff/SPECIAL:Export/가\xff", "İSpecial:Log/\u212a", "가\xff특수:X", "\xe3\x81Special:",
	} {
		ls := strings.ToLower(s)
		for _, ns := range specialNamespaces {
			from := strings.Index(ls, ns)
			if from < 0 {
				continue
			}
			to := from + len(ns)
			wantFrom, wantTo := -1, -1
			for si := range s {
				if n := len(strings.ToLower(s[:si])); n == from {
					wantFrom = si
				} else if n == to {
					wantTo = si
				}
			}
			if len(ls) == to {
				wantTo = len(s)
			}
			if gotFrom, gotTo := lowerToOriginal(s, from, to); gotFrom != wantFrom || gotTo != wantTo {
				t.Errorf("lowerToOriginal(%q, %d, %d) = %d, %d, want %d, %d", s, from, to, gotFrom, gotTo, wantFrom, wantTo)
			}
		}
	}
}
