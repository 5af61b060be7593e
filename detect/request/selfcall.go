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

// FromClient reports whether a request of path class class came from a
// client of the site: the proxy's health check (ClassHealth) and the site
// calling its own API (SelfCall) did not. Fingerprints, their rises and the
// site's request rate count clients only; detect (Traffic.Observe) and the
// scan's profiles leave the others out by this.
func FromClient(class PathClass, r *sources.Request) bool {
	return class != ClassHealth && !(class == ClassAPI && SelfCall(r))
}
