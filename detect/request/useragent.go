package request

import (
	"math/bits"
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
	// The first family of uaFamilies whose token occurs anywhere in ua wins, at
	// the token's first occurrence. One pass over ua finds every token's first
	// occurrence, instead of one strings.Index per family.
	var first [32]int32 // by family: 1 + index of the token's first occurrence, 0 if none
	for i := 0; i < len(ua); i++ {
		for m := uaTokenStarts[ua[i]]; m != 0; m &= m - 1 {
			f := bits.TrailingZeros32(m)
			if first[f] == 0 && strings.HasPrefix(ua[i:], uaFamilies[f].token) {
				first[f] = int32(i) + 1
			}
		}
	}
	for fi, f := range uaFamilies {
		if first[fi] == 0 {
			continue
		}
		if !strings.HasSuffix(f.token, "/") {
			return f.family
		}
		rest := ua[int(first[fi])-1+len(f.token):]
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

// uaTokenStarts maps a byte to the families (bits, by index in uaFamilies)
// whose token starts with it.
var uaTokenStarts = func() (t [256]uint32) {
	if len(uaFamilies) > 32 {
		panic("request: more than 32 user-agent families; widen uaTokenStarts")
	}
	for i, f := range uaFamilies {
		t[f.token[0]] |= 1 << i
	}
	return t
}()

// SplitFamily splits "Chrome 121" into "Chrome" and "121".
func SplitFamily(fv string) (family, version string) {
	if i := strings.LastIndexByte(fv, ' '); i > 0 && i+1 < len(fv) && fv[i+1] >= '0' && fv[i+1] <= '9' {
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

// IsBrowser reports whether the family is an interactive browser (not a bot or
// a tool): browsers fetch assets after pages.
func IsBrowser(family string) bool {
	for _, p := range []string{"Chrome", "Edge", "Opera", "Whale", "SamsungBrowser", "Firefox", "Safari"} {
		if strings.HasPrefix(family, p) {
			return true
		}
	}
	return false
}
