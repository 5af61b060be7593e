package simulate

import "time"

// Actors the detectors must tell apart by behaviour, not by one header
// (issue 25): each varies what the older shapes kept fixed (browser family,
// language, address family and density per prefix, pages cheap enough to
// pass the "expensive" bar), so that a detector tuned on those shapes cannot
// pass these by construction.
func init() {
	registry["wordpress-ipv6-firefox-crawl"] = wordpressIPv6FirefoxCrawl
	registry["python-scraper-among-bots"] = pythonScraperAmongBots
	registry["steady-scraper-rises"] = steadyScraperRises
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

// pythonScraperAmongBots: a heavy scraper with python-requests' own user
// agent, a few addresses of one /24, walks page histories from 02:40, among
// other python-requests clients of the same night (a bot polling the API all
// along, two scanners probing a few paths for a minute): one fingerprint,
// three kinds of actor.
func pythonScraperAmongBots() Scenario {
	sc := crawlerBacklogReadTimeout()
	sc.Name = "python-scraper-among-bots"
	sc.Description = "a python-requests scraper on four-odd addresses of one /24 walks page histories from 02:40 " +
		"into saturation, among other python-requests clients of the same user agent (an API poller all night, " +
		"two scanners probing for a minute): only the scraper is the crawler"
	const ua = "python-requests/2.32.3"
	sc.Crawler = &CrawlerSpec{
		UserAgent: ua, Tools: []Tool{ToolHistory, ToolWhatLinksHere},
		RequestsPerIP: 2500, SharedPrefixShare: 1,
		BaselineFrom: at(2026, 10, 3, 2, 40, 0), Onset: at(2026, 10, 3, 2, 40, 0),
		Shape: []RateKnot{{1, 7}, {25, 7}, {26, 0}},
	}
	probe := func(name, ip string, from time.Time, uris ...string) ClientSpec {
		reqs := make([]ClientRequest, len(uris))
		for i, u := range uris {
			reqs[i] = ClientRequest{Weight: 1, Method: "GET", URI: u, CPUS: 0.01, WaitS: 0.005}
		}
		return ClientSpec{Name: name, UserAgent: ua, IPs: []string{ip},
			Rate: []RateAt{{from.Add(-time.Second), 0}, {from, 0.4}, {from.Add(time.Minute), 0.4}, {from.Add(time.Minute + time.Second), 0}}, Requests: reqs}
	}
	sc.Clients = []ClientSpec{
		{Name: "api-poller", UserAgent: ua, Accept: "application/json", IPs: []string{"95.216.33.41"},
			Rate:     []RateAt{{at(2026, 10, 3, 0, 0, 0), 0.02}},
			Requests: []ClientRequest{{Weight: 1, Method: "GET", URI: "/api.php?action=query&prop=revisions&titles=%s&format=json", CPUS: 0.04, WaitS: 0.02, JSON: true}}},
		probe("scanner-a", "80.94.95.73", at(2026, 10, 3, 2, 7, 0), "/wp-login.php", "/.env", "/backup.zip"),
		probe("scanner-b", "47.236.32.219", at(2026, 10, 3, 2, 21, 0), "/xmlrpc.php", "/admin.php"),
	}
	return sc
}

// steadyScraperRises: a scraper that was there all along. From a dozen
// addresses of its own over four hosting /24s (the seed keeps three to all
// of them), a Chrome without client hints or cookies walks page histories
// at a steady 0.3 requests a second all through the baseline, in every
// ten-minute bucket from every address, then at 02:40 multiplies its rate
// about twenty times and fills the pool. Steady presence through the
// baseline is what the site's own clients show too (sync clients, API
// pollers); what it lacks is theirs: it signs no request with an account's
// credentials. It is the crawler and the trigger, from where its rate rose.
func steadyScraperRises() Scenario {
	sc := crawlerBacklogReadTimeout()
	sc.Name = "steady-scraper-rises"
	sc.Description = "a logged-out Chrome without client hints on a dozen addresses of its own (four hosting /24s) " +
		"walks page histories at 0.3/s all through the baseline, then from 02:40 about twenty times as fast into " +
		"saturation: the same addresses before and during its burst, no credentials on any request"
	var addrs []string
	for _, p := range []string{"91.92.240", "91.92.241", "194.26.29", "45.95.147"} {
		for _, h := range []string{"17", "88", "203"} {
			addrs = append(addrs, p+"."+h)
		}
	}
	sc.Crawler = &CrawlerSpec{
		UserAgent:      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
		AcceptLanguage: "en-US,en;q=0.9",
		Tools:          []Tool{ToolHistory, ToolWhatLinksHere},
		Addresses:      addrs,
		BaselineFrom:   at(2026, 10, 2, 12, 0, 0), BaselineRate: 0.3,
		Onset: at(2026, 10, 3, 2, 40, 0),
		Shape: []RateKnot{{2, 7}, {25, 7}, {26, 0}},
	}
	return sc
}
