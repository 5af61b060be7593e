package rules

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

func labels(kv ...any) map[string]*labelEvidence {
	out := map[string]*labelEvidence{}
	for i := 0; i < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case int:
			out[kv[i].(string)] = &labelEvidence{N: v}
		case *labelEvidence:
			out[kv[i].(string)] = v
		}
	}
	return out
}

func TestGenerateURLForms(t *testing.T) {
	key := request.ClusterKey{UA: "Chrome", Lang: "zh-cn", LoggedIn: sources.LoggedInNo}
	for _, tc := range []struct {
		name  string
		c     *crawlerEvidence
		site  siteEvidence
		paths []string
		title []string
		query map[string][]string
	}{{
		name: "the site uses both forms: both for every special page walked",
		c: &crawlerEvidence{Key: key, Requests: 100, Labels: labels(
			"Special:WhatLinksHere (path)", &labelEvidence{N: 50, Prefixes: map[string]int{"/w/": 50}},
			"Special:CiteThisPage (title=)", 30,
			"action=edit", 15, "asset", 5)},
		site:  siteEvidence{SpecialPath: 10, SpecialTitle: 3, Prefixes: map[string]int{"/w/": 10}},
		paths: []string{"/w/Special:WhatLinksHere", "/w/Special:WhatLinksHere/*", "/w/Special:CiteThisPage", "/w/Special:CiteThisPage/*"},
		title: []string{"Special:WhatLinksHere", "Special:CiteThisPage"},
		query: map[string][]string{"action": {"edit"}},
	}, {
		name: "the site never uses title=: path form only",
		c: &crawlerEvidence{Key: key, Requests: 100, Labels: labels(
			"Special:Log (path)", &labelEvidence{N: 100, Prefixes: map[string]int{"/wiki/": 100}})},
		site:  siteEvidence{SpecialPath: 100, Prefixes: map[string]int{"/wiki/": 100}},
		paths: []string{"/wiki/Special:Log", "/wiki/Special:Log/*"},
	}, {
		name: "title= only by the crawler: the path form takes the site's prefixes",
		c: &crawlerEvidence{Key: key, Requests: 100, Labels: labels(
			"특수:기여 (title=)", 90, "diff", 5, "oldid", 5)},
		site:  siteEvidence{SpecialPath: 40, SpecialTitle: 90, Prefixes: map[string]int{"/wiki/": 36, "/index.php/": 4, "/x/": 1}},
		paths: []string{"/wiki/특수:기여", "/wiki/특수:기여/*", "/index.php/특수:기여", "/index.php/특수:기여/*"},
		title: []string{"특수:기여"},
		query: map[string][]string{"diff": {"*"}, "oldid": {"*"}},
	}, {
		name: "an API endpoint and rare labels below the threshold",
		c: &crawlerEvidence{Key: key, Requests: 1000, Labels: labels(
			"api", &labelEvidence{N: 900, Paths: map[string]int{"/w/api.php": 880, "/api.php": 20}},
			"action=edit", 5, "action=purge", 95)},
		paths: []string{"/w/api.php"},
		query: map[string][]string{"action": {"purge"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Finding, tc.c.Spread = "crawler_burst-1", true
			tc.site.Cookie = "wikiUserID="
			zones, notes := generate([]*crawlerEvidence{tc.c}, tc.site)
			if len(zones) != 1 {
				t.Fatalf("got %d zones, notes %v", len(zones), notes)
			}
			var paths, title []string
			query := map[string][]string{}
			for _, tg := range zones[0].Targets {
				paths = append(paths, tg.Paths...)
				title = append(title, tg.TitleNames...)
				if tg.QueryKey != "" {
					query[tg.QueryKey] = tg.QueryValues
				}
			}
			slices.Sort(paths)
			slices.Sort(tc.paths)
			if !slices.Equal(paths, tc.paths) {
				t.Errorf("paths %q, want %q", paths, tc.paths)
			}
			if !slices.Equal(title, tc.title) {
				t.Errorf("title= names %q, want %q", title, tc.title)
			}
			if len(query) != len(tc.query) {
				t.Errorf("query %v, want %v", query, tc.query)
			}
			for k, v := range tc.query {
				if !slices.Equal(query[k], v) {
					t.Errorf("query %s=%v, want %v", k, query[k], v)
				}
			}
			if zones[0].Cond.NotCookie != "wikiUserID=" {
				t.Errorf("logged-in condition %+v", zones[0].Cond)
			}
		})
	}
}

// TestGenerateConditions: header conditions are added while they keep
// ordinary clients out of the crawler's bucket, and only then.
func TestGenerateConditions(t *testing.T) {
	chrome := request.ClusterKey{UA: "Chrome", Lang: "zh-cn", LoggedIn: sources.LoggedInNo, NoClientHints: true}
	for _, tc := range []struct {
		name     string
		key      request.ClusterKey
		ordinary [8]int // ordinary tool requests by condition mask (lang, hints, UA bits)
		all      [8]int
		versions map[string]int    // the crawler's tool requests by browser version
		byVer    map[string][8]int // the ordinary ones by version and mask
		hints    int               // the crawler's requests with client hints
		// referers: the crawler's tool requests with a Referer from the site,
		// readerClicks the ordinary ones.
		referers, readerClicks int
		want                   Conditions
	}{{
		// zh-CN readers exist: Chrome ones send client hints, Safari ones do not.
		name:     "language, client hints and browser together separate the crawler",
		key:      chrome,
		ordinary: [8]int{0: 500, condLang | condUA: 6, condLang | condHints: 4, condHints: 200},
		want:     Conditions{NotCookie: "wikiUserID=", Lang: "zh-cn", NoClientHints: true, UserAgent: "Chrome/"},
	}, {
		name:     "the language alone is enough: no further condition",
		key:      chrome,
		ordinary: [8]int{0: 500, condHints: 200, condUA: 40},
		want:     Conditions{NotCookie: "wikiUserID=", Lang: "zh-cn"},
	}, {
		name: "nobody else used the tools: distinctiveness judged on all pages",
		key:  request.ClusterKey{UA: "Firefox", Lang: "de-de", LoggedIn: sources.LoggedInNo},
		all:  [8]int{0: 5000, condHints: 3000, condHints | condUA: 400, condLang | condHints: 2, condLang | condHints | condUA: 3},
		want: Conditions{NotCookie: "wikiUserID=", Lang: "de-de", UserAgent: "Firefox/"},
	}, {
		// Same language, hints and browser as many readers; only its stale
		// browser version sets it apart.
		name:     "the browser's major versions",
		key:      request.ClusterKey{UA: "Chrome", Lang: "ko-kr", LoggedIn: sources.LoggedInNo},
		ordinary: [8]int{condLang | condUA: 300, condUA: 100},
		versions: map[string]int{"121": 95, "120": 5},
		byVer:    map[string][8]int{"129": {condLang | condUA: 290, condUA: 100}, "121": {condLang | condUA: 10}},
		hints:    100,
		want:     Conditions{NotCookie: "wikiUserID=", Lang: "ko-kr", UserAgent: "Chrome/", UserAgentVersions: []string{"121", "120"}},
	}, {
		name:     "nothing sets it apart: no header condition",
		key:      request.ClusterKey{UA: "other bot", LoggedIn: sources.LoggedInNo},
		ordinary: [8]int{condHints: 100},
		want:     Conditions{NotCookie: "wikiUserID="},
	}, {
		// Readers click these tools on the site's pages; the crawler sent
		// no Referer: clicks from the site are spared.
		name:         "readers click the tools from pages, the crawler sends no referer",
		key:          chrome,
		ordinary:     [8]int{0: 500, condHints: 200, condUA: 40},
		readerClicks: 30,
		want:         Conditions{NotCookie: "wikiUserID=", Lang: "zh-cn", NoSiteReferer: true},
	}, {
		// The obvious rule, "a Referer from the site means a person", would
		// exempt a crawler that forges one on every request.
		name:         "a crawler that forges the site's referer: no referer condition",
		key:          chrome,
		ordinary:     [8]int{0: 500, condHints: 200, condUA: 40},
		referers:     100,
		readerClicks: 30,
		want:         Conditions{NotCookie: "wikiUserID=", Lang: "zh-cn"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ord := tc.ordinary
			c := &crawlerEvidence{Finding: "crawler_burst-1", Key: tc.key, Spread: true, Requests: 100, ToolRequests: 100, UATokenRequests: 100,
				HintRequests: tc.hints, SiteRefererRequests: tc.referers, OrdinarySiteReferer: tc.readerClicks, Labels: labels("action=edit", 100), Ordinary: map[string]*[8]int{"action=edit": &ord}, OrdinaryAll: tc.all,
				Versions: tc.versions, OrdinaryVer: map[string]map[string]*[8]int{"action=edit": {}}}
			for v, cs := range tc.byVer {
				c.OrdinaryVer["action=edit"][v] = &cs
			}
			zones, _ := generate([]*crawlerEvidence{c}, siteEvidence{Cookie: "wikiUserID="})
			if len(zones) != 1 {
				t.Fatal("no zone")
			}
			if !reflect.DeepEqual(zones[0].Cond, tc.want) {
				t.Errorf("conditions %+v, want %+v (why: %v)", zones[0].Cond, tc.want, zones[0].condWhy)
			}
		})
	}
}

// TestGenerateRefusesHostileValues: values from log lines that could mean
// something to the Caddyfile lexer, the path matcher or a regexp are dropped
// and reported; the safe part of the crawl still gets its zone.
func TestGenerateRefusesHostileValues(t *testing.T) {
	hostile := []string{
		"Special:X\n}\nhttp://evil.example {\nrespond pwned\n}",
		"Special:X{$HOME}", "Special:{env.SECRET}", "Special:X`y", `Special:X"y`, "Special:X y",
		"Special:X*", "Special:X?", "Special:[X]", `Special:X\`, "Special:X%2F", "#Special:X", "<<EOF",
		"Special:X\x00", "Special:X\u202e", "Special:X\u0085", "Special:\xff", "Special:Log (title=)",
	}
	lbls := map[string]*labelEvidence{"action=edit": {N: 100}}
	for _, h := range hostile {
		lbls[h+" (path)"] = &labelEvidence{N: 50, Prefixes: map[string]int{"/w/": 50}}
		lbls["action="+h] = &labelEvidence{N: 50}
	}
	c := &crawlerEvidence{Finding: "crawler_burst-1", Key: request.ClusterKey{UA: "Chrome", Lang: "zh-cn"}, Spread: true,
		Requests: 1000, Labels: lbls}
	zones, notes := generate([]*crawlerEvidence{c}, siteEvidence{Cookie: "wikiUserID="})
	if len(zones) != 1 {
		t.Fatalf("got %d zones", len(zones))
	}
	z := zones[0]
	if len(z.Targets) != 1 || z.Targets[0].QueryKey != "action" || !slices.Equal(z.Targets[0].QueryValues, []string{"edit"}) {
		t.Errorf("targets %+v, want only action=edit", z.Targets)
	}
	if !hasNote(notes, "not safe to put in a Caddyfile") {
		t.Errorf("no note on the dropped values: %v", notes)
	}

	// Only hostile values: no zone at all, and a note saying why.
	c.Labels = map[string]*labelEvidence{hostile[0] + " (path)": {N: 100}}
	zones, notes = generate([]*crawlerEvidence{c}, siteEvidence{})
	if len(zones) != 0 || !hasNote(notes, "no rule proposed") {
		t.Errorf("zones %+v, notes %v", zones, notes)
	}
}

func TestGenerateCookieConditions(t *testing.T) {
	base := func() *crawlerEvidence {
		return &crawlerEvidence{Finding: "crawler_burst-1", Key: request.ClusterKey{UA: "Chrome", LoggedIn: sources.LoggedInNo},
			Spread: true, Requests: 10, ToolRequests: 10, Labels: labels("action=edit", 10)}
	}
	for _, tc := range []struct {
		name    string
		mod     func(c *crawlerEvidence, s *siteEvidence)
		want    Conditions
		warning string
	}{
		{"site pattern", func(c *crawlerEvidence, s *siteEvidence) { s.Cookie = "_session=" }, Conditions{NotCookie: "_session="}, ""},
		{"unsafe site pattern, crawler sent no cookie", func(c *crawlerEvidence, s *siteEvidence) { s.Cookie = "*{env.X}" }, Conditions{NoCookie: true}, "cannot be used in a header matcher"},
		{"a regular expression", func(c *crawlerEvidence, s *siteEvidence) { s.Cookie = "wordpress_logged_in_[0-9a-f]{32}=" },
			Conditions{NotCookieRegexp: "wordpress_logged_in_[0-9a-f]{32}="}, ""},
		{"a regular expression with alternatives and anchors", func(c *crawlerEvidence, s *siteEvidence) { s.Cookie = `(^|;\s*)railwiki(UserID|UserName)=` },
			Conditions{NotCookieRegexp: `(^|;\s*)railwiki(UserID|UserName)=`}, ""},
		{"a regular expression with a placeholder, crawler sent no cookie", func(c *crawlerEvidence, s *siteEvidence) { s.Cookie = "wp_[a-z]+{env.X}=" },
			Conditions{NoCookie: true}, "the zone is written as for an unknown pattern"},
		{"a regular expression no printable cookie matches, crawler sent no cookie", func(c *crawlerEvidence, s *siteEvidence) { s.Cookie = "wp_[\\x00-\\x1f]=" },
			Conditions{NoCookie: true}, "the zone is written as for an unknown pattern"},
		{"unknown pattern, crawler sent no cookie", func(c *crawlerEvidence, s *siteEvidence) {}, Conditions{NoCookie: true}, "pattern unknown"},
		{"unknown pattern, crawler sent cookies", func(c *crawlerEvidence, s *siteEvidence) { c.CookieRequests = 3 }, Conditions{}, "may limit logged-in users"},
		{"logged-in crawler", func(c *crawlerEvidence, s *siteEvidence) {
			c.Key.LoggedIn = sources.LoggedInYes
			s.Cookie = "wikiUserID="
		}, Conditions{}, "crawler was logged in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := base(), siteEvidence{}
			tc.mod(c, &s)
			zones, notes := generate([]*crawlerEvidence{c}, s)
			if len(zones) != 1 || !reflect.DeepEqual(zones[0].Cond, tc.want) {
				t.Fatalf("zones %+v, want conditions %+v", zones, tc.want)
			}
			if tc.warning != "" && !hasNote(notes, tc.warning) {
				t.Errorf("no note %q in %v", tc.warning, notes)
			}
			// A pattern a header matcher cannot hold (the independent
			// wp-ipv6-crawler bundle's regular expression) limits the rule,
			// and the rule says so; it is no evidence missing, so no
			// warning that would make the run exit 1.
			if s.Cookie != "" && !safeCookie(s.Cookie) && len(sources.Problems(notes)) > 0 {
				t.Errorf("an inexpressible cookie pattern is a problem of the evidence: %v", sources.Problems(notes))
			}
		})
	}
}

// TestZoneNameStatesConditions: a name holds exactly the conditions the zone
// carries, whatever the crawler's fingerprint was.
func TestZoneNameStatesConditions(t *testing.T) {
	for _, tc := range []struct {
		z    Zone
		want string
	}{
		{Zone{Cond: Conditions{Lang: "zh-cn", NotCookie: "wikiUserID="}}, "tools_zh_cn_logged_out"},
		{Zone{Cond: Conditions{Lang: "zh-cn", NotCookie: "wikiUserID=", UserAgent: "Chrome/"}}, "tools_chrome_zh_cn_logged_out"},
		{Zone{Cond: Conditions{UserAgent: "Chrome/", UserAgentVersions: []string{"121", "120"}, NoClientHints: true, NoCookie: true}}, "tools_chrome_121_120_no_hints_no_cookie"},
		{Zone{Cond: Conditions{Lang: "zh-cn", NotCookie: "wikiUserID=", NoSiteReferer: true}}, "tools_zh_cn_logged_out_no_site_referer"},
		{Zone{PerClient: true}, "tools_per_client"},
		{Zone{}, "tools_any_client"},
		{Zone{Cond: Conditions{UserAgent: "Chrome/", UserAgentVersions: []string{"121", "120", "119", "118", "117", "116", "115", "114"}, Lang: "zh-cn", NoClientHints: true, NotCookie: "x="}},
			"tools_chrome_8_versions_zh_cn_no_hints_logged_out_f39c1c"}, // versions counted: hashed
	} {
		if got := zoneName(&tc.z); got != tc.want || !zoneNameOK(got) {
			t.Errorf("%+v: name %q, want %q", tc.z.Cond, got, tc.want)
		}
	}
}

func TestZoneNames(t *testing.T) {
	a := &crawlerEvidence{Finding: "a", Key: request.ClusterKey{UA: "Chrome", Lang: "zh-cn"}, Spread: true, Requests: 10, Labels: labels("action=edit", 10)}
	b := &crawlerEvidence{Finding: "b", Key: request.ClusterKey{UA: "Chrome", Lang: "zh-cn", NoClientHints: true}, Spread: true, Requests: 10, Labels: labels("action=edit", 10)}
	c := &crawlerEvidence{Finding: "c", Key: request.ClusterKey{UA: "other bot"}, Requests: 10, Labels: labels("action=edit", 10)}
	zones, _ := generate([]*crawlerEvidence{a, b, c}, siteEvidence{})
	var names []string
	for _, z := range zones {
		names = append(names, z.Name)
	}
	// No ordinary client used these tools, so no header condition was worth
	// adding: the zones carry only "no Cookie", and their names say that and
	// nothing else, though the crawlers claimed Chrome and zh-CN.
	want := []string{"tools_no_cookie", "tools_no_cookie_2", "tools_per_client_no_cookie"}
	if !slices.Equal(names, want) {
		t.Errorf("names %q, want %q", names, want)
	}
	if !zones[2].PerClient || zones[2].Key() != "{client_ip}" || zones[0].Key() != zones[0].Name {
		t.Errorf("keys %q %q", zones[0].Key(), zones[2].Key())
	}
}

// TestCutZoneNamesStayApart: two zones whose names agree in their first 60
// characters and differ only after them. Cut alone, both would be named
// "tools_siteauditcrawler_enterprise_edition_zh_hant_tw_no_hint": generate's
// "_2" parts them only within one proposal, and two proposals deployed in one
// rate_limit block would leave Caddy one zone (it keeps zones by name). The
// hash of the full name keeps them apart, whatever else was generated, and
// the name still begins with what it limits.
func TestCutZoneNamesStayApart(t *testing.T) {
	cond := Conditions{UserAgent: "SiteAuditCrawler-Enterprise-Edition/", Lang: "zh-hant-tw", NoClientHints: true, NotCookie: "wikiUserID="}
	withReferer := cond
	withReferer.NoSiteReferer = true
	zone := func(c Conditions) Zone {
		z := Zone{Window: 10 * time.Minute, Events: 120, Cond: c,
			Targets: []Target{{QueryKey: "action", QueryValues: []string{"history"}}}}
		z.Name = zoneName(&z)
		return z
	}
	// Each made alone, as two separate proposals would be.
	a, b := zone(cond), zone(withReferer)
	const readable = "tools_siteauditcrawler_enterprise_edition_zh_hant_tw_"
	if a.Name != readable+"08b6f6" || b.Name != readable+"f41bff" {
		t.Errorf("names %q and %q, want %q and %q (the hash of each full name, stable across runs)",
			a.Name, b.Name, readable+"08b6f6", readable+"f41bff")
	}
	snippet, err := Caddyfile([]Zone{a, b})
	if err != nil {
		t.Fatal(err)
	}
	adapted, err := validateZones(snippet, []Zone{a, b})
	if err != nil {
		t.Fatalf("Caddy's adapter: %v\n%s", err, snippet)
	}
	if len(adapted) != 2 {
		t.Errorf("Caddy adapted %d zones, want 2", len(adapted))
	}

	// The longest name the conditions allow still leaves uniqueName room for
	// "_NN" within zoneNameOK's 64.
	worst := Zone{Cond: Conditions{UserAgent: strings.Repeat("b", 40) + "/", UserAgentVersions: []string{"121", "120", "119", "118", "117", "116", "115", "114", "113", "112"},
		Lang: strings.Repeat("x", 35), NoClientHints: true, NotCookie: "wikiUserID=", NoSiteReferer: true}}
	if name := zoneName(&worst); len(name) > 60 || !zoneNameOK(name+"_99") {
		t.Errorf("name %q (%d bytes) leaves no room for uniqueName", name, len(name))
	}
}

func TestSafeValues(t *testing.T) {
	for _, tc := range []struct {
		f    func(string) bool
		name string
		ok   []string
		bad  []string
	}{
		{safeName, "name", []string{"Special:WhatLinksHere", "특수:가리키는문서", "Spécial:Pages_liées", "Special:Foo-Bar.1"},
			[]string{"", "-x", ".x", "a b", "a/b", "a*", "a?", "a{b}", "a%20", "a\tb", "a\xffb", "a`b", `a"b`, "a#b", "a\u200bb"}},
		{safePath, "path", []string{"/w/api.php", "/api.php", "/rest.php/v1"},
			[]string{"", "/", "w/api.php", "//x", "/w/../x", "/w/./x", "/w/x y", "/w/*"}},
		{safePrefix, "prefix", []string{"/", "/w/", "/index.php/"}, []string{"", "/w", "w/", "/../", "/w x/"}},
		{safeCookie, "cookie", []string{"wikiUserID=", "_session=", "sid"}, []string{"", "a b", "*x", "x*", "{x}", `a"b`, "a\x01"}},
		{safeLang, "lang", []string{"zh-cn", "en", "x-klingon"}, []string{"", "zh-CN", "zh cn", "zh;q=1"}},
		{safeToken, "token", []string{"Chrome", "python-requests", "Go-http-client"}, []string{"", "other bot", "a/b", "a*"}},
	} {
		for _, s := range tc.ok {
			if !tc.f(s) {
				t.Errorf("%s %q refused", tc.name, s)
			}
		}
		for _, s := range tc.bad {
			if tc.f(s) {
				t.Errorf("%s %q accepted", tc.name, s)
			}
		}
	}
	if !strings.Contains(langRegexp("zh-cn"), `zh-cn`) || titleRegexp([]string{"Special:A.B"}) != `(?i)^(?:Special:A\.B)(?:/|$)` {
		t.Errorf("regexps: %s %s", langRegexp("zh-cn"), titleRegexp([]string{"Special:A.B"}))
	}
}

// TestGenerateRotatingPostFlood: a flood of login POSTs that rotated its
// User-Agent and Accept-Language over several fingerprints. The obvious
// rule keys on its largest part's header, where the whole crawl walked:
// "Accept-Language en-us" left the other fingerprints through, half of the
// flood. The zone matches the method and the paths, keys on no header a
// part does not share, and Caddy's own adapter builds exactly that.
func TestGenerateRotatingPostFlood(t *testing.T) {
	ord := [8]int{0: 500, condLang: 20, condHints: 200, condUA: 300}
	c := &crawlerEvidence{Finding: "crawler_burst-1", Key: request.ClusterKey{UA: "Chrome", Lang: "en-us", LoggedIn: sources.LoggedInNo, NoClientHints: true},
		Spread: true, Requests: 100, ToolRequests: 100, UATokenRequests: 60, Fingerprints: 7, Method: "POST",
		Labels: map[string]*labelEvidence{"/wp-login.php": {N: 100}}, Ordinary: map[string]*[8]int{"/wp-login.php": &ord}}
	zones, _ := generate([]*crawlerEvidence{c}, siteEvidence{Cookie: "wordpress_logged_in_"})
	if len(zones) != 1 {
		t.Fatal("no zone")
	}
	want := Conditions{NotCookie: "wordpress_logged_in_", Method: "POST", NoClientHints: true}
	if got := zones[0].Cond; !reflect.DeepEqual(got, want) {
		t.Errorf("conditions %+v, want %+v (why: %v)", got, want, zones[0].condWhy)
	}
	zones[0].Window, zones[0].Events = time.Minute, 10
	block, err := Caddyfile(zones)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(block, "\t\t\tmethod POST\n") {
		t.Errorf("no method matcher in\n%s", block)
	}
	if _, err := validateZones(block, zones); err != nil {
		t.Errorf("Caddy's adapter: %v", err)
	}
}

// TestGenerateHeaderPresence: a spread actor rotating browser fingerprints
// gets conditions on which headers it sends only where the ordinary clients
// its zone would otherwise hold differ in them. Visitors who keep a session
// cookie are spared by `header !Cookie`, declared bots that send no
// Accept-Language by `header Accept-Language *`. The obvious reading is wrong
// twice: ordinary requests that carry a cookie but send client hints are out
// of the zone already, so a cookie condition would spare nobody and is not
// written; and a log that omits the Cookie shows the actor and everyone else
// without one, which tells nothing apart.
func TestGenerateHeaderPresence(t *testing.T) {
	const noHints = condHints
	base := func() *crawlerEvidence {
		return &crawlerEvidence{Finding: "crawler_burst-1", Key: request.ClusterKey{UA: "Chrome", LoggedIn: sources.LoggedInNo, NoClientHints: true},
			Spread: true, Fingerprints: 4, Requests: 1000, ToolRequests: 1000, LangRequests: 1000,
			Labels:   labels("/products/{n}", 1000),
			Ordinary: map[string]*[8]int{"/products/{n}": {0: 400, noHints: 300}}}
	}
	for _, tc := range []struct {
		name               string
		mod                func(c *crawlerEvidence)
		noCookie, withLang bool
	}{
		{"shoppers keep a cookie, bots send no language", func(c *crawlerEvidence) {
			c.OrdinaryPresence[hasCookie|hasLang][noHints] = 200
			c.OrdinaryPresence[0][noHints] = 100
			c.OrdinaryPresence[hasCookie|hasLang][0] = 400
		}, true, true},
		{"cookie holders all send client hints", func(c *crawlerEvidence) {
			c.OrdinaryPresence[hasCookie|hasLang][0] = 400
			c.OrdinaryPresence[hasLang][noHints] = 300
		}, false, false},
		{"the log omits the Cookie", func(c *crawlerEvidence) {
			c.OrdinaryPresence[hasLang][noHints] = 300
			c.OrdinaryPresence[hasLang][0] = 400
		}, false, false},
		{"the actor sent cookies", func(c *crawlerEvidence) {
			c.CookieRequests = 500
			c.OrdinaryPresence[hasCookie|hasLang][noHints] = 300
		}, false, false},
		{"the actor left out the language now and then", func(c *crawlerEvidence) {
			c.LangRequests = 900
			c.OrdinaryPresence[0][noHints] = 300
		}, false, false},
		{"bots inside the zone only once the cookie holders are spared", func(c *crawlerEvidence) {
			c.OrdinaryPresence[hasCookie|hasLang][noHints] = 250
			c.OrdinaryPresence[hasCookie][noHints] = 50
		}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.mod(c)
			zones, _ := generate([]*crawlerEvidence{c}, siteEvidence{Cookie: "_session="})
			if len(zones) != 1 {
				t.Fatalf("%d zones", len(zones))
			}
			got := zones[0].Cond
			if !got.NoClientHints || got.NotCookie != "_session=" {
				t.Errorf("conditions %+v: want no client hints and the logged-in exemption", got)
			}
			if got.NoCookie != tc.noCookie || got.AnyLang != tc.withLang {
				t.Errorf("no cookie %v, any language %v; want %v, %v", got.NoCookie, got.AnyLang, tc.noCookie, tc.withLang)
			}
			zones[0].Window, zones[0].Events = time.Minute, 10
			block, err := Caddyfile(zones)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := validateZones(block, zones); err != nil {
				t.Errorf("%v\n%s", err, block)
			}
			if strings.Contains(block, "header Accept-Language *") != tc.withLang || strings.Contains(block, "header !Cookie") != tc.noCookie {
				t.Errorf("block does not say the conditions:\n%s", block)
			}
		})
	}
}

// TestHeaderPresenceNeedsEnoughSpared: a header-presence condition narrows
// a zone for good, so it must spare enough ordinary requests to be worth
// it: at least the goal for others' share (0.5%) of the ordinary logged-out
// page requests, and more than it lets through of the crawler. The obvious
// rule adds one whenever it spares anybody; here that is wrong three ways.
// A credential-stuffing flood (counts as its seed-1 simulation measured)
// kept a cookie on one of 36,057 attempts while two ordinary requests of
// the zone carried one: `header !Cookie` would spare two requests, one
// client, of 8,938. A flood that picked up a consent cookie on 0.8% of its
// attempts (within what a fingerprint may miss) would pass 300 of them to
// spare 60 readers' requests. One client without Accept-Language, three
// requests, would make every future crawler that drops the header pass.
// Where cookie holders are a real part of the zone (a shop whose visitors
// all hold a session cookie) the condition is added.
func TestHeaderPresenceNeedsEnoughSpared(t *testing.T) {
	const noHints = condHints
	for _, tc := range []struct {
		name               string
		tools, cookie, off int // the crawler's tool requests, those with a Cookie, those without Accept-Language
		pages              int // ordinary logged-out page requests
		withCookie, noLang int // ordinary tool requests in the zone with a Cookie, without Accept-Language
		noCookie, withLang bool
	}{
		{"two cookie holders among a login flood", 36057, 1, 0, 8938, 2, 0, false, false},
		{"the flood kept a consent cookie now and then", 36000, 300, 0, 10000, 60, 0, false, false},
		{"one client sent no language", 20000, 0, 0, 2000, 0, 3, false, false},
		{"shoppers hold a session cookie, API clients send no language", 32238, 0, 0, 35000, 404, 2320, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &crawlerEvidence{Finding: "crawler_burst-1", Key: request.ClusterKey{UA: "Chrome", LoggedIn: sources.LoggedInNo, NoClientHints: true},
				Spread: true, Fingerprints: 8, Method: "POST", Requests: tc.tools, ToolRequests: tc.tools, CookieRequests: tc.cookie, LangRequests: tc.tools - tc.off,
				Labels: labels("/wp-login.php", tc.tools)}
			c.OrdinaryAll[noHints] = tc.pages
			c.OrdinaryPresence[hasLang][noHints] = 500
			c.OrdinaryPresence[hasCookie|hasLang][noHints] = tc.withCookie
			c.OrdinaryPresence[0][noHints] = tc.noLang
			zones, _ := generate([]*crawlerEvidence{c}, siteEvidence{Cookie: "wordpress_logged_in_"})
			if len(zones) != 1 {
				t.Fatalf("%d zones", len(zones))
			}
			z := zones[0]
			if z.Cond.NoCookie != tc.noCookie || z.Cond.AnyLang != tc.withLang {
				t.Errorf("no cookie %v, any language %v; want %v, %v (why: %v)", z.Cond.NoCookie, z.Cond.AnyLang, tc.noCookie, tc.withLang, z.condWhy)
			}
			said := 0
			for _, w := range z.condWhy {
				if strings.HasPrefix(w.String(), "no condition on the presence of") {
					said++
				}
			}
			if want := btoi(tc.withCookie > 0 && !tc.noCookie) + btoi(tc.noLang > 0 && !tc.withLang); said != want {
				t.Errorf("the Why explains %d conditions left out, want %d: %v", said, want, z.condWhy)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestTokenVersion: a user agent holds the token whether or not a version
// follows it ("Chrome/" then a letter), and the version is the digits right
// after its first occurrence, at most eight; no user agent holds "".
func TestTokenVersion(t *testing.T) {
	for _, c := range []struct {
		ua, token string
		held      bool
		version   string
	}{
		{"Mozilla/5.0 (Windows NT 10.0) Chrome/121.0.0.0 Safari/537.36", "Chrome/", true, "121"},
		{"Mozilla/5.0 Chrome/beta Chrome/99", "Chrome/", true, ""},
		{"Mozilla/5.0 Chrome/1234567890", "Chrome/", true, "12345678"},
		{"Mozilla/5.0 Firefox/128.0", "Chrome/", false, ""},
		{"Mozilla/5.0 Firefox/128.0", "", false, ""},
	} {
		held, version := tokenVersion(c.ua, c.token)
		if held != c.held || version != c.version {
			t.Errorf("tokenVersion(%q, %q) = %v, %q; want %v, %q", c.ua, c.token, held, version, c.held, c.version)
		}
	}
}
