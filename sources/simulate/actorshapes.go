package simulate

// Actors the detectors must tell apart by behaviour, not by one header
// (issue 25): each varies what the older shapes kept fixed (browser family,
// language, address family and density per prefix, pages cheap enough to
// pass the "expensive" bar), so that a detector tuned on those shapes cannot
// pass these by construction.
func init() {
	registry["wordpress-ipv6-firefox-crawl"] = wordpressIPv6FirefoxCrawl
}

// wordpressIPv6FirefoxCrawl: a WordPress search crawl as a forged Firefox
// (no client hints are expected of Firefox, so their absence says nothing)
// with a Chrome-style Japanese Accept-Language, over IPv6 addresses packed
// several to a /64 with one to three requests each, and no low-rate walk
// before its burst: its fingerprint has no baseline of its own.
func wordpressIPv6FirefoxCrawl() Scenario {
	sc := wordpressSearchCrawl()
	sc.Name = "wordpress-ipv6-firefox-crawl"
	sc.Description = "a WordPress blog: a logged-out Firefox 157 with Accept-Language ja-JP (a Chrome habit) over " +
		"thousands of IPv6 addresses, several per /64, 1-3 requests each, walks /?s=, /wp-json/wp/v2/search and " +
		"?replytocom= from nothing at 21:40; no walk before its burst"
	c := sc.Crawler
	c.UserAgent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:157.0) Gecko/20100101 Firefox/157.0"
	c.AcceptLanguage = "ja-JP,ja;q=0.9"
	c.RequestsPerIP, c.SharedPrefixShare = 1.9, 0.65
	c.BaselineFrom, c.BaselineRate = at(2026, 11, 4, 21, 40, 0), 0
	c.Shape = []RateKnot{{2, 6}, {8, 12}, {30, 12}, {33, 0}}
	return sc
}
