package detect

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// inAppAgent is a phone's in-app browser whose agent names no browser the
// agent table knows: its fingerprint is "other", and its addresses that
// read like people count as its own in its rates (CrawlerPerMinute).
const inAppAgent = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 NAVER(inapp; search; 2000; 12.8.5; 15)"

// readersOnInApp builds an hour of baseline and an hour of window in which
// people on inAppAgent read three pages each over two minutes, following
// the site's links, two a minute before and forty a minute from the 20th
// minute of the window: a rise of readers only.
func readersOnInApp(from, to time.Time) []sources.Request {
	var rs []sources.Request
	visit := 0
	for at := from.Add(-time.Hour); at.Before(to); at = at.Add(time.Minute) {
		n := 2
		if !at.Before(from.Add(20*time.Minute)) && at.Before(to.Add(-3*time.Minute)) {
			n = 40
		}
		for k := range n {
			ip := nthAddr(visit)
			visit++
			start := at.Add(time.Duration(k) * time.Minute / time.Duration(n))
			for page := range 3 {
				rs = append(rs, sources.Request{Time: start.Add(time.Duration(page) * time.Minute), ClientIP: ip, Method: "GET",
					Path: fmt.Sprintf("/wiki/Story_%d", (visit+page)%7), Status: 200, UserAgent: inAppAgent, Lang: "ko-kr",
					LoggedIn: sources.LoggedInNo, Origin: sources.OriginUpstream, TLS: true, SiteReferer: page > 0})
			}
		}
	}
	return rs
}

// TestReadersRemainderIsNoCrawler: people on an in-app browser the agent
// table does not name rise ninefold, and two of them, their page failing in
// the outage, post an edit once each and read nothing: addresses that do
// not read like people. The fingerprint rose, and a finding used to be
// built on the two leftover requests while stating the readers' rise as
// theirs. What is left once the readers are apart did not rise and carries
// no share of the window: no crawler, and the check says the rise was the
// readers'.
func TestReadersRemainderIsNoCrawler(t *testing.T) {
	from, to := t0, t0.Add(time.Hour)
	rs := readersOnInApp(from, to)
	for i := range 2 {
		rs = append(rs, sources.Request{Time: from.Add(time.Duration(30+i) * time.Minute), ClientIP: nthAddr(900000 + i), Method: "POST",
			Path: "/index.php?title=Story&action=submit", Status: 502, UserAgent: inAppAgent, Lang: "ko-kr",
			LoggedIn: sources.LoggedInNo, Origin: sources.OriginUpstream, TLS: true})
	}
	tr := NewTraffic(sources.Site{}, from, to)
	observeInOrder(tr, rs)
	fs, check := crawlersOf(t, tr, from, to)
	for _, f := range fs {
		t.Errorf("two leftover requests were called a crawler with the readers' rise: %s", f.Summary)
	}
	if !strings.Contains(check.Reason, "only through the addresses that read like people") {
		t.Errorf("the check does not say the rise was the readers': %s", check.Reason)
	}
}

// TestCrawlerAmongInAppReaders: the same readers' rise, and under the same
// fingerprint a crawler that rose on its own, from a thousand addresses
// sending one page each, none of them reading like a person. Setting the
// readers apart must not hide it: it is still found, with its own rise.
func TestCrawlerAmongInAppReaders(t *testing.T) {
	from, to := t0, t0.Add(time.Hour)
	rs := readersOnInApp(from, to)
	n := 0
	for at := from.Add(25 * time.Minute); at.Before(to.Add(-5 * time.Minute)); at = at.Add(time.Minute) {
		for k := range 40 {
			rs = append(rs, sources.Request{Time: at.Add(time.Duration(k) * time.Minute / 40), ClientIP: nthAddr(900000 + n), Method: "GET",
				Path: fmt.Sprintf("/index.php?title=Special:WhatLinksHere/Page_%d", n), Status: 200, UserAgent: inAppAgent, Lang: "ko-kr",
				LoggedIn: sources.LoggedInNo, Origin: sources.OriginUpstream, TLS: true})
			n++
		}
	}
	tr := NewTraffic(sources.Site{}, from, to)
	observeInOrder(tr, rs)
	fs, check := crawlersOf(t, tr, from, to)
	if len(fs) != 1 {
		t.Fatalf("the crawler among readers was not found (%d findings): %s", len(fs), check.Reason)
	}
	if got := FactsOf[CrawlerBurstFacts](&fs[0]); got.DistinctIPs != n || got.Requests != n {
		t.Errorf("finding counts %d requests from %d addresses, want the crawler's %d from %d", got.Requests, got.DistinctIPs, n, n)
	}
	// The rise it states is the crawler's own, 40 a minute from nothing,
	// not the readers' 60 -> 1,600 with it.
	if got := FactsOf[CrawlerBurstFacts](&fs[0]); got.BaselinePer10m.V != 0 || got.PeakPer10m != 400 {
		t.Errorf("finding states a rise of %v -> %v per 10 min, want the crawler's own 0 -> 400", got.BaselinePer10m.V, got.PeakPer10m)
	}
}
