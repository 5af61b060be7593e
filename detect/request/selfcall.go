package request

import (
	"strings"

	"github.com/aftermath-forensics/aftermath/sources"
)

// SelfCall reports whether an API request was made by the site itself: PHP
// calling its own api.php (MediaWiki/Wikibase do this to validate titles), so one
// user request holds two workers. PHP's HTTP clients announce themselves in the
// User-Agent; loopback sources are not enough (a lab binds clients to 127.x too).
func SelfCall(r *sources.Request) bool {
	ua := r.UserAgent
	return strings.HasPrefix(ua, "MediaWiki/") || strings.Contains(ua, "GuzzleHttp/") ||
		strings.HasPrefix(ua, "PHP/") || strings.HasPrefix(ua, "Wikibase")
}
