package detect

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestOneRequestIsNoHostOfAConcentratedBurst: a scraper walks page
// histories from five addresses of its own, slowly all through the
// baseline, then about eighty requests a minute from each. Two readers
// whose browser shares its fingerprint (Chrome, ko-kr, logged out, no
// client hints) open one page history each in the outage; their pages
// fail, so they fetch no asset and read like nobody. They walked the
// scraper's own route, in its span: the obvious answer counts them among
// its hosts (seven addresses where five acted). One request in the whole
// window is under what each of its hosts sent in a minute: they are not
// the burst.
func TestOneRequestIsNoHostOfAConcentratedBurst(t *testing.T) {
	t.Parallel()
	tr := NewTraffic(sources.Site{}, t0, t0.Add(time.Hour))
	readers := shape{ua: chrome125, lang: "ko-kr", loggedIn: sources.LoggedInNo, ips: fewIPs, status: 200, origin: sources.OriginUpstream, dur: 0.1,
		paths: []string{"/w/A", "/static/skin.css", "/static/wiki.js", "/w/B"}}
	hosts := func(i int) string { return fmt.Sprintf("203.0.113.%d", 10+i%5) }
	scraper := shape{ua: chrome121, lang: "ko-kr", loggedIn: sources.LoggedInNo, ips: hosts, status: 200, origin: sources.OriginUpstream, dur: 0.5,
		paths: []string{"/w/index.php?title=X&action=history", "/w/Special:WhatLinksHere/X"}}
	feed(tr, readers, t0.Add(-3*time.Hour), 4*time.Hour, 24000)
	feed(tr, scraper, t0.Add(-3*time.Hour), 3*time.Hour+20*time.Minute, 1500)
	feed(tr, scraper, t0.Add(20*time.Minute), 25*time.Minute, 10000)
	failed := scraper
	failed.status, failed.ips = 503, func(i int) string { return fmt.Sprintf("198.51.100.%d", i) }
	failed.paths = scraper.paths[:1]
	feed(tr, failed, t0.Add(30*time.Minute), 10*time.Minute, 2)

	ev := &Evidence{From: t0, To: t0.Add(time.Hour), Traffic: tr, Loc: time.UTC}
	fs, check, err := crawlerDetector{}.Detect(context.Background(), ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 {
		t.Fatalf("%d crawler findings, want the scraper; check %q", len(fs), check.Reason)
	}
	facts := FactsOf[CrawlerBurstFacts](&fs[0])
	// Its slow requests of the window's first 20 minutes, then its burst.
	const want = 1500*20/200 + 10000
	if facts.DistinctIPs != 5 || facts.Requests != want {
		t.Errorf("the scraper: %d addresses, %d requests; want its 5 hosts and their %d requests of the window (%s)",
			facts.DistinctIPs, facts.Requests, want, fs[0].Summary)
	}
	// The two readers are set apart for their one request each, and the
	// finding says so: not "most of their requests outside the burst".
	if facts.FingerprintOthersFew.V != 2 || facts.FingerprintOthers.V != 2 || facts.FingerprintOthersOutside.V != 0 || facts.FingerprintOthersOffRoute.V != 0 {
		t.Errorf("set apart: %+v of %+v too few, %+v outside, %+v off route; want the 2 readers, for too few requests",
			facts.FingerprintOthersFew, facts.FingerprintOthers, facts.FingerprintOthersOutside, facts.FingerprintOthersOffRoute)
	}
	saysFew(t, &fs[0])
}

// saysFew checks that f's summary and explanation (en and ko) say how many
// of its fingerprint's addresses were set apart for too few requests, and
// the pace they are under, as its facts count them.
func saysFew(t *testing.T, f *Finding) {
	t.Helper()
	facts := FactsOf[CrawlerBurstFacts](f)
	if facts.FingerprintOthersFew.V == 0 || !facts.BurstPacePerMin.OK {
		t.Fatalf("no address set apart for too few requests (%+v), or no pace (%+v)", facts.FingerprintOthersFew, facts.BurstPacePerMin)
	}
	few, pace := prose.Plain{}.I(facts.FingerprintOthersFew.V), prose.Plain{}.N(facts.BurstPacePerMin.V)
	want := fmt.Sprintf("%s sent fewer requests in the whole window than the burst's median address sent a minute during it (%s)", few, pace)
	for _, c := range []struct{ what, text, want string }{
		{"summary", f.Summary, want},
		{"explanation", explainCrawler(plainPhraser(prose.EN), f, plainStory{}), want},
		{"Korean explanation", explainCrawler(plainPhraser(prose.KO), f, plainStory{}),
			fmt.Sprintf("구간 전체에 보낸 요청이 이 급증의 중앙값 주소가 급증 중 1분에 보낸 요청(%s건)보다 적은 주소가 %s개", pace, few)},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s does not say %q: %s", c.what, c.want, c.text)
		}
		if strings.Contains(c.text, "outside the burst") && facts.FingerprintOthersOutside.V == 0 {
			t.Errorf("%s says addresses sent most of their requests outside the burst, but none did: %s", c.what, c.text)
		}
	}
}

// TestSteadyScraperAddressesAreItsOwn: on the simulator's steady scraper
// (seed 5, five hosts), readers of its fingerprint who opened a page
// history once in the outage were counted as two more of its addresses.
// Its addresses and requests are the truth's.
func TestSteadyScraperAddressesAreItsOwn(t *testing.T) {
	t.Parallel()
	// Three hours of baseline: with one, no address was set apart for too
	// few requests and no pace stated, and the case is gone.
	res, truth := simulateBundle(t, simulate.Options{Scenario: "steady-scraper-rises", Seed: 5, BaselineHours: 3})
	if truth.Crawler == nil {
		t.Fatal("truth names no crawler")
	}
	for i := range res.Findings {
		if f := &res.Findings[i]; f.Kind == KindCrawlerBurst {
			facts := FactsOf[CrawlerBurstFacts](f)
			if w := truth.Crawler.Window; int64(facts.DistinctIPs) != w.DistinctIPs {
				t.Errorf("the scraper: %d addresses, want the truth's %d (%s)", facts.DistinctIPs, w.DistinctIPs, f.Summary)
			}
			// The readers are set apart for their few requests, and the
			// summary says so with their count.
			saysFew(t, f)
			return
		}
	}
	t.Fatal("no crawler finding")
}
