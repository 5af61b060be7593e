package sources

import (
	"net/netip"
	"time"
)

// Origin says who produced a response: PHP behind the reverse proxy, the proxy
// itself (an error page such as "no healthy upstream"), or a static/cached file.
type Origin uint8

const (
	// OriginUnknown is used when the log line carries no response headers.
	OriginUnknown Origin = iota
	// OriginUpstream is a response proxied from php-fpm (Caddy adds Via; PHP adds X-Powered-By).
	OriginUpstream
	// OriginProxy is a response Caddy made itself: 5xx, or a rate limit's 429,
	// without upstream headers.
	OriginProxy
	// OriginStatic is a response served by Caddy from disk or cache without PHP.
	OriginStatic
)

func (o Origin) String() string {
	switch o {
	case OriginUpstream:
		return "upstream"
	case OriginProxy:
		return "proxy"
	case OriginStatic:
		return "static"
	}
	return "unknown"
}

// Cache is what a response's cache headers (Cache-Status, X-Cache, Age) say
// about a cache between the client and PHP: a verdict, not the header text,
// so a request costs one byte for it.
type Cache uint8

const (
	// CacheUnknown: no cache header was logged, or none said hit or miss.
	CacheUnknown Cache = iota
	// CacheHit: a cache answered from its store; PHP did not run.
	CacheHit
	// CacheMiss: a cache was asked and passed the request on to PHP.
	CacheMiss
)

func (c Cache) String() string {
	switch c {
	case CacheHit:
		return "hit"
	case CacheMiss:
		return "miss"
	}
	return "unknown"
}

// LoggedIn is tri-state because Caddy redacts Cookie values unless log_credentials
// is on: a request may carry a cookie we cannot read.
type LoggedIn uint8

const (
	// LoggedInUnknown: a Cookie header was present but its value was REDACTED and
	// no configured pattern could be checked.
	LoggedInUnknown LoggedIn = iota
	// LoggedInNo: no cookie, or a readable cookie without the session pattern.
	LoggedInNo
	// LoggedInYes: the configured logged-in cookie pattern was found.
	LoggedInYes
)

func (l LoggedIn) String() string {
	switch l {
	case LoggedInNo:
		return "no"
	case LoggedInYes:
		return "yes"
	}
	return "unknown"
}

// Request is the compact record extracted from one access-log line. Every string
// in it comes from the client and is attacker-controlled.
type Request struct {
	Time     time.Time // when Caddy logged the line (the response end)
	ClientIP netip.Addr
	Method   string
	Host     string
	Path     string // URI path, still percent-encoded as logged
	Query    string // raw query without '?'
	Status   int    // 0 when the client went away before a response (never in Caddy 2.11)
	Duration float64
	Size     int64

	UserAgent string
	// Lang is the primary Accept-Language tag, lower-cased ("zh-cn"), "" if absent.
	Lang     string
	LoggedIn LoggedIn
	// HasCookie is true when a Cookie header was present at all.
	HasCookie bool
	// Authorization is true when an Authorization header was present (its
	// value, REDACTED unless log_credentials, is never read): the client
	// presented an account's credentials (HTTP Basic with an app password,
	// a Bearer token), as the site's own sync and API clients do.
	Authorization bool
	// SecChUa is true when the client sent the Sec-Ch-Ua client hint (Chromium
	// does, but only over HTTPS: browsers send client hints to secure origins).
	SecChUa bool
	// TLS is true when the request came over HTTPS (Caddy logs a "tls" object).
	TLS    bool
	Origin Origin
	// Cache is the cache's verdict where the response's headers were logged.
	Cache Cache

	// SiteReferer is true when the Referer names the request's own host: the
	// client came from one of the site's pages (a click, or a page's asset).
	// Only this is kept, not the URL, so a request stays small.
	SiteReferer bool
}

// Start is when the request arrived: the log time minus its duration.
func (r *Request) Start() time.Time {
	return r.Time.Add(-time.Duration(r.Duration * float64(time.Second)))
}
