package simulate

import "time"

// Incident shapes beyond the reference crawl: each tells a story that an
// analysis tuned on the reference gets wrong in its own way (a WordPress site,
// a slow database behind rising API clients, idle connections pinning the
// workers, a long window with two separate failures, a minor bot before a
// real cause, a silent wedge with no quiet time before it). Each has its
// ground truth in truth.json: the trigger, the failing stretches, the
// clients that are context, the enabling change if any.
func init() {
	registry["wordpress-search-crawl"] = wordpressSearchCrawl
	registry["slow-database-office"] = slowDatabaseOffice
	registry["idle-pinning"] = idlePinning
	registry["long-window-blip"] = longWindowBlip
	registry["heavy-scraper-among-bots"] = heavyScraperAmongBots
	registry["wedge-little-baseline"] = wedgeLittleBaseline
}

func wordpressSearchCrawl() Scenario {
	sc := Scenario{
		Name: "wordpress-search-crawl",
		Description: "a WordPress blog: a logged-out Chrome 120 over thousands of IPv6 addresses in many /64s walks " +
			"/?s= search, /wp-json/wp/v2/search and ?replytocom= links (uncached, PHP and database) while readers " +
			"get posts from the page cache; 503 flapping and 504s (read_timeout 10s)",
		From: at(2026, 11, 4, 21, 0, 0), To: at(2026, 11, 4, 23, 0, 0),
		App: AppWordPress,
	}
	siteDefaults(&sc)
	sc.ReaderSessions = 0.12
	sc.Crawler = &CrawlerSpec{
		UserAgent:      "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
		AcceptLanguage: "en-US,en;q=0.9",
		Tools:          []Tool{ToolWPSearch, ToolWPRestSearch, ToolWPReplyToCom},
		IPv6:           true, RequestsPerIP: 1.6, SharedPrefixShare: 0.35,
		BaselineFrom: at(2026, 11, 4, 20, 0, 0), BaselineRate: 0.3,
		Onset:   at(2026, 11, 4, 21, 40, 0),
		Shape:   []RateKnot{{3, 8}, {10, 8}, {12, 16}, {35, 16}, {38, 0}},
		Retries: 1, RetryMinS: 1, RetryMaxS: 5,
	}
	sc.commits = []commit{cmWPInitial, cmWPReadme, cmWPBump}
	return sc
}

// officeClients are API and sync clients that start at 09:00 KST: traffic that
// rises hours before an incident and is no cause of it.
func officeClients(day time.Time) []ClientSpec {
	nine := day.Add(9 * time.Hour)
	return []ClientSpec{
		{Name: "calendar-sync", UserAgent: "ExampleSync/2.3 (calendar sync; ops@example.org)", Accept: "application/json",
			IPs:  []string{"211.45.60.21", "211.45.60.22"},
			Rate: []RateAt{{nine, 0.01}, {nine.Add(10 * time.Minute), 0.08}},
			Requests: []ClientRequest{
				{Weight: 0.95, Method: "GET", URI: "/api.php?action=query&list=recentchanges&rcprop=title%7Ctimestamp&rclimit=50&format=json", CPUS: 0.04, WaitS: 0.03, JSON: true},
				{Weight: 0.05, Method: "POST", URI: "/api.php?action=edit&format=json", CPUS: 0.10, WaitS: 0.08, JSON: true},
			}},
		{Name: "erp-connector", UserAgent: "ERP-Connector/1.4 (+https://erp.example.com)", Accept: "application/json",
			IPs:      []string{"175.45.12.180"},
			Rate:     []RateAt{{nine.Add(5 * time.Minute), 0.005}, {nine.Add(20 * time.Minute), 0.04}},
			Requests: []ClientRequest{{Weight: 1, Method: "GET", URI: "/api.php?action=parse&page=%s&prop=text&format=json", CPUS: 0.08, WaitS: 0.04, JSON: true}},
		},
	}
}

func slowDatabaseOffice() Scenario {
	sc := Scenario{
		Name: "slow-database-office",
		Description: "a slow database at 13:10 makes every PHP request slower while arrivals stay flat (CPU low); " +
			"two API/sync clients rose at 09:00, the start of office hours, four hours earlier: context, not the trigger",
		From: at(2026, 10, 21, 7, 30, 0), To: at(2026, 10, 21, 14, 30, 0),
	}
	siteDefaults(&sc)
	sc.ReaderSessions = 0.2
	sc.SlowDB = &SlowDBSpec{From: at(2026, 10, 21, 13, 10, 0), To: at(2026, 10, 21, 13, 40, 0), WaitFactor: 10, ExtraWaitS: 30}
	sc.Clients = officeClients(at(2026, 10, 21, 0, 0, 0))
	sc.commits = wikiHistory()
	return sc
}

func idlePinning() Scenario {
	sc := Scenario{
		Name: "idle-pinning",
		Description: "idle connections from another proxy's pool hold every php-fpm worker from 11:30 (CPU near idle, " +
			"completions collapse while all workers are active, the queue fills, 504/503); a search bot that rose " +
			"nine hours earlier is context",
		From: at(2026, 10, 27, 2, 0, 0), To: at(2026, 10, 27, 14, 0, 0),
	}
	siteDefaults(&sc)
	sc.Pinning = &PinSpec{From: at(2026, 10, 27, 11, 30, 0), To: at(2026, 10, 27, 11, 50, 0), Rate: 0.1, HoldS: 300}
	sc.Clients = []ClientSpec{{Name: "petalbot", UserAgent: "Mozilla/5.0 (compatible; PetalBot;+https://webmaster.petalsearch.com/site/petalbot)",
		IPs:      []string{"114.119.130.14", "114.119.135.88", "114.119.142.201"},
		Rate:     []RateAt{{at(2026, 10, 27, 2, 20, 0), 0.01}, {at(2026, 10, 27, 2, 40, 0), 0.035}},
		Requests: []ClientRequest{{Weight: 1, Method: "GET", URI: "/w/%s", CPUS: 0.07, WaitS: 0.025}},
	}}
	sc.commits = wikiHistory()
	return sc
}

func longWindowBlip() Scenario {
	sc := Scenario{
		Name: "long-window-blip",
		Description: "a 15-hour window: the crawler walks the tools at a low rate from 04:30, a php-fpm restart " +
			"(PHP 8.3.13) at 14:48 fails a few requests, and the crawl bursts at 17:15 into a 20-minute outage: " +
			"two separate failing stretches",
		From: at(2026, 10, 29, 4, 0, 0), To: at(2026, 10, 29, 19, 0, 0),
	}
	siteDefaults(&sc)
	sc.ReaderSessions = 0.2
	c := DefaultCrawler()
	c.BaselineFrom, c.BaselineRate = at(2026, 10, 29, 4, 30, 0), 0.4
	c.Onset = at(2026, 10, 29, 17, 15, 0)
	c.Shape = []RateKnot{{3, 4.5}, {6, 10.5}, {14, 10.5}, {16, 5.2}, {20, 5.2}, {22, 0}}
	sc.Crawler = &c
	restart := commit{at: at(2026, 10, 29, 14, 47, 19), message: "Bump PHP to 8.3.13",
		apply: func(c *SiteConfig, _ *repoExtras) { c.Image, c.PHPVersion = "php:8.3.13-fpm-bookworm", "8.3.13" }}
	sc.commits = []commit{cmInitial, cmLinkWalk, cmReadme, cmCSS, cmBump, restart}
	return sc
}

func heavyScraperAmongBots() Scenario {
	day := at(2026, 11, 10, 0, 0, 0)
	sc := Scenario{
		Name: "heavy-scraper-among-bots",
		Description: "a database stall at 14:00 saturates a pool cut from 32 to 16 workers at 13:45 (the change " +
			"enables it: 32 would have held); a heavy single-address scraper runs steadily among the search bots and " +
			"a feed bot with 0.2% of PHP time rises at 13:35: both context",
		From: day.Add(13 * time.Hour), To: day.Add(15 * time.Hour),
	}
	siteDefaults(&sc)
	sc.Workers, sc.MaxSpare = 32, 10
	sc.ReaderSessions = 0.2
	sc.SlowDB = &SlowDBSpec{From: day.Add(14 * time.Hour), To: day.Add(14*time.Hour + 30*time.Minute), WaitFactor: 1, ExtraWaitS: 8, CapS: 9}
	sc.Trigger = "service_time_regression"
	sc.Clients = []ClientSpec{
		{Name: "heavy-scraper", UserAgent: "Mozilla/5.0 (compatible; DataHarvest/2.1; +https://dataharvest.example/bot)", Scraper: true,
			IPs:      []string{"45.134.26.77"},
			Rate:     []RateAt{{day, 3.5}},
			Requests: []ClientRequest{{Weight: 1, Method: "GET", URI: "/w/%s", CPUS: 0.07, WaitS: 0.025}}},
		{Name: "feed-bot", UserAgent: "FeedFetcher-Example/1.0 (+https://feeds.example.net/about)", Accept: "application/atom+xml",
			IPs:      []string{"52.79.10.44"},
			Rate:     []RateAt{{day.Add(13*time.Hour + 35*time.Minute), 0.0008}, {day.Add(13*time.Hour + 37*time.Minute), 0.006}},
			Requests: []ClientRequest{{Weight: 1, Method: "GET", URI: "/index.php?title=Special:RecentChanges&feed=atom", CPUS: 0.05, WaitS: 0.02}},
		},
	}
	shrink := commit{at: day.Add(13*time.Hour + 45*time.Minute), message: "php-fpm: max_children 16 to fit the 4 GB instance",
		apply: func(c *SiteConfig, _ *repoExtras) { c.MaxChildren = 16 }, cause: true}
	sc.commits = append(wikiHistory(), shrink)
	sc.commits[0] = initialWith(func(c *SiteConfig) { c.MaxChildren = 32 })
	return sc
}

func wedgeLittleBaseline() Scenario {
	sc := crawlerBacklogWedge()
	sc.Name = "wedge-little-baseline"
	sc.Description = "the silent wedge (no read_timeout: queued health checks pass, no 5xx, clients time out on " +
		"200s lasting minutes) in a bundle that starts 20 minutes before the crawl: no quiet baseline"
	sc.From = at(2026, 10, 3, 1, 55, 0)
	sc.To = at(2026, 10, 3, 3, 0, 0)
	sc.NoBaseline = true
	sc.Crawler.Shape = []RateKnot{{3, 4.5}, {10.5, 4.5}, {13, 8}, {16, 8}, {18, 5.2}, {24, 5.15}, {27, 0}}
	return sc
}
