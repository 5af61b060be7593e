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
	if r.UserAgent != "" {
		h["User-Agent"] = []string{r.UserAgent}
	}
	if r.Lang != "" {
		h["Accept-Language"] = []string{r.Lang}
	}
	if r.SecChUa {
		h["Sec-Ch-Ua"] = []string{`"Chromium"`}
	}
	if r.SiteReferer {
		// The site's root on the request's own host and scheme: what a
		// zone's Referer condition compares (the log keeps no more).
		scheme := "http://"
		if r.TLS {
			scheme = "https://"
		}
		h["Referer"] = []string{scheme + refererHost(r.Host) + "/"}
	}
	switch {
	case r.LoggedIn == sources.LoggedInYes && loggedIn != "":
		h["Cookie"] = []string{loggedIn}
	case r.LoggedIn == sources.LoggedInUnknown && r.HasCookie:
		h["Cookie"] = []string{"REDACTED"}
	case r.HasCookie:
		h["Cookie"] = []string{"aftermath_replay=1"}
	}
	return h
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
