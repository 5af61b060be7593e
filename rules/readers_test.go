package rules

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// TestReaders: who, under a crawler's fingerprint, counts as a reader. The
// obvious rule ("fetched assets, so a person") is wrong for a concentrated
// crawler that fetches assets too: its pace gives it away.
func TestReaders(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 15, 37, 0, 0, time.UTC).UnixNano()
	sec := func(s float64) int64 { return t0 + int64(s*float64(time.Second)) }
	type req struct {
		at    float64
		asset bool
	}
	for _, tc := range []struct {
		name string
		reqs []req
		want bool
	}{
		{"one tool request, nothing else (the spread crawler)", []req{{0, false}}, false},
		{"two tool requests a minute apart (the spread crawler at most)", []req{{0, false}, {60, false}}, false},
		{"a page and its assets", []req{{0, false}, {0.3, true}, {0.4, true}}, true},
		{"three pages over three minutes, no assets (cached)", []req{{0, false}, {90, false}, {180, false}}, true},
		{"three pages within a minute, no assets", []req{{0, false}, {20, false}, {40, false}}, false},
		{"a concentrated crawler: 600 pages in ten minutes, with assets", func() []req {
			var rs []req
			for i := range 600 {
				rs = append(rs, req{float64(i), false})
			}
			return append(rs, req{1, true})
		}(), false},
		{"a busy reader: 40 pages and assets over ten minutes", func() []req {
			var rs []req
			for i := range 40 {
				rs = append(rs, req{float64(i * 15), false}, req{float64(i*15) + 0.5, true})
			}
			return rs
		}(), true},
	} {
		rt := readerTracker{}
		ip := netip.MustParseAddr("127.0.0.1")
		counts := newArrivalCounts(nil, 1)
		for _, r := range tc.reqs {
			cls := classOf(0, false, sources.LoggedInNo, !r.asset)
			counts.add(sec(r.at), cls)
			rt.observe(0, ip, sec(r.at), r.asset, false, "GET", counts.stretch(sec(r.at)), cls, false)
		}
		readers := rt.settle(counts)
		if got := readers.has(0, ip); got != tc.want {
			t.Errorf("%s: reader %v, want %v", tc.name, got, tc.want)
		}
		// A reader's arrivals are recounted as ordinary ones from a reader.
		all, _ := counts.in(0, sec(1e6))
		crawler := all[classOf(0, false, sources.LoggedInNo, true)] + all[classOf(0, false, sources.LoggedInNo, false)]
		reader := all[classOf(-1, true, sources.LoggedInNo, true)] + all[classOf(-1, true, sources.LoggedInNo, false)]
		if want := len(tc.reqs); tc.want && (crawler != 0 || reader != want) || !tc.want && (crawler != want || reader != 0) {
			t.Errorf("%s: counted %d as the crawler's and %d as a reader's", tc.name, crawler, reader)
		}
	}
	if c := classOf(-1, true, sources.LoggedInYes, true); c.crawler() != -1 || !c.reader() || c.login() != sources.LoggedInYes || !c.php() {
		t.Errorf("a reader's class does not round-trip")
	}
	if c := classOf(2, false, sources.LoggedInNo, false); c.crawler() != 2 || c.reader() || c.login() != sources.LoggedInNo || c.php() {
		t.Errorf("a crawler's class does not round-trip")
	}
}

// TestReadersShareTheFingerprint: on a hand-built day a spread crawler walks
// tools as logged-out Chrome with zh-CN and no client hints, and twenty
// readers with exactly that fingerprint read pages during the crawl, fetch
// their assets and click a tool on them. The obvious count, everyone under
// the fingerprint is the crawler, would call their requests the crawler's and
// report no collateral. They are counted apart; when their browsers send a
// Referer the zone spares their clicks (and the backtest, matching with
// Caddy's matchers, refuses none of them); when they send none the zone
// cannot, and the refusals are reported as collateral among them.
func TestReadersShareTheFingerprint(t *testing.T) {
	crawler := reader{uaChrome, "zh-CN,zh;q=0.9", false, ""}
	tools := []string{"/wiki/Special:WhatLinksHere/%s", "/index.php?title=%s&action=history"}
	for _, referers := range []bool{true, false} {
		name := "readers send a Referer"
		if !referers {
			name = "readers send no Referer (Referrer-Policy: no-referrer)"
		}
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 15))
			base := time.Date(2026, 10, 2, 22, 0, 0, 0, time.UTC)
			from, to := base.Add(2*time.Hour), base.Add(3*time.Hour)
			onset, end := from.Add(10*time.Minute), from.Add(40*time.Minute)
			hits := ordinaryTraffic(rng, base, to, 60, siteTools)
			crawl := crawlerTraffic(rng, onset, end, 300, crawler, tools, false)
			hits = append(hits, crawl...)
			ref := func(page string) string {
				if !referers {
					return ""
				}
				return "https://wiki.example.org/wiki/" + page
			}
			readerHits := 0
			for i := range 20 {
				ip := fmt.Sprintf("2001:db8:ffff::%x", i+1)
				at := onset.Add(time.Duration(i) * 80 * time.Second)
				page := fmt.Sprintf("Page_%d", 100+i)
				session := []hit{
					{at: at, uri: "/wiki/" + page, upstream: true, dur: 0.05},
					{at: at.Add(300 * time.Millisecond), uri: "/static/skin.css", referer: ref(page), dur: 0.002},
					{at: at.Add(400 * time.Millisecond), uri: "/static/wiki.js", referer: ref(page), dur: 0.002},
					{at: at.Add(45 * time.Second), uri: "/index.php?title=" + page + "&action=history", referer: ref(page), upstream: true, dur: 0.3},
					{at: at.Add(50 * time.Second), uri: "/wiki/Special:WhatLinksHere/" + page, referer: ref(page), upstream: true, dur: 0.3},
				}
				for _, h := range session {
					h.ip, h.ua, h.lang, h.tls = ip, crawler.ua, crawler.lang, true
					hits = append(hits, h)
				}
				readerHits += len(session)
			}
			// Other readers click the same tools on pages, when browsers send referers.
			for i := range 30 {
				if !referers {
					break
				}
				page := fmt.Sprintf("Page_%d", 200+i)
				hits = append(hits, hit{at: base.Add(time.Duration(i) * 5 * time.Minute), ip: fmt.Sprintf("211.37.0.%d", i+1), ua: uaChrome,
					lang: "ko-KR,ko;q=0.9", hints: true, tls: true, upstream: true, dur: 0.2, referer: ref(page),
					uri: "/index.php?title=" + page + "&action=history"})
			}
			in := Input{Findings: []detect.Finding{crawlerFinding(t, crawler, onset, end)}, Access: []string{writeLog(t, t.TempDir(), hits)},
				Site: siteFacts, From: from, To: to}
			p, r := onlyRule(t, in)
			bt := r.Backtest
			t.Logf("%s\n%+v", r.Caddyfile, bt)
			if bt.CrawlerRequests != len(crawl) || bt.FingerprintReaderRequests != readerHits {
				t.Errorf("crawler %d, readers %d requests; the day had %d and %d", bt.CrawlerRequests, bt.FingerprintReaderRequests, len(crawl), readerHits)
			}
			if bt.CrawlerRefusedShare < 0.9 {
				t.Errorf("refused %.1f%% of the crawler", 100*bt.CrawlerRefusedShare)
			}
			spared := strings.Contains(r.Caddyfile, "not header Referer") && strings.Contains(r.Name, "no_site_referer")
			switch {
			case referers && (!spared || bt.FingerprintReaderRefused != 0):
				t.Errorf("readers clicking with a Referer: zone %s spares them %v, %d of their requests refused", r.Name, spared, bt.FingerprintReaderRefused)
			case !referers && (spared || bt.FingerprintReaderRefused == 0 || bt.FingerprintReadersRefused == 0):
				t.Errorf("readers without a Referer: zone %s spares clicks %v, %d of their requests refused from %d addresses; want refusals reported",
					r.Name, spared, bt.FingerprintReaderRefused, bt.FingerprintReadersRefused)
			}
			if !strings.Contains(p.Caddyfile, readerHeaderLine(bt)) {
				t.Errorf("rules.caddy's header lacks %q", readerHeaderLine(bt))
			}
		})
	}
}

// TestProposeKeepsSizeForReadersInTheBaseline: a crawler already walking its
// tools in the baseline holds the zone's shared bucket there, and two readers
// under its fingerprint (a page, its assets, then a tool, without a Referer)
// click a tool then and are refused with it. Growing the zone until they
// pass would grow it toward the crawler's own baseline rate (600 per 10m)
// and let much of the crawl through: the zone keeps its size, the backtest
// counts the two, and the rationale says why.
func TestProposeKeepsSizeForReadersInTheBaseline(t *testing.T) {
	crawler := reader{uaChrome, "zh-CN,zh;q=0.9", false, ""}
	tools := []string{"/wiki/Special:WhatLinksHere/%s", "/index.php?title=%s&action=history"}
	rng := rand.New(rand.NewPCG(11, 16))
	base := time.Date(2026, 10, 2, 22, 0, 0, 0, time.UTC)
	from, to := base.Add(2*time.Hour), base.Add(3*time.Hour)
	onset, end := from.Add(10*time.Minute), from.Add(40*time.Minute)
	hits := ordinaryTraffic(rng, base, to, 60, siteTools)
	hits = append(hits, crawlerTraffic(rng, onset, end, 300, crawler, tools, false)...)
	hits = append(hits, crawlerTraffic(rng, base, from, 60, crawler, tools, false)...)
	for i, at := range []time.Time{base.Add(40 * time.Minute), base.Add(95 * time.Minute)} {
		page := fmt.Sprintf("Page_%d", 100+i)
		for _, h := range []hit{
			{at: at, uri: "/wiki/" + page, upstream: true, dur: 0.05},
			{at: at.Add(300 * time.Millisecond), uri: "/static/skin.css", dur: 0.002},
			{at: at.Add(400 * time.Millisecond), uri: "/static/wiki.js", dur: 0.002},
			{at: at.Add(45 * time.Second), uri: "/wiki/Special:WhatLinksHere/" + page, upstream: true, dur: 0.3},
		} {
			h.ip, h.ua, h.lang, h.tls = fmt.Sprintf("2001:db8:fffe::%x", i+1), crawler.ua, crawler.lang, true
			hits = append(hits, h)
		}
	}
	in := Input{Findings: []detect.Finding{crawlerFinding(t, crawler, onset, end)}, Access: []string{writeLog(t, t.TempDir(), hits)},
		Site: siteFacts, From: from, To: to}
	_, r := onlyRule(t, in)
	bt := r.Backtest
	if r.Events >= 600 || bt.CrawlerRefusedShare < 0.95 {
		t.Errorf("events %d refuse %.1f%% of the crawler: the zone grew toward the crawler's baseline rate\n%s", r.Events, 100*bt.CrawlerRefusedShare, r.Why)
	}
	if bt.BaselineRefused == 0 || bt.BaselineRefused > 2 {
		t.Errorf("refused %d ordinary baseline requests, want the readers' tool clicks (1 or 2)\n%s", bt.BaselineRefused, r.Why)
	}
	if !strings.Contains(r.Why, "no more than one in a thousand") || strings.Contains(r.Why, "resized") {
		t.Errorf("the rationale does not say why the zone kept its size: %s", r.Why)
	}
}

// onlyRule proposes the rules for in and returns them with the one rule they
// must hold.
func onlyRule(t *testing.T, in Input) (*Proposal, Rule) {
	t.Helper()
	p, err := Propose(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules) != 1 {
		t.Fatalf("%d rules, want one; notes %v", len(p.Rules), p.DataQuality)
	}
	return p, p.Rules[0]
}

// TestZoneLeavesTheReadersPages: readers who share a crawler's fingerprint
// read article pages (with their assets, at a reader's pace) while it walks
// its tools, and click one of its tools on each page (with the page as
// Referer); detect measured the article route as costly for the fingerprint
// as a whole (their pages, not the crawler's). What the crawler walked and
// sent is counted without the readers' requests: a zone that matched the
// article route, or that could not spare clicks with a Referer because one
// in twenty requests under the fingerprint carried one (the readers'),
// would hold the readers in the crawler's shared bucket and refuse them
// with it.
func TestZoneLeavesTheReadersPages(t *testing.T) {
	crawler := reader{uaChrome, "ko-KR,ko;q=0.9", false, ""}
	tools := []string{"/wiki/Special:WhatLinksHere/%s", "/index.php?title=%s&action=history"}
	rng := rand.New(rand.NewPCG(11, 17))
	base := time.Date(2026, 10, 2, 22, 0, 0, 0, time.UTC)
	from, to := base.Add(2*time.Hour), base.Add(3*time.Hour)
	onset, end := from.Add(10*time.Minute), from.Add(40*time.Minute)
	hits := ordinaryTraffic(rng, base, to, 60, siteTools)
	crawl := crawlerTraffic(rng, onset, end, 300, crawler, tools, false)
	hits = append(hits, crawl...)
	readerPages := 0
	for i := range 40 {
		ip := fmt.Sprintf("2001:db8:fffd::%x", i+1)
		for j := range 12 {
			at := onset.Add(time.Duration(i)*40*time.Second + time.Duration(j)*50*time.Second)
			page := fmt.Sprintf("Page_%d", 100*i+j)
			for _, h := range []hit{
				{at: at, uri: "/wiki/" + page, upstream: true, dur: 0.12},
				{at: at.Add(300 * time.Millisecond), uri: "/static/skin.css", dur: 0.002},
				{at: at.Add(400 * time.Millisecond), uri: "/static/wiki.js", dur: 0.002},
				{at: at.Add(20 * time.Second), uri: "/wiki/Special:WhatLinksHere/" + page, upstream: true, dur: 0.3,
					referer: "https://wiki.example.org/wiki/" + page},
			} {
				h.ip, h.ua, h.lang, h.tls = ip, crawler.ua, crawler.lang, true
				hits = append(hits, h)
			}
			readerPages++
		}
	}
	f := crawlerFinding(t, crawler, onset, end)
	for _, u := range []string{"/wiki/Special:WhatLinksHere/Page_1", "/index.php?title=Page_1&action=history", "/wiki/Page_1"} {
		p, q, _ := strings.Cut(u, "?")
		f.Routes = append(f.Routes, detect.RouteCost{Template: request.RouteTemplate(p, q), Requests: 100, Expensive: true})
	}
	in := Input{Findings: []detect.Finding{f}, Access: []string{writeLog(t, t.TempDir(), hits)},
		Site: siteFacts, From: from, To: to}
	_, r := onlyRule(t, in)
	bt := r.Backtest
	if bt.FingerprintReaderRequests != 4*readerPages {
		t.Fatalf("%d requests counted as the readers', want %d", bt.FingerprintReaderRequests, 4*readerPages)
	}
	if bt.CrawlerRefusedShare < actorGoal || bt.FingerprintReaderRefused != 0 || bt.OtherLoggedOutRefusedShare >= collateralGoal {
		t.Errorf("refused %.1f%% of the crawler, %d of the readers' %d requests, %.2f%% of other logged-out requests\n%s",
			100*bt.CrawlerRefusedShare, bt.FingerprintReaderRefused, bt.FingerprintReaderRequests, 100*bt.OtherLoggedOutRefusedShare, r.Caddyfile)
	}
}
