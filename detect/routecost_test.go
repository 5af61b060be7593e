package detect

import (
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestCostMeasuredNotNamed: the crawler's verdict follows what its pages cost,
// not what they are called. Paths that look like MediaWiki's uncacheable
// tools, answered from a cache (or by PHP, cheaply), are cheap; WordPress
// search and comment-reply links that PHP answers slowly are expensive.
func TestCostMeasuredNotNamed(t *testing.T) {
	readers := shape{ua: chrome125, lang: "ko-kr", loggedIn: sources.LoggedInNo, ips: fewIPs, status: 200, origin: sources.OriginUpstream, dur: 0.1,
		paths: []string{"/2026/10/a-b-c/", "/static/skin.css", "/static/wiki.js", "/2026/10/d-e-f/"}}
	mwTools := []string{"/w/index.php?title=X&action=history", "/w/Special:WhatLinksHere/X", "/w/index.php?title=Y&action=edit"}
	wpTools := []string{"/?s=caddy", "/2026/10/a-b-c/?replytocom=12", "/wp-json/wp/v2/search?search=php"}
	tests := []struct {
		name   string
		origin sources.Origin
		dur    float64
		paths  []string
		want   bool
		reason string
	}{
		{"MediaWiki tools served from a cache", sources.OriginStatic, 0.002, mwTools, false, "cheap or cached"},
		{"MediaWiki tools PHP answers as fast as a page", sources.OriginUpstream, 0.09, mwTools, false, "cheap or cached"},
		{"MediaWiki tools PHP answers slowly", sources.OriginUpstream, 0.5, mwTools, true, ""},
		{"WordPress search and reply links PHP answers slowly", sources.OriginUpstream, 0.5, wpTools, true, ""},
		// Only the proxy answered (errors): nothing says what PHP would pay.
		{"pages nobody measured", sources.OriginProxy, 0.001, wpTools, false, "could not judge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			burst := shape{ua: firefox, lang: "en-us", loggedIn: sources.LoggedInNo, ips: spreadIPs, status: 200,
				origin: tt.origin, dur: tt.dur, paths: tt.paths}
			tr := NewTraffic(sources.Site{}, t0, t0.Add(time.Hour))
			feed(tr, readers, t0.Add(-3*time.Hour), 4*time.Hour, 24000)
			feed(tr, burst, t0.Add(-3*time.Hour), 3*time.Hour, 90)
			feed(tr, burst, t0.Add(15*time.Minute), 30*time.Minute, 6000)
			ev := &Evidence{From: t0, To: t0.Add(time.Hour), Traffic: tr, Loc: time.UTC}
			fs, check, err := crawlerDetector{}.Detect(t.Context(), ev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if (len(fs) > 0) != tt.want {
				t.Fatalf("found %d crawler findings, want %v; check %+v", len(fs), tt.want, check)
			}
			if !tt.want {
				if !strings.Contains(check.Reason, tt.reason) {
					t.Errorf("reason %q does not say %q", check.Reason, tt.reason)
				}
				return
			}
			for _, r := range fs[0].Routes {
				if r.Requests > 1000 && (!r.Expensive || r.MeasuredOver != MeasuredBaseline || r.PHPPerRequest < 0.4) {
					t.Errorf("route %+v: want expensive, measured over the baseline", r)
				}
			}
			if got := FactsOf[CrawlerBurstFacts](&fs[0]).UncacheableShare; got < 0.99 {
				t.Errorf("uncacheable_share %v, want ~1", got)
			}
		})
	}
}

// TestWordPressCrawlIsTheTrigger: on the simulated WordPress incident the
// crawler walking search, REST search and comment-reply links is found and
// named the trigger, because those templates were measured as expensive and
// uncacheable; the posts readers get from the page cache are not.
func TestWordPressCrawlIsTheTrigger(t *testing.T) {
	res, truth := simulateBundle(t, simulate.Options{Scenario: "wordpress-search-crawl", Seed: 1, BaselineHours: 3})
	var crawler *Finding
	for i := range res.Findings {
		if res.Findings[i].Kind == KindCrawlerBurst {
			crawler = &res.Findings[i]
		}
	}
	if crawler == nil {
		t.Fatalf("no crawler_burst; checks %+v", res.Checks)
	}
	if crawler.Role != RoleTrigger {
		t.Errorf("crawler role %q, want trigger", crawler.Role)
	}
	if truth.Crawler == nil {
		t.Fatal("the scenario's truth has no crawler")
	}
	if got, want := float64(FactsOf[CrawlerBurstFacts](crawler).DistinctIPs), float64(truth.Crawler.Window.DistinctIPs); got < 0.9*want || got > 1.1*want {
		t.Errorf("crawler addresses %v, truth %v", got, want)
	}
	want := map[string]bool{"/?s": true, "/{n}/{n}/{slug}/?replytocom": true, "/wp-json/wp/v2/search?per_page&search": true}
	for _, r := range crawler.Routes {
		if want[r.Template] {
			if !r.Expensive || r.PHPShare < 0.99 || r.MeasuredOver != MeasuredBaseline {
				t.Errorf("route %+v: want expensive, PHP-answered, measured over the baseline", r)
			}
			delete(want, r.Template)
		}
		if r.Template == "/{n}/{n}/{slug}/" && r.Expensive {
			t.Errorf("cached posts measured as expensive: %+v", r)
		}
	}
	if len(want) > 0 {
		t.Errorf("routes %v missing from %+v", want, crawler.Routes)
	}
}
