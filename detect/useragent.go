package detect

import (
	"strings"
)

// uaFamilies is checked in order: the first token found names the family. Order
// matters because browsers carry each other's tokens (Edge says Chrome and Safari,
// Chrome says Safari). Bots come first: they often embed a browser UA.
var uaFamilies = []struct{ token, family string }{
	{"Googlebot/", "Googlebot"},
	{"bingbot/", "Bingbot"},
	{"YandexBot/", "YandexBot"},
	{"Baiduspider", "Baiduspider"},
	{"Applebot/", "Applebot"},
	{"GPTBot/", "GPTBot"},
	{"ClaudeBot/", "ClaudeBot"},
	{"AhrefsBot/", "AhrefsBot"},
	{"SemrushBot", "SemrushBot"},
	{"facebookexternalhit/", "facebookexternalhit"},
	{"curl/", "curl"},
	{"Wget/", "Wget"},
	{"python-requests/", "python-requests"},
	{"Go-http-client/", "Go-http-client"},
	{"HeadlessChrome/", "HeadlessChrome"},
	{"Edg/", "Edge"},
	{"OPR/", "Opera"},
	{"SamsungBrowser/", "SamsungBrowser"},
	{"Whale/", "Whale"},
	{"Firefox/", "Firefox"},
	{"CriOS/", "Chrome"},
	{"Chrome/", "Chrome"},
	{"Version/", "Safari"}, // Safari puts its version in Version/x, not Safari/x
}

// UAFamily returns the user-agent family and major version ("Chrome 121"),
// "other" for unknown agents and "none" for an empty one.
func UAFamily(ua string) string {
	if ua == "" {
		return "none"
	}
	for _, f := range uaFamilies {
		i := strings.Index(ua, f.token)
		if i < 0 {
			continue
		}
		if !strings.HasSuffix(f.token, "/") {
			return f.family
		}
		rest := ua[i+len(f.token):]
		end := 0
		for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		if end == 0 {
			return f.family
		}
		return f.family + " " + rest[:end]
	}
	if strings.Contains(strings.ToLower(ua), "bot") {
		return "other bot"
	}
	return "other"
}

// splitFamily splits "Chrome 121" into "Chrome" and "121".
func splitFamily(fv string) (family, version string) {
	if i := strings.LastIndexByte(fv, ' '); i > 0 && fv[i+1] >= '0' && fv[i+1] <= '9' {
		return fv[:i], fv[i+1:]
	}
	return fv, ""
}

// chromium reports whether a family claims to be Chromium-based: such browsers
// (from version 89 on) send the Sec-Ch-Ua client hint on HTTPS requests, so its
// absence marks a forged or headless agent.
func chromium(family string) bool {
	for _, p := range []string{"Chrome", "Edge", "Opera", "Whale", "SamsungBrowser"} {
		if family == p || strings.HasPrefix(family, p+" ") {
			return true
		}
	}
	return false
}

// isBrowser reports whether the family is an interactive browser (not a bot or a
// tool): browsers fetch assets after pages.
func isBrowser(family string) bool {
	for _, p := range []string{"Chrome", "Edge", "Opera", "Whale", "SamsungBrowser", "Firefox", "Safari"} {
		if strings.HasPrefix(family, p) {
			return true
		}
	}
	return false
}
