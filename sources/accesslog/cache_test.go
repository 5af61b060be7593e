package accesslog

import (
	"context"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources"
)

// TestCacheVerdict reads the cache headers of Caddy lines as Caddy logs
// them (resp_headers values are arrays of strings) from the caches PHP sites
// run: Souin/cache-handler inside Caddy (Cache-Status, its key a bare URL),
// Varnish behind Caddy (X-Cache, Age, a Via of its own and the X-Powered-By
// PHP sent when the copy was made), a CDN's "MISS, HIT", and the RFC 9211
// form with quoted parameters. The path says nothing: a WordPress search
// answered from the cache is a hit, a blog post that bypassed it is PHP's.
func TestCacheVerdict(t *testing.T) {
	souinHit := map[string]any{"Cache-Status": []string{"Souin; hit; ttl=2791; key=GET-https-blog.example.net-/?s=caddy; detail=DEFAULT"},
		"Age": []string{"9"}, "Content-Type": []string{"text/html; charset=UTF-8"}, "X-Powered-By": []string{"PHP/8.3.13"},
		"Server": []string{"Caddy"}}
	tests := []struct {
		name   string
		uri    string
		status int
		resp   map[string]any
		cache  sources.Cache
		origin sources.Origin
	}{
		{"search answered by Souin", "/?s=caddy", 200, souinHit, sources.CacheHit, sources.OriginStatic},
		{"blog post that bypassed the cache (logged-in cookie)", "/2026/10/29/php-fpm-tuning/", 200,
			map[string]any{"Cache-Status": []string{"Souin; fwd=bypass; detail=CACHE-CONTROL-EXTRACTION-ERROR"}, "Via": []string{"0.0 Caddy"},
				"X-Powered-By": []string{"PHP/8.3.13"}}, sources.CacheMiss, sources.OriginUpstream},
		{"Souin miss, stored", "/wp-json/wp/v2/search?search=x", 200,
			map[string]any{"Cache-Status": []string{"Souin; fwd=uri-miss; stored; key=GET-https-blog.example.net-/wp-json/wp/v2/search?search=x"},
				"Via": []string{"0.0 Caddy"}}, sources.CacheMiss, sources.OriginUpstream},
		// The key is the client's URL: "?q=;hit" in it must not make a miss a hit.
		{"a crawler's URL forging a hit parameter", "/?s=;hit", 200,
			map[string]any{"Cache-Status": []string{"Souin; fwd=uri-miss; stored; key=GET-https-blog.example.net-/?s=;hit, Other; hit"},
				"Via": []string{"0.0 Caddy"}}, sources.CacheMiss, sources.OriginUpstream},
		{"RFC 9211 quoted key holding ; and ,", "/?replytocom=77", 200,
			map[string]any{"Cache-Status": []string{`ExampleCache; fwd=uri-miss; key="GET /?replytocom=77;hit, x; hit"`}, "X-Powered-By": []string{"PHP/8.2"}},
			sources.CacheMiss, sources.OriginUpstream},
		{"RFC 9211 two caches, the one nearer the origin hit", "/wiki/Main_Page", 200,
			map[string]any{"Cache-Status": []string{`"Origin Shield"; hit; ttl=300`, "EdgeCache; fwd=miss; stored"}},
			sources.CacheHit, sources.OriginStatic},
		{"Varnish hit behind Caddy", "/index.php?title=Seoul&action=history", 200,
			map[string]any{"Via": []string{"1.1 varnish (Varnish/7.5), 0.0 Caddy"}, "X-Cache": []string{"HIT"}, "X-Cache-Hits": []string{"12"},
				"Age": []string{"118"}, "X-Powered-By": []string{"PHP/8.2.20"}}, sources.CacheHit, sources.OriginStatic},
		{"Varnish miss", "/w/Seoul", 200,
			map[string]any{"Via": []string{"1.1 varnish (Varnish/7.5), 0.0 Caddy"}, "X-Cache": []string{"MISS"}, "Age": []string{"0"},
				"X-Powered-By": []string{"PHP/8.2.20"}}, sources.CacheMiss, sources.OriginUpstream},
		{"Varnish pass (lower-case names)", "/wp-admin/admin-ajax.php", 200,
			map[string]any{"via": []string{"1.1 varnish (Varnish/7.5)"}, "x-cache": []string{"pass"}, "x-powered-by": []string{"PHP/8.3"}},
			sources.CacheMiss, sources.OriginUpstream},
		{"CDN shield missed, edge hit", "/2026/10/29/php-fpm-tuning/", 200,
			map[string]any{"X-Cache": []string{"MISS, HIT"}, "Via": []string{"0.0 Caddy"}}, sources.CacheHit, sources.OriginStatic},
		{"X-Cache naming a host that contains miss", "/feed/", 200,
			map[string]any{"X-Cache": []string{"HIT from cache-missoula-1"}, "Via": []string{"0.0 Caddy"}}, sources.CacheHit, sources.OriginStatic},
		{"Age alone above zero", "/feed/", 200, map[string]any{"Age": []string{"42"}, "Via": []string{"0.0 Caddy"}}, sources.CacheHit, sources.OriginStatic},
		{"Age that is no number", "/feed/", 200, map[string]any{"Age": []string{"soon"}, "Via": []string{"0.0 Caddy"}}, sources.CacheUnknown, sources.OriginUpstream},
		{"no cache header: unknown, not miss", "/?s=caddy", 200, map[string]any{"Via": []string{"0.0 Caddy"}}, sources.CacheUnknown, sources.OriginUpstream},
		{"Cache-Status without hit or fwd", "/?s=caddy", 200, map[string]any{"Cache-Status": []string{"Souin; ttl=10"}, "Via": []string{"0.0 Caddy"}},
			sources.CacheUnknown, sources.OriginUpstream},
		// An error the cache kept is still an error; who made it first is
		// not for the cache verdict to say.
		{"a stale 503 from the cache", "/", 503, map[string]any{"X-Cache": []string{"HIT"}, "Server": []string{"Caddy"}}, sources.CacheHit, sources.OriginProxy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := caddyLine(t, func(m map[string]any) {
				req(m)["uri"] = tt.uri
				req(m)["host"] = "blog.example.net"
				m["status"] = tt.status
				m["resp_headers"] = tt.resp
			})
			r, reason := parseOne(line, "")
			if reason != "" {
				t.Fatal(reason)
			}
			if r.Cache != tt.cache || r.Origin != tt.origin {
				t.Errorf("cache %v origin %v, want %v %v", r.Cache, r.Origin, tt.cache, tt.origin)
			}
			checkFastAgrees(t, []byte(line), "")
			// Escapes in a cache header send the line to the slow path,
			// which must say the same.
			escaped := strings.Replace(line, `"Cache-Status":["`, `"Cache-Status":["\u0020`, 1)
			escaped = strings.Replace(escaped, `"X-Cache":["`, `"X-Cache":["\u0020`, 1)
			if escaped != line {
				lp := newLineParser()
				var fast sources.Request
				if lp.parseFast([]byte(escaped), &fast) {
					t.Fatal("the fast path read an escaped cache header")
				}
				slow, _ := parseOne(escaped, "")
				if slow.Cache != tt.cache || slow.Origin != tt.origin {
					t.Errorf("slow path: cache %v origin %v, want %v %v", slow.Cache, slow.Origin, tt.cache, tt.origin)
				}
			}
		})
	}
}

// TestCacheVerdictSpills: a request spilled to disk and read back keeps its
// verdict, and one without a verdict costs no more bytes than before.
func TestCacheVerdictSpills(t *testing.T) {
	base, _ := parseOne(baseLine, "")
	var want []sources.Request
	var sizes []int
	for _, c := range []sources.Cache{sources.CacheUnknown, sources.CacheHit, sources.CacheMiss} {
		r := base
		r.Cache, r.TLS, r.HasCookie = c, true, true
		want = append(want, r)
		s, err := NewSpill(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(s.encode(nil, &r, 0)))
		s.Close()
	}
	if sizes[1] != sizes[0]+1 || sizes[2] != sizes[0]+1 {
		t.Errorf("spilled sizes %v: a verdict should cost one byte, none nothing", sizes)
	}
	s2, err := NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.Write(want); err != nil {
		t.Fatal(err)
	}
	var got []sources.Request
	if err := s2.Read(context.Background(), func(b []sources.Request) error { got = append(got, b...); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d back, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
