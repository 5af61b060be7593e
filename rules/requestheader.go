package rules

import (
	"net"
	"net/http"
	"strings"

	"github.com/aftermath-forensics/aftermath/sources"
)

// RequestHeader rebuilds, from the log's record of a request, the headers a
// zone's matchers read. The log keeps less than the request had, so headers
// are rebuilt from what was parsed: Accept-Language is its first entry (all a
// zone's regular expression reads), the Cookie header carries loggedIn (a
// value the site's logged-in pattern matches, from LoggedInCookie: never a
// real one) exactly when the reader found the pattern, and an unreadable (REDACTED) cookie stays unreadable, which
// the backtest reports as login unknown, and a Referer from the site is its
// root on the same host. The backtest matches these headers
// with Caddy's matchers and a replay sends them, so both see the same request.
func RequestHeader(r *sources.Request, loggedIn string) http.Header {
	h := http.Header{}
	fillRequestHeader(h, new(headerValues), r, loggedIn)
	return h
}

// headerValues hold the one value of each header RequestHeader rebuilds: the
// header's slices are one-long windows on it, so that filling a header
// allocates no slice.
type headerValues [5]string

// fillRequestHeader puts into h, empty, the headers RequestHeader rebuilds
// for r, their values held in vals.
func fillRequestHeader(h http.Header, vals *headerValues, r *sources.Request, loggedIn string) {
	set := func(i int, key, value string) {
		vals[i] = value
		h[key] = vals[i : i+1 : i+1]
	}
	if r.UserAgent != "" {
		set(0, "User-Agent", r.UserAgent)
	}
	if r.Lang != "" {
		set(1, "Accept-Language", r.Lang)
	}
	if r.SecChUa {
		set(2, "Sec-Ch-Ua", `"Chromium"`)
	}
	if r.SiteReferer {
		// The site's root on the request's own host and scheme: what a
		// zone's Referer condition compares (the log keeps no more).
		scheme := "http://"
		if r.TLS {
			scheme = "https://"
		}
		set(3, "Referer", scheme+refererHost(r.Host)+"/")
	}
	switch {
	case r.LoggedIn == sources.LoggedInYes && loggedIn != "":
		set(4, "Cookie", loggedIn)
	case r.LoggedIn == sources.LoggedInUnknown && r.HasCookie:
		set(4, "Cookie", "REDACTED")
	case r.HasCookie:
		set(4, "Cookie", "aftermath_replay=1")
	}
}

// LoggedInCookie is the Cookie value RequestHeader gives a logged-in request
// on a site whose logged-in pattern is pattern: a value the pattern matches,
// as a plain substring ("wikiUserID=1") or as an expression
// ("wordpress_logged_in_000…0=1"); "" when the pattern is unknown or no
// printable value matches it.
func LoggedInCookie(pattern string) string {
	v, _ := sources.CompileCookiePattern(pattern).Example()
	return v
}

// refererHost is how a browser writes the request's host in a Referer: no
// port (the zone's patterns use {http.request.host}, which has none) and an
// IPv6 literal in brackets, which the patterns do not match, as in Caddy.
func refererHost(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		return "[" + host + "]"
	}
	return host
}
