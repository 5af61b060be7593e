package detect

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

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
