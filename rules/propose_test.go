package rules

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

var siteFacts = sources.Site{Workers: 16, HealthURI: "/healthz.php", HealthTimeoutS: 10, ReadTimeoutS: 10, HealthFails: 3,
	HealthIntervalS: 1, LoggedInCookie: "wikiUserID=", ClientTimeoutS: 10}

// siteTools are the tools ordinary readers and editors use on the hand-built site.
var siteTools = []string{
	"/index.php?title=%s&action=history",
	"/wiki/Special:WhatLinksHere/%s",
	"/index.php?title=%s&action=edit",
}

// scenario is a hand-built recording: a baseline of ordinary traffic, then a
// window in which a crawler walks some tools.
type scenario struct {
	name    string
	crawler reader
	tools   []string
	ipv6    bool
	perMin  int
	// baselinePerMin is the crawler's rate during the baseline (0: absent).
	baselinePerMin int
	spread         bool
	site           sources.Site
	// want: the zone must name these and must not name those.
	names, notNames []string
	// title lists the names the title= regular expression must hold.
	title     []string
	perClient bool
}

func (sc scenario) run(t *testing.T) (*Proposal, []hit) {
	t.Helper()
	in, hits := sc.input(t)
	p, err := Propose(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return p, hits
}

// input writes the scenario's log: ordinary readers for three hours, the
// crawler in the last one (and in the two before when it has a baseline
// rate), from one address when it is not spread.
func (sc scenario) input(t *testing.T) (Input, []hit) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, uint64(len(sc.name))))
	base := time.Date(2026, 10, 2, 22, 0, 0, 0, time.UTC)
	from, to := base.Add(2*time.Hour), base.Add(3*time.Hour)
	onset, end := from.Add(10*time.Minute), from.Add(40*time.Minute)
	hits := ordinaryTraffic(rng, base, to, 60, siteTools)
	hits = append(hits, crawlerTraffic(rng, onset, end, sc.perMin, sc.crawler, sc.tools, sc.ipv6)...)
	if sc.baselinePerMin > 0 {
		hits = append(hits, crawlerTraffic(rng, base, from, sc.baselinePerMin, sc.crawler, sc.tools, sc.ipv6)...)
	}
	if !sc.spread {
		// One heavy client: every crawler request from the same address.
		for i := range hits {
			if hits[i].ua == sc.crawler.ua && hits[i].lang == sc.crawler.lang && hits[i].hints == sc.crawler.hints && !strings.HasPrefix(hits[i].ip, "211.36.") {
				hits[i].ip = "203.0.113.9"
			}
		}
	}
	path := writeLog(t, t.TempDir(), hits)
	f := crawlerFinding(t, sc.crawler, onset, end)
	if !sc.spread {
		cf := detect.FactsOf[detect.CrawlerBurstFacts](&f)
		cf.Spread = false
		cf.RequestsPerIPMax = sc.perMin * 30
	}
	site := sc.site
	if site == (sources.Site{}) {
		site = siteFacts
	}
	return Input{Findings: []detect.Finding{f}, Access: []string{path}, Site: site, From: from, To: to}, hits
}

// TestProposeOtherCrawlers runs crawlers unlike the reference incident's:
// other languages, browsers, tools, URL forms and address families. The zone
// must follow the evidence, never the reference's paths, and meet the issue's
// acceptance numbers.
func TestProposeOtherCrawlers(t *testing.T) {
	for _, sc := range []scenario{{
		name:    "firefox de-DE over IPv6, title= Special:Log, path ComparePages, action=info, diff",
		crawler: reader{ua: uaFirefox, lang: "de-DE,de;q=0.9,en;q=0.5"},
		tools: []string{"/index.php?title=Special:Log&page=%s", "/wiki/Special:ComparePages/%s",
			"/index.php?title=%s&action=info", "/index.php?title=%s&diff=prev&oldid=1"},
		ipv6: true, perMin: 100, spread: true,
		names:    []string{"/wiki/Special:Log", "/wiki/Special:ComparePages/*", "vars_regexp {http.request.uri.query.title}", "action=info", "diff=*", "de-de", "*wikiUserID=*"},
		title:    []string{"Special:Log", "Special:ComparePages"},
		notNames: []string{"WhatLinksHere", "action=edit", "action=history", "zh-cn", "/w/"},
	}, {
		name:    "headless Chrome without client hints, ja, Korean special-page names",
		crawler: reader{ua: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", lang: "ja"},
		tools:   []string{"/wiki/%%ED%%8A%%B9%%EC%%88%%98:%%EA%%B8%%B0%%EC%%97%%AC/%s", "/index.php?title=%s&action=raw"},
		perMin:  60, spread: true,
		names:    []string{"/wiki/특수:기여", "/wiki/특수:기여/*", "action=raw", "(?i)^[ \\t]*ja[ \\t]*"},
		notNames: []string{"WhatLinksHere", "action=info"},
	}, {
		// Language, client hints and browser family of the site's own readers,
		// on the tools they use too: only the stale browser version tells.
		name:    "Chrome 121 with client hints in ko-KR, the readers' own tools",
		crawler: reader{ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36", lang: "ko-KR,ko;q=0.9", hints: true},
		tools:   []string{"/index.php?title=%s&action=edit", "/wiki/Special:WhatLinksHere/%s"},
		// The readers who share its fingerprint count as "crawler" in the
		// backtest (detect.Key equality): at 300 a minute the crawl dwarfs them.
		perMin: 300, spread: true,
		names:    []string{"header_regexp User-Agent `Chrome/(?:121)(?:\\D|$)`", "ko-kr", "/wiki/Special:WhatLinksHere/*", "action=edit"},
		notNames: []string{"header !Sec-Ch-Ua", "action=history"},
	}, {
		name:    "one heavy client: a per-client zone",
		crawler: reader{ua: uaBot},
		tools:   []string{"/index.php?title=%s&action=history", "/index.php?title=%s&action=edit"},
		perMin:  100, spread: false, perClient: true,
		names: []string{"key {client_ip}", "action=edit", "action=history"},
	}} {
		t.Run(sc.name, func(t *testing.T) {
			p, _ := sc.run(t)
			if len(p.Rules) != 1 {
				t.Fatalf("got %d rules, want 1; notes: %v", len(p.Rules), p.DataQuality)
			}
			r := p.Rules[0]
			t.Logf("%s\n%s\n%+v", r.Caddyfile, r.Why, r.Backtest)
			if err := Validate(r.Caddyfile); err != nil {
				t.Fatal(err)
			}
			for _, n := range sc.names {
				if !strings.Contains(r.Caddyfile, n) {
					t.Errorf("the zone does not name %q", n)
				}
			}
			for _, line := range strings.Split(r.Caddyfile, "\n") {
				if strings.Contains(line, "vars_regexp") {
					for _, n := range sc.title {
						if !strings.Contains(line, n) {
							t.Errorf("the title= match does not name %q: %s", n, line)
						}
					}
				}
			}
			for _, n := range sc.notNames {
				if strings.Contains(r.Caddyfile, n) {
					t.Errorf("the zone names %q, which this crawler did not use", n)
				}
			}
			if sc.perClient != (r.Key == "{client_ip}") {
				t.Errorf("key %q, per-client %v", r.Key, sc.perClient)
			}
			bt := r.Backtest
			if bt.CrawlerRefusedShare < 0.9 {
				t.Errorf("refused %.1f%% of the crawler, want >= 90%%", 100*bt.CrawlerRefusedShare)
			}
			if bt.LoggedInRefused != 0 || bt.LoggedInRequests == 0 {
				t.Errorf("refused %d of %d logged-in requests, want 0 of some", bt.LoggedInRefused, bt.LoggedInRequests)
			}
			if bt.OtherLoggedOutRefusedShare > 0.02 {
				t.Errorf("refused %.2f%% of other logged-out requests, want <= 2%%", 100*bt.OtherLoggedOutRefusedShare)
			}
			if bt.BaselineRefused != 0 || bt.BaselineRequests == 0 {
				t.Errorf("refused %d of %d ordinary baseline requests, want 0 of some", bt.BaselineRefused, bt.BaselineRequests)
			}
			if bt.FirstRefusal.IsZero() || bt.CrawlerPHPSecondsSaved <= 0 {
				t.Errorf("first refusal %v, PHP seconds saved %v", bt.FirstRefusal, bt.CrawlerPHPSecondsSaved)
			}
		})
	}
}

// TestProposeSizing checks the sizing arithmetic on a crawler that no header
// sets apart from ordinary readers: the zone then holds ordinary tool users
// too, and events must come from their busiest window in the baseline.
func TestProposeSizing(t *testing.T) {
	crawler := reader{ua: "Mozilla/5.0 (compatible; Crawly/1.0)"}
	for _, tc := range []struct {
		name           string
		baselinePerMin int
	}{
		{"crawler absent from the baseline", 0},
		{"crawler already present in the baseline at a low rate", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenario{name: tc.name, crawler: crawler, perMin: 200, spread: true, baselinePerMin: tc.baselinePerMin,
				tools: []string{"/index.php?title=%s&action=history", "/wiki/Special:WhatLinksHere/%s"}}
			p, hits := sc.run(t)
			if len(p.Rules) != 1 {
				t.Fatalf("got %d rules; notes %v", len(p.Rules), p.DataQuality)
			}
			r := p.Rules[0]
			t.Logf("%s\n%s\n%+v", r.Caddyfile, r.Why, r.Backtest)
			if r.Window != "10m" {
				t.Errorf("window %s, want 10m (a 2 h baseline holds twelve of them)", r.Window)
			}
			// The busiest 10 minutes of ordinary logged-out tool use in the
			// baseline, by brute force; the crawler never sent client hints, so
			// the zone leaves out the readers whose browsers do.
			from := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
			var ts []time.Time
			for _, h := range hits {
				if h.ua == crawler.ua || !h.at.Before(from) || strings.Contains(h.cookie, "wikiUserID=") || h.hints {
					continue
				}
				if strings.Contains(h.uri, "action=history") || strings.Contains(h.uri, "Special:WhatLinksHere") {
					ts = append(ts, h.at)
				}
			}
			peak := 0
			for _, a := range ts {
				n := 0
				for _, b := range ts {
					if !b.After(a) && a.Sub(b) <= 10*time.Minute {
						n++
					}
				}
				peak = max(peak, n)
			}
			want := max(2*peak, peak+10)
			if tc.baselinePerMin == 0 && r.Events != want {
				t.Errorf("events %d, want max(2 x %d, %d + 10) = %d", r.Events, peak, peak, want)
			}
			if r.Events < want {
				t.Errorf("events %d below the ordinary sizing %d", r.Events, want)
			}
			if !strings.Contains(r.Why, "at most "+fmtInt(peak)+" requests") {
				t.Errorf("Why does not show the peak %d: %s", peak, r.Why)
			}
			// A crawler already walking in the baseline holds the shared
			// bucket there: a few readers of its tools are refused with it,
			// up to one in a thousand of the baseline's ordinary requests
			// (more, and the zone grows).
			bt := r.Backtest
			if bt.BaselineRefused > int(tolerableBaselineRefused*float64(bt.BaselineRequests)) || tc.baselinePerMin == 0 && bt.BaselineRefused != 0 {
				t.Errorf("refused %d of %d ordinary baseline requests", bt.BaselineRefused, bt.BaselineRequests)
			}
			if tc.baselinePerMin > 0 && bt.BaselineCrawlerRequests == 0 {
				t.Errorf("the crawler's baseline presence was not counted")
			}
			if bt.CrawlerRefusedShare < 0.9 {
				t.Errorf("refused %.1f%% of the crawler", 100*bt.CrawlerRefusedShare)
			}
			// Without a distinctive header, ordinary tool users share the budget: honest collateral.
			if bt.OtherLoggedOutRefused == 0 || bt.LegitimateClientsRefused == 0 {
				t.Errorf("expected some collateral among ordinary tool users, got %d (%d clients)", bt.OtherLoggedOutRefused, bt.LegitimateClientsRefused)
			}
			if bt.LoggedInRefused != 0 {
				t.Errorf("refused %d logged-in requests", bt.LoggedInRefused)
			}
		})
	}
}

// TestProposeUnknownCookie: without the site's logged-in pattern the zone
// limits only requests without any cookie, and says so.
func TestProposeUnknownCookie(t *testing.T) {
	site := siteFacts
	site.LoggedInCookie = ""
	sc := scenario{name: "unknown cookie", crawler: reader{ua: uaFirefox, lang: "vi-VN"}, perMin: 100, spread: true, site: site,
		tools: []string{"/index.php?title=%s&action=history"}}
	p, _ := sc.run(t)
	if len(p.Rules) != 1 {
		t.Fatalf("got %d rules; notes %v", len(p.Rules), p.DataQuality)
	}
	r := p.Rules[0]
	if !strings.Contains(r.Caddyfile, "header !Cookie") {
		t.Errorf("no `header !Cookie` condition:\n%s", r.Caddyfile)
	}
	if !hasNote(p.DataQuality, "logged-in cookie pattern unknown") {
		t.Errorf("no note about the unknown cookie pattern: %v", p.DataQuality)
	}
	// Editors carry cookies, so none of their requests can match.
	if r.Backtest.OtherLoggedOutRefused != 0 {
		t.Errorf("refused %d other requests", r.Backtest.OtherLoggedOutRefused)
	}
}

// TestProposeNoCrawler: no crawler_burst finding, no rule, and advice all the same.
func TestProposeNoCrawler(t *testing.T) {
	sat := detect.Finding{ID: "worker_saturation-1", Kind: detect.KindWorkerSaturation,
		Facts: detect.MustParseFacts(detect.KindWorkerSaturation, map[string]float64{"workers": 16, "service_time_s": 0.3, "cpu_bound": 1, "cpu_avg_pct": 99})}
	from := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	p, err := Propose(context.Background(), Input{Findings: []detect.Finding{sat}, Site: siteFacts, From: from, To: from.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules) != 0 || p.Caddyfile != "" {
		t.Errorf("rules without a crawler: %+v", p.Rules)
	}
	if !hasNote(p.DataQuality, "no crawler_burst finding") {
		t.Errorf("notes: %v", p.DataQuality)
	}
	if rec := find(p.Recommendations, "listen.backlog"); rec == nil || rec.Value != "64" {
		t.Errorf("backlog advice %+v, want 64", rec)
	}
}

// TestProposeContextCrawler: a crawler that was there but is context (it
// rose hours before the onset, or did too little of the PHP time) gets no
// rate limit: limiting it would not have prevented the incident. The notes
// say why, not that there was no crawler.
func TestProposeContextCrawler(t *testing.T) {
	key := request.ClusterKey{UA: "Chrome", Lang: "zh-cn", LoggedIn: sources.LoggedInNo}
	bot := detect.Finding{ID: "crawler_burst-1", Kind: detect.KindCrawlerBurst, Role: detect.RoleContext, Cluster: &key,
		Facts: &detect.CrawlerBurstFacts{Spread: true}}
	from := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	p, err := Propose(context.Background(), Input{Findings: []detect.Finding{bot}, Site: siteFacts, From: from, To: from.Add(time.Hour),
		Access: []string{"/nonexistent/access.log"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules) != 0 || p.Caddyfile != "" {
		t.Errorf("a rule for a context crawler: %+v", p.Rules)
	}
	if !hasNote(p.DataQuality, "crawler_burst-1: the crawler is context, not a cause") || !hasNote(p.DataQuality, "no crawler_burst finding among the causes") {
		t.Errorf("notes: %v", p.DataQuality)
	}
}

func TestClusterOfFingerprint(t *testing.T) {
	f := detect.Finding{Fingerprint: &detect.Fingerprint{UserAgent: "Chrome 121/120/119", AcceptLanguage: "zh-cn", LoggedIn: "no", SecChUa: "absent"}}
	k, ok := clusterOf(f)
	want := request.ClusterKey{UA: "Chrome", Lang: "zh-cn", LoggedIn: sources.LoggedInNo, NoClientHints: true}
	if !ok || k != want {
		t.Errorf("clusterOf = %+v, %v; want %+v", k, ok, want)
	}
	if _, ok := clusterOf(detect.Finding{}); ok {
		t.Error("a finding without fingerprint has a cluster")
	}
}

func hasNote(notes []sources.QualityNote, s string) bool {
	for _, n := range notes {
		if strings.Contains(n.Message, s) {
			return true
		}
	}
	return false
}

func find(recs []Recommendation, key string) *Recommendation {
	for i := range recs {
		if recs[i].Key == key {
			return &recs[i]
		}
	}
	return nil
}

// TestProposeHostileLogValues: tool names decoded from attacker-chosen URLs
// that could mean something to Caddy never reach the rule; the rest of the
// crawl still gets one, and Caddy adapts it to exactly the intended zone.
func TestProposeHostileLogValues(t *testing.T) {
	sc := scenario{name: "hostile", crawler: reader{ua: uaFirefox, lang: "pt-BR"}, perMin: 100, spread: true,
		tools: []string{
			"/w/Special:Evil%%7B$HOME%%7D/%s",            // {$HOME}: expanded by the Caddyfile parser
			"/w/Special:Evil%%0A%%7D%%0Arespond%%20x/%s", // a newline and a brace: a new directive
			"/w/Special:Evil%%60x%%22/%s",                // quotes
			"/w/Special:Glob*/%s",                        // a path glob
		}}
	for range 12 {
		sc.tools = append(sc.tools, "/index.php?title=%s&action=info")
	}
	p, _ := sc.run(t)
	if len(p.Rules) != 1 {
		t.Fatalf("got %d rules; notes %v", len(p.Rules), p.DataQuality)
	}
	r := p.Rules[0]
	if err := Validate(r.Caddyfile); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Caddyfile, "Evil") || strings.Contains(r.Caddyfile, "Glob") || strings.Contains(r.Caddyfile, "respond") {
		t.Errorf("a hostile name reached the rule:\n%s", r.Caddyfile)
	}
	if !strings.Contains(r.Caddyfile, "action=info") {
		t.Errorf("the safe tool is missing:\n%s", r.Caddyfile)
	}
	if !hasNote(p.DataQuality, "not safe to put in a Caddyfile") {
		t.Errorf("no note on the dropped names: %v", p.DataQuality)
	}
}

// TestProposeRejectsUselessZone: a crawler no header sets apart, already
// crawling at nearly the same rate before the window, cannot be limited
// without refusing ordinary readers on an ordinary day: the zone is resized
// until it refuses none of them there, and then stops too little of the crawl
// to be proposed. The notes say why.
func TestProposeRejectsUselessZone(t *testing.T) {
	sc := scenario{name: "useless", crawler: reader{ua: "Mozilla/5.0 (compatible; Crawly/1.0)"}, perMin: 40, baselinePerMin: 30, spread: true,
		tools: []string{"/index.php?title=%s&action=history", "/wiki/Special:WhatLinksHere/%s"}}
	p, _ := sc.run(t)
	if len(p.Rules) != 0 || p.Caddyfile != "" {
		t.Fatalf("proposed %+v", p.Rules)
	}
	if !hasNote(p.DataQuality, "rejected") {
		t.Errorf("no rejection note: %v", p.DataQuality)
	}
	if find(p.Recommendations, "listen") == nil {
		t.Error("no advice without a rule")
	}
}
