package simulate

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
)

// Variation by seed (issue 25): the scenarios were written beside the
// detectors, so each fixed fingerprint, spread and header habit is one the
// detectors were tuned on. From seed 2 on, a scenario varies what it kept
// fixed, drawn from the seed: the crawler's browser version, the set,
// order and switching of a rotating flood's fingerprints, its share of
// IPv6 addresses, how densely an IPv6 crawl packs addresses into a /64,
// whether the page cache says Cache-Status where no cache mechanism is
// under test, the bundle's display zone, and, for a scenario that asks
// (Scenario.VaryCookieLog), whether the access log keeps the Cookie header
// whole, redacted or not at all. Seed 1 is each scenario as
// written (its outputs are the reference ones). truth.json lists what was
// varied.

// displayZones are the zones a varied bundle is displayed in; evidence
// times are absolute, so the zone must move no finding.
var displayZones = []string{"Asia/Seoul", "UTC", "America/Chicago", "Europe/Berlin", "Asia/Tokyo", "America/Sao_Paulo"}

// browserVersion finds a browser's major version in a User-Agent.
var browserVersion = regexp.MustCompile(`(Chrome|Firefox|Edg|Version)/(\d+)|rv:(\d+)`)

// varyBySeed varies sc for seed (nothing for seed 1) and says what it
// changed.
func (sc *Scenario) varyBySeed(seed int64) []string {
	if seed == 1 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 90))
	var said []string
	zone := displayZones[rng.IntN(len(displayZones))]
	if zone != sc.zone() {
		sc.Timezone = zone
		said = append(said, "display zone "+zone)
	}
	if c := sc.Crawler; c != nil {
		v := *c
		switch {
		case len(v.Agents) > 1:
			agents := append([]CrawlerAgent(nil), v.Agents...)
			rng.Shuffle(len(agents), func(i, j int) { agents[i], agents[j] = agents[j], agents[i] })
			keep := max(3, len(agents)-rng.IntN(len(agents)/2+1))
			v.Agents = agents[:min(keep, len(agents))]
			v.AgentSwitch = 0.1 + 0.5*rng.Float64()
			said = append(said, fmt.Sprintf("%d rotating fingerprints (of %d), switching %.0f%% of attempts", len(v.Agents), len(agents), 100*v.AgentSwitch))
		case IsBrowserAgent(v.UserAgent):
			shift := 1 + rng.IntN(4)
			v.UserAgent = shiftVersions(v.UserAgent, shift)
			said = append(said, "user agent "+v.UserAgent)
		}
		if v.IPv6Share > 0 {
			v.IPv6Share = 0.15 + 0.6*rng.Float64()
			said = append(said, fmt.Sprintf("%.0f%% IPv6 addresses", 100*v.IPv6Share))
		}
		if v.IPv6 && v.SharedPrefixShare < 1 && len(v.Addresses) == 0 {
			v.SharedPrefixShare = 0.9 * rng.Float64()
			said = append(said, fmt.Sprintf("%.0f%% of fresh IPv6 addresses in the previous one's /64", 100*v.SharedPrefixShare))
		}
		if n := len(v.Addresses); n > 3 {
			// A scraper on hosts of its own: how many of them, and so over
			// how many networks, is the seed's.
			addrs := append([]string(nil), v.Addresses...)
			rng.Shuffle(n, func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
			v.Addresses = addrs[:3+rng.IntN(n-2)]
			said = append(said, fmt.Sprintf("%d fixed addresses (of %d)", len(v.Addresses), n))
		}
		sc.Crawler = &v
	}
	if sc.App == AppWordPress && sc.CacheStatus == "" && sc.CachePurge == nil && rng.IntN(2) == 0 {
		sc.CacheStatus = "wpsc"
		said = append(said, "Cache-Status logged")
	}
	if sc.VaryCookieLog {
		if c := CookieLog(rng.IntN(3)); c != sc.CookieLog {
			sc.CookieLog = c
			said = append(said, "Cookie "+c.String()+" in the access log")
		}
	}
	// Drawn after the above, so that what seeds 2-5 drew before stays.
	return append(said, sc.varyHabits(rng)...)
}

// hostOffsets are the UTC offsets (seconds) of a host whose clock is set
// to local time: UTC, Seoul, Chicago, Berlin, India, Sao Paulo.
var hostOffsets = []int{0, 9 * 3600, -5 * 3600, 3600, 19800, -3 * 3600}

// crawlerLanguages are the Accept-Languages a varied crawler sends: none,
// the readers' own, and others.
var crawlerLanguages = []string{"", "ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7", "en-US,en;q=0.9", "en-US,en;q=0.5",
	"zh-CN,zh;q=0.9", "ja-JP,ja;q=0.9", "ru-RU,ru;q=0.9,en;q=0.8", "pt-BR,pt;q=0.9"}

// varyHabits varies what every scenario kept fixed beyond the crawler's
// fingerprint: the access log's dialect (ts encoding and the host's
// offset, the cache's mark, whole browser header sets, the Cookie header),
// the readers (Chrome release, share on IPv6) and the crawler's language,
// protocol, header set, pacing and address spread.
func (sc *Scenario) varyHabits(rng *rand.Rand) []string {
	var said []string
	if f := LogTime(rng.IntN(5)); f != LogTimeUnixSeconds {
		sc.LogTime = f
		sc.LogZoneOffsetS = hostOffsets[rng.IntN(len(hostOffsets))]
		if f == LogTimeISO8601 || f == LogTimeRFC3339Nano {
			said = append(said, fmt.Sprintf("access log ts as %s at UTC%+.1fh", f, float64(sc.LogZoneOffsetS)/3600))
		} else {
			said = append(said, "access log ts as "+f.String())
		}
	}
	if sc.CacheStatus == "" && sc.CachePurge == nil && rng.IntN(3) == 0 {
		sc.CacheStatus = "edge" // a cache in front of PHP that says what it did
		said = append(said, "page cache marks its answers")
	}
	if m := CacheMark(rng.IntN(3)); sc.CacheStatus != "" && m != sc.CacheMark {
		sc.CacheMark = m
		said = append(said, "page cache marked by "+m.String())
	}
	if rng.IntN(2) == 0 {
		sc.BrowserHeaders = true
		said = append(said, "whole browser header sets logged")
	}
	if c := CookieLog(rng.IntN(3)); !sc.VaryCookieLog && c != sc.CookieLog {
		sc.CookieLog = c
		said = append(said, "Cookie "+c.String()+" in the access log")
	}
	sc.ReaderChrome = strconv.Itoa(124 + rng.IntN(9))
	said = append(said, "readers on Chrome "+sc.ReaderChrome)
	if share := 0.6 * rng.Float64(); share > 0.05 {
		sc.ReaderIPv6Share = share
		said = append(said, fmt.Sprintf("%.0f%% of readers on IPv6", 100*share))
	}
	if c := sc.Crawler; c != nil {
		v := *c
		if len(v.Agents) == 0 && rng.IntN(2) == 0 {
			v.AcceptLanguage = crawlerLanguages[rng.IntN(len(crawlerLanguages))]
			said = append(said, fmt.Sprintf("crawler Accept-Language %q", v.AcceptLanguage))
		}
		if rng.IntN(3) == 0 {
			v.HTTP2 = true
			said = append(said, "crawler on HTTP/2")
		}
		if rng.IntN(3) == 0 {
			v.BrowserHeaders = true
			said = append(said, "crawler copies a browser's header set")
		}
		if v.AttemptsMin == 0 && v.RequestsPerIP < 4 {
			v.RequestsPerIP *= 0.8 + 0.8*rng.Float64()
			v.RequestsPerIP = max(v.RequestsPerIP, 1)
			said = append(said, fmt.Sprintf("crawler %.2f requests per address", v.RequestsPerIP))
		}
		if !v.IPv6 && v.IPv6Share == 0 && v.SharedPrefixShare < 0.5 {
			v.SharedPrefixShare = 0.4 * rng.Float64()
			said = append(said, fmt.Sprintf("%.0f%% of fresh IPv4 addresses in the previous one's /24", 100*v.SharedPrefixShare))
		}
		if (v.IPv6 || v.IPv6Share > 0) && rng.IntN(2) == 0 {
			v.IPv6Blocks = 1 + rng.IntN(4)
			said = append(said, fmt.Sprintf("crawler's IPv6 /64s in %d provider /32s", v.IPv6Blocks))
		}
		sc.Crawler = &v
	}
	return said
}

// IsBrowserAgent: ua names a browser whose major version can move
// (Chrome, Firefox, Safari, Edge), not a bot or a tool.
func IsBrowserAgent(ua string) bool {
	return len(ua) > 8 && ua[:8] == "Mozilla/" && browserVersion.MatchString(ua) && !botLike.MatchString(ua)
}

var botLike = regexp.MustCompile(`(?i)bot|crawl|spider|slurp`)

// shiftVersions moves every major version in ua down by shift: the same
// browser, some releases older.
func shiftVersions(ua string, shift int) string {
	return browserVersion.ReplaceAllStringFunc(ua, func(m string) string {
		sub := browserVersion.FindStringSubmatch(m)
		for i := 2; i <= 3; i++ {
			if sub[i] == "" {
				continue
			}
			n, err := strconv.Atoi(sub[i])
			if err != nil || n <= shift {
				return m
			}
			if i == 3 {
				return "rv:" + strconv.Itoa(n-shift)
			}
			return sub[1] + "/" + strconv.Itoa(n-shift)
		}
		return m
	})
}

// zone is the bundle's display zone.
func (sc *Scenario) zone() string {
	if sc.Timezone != "" {
		return sc.Timezone
	}
	return "Asia/Seoul"
}
