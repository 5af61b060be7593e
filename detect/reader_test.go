package detect

import (
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// TestReader: who, under a fingerprint, reads like a person. Two obvious rules
// are wrong: "fetched assets, so a person" (a concentrated crawler fetching
// assets gives itself away by its pace) and "came from the site's own page, so
// a person" (a crawler forges the Referer on the one request it sends from an
// address: only a click that follows a request of the same address counts).
func TestReader(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 15, 37, 0, 0, time.UTC).UnixNano()
	type req struct {
		at         float64 // seconds after t0
		asset, ref bool
	}
	many := func(n int, every float64, asset, ref bool) []req {
		var rs []req
		for i := range n {
			rs = append(rs, req{float64(i) * every, false, ref})
			if asset {
				rs = append(rs, req{float64(i)*every + 0.5, true, ref})
			}
		}
		return rs
	}
	for _, tc := range []struct {
		name string
		reqs []req
		want bool
	}{
		{"one tool request, nothing else (the spread crawler)", []req{{0, false, false}}, false},
		{"one tool request with a forged site Referer", []req{{0, false, true}}, false},
		{"two tool requests a minute apart (the spread crawler at most)", []req{{0, false, false}, {60, false, false}}, false},
		{"a page, then a tool clicked from it (assets cached)", []req{{0, false, false}, {40, false, true}}, true},
		{"a page and its assets", []req{{0, false, false}, {0.3, true, true}, {0.4, true, true}}, true},
		{"three pages over three minutes, no assets (cached)", []req{{0, false, false}, {90, false, false}, {180, false, false}}, true},
		{"three pages within a minute, no assets, no referer", []req{{0, false, false}, {20, false, false}, {40, false, false}}, false},
		{"a concentrated crawler: 600 pages in ten minutes, with assets and site referers", many(600, 1, true, true), false},
		{"a busy reader: 40 pages and assets over ten minutes", many(40, 15, true, true), true},
	} {
		var b AddressBehaviour
		for _, r := range tc.reqs {
			b.Observe(t0+int64(r.at*float64(time.Second)), r.asset, r.ref)
		}
		if got := b.Reader(); got != tc.want {
			t.Errorf("%s: reader %v, want %v (%+v)", tc.name, got, tc.want, b)
		}
		if b.Requests != len(tc.reqs) {
			t.Errorf("%s: %d requests counted, want %d", tc.name, b.Requests, len(tc.reqs))
		}
	}
}

// TestCrawlerRatesLeaveOutReaders: people whose Chrome asks for zh-CN read
// the site (a page and its two assets per visit, 21 requests a minute) from
// an hour before the window to its end, and a crawler with the same
// fingerprint bursts at 500 requests a minute for 20 minutes. The
// fingerprint's own counts, the obvious rates, say it rose from 210 to 5,210
// per 10 minutes; the crawler's rates leave the readers out, in the baseline
// (judged on what each address did there) as in the window: from 0 to 5,000,
// the same set as its addresses and requests.
func TestCrawlerRatesLeaveOutReaders(t *testing.T) {
	from, to := t0, t0.Add(time.Hour)
	tr := NewTraffic(sources.Site{}, from, to)
	const crawlerUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"
	var rs []sources.Request
	add := func(at time.Time, ip, path string, origin sources.Origin) {
		p, q, _ := strings.Cut(path, "?")
		rs = append(rs, sources.Request{Time: at, ClientIP: netip.MustParseAddr(ip), Method: "GET", Path: p, Query: q, Status: 200,
			UserAgent: crawlerUA, Lang: "zh-cn", LoggedIn: sources.LoggedInNo, Origin: origin, TLS: true})
	}
	visit := 0
	for at := from.Add(-time.Hour); at.Before(to); at = at.Add(time.Minute) {
		for k := range 7 {
			ip := fmt.Sprintf("172.16.%d.%d", visit/250, visit%250+1)
			visit++
			start := at.Add(time.Duration(k) * 8 * time.Second)
			add(start, ip, fmt.Sprintf("/wiki/Article_%d", visit), sources.OriginUpstream)
			add(start.Add(300*time.Millisecond), ip, "/static/skin.css", sources.OriginStatic)
			add(start.Add(400*time.Millisecond), ip, "/static/wiki.js", sources.OriginStatic)
		}
	}
	burst := from.Add(20 * time.Minute)
	for i := range 20 * 500 {
		add(burst.Add(time.Duration(i)*20*time.Minute/(20*500)), spreadIPs(i), fmt.Sprintf("/w/index.php?title=P%d&action=history", i), sources.OriginUpstream)
	}
	observeInOrder(tr, rs)
	f := FactsOf[CrawlerBurstFacts](oneCrawler(t, tr, from, to))
	if f.FingerprintReaders != 7*60 || f.Requests != 20*500 {
		t.Errorf("%d readers and %d crawler requests in the window, want 420 and 10,000", f.FingerprintReaders, f.Requests)
	}
	if f.PeakPer10m != 5000 || !f.BaselinePer10m.OK || f.BaselinePer10m.V != 0 {
		t.Errorf("the crawler rose from %v to %v per 10 minutes, want 0 to 5,000 (the fingerprint's, readers in: 210 to 5,210)", f.BaselinePer10m, f.PeakPer10m)
	}
}

// TestCrawlerPerMinuteKeptUntilNextRequest: the crawler's rates are built
// once and kept, so they must be dropped when a request comes: readers
// visit the site from before the window (a page and its asset a minute),
// a crawler sends twelve pages a minute in it; its rates are its twelve. A reader
// and the crawler then send more in one minute: the rates asked for again
// count the crawler's new requests and not the reader's, where the rates
// kept from before would not.
func TestCrawlerPerMinuteKeptUntilNextRequest(t *testing.T) {
	from, to := t0, t0.Add(30*time.Minute)
	tr := NewTraffic(sources.Site{}, from, to)
	const ua = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"
	req := func(at time.Time, ip, path string) sources.Request {
		return sources.Request{Time: at, ClientIP: netip.MustParseAddr(ip), Method: "GET", Path: path, Status: 200,
			UserAgent: ua, Lang: "zh-cn", LoggedIn: sources.LoggedInNo, Origin: sources.OriginUpstream, TLS: true}
	}
	var rs []sources.Request
	for m := -20; m < 30; m++ {
		at := from.Add(time.Duration(m) * time.Minute)
		reader := fmt.Sprintf("172.16.0.%d", m+21)
		rs = append(rs, req(at, reader, "/wiki/Article"), req(at.Add(time.Second), reader, "/static/skin.css"))
		if m >= 0 {
			for i := range 12 {
				rs = append(rs, req(at.Add(time.Duration(i)*5*time.Second), "10.0.0.7", "/w/index.php"))
			}
		}
	}
	observeInOrder(tr, rs)
	c := tr.Clusters()[0]
	minute := func(m int) int64 { return from.Add(time.Duration(m)*time.Minute).Unix() / 60 }
	if got := c.CrawlerPerMinute(); got[minute(-5)] != 0 || got[minute(5)] != 12 {
		t.Fatalf("crawler rates %d before the window, %d in it; want 0 and 12", got[minute(-5)], got[minute(5)])
	}
	at := from.Add(5*time.Minute + 30*time.Second)
	observeInOrder(tr, []sources.Request{req(at, "172.16.0.26", "/wiki/Other"), req(at, "10.0.0.7", "/w/index.php")})
	if got := c.CrawlerPerMinute()[minute(5)]; got != 13 {
		t.Errorf("crawler rate %d after one more crawler and reader request, want 13", got)
	}
}

// TestApartPerMinuteOutsideItsMinutes: the people's requests are summed by
// the minute over the span of the fingerprint's minutes; a run outside it
// (which the aggregation never makes, but a joined or hand-built cluster
// could) is still taken out, as the map did, and a fingerprint seen on two
// days far apart counts its people's minutes in the map alone.
func TestApartPerMinuteOutsideItsMinutes(t *testing.T) {
	const m0 = int64(29_000_000)
	reader := func(runs ...minuteRun) *AddressBehaviour {
		return &AddressBehaviour{Requests: 2 * len(runs), Assets: len(runs), Pages: len(runs), arrivals: runs}
	}
	for _, tc := range []struct {
		name    string
		minutes []int64
		runs    []minuteRun
		want    map[int64]int
	}{
		{"a run in the span and one past it", []int64{m0, m0 + 1, m0 + 2},
			[]minuteRun{{int32(m0 + 1), 2}, {int32(m0 + 9), 3}}, map[int64]int{m0: 5, m0 + 1: 3, m0 + 2: 5, m0 + 9: -3}},
		{"two days apart", []int64{m0, m0 + 2880},
			[]minuteRun{{int32(m0), 1}, {int32(m0 + 2880), 4}}, map[int64]int{m0: 4, m0 + 2880: 1}},
	} {
		c := &Cluster{Key: request.ClusterKey{UA: "Chrome"}, minutes: map[int64]*clusterMinute{},
			IPs: map[netip.Addr]*AddressBehaviour{netip.MustParseAddr("192.0.2.1"): reader(tc.runs...)}}
		for _, m := range tc.minutes {
			c.minutes[m] = &clusterMinute{arrived: 5}
		}
		if got := c.CrawlerPerMinute(); !maps.Equal(got, tc.want) {
			t.Errorf("%s: crawler rates %v, want %v", tc.name, got, tc.want)
		}
	}
}
