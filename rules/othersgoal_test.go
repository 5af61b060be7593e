package rules

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// historyTools are the tools the crawler and the history readers of these
// tests share.
var historyTools = []string{
	"/index.php?title=%s&action=history",
	"/wiki/Special:WhatLinksHere/%s",
}

// rotatingCrawler is a crawler that rotates browser fingerprints without
// client hints (Safari and Firefox send none), each request from a fresh
// address: the zone can key on none of its headers.
var rotatingCrawler = []reader{
	{uaSafari, "zh-CN,zh;q=0.9", false, ""},
	{uaFirefox, "ja-JP,ja;q=0.9", false, ""},
	{uaSafari, "ru-RU,ru;q=0.9", false, ""},
	{uaFirefox, "pt-BR,pt;q=0.9", false, ""},
}

// rotatingFinding is the crawler_burst finding detect makes of a crawler
// over several fingerprints (spread over many addresses).
func rotatingFinding(rds []reader, from, to time.Time) detect.Finding {
	var keys []request.ClusterKey
	for _, rd := range rds {
		r := sources.Request{UserAgent: rd.ua, Lang: primary(rd.lang), LoggedIn: sources.LoggedInNo, SecChUa: rd.hints, TLS: true}
		keys = append(keys, request.Key(&r))
	}
	return detect.Finding{ID: "crawler_burst-1", Kind: detect.KindCrawlerBurst, Start: from, End: to, Cluster: &keys[0], Clusters: keys,
		Facts: detect.MustParseFacts(detect.KindCrawlerBurst, map[string]float64{"spread": 1, "distinct_ips": 9000, "requests_per_ip_median": 1})}
}

// historyReaders are logged-out readers who open page histories and
// backlinks, arriving from a search engine (no Referer from the site), in
// browsers without client hints: in every header the zone can test they
// look like the crawler.
func historyReaders(rng *rand.Rand, from, to time.Time, perMin int, tools []string) []hit {
	kinds := []reader{
		{uaSafari, "en-GB,en;q=0.9", false, ""},
		{uaFirefox, "de-DE,de;q=0.8,en;q=0.5", false, ""},
		{uaSafari, "fr-FR,fr;q=0.9", false, ""},
	}
	var out []hit
	for i, n := 0, int(to.Sub(from).Minutes())*perMin; i < n; i++ {
		rd := kinds[rng.IntN(len(kinds))]
		out = append(out, hit{at: from.Add(time.Duration(rng.Int64N(int64(to.Sub(from))))), dur: 0.2, tls: true, upstream: true,
			ip: fmt.Sprintf("175.223.%d.%d", rng.IntN(200), 1+rng.IntN(250)), ua: rd.ua, lang: rd.lang, referer: "https://www.google.com/",
			uri: fmt.Sprintf(tools[rng.IntN(len(tools))], fmt.Sprintf("Page_%d", rng.IntN(5000)))})
	}
	return out
}

// TestRuleSaysItMissesTheGoalForOthers: a crawler rotating four browser
// fingerprints walks page histories and backlinks from fresh addresses, and
// logged-out readers in browsers without client hints open the same tools
// from search results, three or four a minute, all day. The zone's first
// size already refuses 95% of the crawler, so the obvious check (did it stop
// the crawler?) passes; but the bucket the crawler keeps full refuses the
// readers too, more than 0.5% of the other logged-out requests, and no
// header the logs show sets the crawler apart from them. A larger size
// spares them only by letting the crawler through, so none is taken: the
// rule is proposed as it stands, and its backtest and its Why say that the
// goal for everyone else is missed, with the numbers.
func TestRuleSaysItMissesTheGoalForOthers(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 4))
	base := time.Date(2026, 10, 2, 22, 0, 0, 0, time.UTC)
	from, to := base.Add(2*time.Hour), base.Add(3*time.Hour)
	onset, end := from.Add(10*time.Minute), from.Add(40*time.Minute)
	hits := ordinaryTraffic(rng, base, to, 60, siteTools)
	hits = append(hits, historyReaders(rng, base, to, 3, historyTools)...)
	for i, rd := range rotatingCrawler {
		crawl := crawlerTraffic(rng, onset, end, 75, rd, historyTools, i%2 == 1)
		hits = append(hits, crawl...)
	}
	in := Input{Findings: []detect.Finding{rotatingFinding(rotatingCrawler, onset, end)}, Access: []string{writeLog(t, t.TempDir(), hits)},
		Site: siteFacts, From: from, To: to}
	p, r := onlyRule(t, in)
	b := r.Backtest
	if b.CrawlerRefusedShare < actorGoal {
		t.Fatalf("the zone refused %.2f%% of the crawler (%d events per %s): the test wants a zone that stops it", 100*b.CrawlerRefusedShare, r.Events, r.Window)
	}
	if !othersMissed(b) {
		t.Fatalf("the zone refused %d of %d other logged-out requests: the readers of the same tools were to be caught with the crawler", b.OtherLoggedOutRefused, b.OtherLoggedOutRequests)
	}
	if !b.OtherLoggedOutGoalMissed || b.OtherLoggedOutGoal != collateralGoal {
		t.Errorf("backtest does not mark the goal for others as missed: missed %v, goal %v", b.OtherLoggedOutGoalMissed, b.OtherLoggedOutGoal)
	}
	if p.Backtest == nil || !p.Backtest.OtherLoggedOutGoalMissed {
		t.Errorf("the block's backtest does not mark the goal for others as missed")
	}
	js, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"other_logged_out_goal_missed":true`) || !strings.Contains(string(js), `"other_logged_out_goal":0.005`) {
		t.Errorf("report.json's backtest does not say it: %s", js)
	}
	for _, want := range []string{"misses the goal for everyone else", fmtInt(b.OtherLoggedOutRefused) + " of the " + fmtInt(b.OtherLoggedOutRequests),
		pct(b.OtherLoggedOutRefusedShare)} {
		if !strings.Contains(r.Why, want) {
			t.Errorf("Why does not say %q:\n%s", want, r.Why)
		}
	}
	ko, err := r.WhyText.InPlain("ko")
	if err != nil || !strings.Contains(ko, pct(b.OtherLoggedOutRefusedShare)) {
		t.Errorf("Korean Why does not give the share (%v):\n%s", err, ko)
	}
}

// TestZoneGrowsToSpareAReader: one address crawls page histories for half
// an hour, and a logged-out reader studying a page's history opens sixty of
// them in ten minutes meanwhile. The limit per address sized on the
// baseline (twice its busiest ordinary client, plus a slack) stops the
// crawler, so the obvious rule is done; but it refuses most of the reader's
// clicks, more than 0.5% of the other logged-out requests of the hour. A
// larger limit lets the reader through and still refuses 95% of the
// crawler: the zone takes the smallest such size, and says why.
func TestZoneGrowsToSpareAReader(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 5))
	base := time.Date(2026, 10, 2, 22, 0, 0, 0, time.UTC)
	from, to := base.Add(2*time.Hour), base.Add(3*time.Hour)
	onset, end := from.Add(10*time.Minute), from.Add(40*time.Minute)
	crawler := reader{uaChrome, "zh-CN,zh;q=0.9", false, ""}
	hits := ordinaryTraffic(rng, base, to, 60, siteTools)
	crawl := crawlerTraffic(rng, onset, end, 200, crawler, historyTools, false)
	for i := range crawl {
		crawl[i].ip = "203.0.113.9"
	}
	hits = append(hits, crawl...)
	study := from.Add(20 * time.Minute)
	for i := range 60 {
		hits = append(hits, hit{at: study.Add(time.Duration(i) * 10 * time.Second), dur: 0.2, tls: true, upstream: true, ip: "175.223.40.17",
			ua: uaFirefox, lang: "de-DE,de;q=0.8", referer: "https://www.google.com/", uri: fmt.Sprintf(historyTools[i%2], "Page_77")})
	}
	f := crawlerFinding(t, crawler, onset, end)
	cf := detect.FactsOf[detect.CrawlerBurstFacts](&f)
	cf.Spread, cf.DistinctIPs, cf.RequestsPerIPMax = false, 1, len(crawl)
	in := Input{Findings: []detect.Finding{f}, Access: []string{writeLog(t, t.TempDir(), hits)}, Site: siteFacts, From: from, To: to}
	_, r := onlyRule(t, in)
	b := r.Backtest
	if r.Key != "{client_ip}" {
		t.Fatalf("key %q: want a limit per address", r.Key)
	}
	if b.CrawlerRefusedShare < actorGoal || othersMissed(b) || b.OtherLoggedOutGoalMissed {
		t.Errorf("%d events per %s: refused %.2f%% of the crawler and %d of %d other logged-out requests (missed mark %v); want at least %s and under %s",
			r.Events, r.Window, 100*b.CrawlerRefusedShare, b.OtherLoggedOutRefused, b.OtherLoggedOutRequests, b.OtherLoggedOutGoalMissed, pct(actorGoal), pct(collateralGoal))
	}
	if !strings.Contains(r.Why, "So the zone grew to "+fmtInt(r.Events)+" events") {
		t.Errorf("Why does not say the zone grew to %d events:\n%s", r.Events, r.Why)
	}
}

// TestZoneLeavesOutTheReadersTool: the rotating crawler walks backlinks
// (Special:WhatLinksHere), and now and then a page history (2% of its
// requests); logged-out readers open page histories from search results
// three or four a minute. The zone for every tool it walked stops the
// crawler (90 events per 10m refused 98.51% of it) but refuses the
// readers' histories with it: 92 of 3,708 other logged-out requests
// (2.48%), and no size helps. Leaving the histories out costs 2% of the
// crawler, within its margin over 95%: the narrower zone meets both goals,
// and its Why says what it left out and why.
func TestZoneLeavesOutTheReadersTool(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 6))
	base := time.Date(2026, 10, 2, 22, 0, 0, 0, time.UTC)
	from, to := base.Add(2*time.Hour), base.Add(3*time.Hour)
	onset, end := from.Add(10*time.Minute), from.Add(40*time.Minute)
	history, backlinks := historyTools[0], historyTools[1]
	walk := []string{history}
	for range 49 {
		walk = append(walk, backlinks)
	}
	hits := ordinaryTraffic(rng, base, to, 60, siteTools)
	hits = append(hits, historyReaders(rng, base, to, 3, []string{history})...)
	for i, rd := range rotatingCrawler {
		hits = append(hits, crawlerTraffic(rng, onset, end, 150, rd, walk, i%2 == 1)...)
	}
	in := Input{Findings: []detect.Finding{rotatingFinding(rotatingCrawler, onset, end)}, Access: []string{writeLog(t, t.TempDir(), hits)},
		Site: siteFacts, From: from, To: to}
	_, r := onlyRule(t, in)
	b := r.Backtest
	if b.CrawlerRefusedShare < actorGoal || othersMissed(b) || b.OtherLoggedOutGoalMissed {
		t.Errorf("%d events per %s: refused %.2f%% of the crawler and %d of %d other logged-out requests; want at least %s and under %s\n%s",
			r.Events, r.Window, 100*b.CrawlerRefusedShare, b.OtherLoggedOutRefused, b.OtherLoggedOutRequests, pct(actorGoal), pct(collateralGoal), r.Caddyfile)
	}
	if strings.Contains(r.Caddyfile, "history") || !strings.Contains(r.Caddyfile, "Special:WhatLinksHere") {
		t.Errorf("the zone should match the backlinks and leave the histories out:\n%s", r.Caddyfile)
	}
	if !strings.Contains(r.Why, "leaves out action=history, which the crawler walked too") {
		t.Errorf("Why does not say the histories were left out:\n%s", r.Why)
	}
}
