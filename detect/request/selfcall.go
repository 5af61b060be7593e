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

// Sender is who sent a request, as a client fingerprint counts it: a client
// of the site, or one of the two senders that are not (the proxy's health
// probe and the site calling itself). detect's Traffic and the scan's
// profiles tell them apart by SenderOf alone.
type Sender uint8

const (
	// SentByClient: a client of the site, counted under its fingerprint.
	SentByClient Sender = iota
	// SentByProbe: the proxy's health check (ClassHealth), which would blur
	// every fingerprint it joined.
	SentByProbe
	// SentBySite: the site calling its own API (SelfCall); detect counts
	// these apart and judges them by self_amplification.
	SentBySite
)

// SenderOf says who sent r, a request of path class class: the health check
// and the site's calls to its own API are no client's.
func SenderOf(class PathClass, r *sources.Request) Sender {
	switch {
	case class == ClassHealth:
		return SentByProbe
	case class == ClassAPI && SelfCall(r):
		return SentBySite
	}
	return SentByClient
}

// FromClient reports whether a request of path class class came from a
// client of the site (SenderOf). Fingerprints, their rises and the site's
// request rate count clients only.
func FromClient(class PathClass, r *sources.Request) bool {
	return SenderOf(class, r) == SentByClient
}
