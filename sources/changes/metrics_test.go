package changes

import (
	"testing"
	"time"
)

// kst is the reference site's zone (UTC+9).
var kst = time.FixedZone("KST", 9*3600)

var scrape0 = time.Date(2026, 10, 2, 23, 40, 0, 0, kst)

func TestCanonicalKey(t *testing.T) {
	for in, want := range map[string]string{
		"listen.backlog":                      "listen.backlog",
		"[www]listen.backlog":                 "listen.backlog",
		"php_fastcgi.health_timeout@wiki.org": "php_fastcgi.health_timeout",
		"@anon_cached.method":                 "@anon_cached.method",
		"@anon_cached.method@http://:8080":    "@anon_cached.method",
	} {
		if got := CanonicalKey(in); got != want {
			t.Errorf("CanonicalKey(%q) = %q, want %q", in, got, want)
		}
	}
}
