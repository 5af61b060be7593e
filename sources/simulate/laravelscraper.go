package simulate

import "time"

// A scraper on a Laravel shop (issue 25): product pages at /products/{id},
// each rendered by PHP, walked from a few hundred proxy addresses that each
// send a handful of requests under a browser User-Agent drawn from a
// rotating set, no client hints, no cookie. Readers open the same product
// pages all day (the route alone names no actor), every visitor holds a
// session cookie (laravel_session, XSRF-TOKEN: a Cookie alone says nothing
// of a login) and the logged-in marker is a remember-me cookie that only an
// expression names. The access log keeps the Cookie header whole.
func init() { registry["laravel-rotating-scraper"] = laravelRotatingScraper }

// scraperAgents are the browsers a scraping service rotates through: real
// releases' User-Agents, copied without the client hints Chromium sends.
var scraperAgents = []CrawlerAgent{
	{UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/128.0.0.0 Safari/537.36", AcceptLanguage: "en-US,en;q=0.9"},
	{UserAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/127.0.0.0 Safari/537.36", AcceptLanguage: "en-US,en;q=0.9"},
	{UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:130.0) Gecko/20100101 Firefox/130.0", AcceptLanguage: "en-US,en;q=0.5"},
	{UserAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Safari/605.1.15", AcceptLanguage: "en-GB,en;q=0.9"},
	{UserAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36", AcceptLanguage: "en-US,en;q=0.9"},
	{UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/128.0.0.0 Safari/537.36 Edg/128.0.0.0", AcceptLanguage: "en-US,en;q=0.9,ko;q=0.8"},
}

// cmLaravelInitial and the later commits are the shop's configuration
// history, none of it a cause.
var (
	cmLaravelInitial = appInitial(laravelShop, at(2026, 9, 2, 11, 0, 0))
	cmLaravelReadme  = commit{at: at(2026, 10, 6, 9, 40, 0), message: "README: queue worker notes",
		apply: func(_ *SiteConfig, x *repoExtras) {
			x.readme = append(x.readme, "", "Queue workers run under supervisor on the same host (php artisan queue:work).")
		}}
	cmLaravelBump = commit{at: at(2026, 11, 3, 16, 5, 0), message: "PHP 8.3.13",
		apply: func(c *SiteConfig, _ *repoExtras) { c.Image, c.PHPVersion = "php:8.3.13-fpm-bookworm", "8.3.13" }}
)

// laravelRotatingScraper: a Thursday afternoon. From 14:50 a scraper ramps
// to 14 product pages a second for 40 minutes: each page is ~0.25 s of CPU,
// so four cores hold about 15 a second with the shop's own visitors on top.
func laravelRotatingScraper() Scenario {
	day := at(2026, 11, 12, 0, 0, 0)
	sc := Scenario{
		Name: "laravel-rotating-scraper",
		Description: "a Laravel shop: a scraper walks /products/{id} (PHP, uncached) from 14:50 at up to 14/s over a " +
			"few hundred IPv4 addresses, ~6 requests each, rotating six browser User-Agents without client hints " +
			"or cookies; shoppers open the same routes, the JSON API and Livewire POSTs; every visitor holds " +
			"laravel_session, logins add remember_web_<sha1>; Cookie logged whole",
		From: day.Add(14 * time.Hour), To: day.Add(16 * time.Hour),
		App: AppLaravel,
	}
	siteDefaults(&sc)
	sc.ReaderSessions = 0.22
	sc.LoggedInShare = 0.15
	sc.CookieLog = CookieLogged
	sc.VaryCookieLog = true
	sc.Crawler = &CrawlerSpec{
		Agents: scraperAgents, AgentSwitch: 0.5,
		Tools:         []Tool{ToolLaravelProduct},
		RequestsPerIP: 6, SharedPrefixShare: 0.4,
		Onset:   day.Add(14*time.Hour + 50*time.Minute),
		Shape:   []RateKnot{{2, 6}, {6, 14}, {40, 14}, {42, 0}},
		Retries: 1, RetryMinS: 2, RetryMaxS: 6,
	}
	sc.commits = []commit{cmLaravelInitial, cmLaravelReadme, cmLaravelBump}
	return sc
}
