package detect

import (
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
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

// TestCrawlerCostIsTheActors: a news link sends a crowd of readers to a
// cached article (flash-crowd), and a crawl of page tools runs through it
// with Chrome's client hints, asking for Korean first, as the crowd's
// Windows Chrome readers do: a thousand readers share its fingerprint,
// reading the article (PHP's only on a cache miss) with its assets. What
// the finding says the crawl cost is the crawl's own, against the
// simulator's record of every request (truth-requests.csv.gz, which no
// detector reads): its share of PHP's time in the window (the logged
// durations of the crawler's requests PHP answered, over everyone's), and
// routes that count its own requests, so that its share of pages no cache
// holds is measured on its pages, not diluted by the readers' article.
func TestCrawlerCostIsTheActors(t *testing.T) {
	kst := time.FixedZone("KST", 9*3600)
	crawler := simulate.DefaultCrawler()
	crawler.AcceptLanguage = "ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7"
	crawler.SecChUa = true
	crawler.BaselineFrom, crawler.BaselineRate = time.Date(2026, 10, 14, 17, 0, 0, 0, kst), 0.1
	crawler.Onset = time.Date(2026, 10, 14, 20, 10, 0, 0, kst)
	crawler.Shape = []simulate.RateKnot{{Minute: 3, Rate: 0.5}, {Minute: 20, Rate: 1}, {Minute: 50, Rate: 1}, {Minute: 53, Rate: 0}}
	res, truth, dir := simulateBundleDir(t, simulate.Options{Scenario: "flash-crowd", Seed: 1, Crawler: &crawler})
	f := first(res.Findings, KindCrawlerBurst)
	if f == nil {
		t.Fatalf("no crawler finding; checks: %+v", res.Checks)
	}
	facts := FactsOf[CrawlerBurstFacts](f)
	if facts.FingerprintReaders < 1000 {
		t.Fatalf("%d readers share the crawler's fingerprint: the test needs thousands", facts.FingerprintReaders)
	}
	want := truthPHPShare(t, dir, mustTime(t, truth.Window.From), mustTime(t, truth.Window.To), "crawler")
	if got := facts.PHPTimeShare; !got.OK || math.Abs(got.V-want) > 0.02 {
		t.Errorf("php_time_share %v, the crawler's own is %.3f: the readers' PHP time is not the crawler's", got, want)
	}
	pages, expensive, article := 0, 0, 0
	for _, r := range f.Routes {
		pages += r.Requests
		if r.Expensive {
			expensive += r.Requests
		}
		if r.Template == "/w/{slug}" {
			article = r.Requests
		}
	}
	// The crawler fetches no assets; its routes are its pages, and what
	// they say is expensive is the share the finding states.
	if pages > facts.Requests || article > facts.Requests/100 {
		t.Errorf("routes count %d requests (%d on articles), the crawler sent %d: the readers' articles are not its routes", pages, article, facts.Requests)
	}
	if got, want := facts.UncacheableShare, float64(expensive)/float64(max(facts.Requests, 1)); math.Abs(got-want) > 0.01 || got < 0.8 {
		t.Errorf("uncacheable_share %.3f, its routes say %.3f: its pages, not the readers', are the share", got, want)
	}
}

// truthPHPShare is class's share of PHP's time in [from, to) by the
// simulator's record of each request (dir's truth-requests.csv.gz): the
// time Caddy logged for the requests PHP answered, by when Caddy logged
// them, as the access log holds them.
func truthPHPShare(t *testing.T, dir string, from, to time.Time, class string) float64 {
	t.Helper()
	fh, err := os.Open(filepath.Join(dir, "truth-requests.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	r := csv.NewReader(zr)
	header, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	var all, own float64
	for {
		row, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if row[col["origin"]] != "php" || row[col["caddy_ms"]] == "" {
			continue
		}
		start, err1 := strconv.ParseFloat(row[col["start_unix"]], 64)
		ms, err2 := strconv.ParseFloat(row[col["caddy_ms"]], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("truth row %v: %v %v", row, err1, err2)
		}
		logged := time.UnixMilli(int64(math.Round(start*1000 + ms)))
		if logged.Before(from) || !logged.Before(to) {
			continue
		}
		all += ms
		if row[col["class"]] == class {
			own += ms
		}
	}
	if all == 0 {
		t.Fatal("the truth records no PHP time in the window")
	}
	return own / all
}

// An address's record stays in the allocator's 128-byte class: there is
// one per address of the window (tens of thousands in a spread crawl), and
// the next class up is 144 bytes.
func TestAddressRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(AddressBehaviour{}); n > 128 {
		t.Errorf("AddressBehaviour is %d bytes, over 128", n)
	}
}
