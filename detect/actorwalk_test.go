package detect

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// TestCrawlerFingerprintIsTheActors: readers on Chrome 129 and a crawl on
// Chrome 121 (a quarter of its addresses on 120) send the same headers
// otherwise (no client hints, zh-cn, logged out), so they share one
// fingerprint. The readers open an article and fetch its stylesheet, all
// through the baseline and the window, and are set apart; the crawl walks
// two tools from 20 minutes in. Everything the finding says of who it was is
// the crawl's: its versions (121 then 120, though the readers' 129 outnumber
// its 120), what it walked (no article, no asset, where the fingerprint's
// counts list both), and the counts of what it walked add up to its
// requests.
func TestCrawlerFingerprintIsTheActors(t *testing.T) {
	from, to := t0, t0.Add(time.Hour)
	tr := NewTraffic(sources.Site{ClientTimeoutS: 10}, from, to)
	const (
		chrome129 = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36"
		chrome120 = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
	)
	req := func(at time.Time, ip netip.Addr, ua, target string, dur float64) sources.Request {
		path, query, _ := strings.Cut(target, "?")
		return sources.Request{Time: at, ClientIP: ip, Method: "GET", Path: path, Query: query, Status: 200, UserAgent: ua, Lang: "zh-cn",
			LoggedIn: sources.LoggedInNo, Origin: sources.OriginUpstream, TLS: true, Duration: dur}
	}
	var rs []sources.Request
	readers, crawlers := 0, 0
	for at := from.Add(-time.Hour); at.Before(to); at = at.Add(time.Minute) {
		for k := range 30 {
			readers++
			ip, ts := nthAddr(readers), at.Add(time.Duration(k)*2*time.Second)
			rs = append(rs, req(ts, ip, chrome129, fmt.Sprintf("/w/Page_%d", k), 0.1),
				req(ts.Add(time.Second), ip, chrome129, "/skins/vector/style.css", 0.01))
		}
		if at.Before(from.Add(20 * time.Minute)) {
			continue
		}
		for k := range 150 {
			crawlers++
			ip := netip.MustParseAddr(fmt.Sprintf("172.16.%d.%d", crawlers/250, crawlers%250+1))
			ua := chrome121
			if crawlers%4 == 0 {
				ua = chrome120
			}
			ts := at.Add(time.Duration(k) * 400 * time.Millisecond)
			rs = append(rs, req(ts, ip, ua, "/w/index.php?title=X&action=history", 2),
				req(ts.Add(time.Second), ip, ua, "/w/Special:WhatLinksHere/X", 2))
		}
	}
	observeInOrder(tr, rs)
	f := oneCrawler(t, tr, from, to)
	if got, want := f.Fingerprint.UserAgent, "Chrome 121/120"; got != want {
		t.Errorf("user agent %q, want %q: the readers' version is not the crawl's", got, want)
	}
	if want := []string{"Special:WhatLinksHere (path)", "action=history"}; !slices.Equal(sorted(f.Fingerprint.Paths), want) {
		t.Errorf("paths %q, want %q: the readers' article and stylesheet are not what the crawl walked", f.Fingerprint.Paths, want)
	}
	walked := 0
	for _, p := range f.TopPaths {
		walked += p.Requests
	}
	if facts := FactsOf[CrawlerBurstFacts](f); walked != facts.Requests || facts.FingerprintReaders == 0 {
		t.Errorf("top paths count %d requests, the crawler %d (readers set apart: %d)", walked, facts.Requests, facts.FingerprintReaders)
	}
}

// sorted is a sorted copy of ss.
func sorted(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return out
}

// An address's walks count every request on its own walk, however many it
// walked and in whatever order, and a walk merged into another (an actor
// joined over fingerprints) leaves both as they were.
func TestAddressWalkCounts(t *testing.T) {
	var a addressWalk
	want := map[uint16]int{}
	for i := range 200 {
		id := uint16(i * 7 % 11)
		a.add(id)
		want[id]++
	}
	counts := func(w addressWalk) map[uint16]int {
		got := map[uint16]int{}
		w.each(func(id uint16, n int) { got[id] += n })
		return got
	}
	if got := counts(a); !maps.Equal(got, want) {
		t.Fatalf("walks %v, want %v", got, want)
	}
	var b addressWalk
	b.add(3)
	b.add(40)
	b.add(41)
	joined := a.merged(b, func(id uint16) uint16 { return id + 100 })
	joined.add(200)
	if got := counts(a); !maps.Equal(got, want) {
		t.Errorf("merging changed the walks it merged: %v", got)
	}
	if got := counts(b); len(got) != 3 {
		t.Errorf("merging changed the walks merged in: %v", got)
	}
	want[103], want[140], want[141], want[200] = 1, 1, 1, 1
	if got := counts(joined); !maps.Equal(got, want) {
		t.Errorf("merged walks %v, want %v", got, want)
	}
}
