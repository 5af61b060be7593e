package rules

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// TestLimiter pins the ring buffer to caddy-ratelimit v0.1.0's semantics
// (ringbuffer.go): allowed when now - ring[cursor] > window, strictly; a
// reservation only when allowed.
func TestLimiter(t *testing.T) {
	s := func(x float64) int64 { return int64(x * float64(time.Second)) }
	t0 := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC).UnixNano()
	for _, tc := range []struct {
		name   string
		events int
		window time.Duration
		at     []float64 // seconds after t0
		want   []bool
	}{
		{"events within the window", 3, 10 * time.Second, []float64{0, 1, 2, 3}, []bool{true, true, true, false}},
		{"exactly one window later is still inside it", 3, 10 * time.Second, []float64{0, 1, 2, 10}, []bool{true, true, true, false}},
		{"just over one window later the oldest slot frees", 3, 10 * time.Second, []float64{0, 1, 2, 10.001, 10.5, 11.001}, []bool{true, true, true, true, false, true}},
		{"refusals reserve nothing", 2, 10 * time.Second, []float64{0, 5, 6, 7, 8, 9, 10.5, 15.5}, []bool{true, true, false, false, false, false, true, true}},
		{"zero events refuse everything", 0, time.Minute, []float64{0, 100}, []bool{false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimiter(tc.events, tc.window)
			var got []bool
			for _, a := range tc.at {
				got = append(got, l.allow(t0+s(a)))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestHandlerOrder: v0.1.0 sorts zones most permissive first (its code, not
// its comment); ties by name in the replay.
func TestHandlerOrder(t *testing.T) {
	zones := []Zone{
		{Name: "tight", Events: 10, Window: 10 * time.Minute},
		{Name: "loose", Events: 100, Window: time.Minute},
		{Name: "b_same", Events: 60, Window: time.Minute},
		{Name: "a_same", Events: 600, Window: 10 * time.Minute},
	}
	var got []string
	for _, i := range handlerOrder(zones) {
		got = append(got, zones[i].Name)
	}
	if want := []string{"loose", "a_same", "b_same", "tight"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// TestReplayZoneInteraction: a request refused by the first zone is not seen
// by the second; a request admitted by the first reserves there even if the
// second refuses it.
func TestReplayZoneInteraction(t *testing.T) {
	zones := []Zone{
		{Name: "loose", Events: 3, Window: time.Minute, crawler: 0},
		{Name: "tight", Events: 1, Window: time.Minute, crawler: 0},
	}
	r := newReplay(zones, 0, 1<<62)
	t0 := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC).UnixNano()
	for i := range 5 {
		r.feed(&arrival{at: t0 + int64(i)*int64(time.Second), match: 0b11, crawler: 0})
	}
	// loose admits 1, 2, 3; tight admits 1 and refuses 2, 3; loose refuses 4, 5.
	if got := r.zone[0].bt.CrawlerRefused; got != 2 {
		t.Errorf("loose refused %d, want 2", got)
	}
	if got := r.zone[1].bt.CrawlerRefused; got != 2 {
		t.Errorf("tight refused %d, want 2", got)
	}
	if got := r.all.bt.CrawlerRefused; got != 4 {
		t.Errorf("handler refused %d, want 4", got)
	}
}

func TestTimeFIFO(t *testing.T) {
	var f timeFIFO
	w := int64(10)
	var got []int
	for _, at := range []int64{0, 5, 10, 11, 20, 21, 100} {
		got = append(got, f.push(at, w))
	}
	// A closed window: 0 and 10 are both within [0, 10].
	if want := []int{1, 2, 3, 3, 3, 3, 1}; !slices.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
}

// TestStreamArrivalOrder: the log is in response-end order; the replay must
// see requests in arrival order, even when a slow request ends minutes after
// later ones began.
func TestStreamArrivalOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	from := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	var hits []hit
	for i := range 5000 {
		d := 0.05 + rng.Float64()*0.3
		if i%50 == 25 {
			d = 30 + rng.Float64()*150 // queued behind a crawl for minutes
		}
		hits = append(hits, hit{at: from.Add(time.Duration(i) * 37 * time.Millisecond), dur: d, ip: "192.0.2.1", uri: "/wiki/A", ua: uaChrome, upstream: true})
	}
	path := writeLog(t, t.TempDir(), hits)
	e := &engine{in: &Input{Access: []string{path}}}
	var ats []int64
	late, err := e.stream(context.Background(), func(int64) bool { return true }, func(a *arrival) { ats = append(ats, a.at) })
	if err != nil {
		t.Fatal(err)
	}
	if len(ats) != len(hits) {
		t.Fatalf("streamed %d of %d", len(ats), len(hits))
	}
	if !slices.IsSorted(ats) {
		t.Error("arrivals out of order")
	}
	// The first 30-180 s request comes before any longer one was seen: only
	// requests that outlast every earlier duration can be late.
	if late > 10 {
		t.Errorf("%d late arrivals", late)
	}
	if first := time.Unix(0, ats[0]); first.Sub(from).Abs() > time.Millisecond {
		t.Errorf("first arrival %v, want %v", first, from)
	}
}

// TestMatchersOnRecords runs Caddy's own matchers, built from a printed and
// adapted zone, on request records as the access log reader makes them.
func TestMatchersOnRecords(t *testing.T) {
	z := Zone{Name: "z", Window: time.Minute, Events: 10, Targets: []Target{
		{Paths: []string{"/w/Special:WhatLinksHere", "/w/Special:WhatLinksHere/*", "/wiki/특수:기여/*"}},
		{TitleNames: []string{"Special:CiteThisPage"}},
		{QueryKey: "action", QueryValues: []string{"edit"}},
	}, Cond: Conditions{NotCookie: "wikiUserID=", Lang: "zh-cn", NoClientHints: true, UserAgent: "Chrome/", NoSiteReferer: true}}
	_, m := adaptedZoneMatchers(t, []Zone{z}, "wikiUserID=")
	crawler := sources.Request{Method: "GET", Host: "wiki.example.org", UserAgent: uaChrome, Lang: "zh-cn", LoggedIn: sources.LoggedInNo,
		TLS: true, ClientIP: netip.MustParseAddr("198.51.100.7")}
	for _, tc := range []struct {
		name string
		mod  func(r *sources.Request)
		want bool
	}{
		{"path form", func(r *sources.Request) { r.Path = "/w/Special:WhatLinksHere/Foo" }, true},
		{"path form, other case", func(r *sources.Request) { r.Path = "/w/special:whatlinkshere/Foo" }, true},
		{"path form without subpage", func(r *sources.Request) { r.Path = "/w/Special:WhatLinksHere" }, true},
		{"a longer special page name is another page", func(r *sources.Request) { r.Path = "/w/Special:WhatLinksHereX" }, false},
		{"percent-encoded Korean special page", func(r *sources.Request) { r.Path = "/wiki/%ED%8A%B9%EC%88%98:%EA%B8%B0%EC%97%AC/X" }, true},
		{"doubled slashes are cleaned", func(r *sources.Request) { r.Path = "/w//Special:WhatLinksHere/Foo" }, true},
		{"dot segments are cleaned", func(r *sources.Request) { r.Path = "/w/./x/../Special:WhatLinksHere/Foo" }, true},
		{"upper case", func(r *sources.Request) { r.Path = "/W/SPECIAL:WHATLINKSHERE" }, true},
		{"an asset under the special page is still its path", func(r *sources.Request) { r.Path = "/w/Special:WhatLinksHere/x.png" }, true},
		{"encoded letters in the name", func(r *sources.Request) { r.Path = "/w/Special:%57hatLinksHere/Foo" }, true},
		{"title= form", func(r *sources.Request) { r.Path, r.Query = "/index.php", "title=Special:CiteThisPage&page=X" }, true},
		{"title= form, encoded, with a subpage", func(r *sources.Request) { r.Path, r.Query = "/index.php", "title=special%3Acitethispage%2FX" }, true},
		{"title= of an article", func(r *sources.Request) { r.Path, r.Query = "/index.php", "title=Special:CiteThisPageX" }, false},
		{"action=edit", func(r *sources.Request) { r.Path, r.Query = "/index.php", "title=A&action=edit" }, true},
		{"action=history is not walked", func(r *sources.Request) { r.Path, r.Query = "/index.php", "title=A&action=history" }, false},
		{"logged in", func(r *sources.Request) {
			r.Path, r.Query, r.LoggedIn, r.HasCookie = "/index.php", "action=edit", sources.LoggedInYes, true
		}, false},
		{"an anonymous session cookie", func(r *sources.Request) { r.Path, r.Query, r.HasCookie = "/index.php", "action=edit", true }, true},
		{"another language", func(r *sources.Request) { r.Path, r.Query, r.Lang = "/index.php", "action=edit", "zh-tw" }, false},
		{"client hints sent", func(r *sources.Request) { r.Path, r.Query, r.SecChUa = "/index.php", "action=edit", true }, false},
		{"Safari", func(r *sources.Request) { r.Path, r.Query, r.UserAgent = "/index.php", "action=edit", uaSafari }, false},
		{"an article", func(r *sources.Request) { r.Path = "/w/Main_Page" }, false},
		{"a click from one of the site's pages", func(r *sources.Request) { r.Path, r.Query, r.SiteReferer = "/index.php", "action=edit", true }, false},
		{"a click from the site over HTTP, Host with a port", func(r *sources.Request) {
			r.Path, r.Query, r.SiteReferer, r.TLS, r.Host = "/index.php", "action=edit", true, false, "wiki.example.org:8080"
		}, false},
		// Caddy's {http.request.host} drops an IPv6 literal's brackets, which a
		// Referer keeps: the condition cannot spare such clicks, in Caddy or here.
		{"a click from the site on an IPv6 literal host", func(r *sources.Request) {
			r.Path, r.Query, r.SiteReferer, r.Host = "/index.php", "action=edit", true, "[2001:db8::1]:8443"
		}, true},
		{"over HTTP, no referer", func(r *sources.Request) { r.Path, r.Query, r.TLS = "/index.php", "action=edit", false }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := crawler
			tc.mod(&r)
			got, err := m.match(&r)
			if err != nil {
				t.Fatal(err)
			}
			// The prefilter never hides a match Caddy would make.
			if direct := m.sets[0].AnyMatch(httpRequest(&r, m.cookie)); direct != (got == 1) {
				t.Errorf("prefiltered %v, Caddy alone %v", got == 1, direct)
			}
			if (got == 1) != tc.want {
				t.Errorf("match = %v, want %v", got == 1, tc.want)
			}
		})
	}
}

// TestMatchersExemptLoggedInByExpression: a site whose logged-in cookie
// pattern is a regular expression (the independent bundles' WordPress and
// MediaWiki patterns) gets a `not header_regexp Cookie` condition, and Caddy's
// own matchers, on the requests the backtest rebuilds, spare exactly the
// logged-in ones.
func TestMatchersExemptLoggedInByExpression(t *testing.T) {
	for _, pattern := range []string{"wordpress_logged_in_[0-9a-f]{32}=", `(^|;\s*)railwiki(UserID|UserName)=`} {
		t.Run(pattern, func(t *testing.T) {
			c := &crawlerEvidence{Finding: "crawler_burst-1", Key: request.ClusterKey{UA: "Chrome", LoggedIn: sources.LoggedInNo},
				Spread: true, Requests: 10, ToolRequests: 10, Labels: labels("action=edit", 10)}
			zones, _ := generate([]*crawlerEvidence{c}, siteEvidence{Cookie: pattern})
			if len(zones) != 1 || zones[0].Cond.NotCookieRegexp != pattern {
				t.Fatalf("zones %+v: want one with the expression as its logged-in exemption", zones)
			}
			zones[0].Window, zones[0].Events = time.Minute, 10
			snippet, err := Caddyfile(zones)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(snippet, "not header_regexp Cookie `"+pattern+"`") {
				t.Errorf("no header_regexp exemption in\n%s", snippet)
			}
			adapted, err := validateZones(snippet, zones)
			if err != nil {
				t.Fatal(err)
			}
			m, err := loadMatchers(adapted, zones, pattern)
			if err != nil {
				t.Fatal(err)
			}
			defer m.close()
			r := sources.Request{Method: "GET", Host: "site.example.org", Path: "/index.php", Query: "title=A&action=edit",
				UserAgent: uaChrome, LoggedIn: sources.LoggedInNo, ClientIP: netip.MustParseAddr("198.51.100.7")}
			for _, tc := range []struct {
				name     string
				loggedIn sources.LoggedIn
				cookie   bool
				want     uint64
			}{
				{"logged out, no cookie", sources.LoggedInNo, false, 1},
				{"logged out, another cookie", sources.LoggedInNo, true, 1},
				{"logged in", sources.LoggedInYes, true, 0},
			} {
				r.LoggedIn, r.HasCookie = tc.loggedIn, tc.cookie
				got, err := m.match(&r)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("%s: matched %b, want %b (Cookie %q)", tc.name, got, tc.want, httpRequest(&r, m.cookie).Header.Get("Cookie"))
				}
			}
		})
	}
}

// BenchmarkPropose measures the whole chain (the profile pass, the recording
// pass with Caddy's matchers on the requests a zone may match, sizing and
// backtest replayed from the recording) on a hand-built day: 3 h of ordinary
// traffic and a 30-minute crawl, read from the log.
func BenchmarkPropose(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	base := time.Date(2026, 10, 2, 22, 0, 0, 0, time.UTC)
	from, to := base.Add(2*time.Hour), base.Add(3*time.Hour)
	crawler := reader{ua: uaFirefox, lang: "de-DE"}
	tools := []string{"/index.php?title=%s&action=info", "/wiki/Special:Log/%s"}
	hits := append(ordinaryTraffic(rng, base, to, 200, siteTools),
		crawlerTraffic(rng, from.Add(10*time.Minute), from.Add(40*time.Minute), 300, crawler, tools, false)...)
	path := writeLog(b, b.TempDir(), hits)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Findings: []detect.Finding{crawlerFinding(b, crawler, from.Add(10*time.Minute), from.Add(40*time.Minute))},
		Access: []string{path}, Site: siteFacts, From: from, To: to}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p, err := Propose(context.Background(), in)
		if err != nil || len(p.Rules) != 1 {
			b.Fatalf("%v %+v", err, p)
		}
	}
	b.ReportMetric(float64(len(hits)), "lines/op")
}

// TestIsHealthCheck: the replays' health check test is detect's.
func TestIsHealthCheck(t *testing.T) {
	for _, health := range []string{"", "/healthz.php", "/w/index.php"} {
		for _, target := range [][2]string{{"/healthz.php", ""}, {"/healthz.php", "x=1"}, {"/HEALTHZ.php", ""}, {"/w/index.php", "title=A"},
			{"/w/index.php", ""}, {"/static/a.css", ""}, {"/wiki/Special:X", ""}, {"", ""}} {
			r := sources.Request{Path: target[0], Query: target[1]}
			if got, want := isHealthCheck(&r, health), request.ClassifyPath(r.Path, r.Query, health) == request.ClassHealth; got != want {
				t.Errorf("health %q, %q?%q: %v, detect says %v", health, r.Path, r.Query, got, want)
			}
		}
	}
}

// TestMatchRequestLeavesNothingToTheNext: the backtest hands Caddy's matchers
// one request remade for each record (matchRequest), and a record's matches
// must be what a request made for it alone gets, though a matcher writes state
// a later one reads. Zone 0 matches a crawler's User-Agent with a named
// regexp, which sets {http.regexp.ua.1}; zone 1 matches that placeholder,
// zone 2 the client address in the context's variables, zone 3 a path, zone 4
// HTTPS, zone 5 an Accept-Language header. The crawler's request (HTTPS, a
// language) comes first: a browser's after it (HTTP, none) must not find the
// crawler's capture (a replacer not emptied), nor its address (variables not
// reset), nor its path, nor its TLS state (a field not reset), nor its
// language (a header map not emptied). The obvious answer for the browser,
// "the same as the request before" for a careless reuse, is wrong for zones
// 1 to 5 alike.
func TestMatchRequestLeavesNothingToTheNext(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	adapted := map[string]adaptedZone{
		"ua":   {Match: []map[string]json.RawMessage{{"header_regexp": raw(`{"User-Agent":{"name":"ua","pattern":"(Crawler)/"}}`)}}},
		"echo": {Match: []map[string]json.RawMessage{{"vars_regexp": raw(`{"{http.regexp.ua.1}":{"pattern":"^Crawler$"}}`)}}},
		"ip":   {Match: []map[string]json.RawMessage{{"vars_regexp": raw(`{"client_ip":{"pattern":"^198\\.51\\.100\\.7$"}}`)}}},
		"path": {Match: []map[string]json.RawMessage{{"path": raw(`["/w/Special:WhatLinksHere/*"]`)}}},
		"tls":  {Match: []map[string]json.RawMessage{{"protocol": raw(`"https"`)}}},
		"lang": {Match: []map[string]json.RawMessage{{"header": raw(`{"Accept-Language":[]}`)}}},
	}
	zones := []Zone{{Name: "ua"}, {Name: "echo"}, {Name: "ip"}, {Name: "path"}, {Name: "tls"}, {Name: "lang"}}
	m, err := loadMatchers(adapted, zones, "wikiUserID=")
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	m.filter = &lineFilter{acceptAll: true}
	crawler := sources.Request{Method: "GET", Host: "wiki.example.org", Path: "/w/Special:WhatLinksHere/A", TLS: true, Lang: "zh-cn",
		UserAgent: "Crawler/1.0", ClientIP: netip.MustParseAddr("198.51.100.7")}
	browser := sources.Request{Method: "GET", Host: "wiki.example.org", Path: "/w/Main_Page",
		UserAgent: "Mozilla/5.0 Firefox/128.0", ClientIP: netip.MustParseAddr("198.51.100.8")}
	// Each alone, on a request made for it (as match made them before).
	alone := func(r *sources.Request) uint64 {
		req := httpRequest(r, m.cookie)
		var mask uint64
		for i, s := range m.sets {
			ok, err := s.AnyMatchWithError(req)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				mask |= 1 << i
			}
		}
		return mask
	}
	if got := alone(&crawler); got != 0b111111 {
		t.Fatalf("the crawler alone matched %06b, want 111111", got)
	}
	if got := alone(&browser); got != 0 {
		t.Fatalf("the browser alone matched %06b, want 000000", got)
	}
	for i, r := range []*sources.Request{&crawler, &browser, &crawler, &browser, &browser} {
		got, err := m.match(r)
		if err != nil {
			t.Fatal(err)
		}
		if want := alone(r); got != want {
			t.Errorf("record %d (%s) matched %06b after the others, %06b alone", i+1, r.UserAgent, got, want)
		}
	}
}

// httpRequest rebuilds the request Caddy would have seen from the log's
// record, with the headers RequestHeader rebuilds, on a request of its own:
// what zoneMatchers.match made for each record before it remade one, and the
// tests' reference for it.
func httpRequest(r *sources.Request, cookie string) *http.Request {
	return newMatchRequest().remake(r, cookie)
}

// TestMatchersCheapestFirst: loadMatchers runs each set's matchers cheapest
// first (sortCheapestFirst), every one of them: a set with one left out
// would match requests Caddy refuses to (TestMatchersOnRecords checks what
// they match). Every matcher a zone is printed with is one matcherCost
// knows, so none is left to run last by default.
func TestMatchersCheapestFirst(t *testing.T) {
	z := Zone{Name: "z", Window: time.Minute, Events: 10, Targets: []Target{
		{Paths: []string{"/w/Special:WhatLinksHere", "/w/Special:WhatLinksHere/*"}},
		{TitleNames: []string{"Special:CiteThisPage"}},
		{QueryKey: "action", QueryValues: []string{"edit"}},
	}, Cond: Conditions{NotCookie: "wikiUserID=", Lang: "zh-cn", NoClientHints: true, UserAgent: "Chrome/",
		UserAgentVersions: []string{"121"}, Method: "POST", NoSiteReferer: true}}
	adapted, m := adaptedZoneMatchers(t, []Zone{z}, "wikiUserID=")
	raw := adapted["z"].Match
	if len(m.sets) != 1 || len(m.sets[0]) != len(raw) {
		t.Fatalf("%d zones, want 1, with %d sets", len(m.sets), len(raw))
	}
	for i, set := range m.sets[0] {
		if len(set) != len(raw[i]) {
			t.Errorf("set %d: %d matchers, the adapted set has %d", i, len(set), len(raw[i]))
		}
		var costs []int
		for _, matcher := range set {
			costs = append(costs, matcherCost(matcher))
			if matcherCost(matcher) == matcherCost(nil) {
				t.Errorf("set %d: matcher %T has no cost of its own", i, matcher)
			}
		}
		if !slices.IsSorted(costs) || costs[0] != 0 {
			t.Errorf("set %d: costs %v, want ascending from a target's", i, costs)
		}
	}
}
