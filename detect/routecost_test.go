package detect

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestCostMeasuredNotNamed: the crawler's verdict follows what its pages cost,
// not what they are called. Paths that look like MediaWiki's uncacheable
// tools, answered from a cache (or by PHP, cheaply), are cheap; WordPress
// search and comment-reply links that PHP answers slowly are expensive.
func TestCostMeasuredNotNamed(t *testing.T) {
	t.Parallel()
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
			t.Parallel()
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
			big := 0
			for _, r := range fs[0].Routes {
				if r.Requests <= 1000 {
					continue
				}
				big++
				if !r.Expensive || r.MeasuredOver != MeasuredBaseline || r.PHPPerRequest < 0.4 {
					t.Errorf("route %+v: want expensive, measured over the baseline", r)
				}
			}
			if big == 0 {
				t.Errorf("no route of the crawler carries over 1,000 requests: the check above judged none: %+v", fs[0].Routes)
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
	t.Parallel()
	res, truth := simulateBundle(t, simulate.Options{Scenario: "wordpress-search-crawl", Seed: 1})
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

// caddyCacheLine is one access-log line as Caddy 2.11 writes it behind a
// cache: resp_headers are arrays of strings, and a cache hit replays the
// X-Powered-By PHP sent when the copy was made.
func caddyCacheLine(at time.Time, ip, ua, lang, uri string, dur float64, resp []byte) string {
	req, _ := json.Marshal(cacheLineRequest{RemoteIP: ip, RemotePort: "51234", ClientIP: ip, Proto: "HTTP/2.0", Method: "GET",
		Host: "blog.example.net", URI: uri, Headers: cacheLineHeaders{UserAgent: []string{ua}, AcceptLanguage: []string{lang}},
		TLS: cacheLineTLS{Resumed: false, Version: 772, Proto: "h2", ServerName: "blog.example.net"}})
	return fmt.Sprintf(`{"level":"info","ts":%.6f,"logger":"http.log.access.log0","msg":"handled request","request":%s,"bytes_read":0,"user_id":"","duration":%.6f,"size":24812,"status":200,"resp_headers":%s}`,
		float64(at.UnixMicro())/1e6, req, dur, resp)
}

// cacheLineRequest is caddyCacheLine's request object, its fields in the
// order of their JSON names, as json.Marshal writes a map's keys (a map per
// line was most of the time spent writing the log).
type cacheLineRequest struct {
	ClientIP   string           `json:"client_ip"`
	Headers    cacheLineHeaders `json:"headers"`
	Host       string           `json:"host"`
	Method     string           `json:"method"`
	Proto      string           `json:"proto"`
	RemoteIP   string           `json:"remote_ip"`
	RemotePort string           `json:"remote_port"`
	TLS        cacheLineTLS     `json:"tls"`
	URI        string           `json:"uri"`
}

type cacheLineHeaders struct {
	AcceptLanguage []string `json:"Accept-Language"`
	UserAgent      []string `json:"User-Agent"`
}

type cacheLineTLS struct {
	Proto      string `json:"proto"`
	Resumed    bool   `json:"resumed"`
	ServerName string `json:"server_name"`
	Version    int    `json:"version"`
}

// TestCacheHeadersDecideCost: a crawler walks pages whose names say
// "expensive, uncacheable" (WordPress search, MediaWiki history) and whose
// responses all carry PHP's marks (X-Powered-By, Via). Most of them were
// answered by a cache in front of PHP (Souin inside Caddy, Varnish behind
// it), which the logged cache headers say; the few that missed were slow.
// Counted as PHP's, the templates look expensive and uncacheable and the
// crawler harmful; counted as the cache's, PHP answered a quarter of them
// and the crawler read cacheable pages. Without cache headers in the log
// (the same durations) nothing tells the hits apart, and the verdict is the
// expensive one; with headers saying every answer bypassed the cache, it is
// too.
func TestCacheHeadersDecideCost(t *testing.T) {
	t.Parallel()
	souinHit := map[string][]string{"Cache-Status": {"Souin; hit; ttl=1800; key=GET-https-blog.example.net-/?s=term; detail=DEFAULT"},
		"Age": {"95"}, "X-Powered-By": {"PHP/8.3.13"}, "Server": {"Caddy"}}
	souinMiss := map[string][]string{"Cache-Status": {"Souin; fwd=uri-miss; stored; key=GET-https-blog.example.net-/?s=term"},
		"X-Powered-By": {"PHP/8.3.13"}, "Server": {"Caddy"}}
	souinBypass := map[string][]string{"Cache-Status": {"Souin; fwd=bypass; detail=UNCACHEABLE-AUTHORIZATION"},
		"X-Powered-By": {"PHP/8.3.13"}, "Server": {"Caddy"}}
	varnishHit := map[string][]string{"Via": {"1.1 varnish (Varnish/7.5), 0.0 Caddy"}, "X-Cache": {"HIT"}, "Age": {"311"}, "X-Powered-By": {"PHP/8.2.20"}}
	varnishMiss := map[string][]string{"Via": {"1.1 varnish (Varnish/7.5), 0.0 Caddy"}, "X-Cache": {"MISS"}, "Age": {"0"}, "X-Powered-By": {"PHP/8.2.20"}}
	plain := map[string][]string{"Via": {"0.0 Caddy"}, "X-Powered-By": {"PHP/8.3.13"}}
	search := []string{"/?s=caddy+php", "/?s=fpm+backlog", "/?s=wordpress+cache"}
	history := []string{"/w/index.php?title=Seoul&action=history", "/w/index.php?title=Busan&action=history"}
	tests := []struct {
		name      string
		uris      []string
		hit, miss map[string][]string // three in four answers hit, the rest miss
		want      bool                // a harmful crawler
		hitShare  float64             // the crawler's template's cache_hit_share (-1: not logged)
	}{
		{"WordPress search mostly answered by Souin", search, souinHit, souinMiss, false, 0.75},
		{"MediaWiki history mostly answered by Varnish", history, varnishHit, varnishMiss, false, 0.75},
		{"the same search, no cache headers logged", search, plain, plain, true, -1},
		{"WordPress search that bypassed the cache", search, souinBypass, souinBypass, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			type line struct {
				at   time.Time
				text string
			}
			var lines []line
			// Each answer's resp_headers, encoded once.
			encoded := func(h map[string][]string) []byte {
				b, err := json.Marshal(h)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			hitJSON, missJSON, plainJSON := encoded(tt.hit), encoded(tt.miss), encoded(plain)
			add := func(at time.Time, d time.Duration, n int, ip func(int) string, ua, lang string, uri func(int) string,
				answer func(int) (float64, []byte)) {
				for i := range n {
					dur, resp := answer(i)
					when := at.Add(time.Duration(i) * d / time.Duration(n))
					lines = append(lines, line{when, caddyCacheLine(when, ip(i), ua, lang, uri(i), dur, resp)})
				}
			}
			posts := func(i int) string { return fmt.Sprintf("/2026/10/post-%d/", i%30) }
			readerAnswer := func(int) (float64, []byte) { return 0.1, plainJSON }
			crawl := func(i int) string { return tt.uris[i/4%len(tt.uris)] } // each URL: three hits, one miss
			crawlAnswer := func(i int) (float64, []byte) {
				if i%4 != 0 {
					return 0.003, hitJSON
				}
				return 1.6, missJSON
			}
			add(t0.Add(-3*time.Hour), 4*time.Hour, 24000, fewIPs, chrome125, "ko-KR,ko;q=0.9", posts, readerAnswer)
			add(t0.Add(-3*time.Hour), 3*time.Hour, 90, spreadIPs, firefox, "en-US,en;q=0.5", crawl, crawlAnswer)
			add(t0.Add(15*time.Minute), 30*time.Minute, 6000, spreadIPs, firefox, "en-US,en;q=0.5", crawl, crawlAnswer)
			sort.SliceStable(lines, func(i, j int) bool { return lines[i].at.Before(lines[j].at) })
			// The log's 30,000 lines in one buffer sized once (grown line by
			// line, then copied to bytes, it was a quarter of the test's CPU).
			size := 0
			for _, l := range lines {
				size += len(l.text) + 1
			}
			log := make([]byte, 0, size)
			for _, l := range lines {
				log = append(append(log, l.text...), '\n')
			}
			path := filepath.Join(t.TempDir(), "access.log")
			if err := os.WriteFile(path, log, 0o644); err != nil {
				t.Fatal(err)
			}
			tr := NewTraffic(sources.Site{}, t0, t0.Add(time.Hour))
			if _, err := accesslog.Read(t.Context(), []string{path}, accesslog.Options{}, &sources.Skips{}, func(b []sources.Request) error {
				for i := range b {
					tr.Observe(&b[i])
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			ev := &Evidence{From: t0, To: t0.Add(time.Hour), Traffic: tr, Loc: time.UTC}
			costs := ev.measureRoutes()
			p, q, _ := strings.Cut(tt.uris[0], "?")
			tpl := ev.Traffic.routes.canonical(ev.Traffic.routes.template(p, q))
			rc, ok := costs[tpl]
			if !ok {
				t.Fatalf("template %s not measured: %v", tpl, costs)
			}
			switch {
			case tt.hitShare < 0 && rc.CacheHitShare != nil:
				t.Errorf("%s: cache_hit_share %v with no cache header logged", tpl, *rc.CacheHitShare)
			case tt.hitShare >= 0 && (rc.CacheHitShare == nil || math.Abs(*rc.CacheHitShare-tt.hitShare) > 0.02):
				t.Errorf("%s: cache_hit_share %v, want %v", tpl, rc.CacheHitShare, tt.hitShare)
			}
			if rc.Expensive != tt.want {
				t.Errorf("%s: %+v, expensive %v, want %v", tpl, rc, rc.Expensive, tt.want)
			}
			fs, check, err := crawlerDetector{}.Detect(t.Context(), ev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if (len(fs) > 0) != tt.want {
				t.Fatalf("found %d crawler findings, want %v; check %+v", len(fs), tt.want, check)
			}
			if !tt.want && !strings.Contains(check.Reason, "cheap or cached") {
				t.Errorf("reason %q does not say the crawler read cached pages", check.Reason)
			}
		})
	}
}
