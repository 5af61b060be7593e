package bundle

import "strings"

// ClientFamily is a request's client family as a pushed-down fetch counts it
// inside Loki (sources/live's LogQL computes the same with label_format): a
// coarse agent (bot, firefox, chrome, safari, other: the first whose token the
// User-Agent holds) and the first two letters of its language. A bundle's
// Pushdown.Families lists the families whose lines were pulled across the
// whole range, so the lines of a client in one of them were all read.
// lang is the Accept-Language header or its primary tag: the two agree on
// their first two letters.
func ClientFamily(userAgent, lang string) string {
	agent := "other"
	switch {
	case strings.Contains(strings.ToLower(userAgent), "bot"):
		agent = "bot"
	case strings.Contains(userAgent, "Firefox/"):
		agent = "firefox"
	case strings.Contains(userAgent, "Chrome/"):
		agent = "chrome"
	case strings.Contains(userAgent, "Safari/"):
		agent = "safari"
	}
	l := strings.TrimSpace(lang)
	if len(l) > 2 {
		l = l[:2]
	}
	return agent + "/" + strings.ToLower(l)
}
