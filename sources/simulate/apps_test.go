package simulate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

// TestApplicationSites: the Laravel shop and the Nextcloud server speak
// their own routes, methods and cookies, not MediaWiki's or WordPress's,
// and the access log keeps the Cookie header as the scenario (or the seed)
// says: whole, redacted as Caddy does by default, or deleted by a log
// filter, with the config repository's Caddyfile saying the same. Where the
// log keeps it, the bundle's logged-in pattern (an expression) marks some
// requests and not every session holder.
func TestApplicationSites(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		seed     int64
		log      string
		routes   []string // every one appears in the log
		crawler  string   // every crawler request's URI starts so
	}{
		{"laravel-rotating-scraper", 1, "logged", []string{"GET /products/", "GET /api/v1/", "POST /livewire/update"}, "/products/"},
		{"laravel-rotating-scraper", 3, "redacted", []string{"GET /categories/"}, "/products/"},
		{"nextcloud-share-crawl", 3, "omitted", []string{"PROPFIND /remote.php/dav/files/", "REPORT /remote.php/dav/", "GET /ocs/v2.php/"}, "/index.php/s/"},
	} {
		t.Run(tc.scenario+"/"+tc.log, func(t *testing.T) {
			t.Parallel()
			sum := run(t, Options{Scenario: tc.scenario, Seed: tc.seed, BaselineHours: 0.25, StoredGzip: true})
			tr := readTruth(t, sum.Out)
			if tr.CookieLog != tc.log {
				t.Fatalf("truth says the Cookie is %s, want %s", tr.CookieLog, tc.log)
			}
			b, err := bundle.Open(sum.Out)
			if err != nil {
				t.Fatal(err)
			}
			pattern := sources.CompileCookiePattern(b.Manifest.Site.LoggedInCookie)
			if _, literal := pattern.Literal(); literal {
				t.Errorf("logged-in pattern %q: want an expression", b.Manifest.Site.LoggedInCookie)
			}
			seen := map[string]bool{}
			var cookies, loggedIn, redacted, crawler, crawled int
			dav207 := false
			keep := map[string]bool{"Cookie": true, "User-Agent": true, "Sec-Ch-Ua": true}
			readLines(t, filepath.Join(sum.Out, "access/access.log.gz"), keep, func(n int, raw []byte, l *line) {
				uri := l.Request.URI
				for _, other := range []string{"/w/", "title=", "/wp-", "?s=", "replytocom"} {
					if strings.Contains(uri, other) {
						t.Fatalf("line %d: %s is another application's", n, uri)
					}
				}
				for _, r := range tc.routes {
					if strings.HasPrefix(l.Request.Method+" "+uri, r) {
						seen[r] = true
					}
				}
				dav207 = dav207 || l.Request.Method == "PROPFIND" && l.Status == 207
				if c := l.Request.Headers["Cookie"]; len(c) == 1 {
					cookies++
					switch {
					case c[0] == "REDACTED":
						redacted++
					case pattern.Match([]byte(c[0])):
						loggedIn++
					}
				}
				// The crawler sends no client hints; a reader's Chrome (a
				// varied seed's readers may run the crawler's release) does.
				if ua := l.Request.Headers["User-Agent"]; len(ua) == 1 && ua[0] == tr.Crawler.Fingerprint["user_agent"] &&
					len(l.Request.Headers["Sec-Ch-Ua"]) == 0 {
					switch {
					case strings.HasPrefix(uri, tc.crawler):
						crawled++
					case !strings.HasPrefix(uri, "/robots.txt"):
						crawler++
					}
				}
			})
			for _, r := range tc.routes {
				if !seen[r] {
					t.Errorf("no %s in the log", r)
				}
			}
			if strings.HasPrefix(tc.scenario, "nextcloud") && !dav207 {
				t.Error("no PROPFIND answered 207 Multi-Status")
			}
			if crawled < 1000 || crawler > 0 {
				t.Errorf("%d requests under the crawler's User-Agent for %s, %d elsewhere", crawled, tc.crawler, crawler)
			}
			caddyfile, err := os.ReadFile(filepath.Join(sum.Out, "changes/config/Caddyfile"))
			if err != nil {
				t.Fatal(err)
			}
			switch tc.log {
			case "logged":
				if cookies == 0 || loggedIn == 0 || loggedIn*2 > cookies || redacted > 0 {
					t.Errorf("%d Cookie headers, %d logged in, %d redacted: want whole cookies, a minority logged in", cookies, loggedIn, redacted)
				}
				if !strings.Contains(string(caddyfile), "log_credentials") {
					t.Error("the Caddyfile does not set log_credentials, yet the log keeps cookies")
				}
			case "redacted":
				if cookies == 0 || redacted != cookies {
					t.Errorf("%d Cookie headers, %d redacted", cookies, redacted)
				}
			case "omitted":
				if cookies > 0 {
					t.Errorf("%d Cookie headers in a log that deletes them", cookies)
				}
				if !strings.Contains(string(caddyfile), "request>headers>Cookie delete") {
					t.Error("the Caddyfile has no filter deleting the Cookie")
				}
			}
		})
	}
}
