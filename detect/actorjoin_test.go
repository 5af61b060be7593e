package detect

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"sort"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestRotatingFloodIsOneActor: a credential-stuffing flood rotates eight
// browser fingerprints over about 15,000 IPv4 and IPv6 addresses, most of
// which come back minutes later. One fingerprint at a time it is seven
// crawlers of about 2,000 addresses each, and an address that posted four
// times over five minutes reads like a person who dwelt; joined by what the
// parts did (the same two endpoints, by POST, at the same time), it is one
// actor with its addresses and its onset (make accuracy runs five seeds).
func TestRotatingFloodIsOneActor(t *testing.T) {
	t.Parallel()
	for _, o := range []simulate.Options{{Scenario: "credential-stuffing", Seed: 4}} {
		t.Run(fmt.Sprintf("seed %d", o.Seed), func(t *testing.T) {
			res, truth := simulateBundle(t, o)
			var crawlers []*Finding
			for i := range res.Findings {
				if res.Findings[i].Kind == KindCrawlerBurst {
					crawlers = append(crawlers, &res.Findings[i])
				}
			}
			if len(crawlers) != 1 {
				for _, f := range crawlers {
					t.Errorf("%s: %s", f.ID, f.Summary)
				}
				t.Fatalf("%d crawler findings, want the one flood", len(crawlers))
			}
			f := crawlers[0]
			facts := FactsOf[CrawlerBurstFacts](f)
			want := float64(truth.Crawler.Window.DistinctIPs)
			if e := math.Abs(float64(facts.DistinctIPs)-want) / want; e > 0.05 {
				t.Errorf("%d addresses, truth %v: off by %.1f%%", facts.DistinctIPs, want, 100*e)
			}
			onset := mustTime(t, truth.Trigger.Onset)
			if d := f.Start.Sub(onset); d.Abs() > 2*time.Minute {
				t.Errorf("onset %v, truth %v", f.Start, onset)
			}
			if f.Fingerprint == nil || f.Fingerprint.Method != "POST" {
				t.Errorf("fingerprint %+v: want method POST", f.Fingerprint)
			}
			if n := len(f.Fingerprint.UserAgents); n < 3 {
				t.Errorf("user agents %v: want the rotation's", f.Fingerprint.UserAgents)
			}
			if f.Role != RoleTrigger {
				t.Errorf("role %s, want trigger", f.Role)
			}
		})
	}
}

// TestSameTimeIsNotOneActor: two automated clients rise in the same
// minutes, both a Chrome without client hints and without assets, in two
// languages, one posting a login form from many addresses, the other
// walking searches: what they share is the time and the browser, not what
// they did, and they stay two crawlers. A
// third fingerprint posts the same form at the same time from as many
// addresses but fetches the site's assets first, as a crowd of people
// logging in does: no crawler, and not part of the flood.
func TestSameTimeIsNotOneActor(t *testing.T) {
	from, to := t0, t0.Add(time.Hour)
	tr := NewTraffic(sources.Site{}, from, to)
	const (
		chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
		safari = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15"
	)
	var rs []sources.Request
	addr := 0
	next := func() netip.Addr {
		addr++
		return nthAddr(addr)
	}
	req := func(at time.Time, ip netip.Addr, ua, lang, method, path, query string, dur float64) sources.Request {
		return sources.Request{Time: at.Add(time.Duration(dur * float64(time.Second))), ClientIP: ip, Method: method, Path: path, Query: query,
			Status: 200, UserAgent: ua, Lang: lang, LoggedIn: sources.LoggedInNo, Origin: sources.OriginUpstream, TLS: true, Duration: dur}
	}
	for at := from.Add(-time.Hour); at.Before(to); at = at.Add(time.Minute) {
		// ordinary readers all along: a page and its assets
		for k := range 20 {
			ip, ts := next(), at.Add(time.Duration(k)*3*time.Second)
			rs = append(rs, req(ts, ip, chrome, "en-us", "GET", fmt.Sprintf("/2026/10/post-%d/", k%9), "", 0.05),
				req(ts.Add(time.Second), ip, chrome, "en-us", "GET", "/wp-content/themes/t/style.css", "", 0))
		}
		if at.Before(from.Add(15*time.Minute)) || !at.Before(from.Add(45*time.Minute)) {
			continue
		}
		for k := range 60 {
			ts := at.Add(time.Duration(k) * time.Second)
			rs = append(rs, req(ts, next(), chrome, "en-us", "POST", "/wp-login.php", "", 0.3),
				req(ts.Add(time.Second/3), next(), chrome, "de-de", "GET", "/", fmt.Sprintf("s=term%d", k), 0.3))
			if k%2 == 0 {
				ip := next()
				rs = append(rs, req(ts, ip, safari, "fr-fr", "GET", "/wp-login.php", "", 0.05),
					req(ts.Add(time.Second), ip, safari, "fr-fr", "GET", "/wp-content/themes/t/style.css", "", 0),
					req(ts.Add(20*time.Second), ip, safari, "fr-fr", "POST", "/wp-login.php", "", 0.3))
			}
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Start().Before(rs[j].Start()) })
	for i := range rs {
		tr.Observe(&rs[i])
	}
	ev := &Evidence{From: from, To: to, BaselineFrom: from.Add(-time.Hour), BaselineTo: from, Traffic: tr, Loc: time.UTC}
	fs, check, err := crawlerDetector{}.Detect(context.Background(), ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Finding{}
	for i := range fs {
		got[fs[i].Cluster.Lang] = &fs[i]
		if n := len(fs[i].Fingerprint.UserAgents); n > 0 {
			t.Errorf("%s was joined with %v", fs[i].Cluster, fs[i].Fingerprint.UserAgents)
		}
	}
	if len(fs) != 2 || got["en-us"] == nil || got["de-de"] == nil {
		for _, f := range fs {
			t.Errorf("%s: %s", f.Cluster, f.Summary)
		}
		t.Fatalf("%d crawler findings, want the login flood and the search crawl apart; check: %s", len(fs), check.Reason)
	}
	if m := got["en-us"].Fingerprint.Method; m != "POST" {
		t.Errorf("the login flood's method %q, want POST", m)
	}
	if m := got["de-de"].Fingerprint.Method; m != "" {
		t.Errorf("the search crawl's method %q, want none", m)
	}
	if n := FactsOf[CrawlerBurstFacts](got["en-us"]).DistinctIPs; n != 30*60 {
		t.Errorf("the login flood: %d addresses, want %d", n, 30*60)
	}
}
