package simulate

import (
	"compress/gzip"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"time"
)

// kst is the site's local time (Asia/Seoul has had no DST since 1988, so a fixed
// zone avoids depending on the host's tzdata).
var kst = time.FixedZone("KST", 9*3600)

func at(y int, mo time.Month, d, h, mi, s int) time.Time {
	return time.Date(y, mo, d, h, mi, s, 0, kst)
}

// Options select and parameterise one run.
type Options struct {
	// Scenario is one of Scenarios().
	Scenario string
	// Out is the bundle directory to write (created; must be empty or absent).
	Out string
	// Seed makes the run reproducible: the same seed writes a byte-identical bundle.
	Seed int64
	// Scale multiplies every traffic rate (default 1). Capacity does not scale, so
	// a large Scale overloads the site; benchmarks use it to stream many lines.
	Scale float64
	// BaselineHours of ordinary traffic simulated before the incident window
	// (default 24).
	BaselineHours float64
	// Crawler, when set, replaces the scenario's crawler (or adds one to a
	// scenario that has none). Start from DefaultCrawler() and change fields.
	Crawler *CrawlerSpec
	// FastGzip writes the bundle's gzipped files at BestSpeed (klauspost's
	// deflate, see mustGzip) instead of gzip.BestCompression: the same
	// contents in ~40% larger files, in well under half the simulation's CPU
	// (deflate at the best level was ~80% of it). For bundles that are
	// thrown away after reading: tests, the demo.
	FastGzip bool
	// StoredGzip writes the gzipped files uncompressed (gzip's stored
	// blocks): still gzip to every reader, about ten times larger, and
	// neither deflate's CPU when they are written nor inflate's each time
	// they are read. It overrides FastGzip. For bundles that a test writes,
	// reads several times and removes, on a disk that holds them.
	StoredGzip bool
}

// gzipLevel is the level the bundle's gzipped files are written at.
func (o Options) gzipLevel() int {
	switch {
	case o.StoredGzip:
		return gzip.NoCompression
	case o.FastGzip:
		return gzip.BestSpeed
	}
	// The bundle should stay small enough to keep around.
	return gzip.BestCompression
}

// Tool is a MediaWiki page tool (an uncacheable page linked from every page's
// sidebar) that a crawler can walk.
type Tool string

// Page tools. Costs are in toolCost (traffic.go).
const (
	ToolEdit                Tool = "edit"                // /index.php?title=T&action=edit
	ToolHistory             Tool = "history"             // /index.php?title=T&action=history
	ToolWatch               Tool = "watch"               // /index.php?title=T&action=watch
	ToolContributions       Tool = "contributions"       // /w/Special:Contributions/User
	ToolRecentChangesLinked Tool = "recentchangeslinked" // /w/Special:RecentChangesLinked/T
	ToolCiteThisPage        Tool = "citethispage"        // /index.php?title=Special:CiteThisPage&page=T
	ToolWhatLinksHere       Tool = "whatlinkshere"       // /w/Special:WhatLinksHere/T (the "/w/ form")
	ToolWhatLinksHereTitle  Tool = "whatlinkshere-title" // /index.php?title=Special:WhatLinksHere&target=T
	ToolNewItem             Tool = "newitem"             // /w/Special:NewItem?site=kowiki&page=T (calls api.php)

	// WordPress's uncached links (AppWordPress): a query string bypasses the
	// page cache, so each one runs PHP and the database.
	ToolWPSearch     Tool = "wp-search"      // /?s=TERM
	ToolWPRestSearch Tool = "wp-rest-search" // /wp-json/wp/v2/search?search=TERM
	ToolWPReplyToCom Tool = "wp-replytocom"  // /YYYY/MM/SLUG/?replytocom=N

	// WordPress's login endpoints, POSTed by a credential-stuffing flood:
	// each attempt hashes a password (PHP and the database, never cached).
	ToolWPLogin  Tool = "wp-login"  // POST /wp-login.php
	ToolWPXMLRPC Tool = "wp-xmlrpc" // POST /xmlrpc.php
)

// Tools lists every tool a crawler can be given.
func Tools() []Tool {
	return []Tool{ToolEdit, ToolHistory, ToolWatch, ToolContributions, ToolRecentChangesLinked,
		ToolCiteThisPage, ToolWhatLinksHere, ToolWhatLinksHereTitle, ToolNewItem,
		ToolWPSearch, ToolWPRestSearch, ToolWPReplyToCom, ToolWPLogin, ToolWPXMLRPC,
		ToolLaravelProduct, ToolLaravelSearch, ToolLivewire, ToolNCShare, ToolNCShareZip, ToolNCPreview}
}

// CrawlerSpec is the crawler of a scenario: its fingerprint, what it walks, where
// it comes from and how hard it pushes. Rates are requests per second at Scale 1,
// before retries; the crawler is open-loop (it does not wait for answers before
// sending more), and re-fetches a URL from a fresh address soon after a 5xx, so
// fast 503s make it faster: that is how a few requests per second of crawl turn
// into a 503 peak of a thousand a minute.
type CrawlerSpec struct {
	// UserAgent is sent on every request.
	UserAgent string
	// AcceptLanguage is the Accept-Language header ("" sends none).
	AcceptLanguage string
	// SecChUa sends Chromium's client hints (Sec-Ch-Ua*) as a real Chrome does; a
	// script that only copies Chrome's User-Agent does not.
	SecChUa bool
	// LoggedIn sends a logged-in session cookie (wikiUserID=...).
	LoggedIn bool
	// Tools are the page tools walked, uniformly.
	Tools []Tool
	// IPv6 draws addresses from distinct /64s instead of IPv4 /24s.
	IPv6 bool
	// RequestsPerIP is the mean number of consecutive requests sent from one
	// address before moving to a fresh one (>= 1).
	RequestsPerIP float64
	// SharedPrefixShare is the share of fresh addresses that reuse the previous
	// address's /24 (or /64); the rest come from prefixes never seen before.
	SharedPrefixShare float64

	// BaselineFrom is when the crawler starts at BaselineRate (zero: with the burst).
	BaselineFrom time.Time
	// BaselineRate is the low rate before the burst, requests/s.
	BaselineRate float64
	// Onset starts the burst: the rate ramps linearly to PeakRate over RampMinutes,
	// holds HoldMinutes, and fades to zero over FadeMinutes.
	Onset       time.Time
	RampMinutes float64
	PeakRate    float64
	HoldMinutes float64
	FadeMinutes float64
	// Shape, when set, replaces ramp, hold and fade: the burst's rate at minutes
	// after Onset, linear between knots; the last knot ends the crawl (give it
	// rate 0). PeakRate is then ignored.
	Shape []RateKnot

	// Retries is how many times a request answered with a 5xx is sent again (each
	// from a fresh address), after RetryMinS..RetryMaxS seconds.
	Retries   int
	RetryMinS float64
	RetryMaxS float64
	// TimeoutS is the crawler's own client timeout; 0 uses the site's client timeout.
	TimeoutS float64

	// Agents, when set, rotate the fingerprint (UserAgent, AcceptLanguage
	// and SecChUa are then ignored): each fresh address draws one, and an
	// attempt switches to another with AgentSwitch probability, as a flood
	// through residential proxies does.
	Agents      []CrawlerAgent
	AgentSwitch float64
	// IPv6Share is the share of fresh addresses drawn as IPv6 (each in a
	// /64 of its own unless SharedPrefixShare says otherwise); the rest are
	// IPv4. Zero keeps IPv6 deciding the family.
	IPv6Share float64
	// AttemptsMin and AttemptsMax, when set, replace RequestsPerIP: each
	// fresh address sends a uniform number of attempts in that range, the
	// later ones AttemptGapMinS..AttemptGapMaxS seconds apart (it comes
	// back minutes later), interleaved with the other addresses'.
	AttemptsMin, AttemptsMax       int
	AttemptGapMinS, AttemptGapMaxS float64
	// Addresses, when set, are the only addresses it sends from, one drawn
	// at random for each request: a scraper on a few hosts of its own, the
	// same before and during its burst. RequestsPerIP, SharedPrefixShare,
	// IPv6 and IPv6Share are then ignored.
	Addresses []string
	// HTTP2 sends over HTTP/2 instead of HTTP/1.1.
	HTTP2 bool
	// BrowserHeaders: the crawler copies a browser's whole header set
	// (Sec-Fetch-*, Priority, ...), written where the site logs it
	// (Scenario.BrowserHeaders).
	BrowserHeaders bool
	// IPv6Blocks, when set, confines IPv6 addresses to that many /32s
	// (providers' allocations: a few /32s, thousands of /64s in each);
	// zero spreads them over 240e::/16.
	IPv6Blocks int
}

// CrawlerAgent is one fingerprint of a rotating crawler.
type CrawlerAgent struct {
	UserAgent      string
	AcceptLanguage string
	SecChUa        bool
}

// RateKnot is the crawler's rate (requests/s, before retries) at Minute
// minutes after its onset.
type RateKnot struct {
	Minute float64
	Rate   float64
}

// End is when the crawl has faded out.
func (c *CrawlerSpec) End() time.Time {
	if n := len(c.Shape); n > 0 {
		return c.Onset.Add(minutes(c.Shape[n-1].Minute))
	}
	return c.Onset.Add(minutes(c.RampMinutes + c.HoldMinutes + c.FadeMinutes))
}

func minutes(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }

// DefaultCrawler is the crawler of the reference postmortem: a logged-out
// "Chrome 121" without client hints, Accept-Language zh-CN, spread over thousands
// of IPv4 addresses in distinct /24s with a little over one request each,
// walking the sidebar tools. It is present at a low rate (about 840 requests per
// 10 minutes) from 20:00 the evening before. From 02:15 KST on 3 October 2026 it
// climbs within three minutes to 4.5 requests/s, just under what 16 workers on 4
// cores serve of these tools (about 5/s), pushes past it from 02:25:30, sends
// 10.5/s from 02:28 to 02:31, stays just above capacity (5.2/s) until 03:09 and
// stops by 03:12. Every fast 5xx is retried twice from fresh addresses, so the
// 503s feed themselves.
func DefaultCrawler() CrawlerSpec {
	return CrawlerSpec{
		UserAgent:      "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36",
		AcceptLanguage: "zh-CN,zh;q=0.9",
		Tools: []Tool{ToolEdit, ToolWatch, ToolContributions, ToolRecentChangesLinked,
			ToolCiteThisPage, ToolNewItem, ToolWhatLinksHere},
		RequestsPerIP:     1.03,
		SharedPrefixShare: 0.03,
		BaselineFrom:      at(2026, 10, 2, 20, 0, 0),
		BaselineRate:      1.4,
		Onset:             at(2026, 10, 3, 2, 15, 0),
		Shape: []RateKnot{{3, 4.5}, {10.5, 4.5}, {13, 10.5}, {16, 10.5}, {18, 5.2},
			{54, 5.15}, {57, 0}},
		Retries:   2,
		RetryMinS: 0.5,
		RetryMaxS: 4,
	}
}

func (c *CrawlerSpec) validate() error {
	if c.UserAgent == "" && len(c.Agents) == 0 {
		return fmt.Errorf("crawler: empty user agent")
	}
	if c.AttemptsMax < c.AttemptsMin || c.AttemptGapMaxS < c.AttemptGapMinS || c.IPv6Share < 0 || c.IPv6Share > 1 {
		return fmt.Errorf("crawler: attempts %d..%d, gaps %v..%vs or IPv6 share %v out of order", c.AttemptsMin, c.AttemptsMax, c.AttemptGapMinS, c.AttemptGapMaxS, c.IPv6Share)
	}
	if len(c.Tools) == 0 {
		return fmt.Errorf("crawler: no tools")
	}
	for _, t := range c.Tools {
		if !slices.Contains(Tools(), t) {
			return fmt.Errorf("crawler: unknown tool %q", t)
		}
	}
	if c.RequestsPerIP < 1 && len(c.Addresses) == 0 {
		return fmt.Errorf("crawler: requests per IP %.2f < 1", c.RequestsPerIP)
	}
	for _, a := range c.Addresses {
		if _, err := netip.ParseAddr(a); err != nil {
			return fmt.Errorf("crawler: address %q: %w", a, err)
		}
	}
	if c.PeakRate < 0 || c.BaselineRate < 0 || c.Retries < 0 || c.RetryMaxS < c.RetryMinS {
		return fmt.Errorf("crawler: negative rate, retries or retry delay range")
	}
	if c.Onset.IsZero() {
		return fmt.Errorf("crawler: no onset time")
	}
	for i, k := range c.Shape {
		if k.Rate < 0 || k.Minute < 0 || (i > 0 && k.Minute <= c.Shape[i-1].Minute) {
			return fmt.Errorf("crawler: shape knot %d (%v min, %v/s): negative or out of order", i, k.Minute, k.Rate)
		}
	}
	return nil
}

// CrowdSpec is a legitimate flash crowd: many readers following one link.
type CrowdSpec struct {
	// Start, RampMinutes, PeakSessions (new reader sessions per second) and
	// DecayMinutes (exponential decay after the peak) shape the surge.
	Start        time.Time
	RampMinutes  float64
	PeakSessions float64
	DecayMinutes float64
	// EndMinutes after Start the crowd is gone.
	EndMinutes float64
	// Titles are the popular (cacheable) articles the link points at.
	Titles []string
	// Referers are where the crowd comes from.
	Referers []string
}

// SlowDBSpec makes the database slow for a period: every PHP request's database
// wait is multiplied by WaitFactor and gains a lock wait of ExtraWaitS on average.
// CPU stays low because workers wait.
type SlowDBSpec struct {
	From, To   time.Time
	WaitFactor float64
	ExtraWaitS float64
	// CapS, when set, bounds each slowed wait (a lock wait timeout or
	// max_execution_time): the database is slow, never hung.
	CapS float64
}

// CachePurgeSpec is the page cache emptied at At: the chance that a
// cacheable page is in it drops to HitFloor and climbs back linearly to
// what it was over RecoverMinutes, as pages are cached again.
// A purge that flushes the object cache too (wp cache flush) leaves every
// render cold: ColdFactor multiplies a missed page's database wait at At,
// easing back to 1 over RecoverMinutes (1 or 0: no effect).
type CachePurgeSpec struct {
	At             time.Time
	HitFloor       float64
	RecoverMinutes float64
	ColdFactor     float64
}

// cold is the factor on a missed page's database wait at now.
func (p *CachePurgeSpec) cold(now int64) float64 {
	since := time.Duration(now - p.At.UnixNano())
	if since < 0 || p.ColdFactor <= 1 || p.RecoverMinutes <= 0 || since.Minutes() >= p.RecoverMinutes {
		return 1
	}
	return p.ColdFactor - (p.ColdFactor-1)*since.Minutes()/p.RecoverMinutes
}

// hit is the chance a cacheable page is cached at now (unix ns), usually
// usual.
func (p *CachePurgeSpec) hit(now int64, usual float64) float64 {
	since := time.Duration(now - p.At.UnixNano())
	if since < 0 || p.RecoverMinutes <= 0 {
		return usual
	}
	f := since.Minutes() / p.RecoverMinutes
	if f >= 1 {
		return usual
	}
	return min(usual, p.HitFloor+(usual-p.HitFloor)*f)
}

// ReloadSpec is how people whose page failed (a 5xx, or no answer before
// they gave up) try again: up to Tries reloads, each with chance Chance,
// GapMinS..GapMaxS seconds after the failure. A share NewAddress of the
// reloads comes from another network (a phone leaving the office Wi-Fi for
// mobile data: a fresh address) and a share OtherBrowser from another
// browser (not logged in there), so that an outage brings new addresses and
// fingerprints, not only more requests, after its failures began.
type ReloadSpec struct {
	Tries                    int
	Chance                   float64
	GapMinS, GapMaxS         float64
	NewAddress, OtherBrowser float64
}

// RateLimit is a caddy-ratelimit zone with a static key (one site-wide bucket).
type RateLimit struct {
	Name    string
	Events  int
	WindowS float64
}

// SiteConfig is what the site's configuration says at a point in time. The git
// history of a scenario is a sequence of these.
type SiteConfig struct {
	// Image is the PHP base image (Dockerfile FROM).
	Image string
	// PHPVersion is what X-Powered-By says.
	PHPVersion string
	// Backlog is php-fpm's listen.backlog.
	Backlog int
	// ReadTimeoutS is php_fastcgi's read_timeout (0: none, the silent wedge).
	ReadTimeoutS float64
	// Zones are the rate_limit zones in the Caddyfile.
	Zones []RateLimit
	// MaxChildren is pm.max_children when a commit sets it; 0 keeps the
	// scenario's Workers. A change is a graceful reload: busy children finish
	// their request, surplus ones exit.
	MaxChildren int
	// DeployHook is the post-deploy script (deploy/post-deploy.sh) the
	// release pipeline runs; "" writes none. No setting aftermath reads.
	DeployHook string
}

// maxChildren is the pool's pm.max_children under c.
func (sc *Scenario) maxChildren(c SiteConfig) int {
	if c.MaxChildren > 0 {
		return c.MaxChildren
	}
	return sc.Workers
}

// commit is one commit of the configuration repository.
type commit struct {
	at      time.Time
	message string
	apply   func(*SiteConfig, *repoExtras)
	// cause marks the commit a correct analysis should blame.
	cause bool
}

// repoExtras are repository contents that the simulation does not model.
type repoExtras struct {
	readme []string
	css    []string
}

// Scenario is a named incident: site, traffic, crawler and configuration history.
type Scenario struct {
	Name        string
	Description string
	// From and To are the incident window (bundle.yaml window).
	From, To time.Time

	// Pool and proxy facts that do not change with the configuration history
	// (Workers is pm.max_children unless a commit sets SiteConfig.MaxChildren).
	Workers, StartServers, MinSpare, MaxSpare int
	Cores                                     int
	// Processes, when set, puts php-fpm's per-process series and the host's
	// memory in the bundle (processes.go).
	Processes                       *ProcessModel
	HealthIntervalS, HealthTimeoutS float64
	HealthFails                     int
	// HealthTimeoutQueued: the proxy cuts its active health check at
	// health_timeout even while the check waits, connected, in php-fpm's listen
	// queue. Caddy 2.11's FastCGI transport does not (only read_timeout can fail
	// a connected check, design.md); the reference incident's proxy did.
	HealthTimeoutQueued bool
	DialTimeoutS        float64
	ClientTimeoutS      float64
	SlowlogTimeoutS     float64

	// ReaderSessions is the mean rate of new reader sessions per second over a day
	// (shaped by the diurnal curve); EditorSessions and BotRate likewise.
	ReaderSessions float64
	EditorSessions float64
	BotRate        float64
	// Weekly, when set, holds seven factors (Sunday first) that scale reader
	// and editor sessions by the weekday (KST); nil keeps every day alike.
	Weekly []float64
	// OfficeEditors, when set, replaces EditorSessions' daily curve: new
	// editor sessions per second at times (linear between knots, constant
	// outside), the working day of an office whose staff use the site.
	OfficeEditors []RateAt

	Crawler *CrawlerSpec
	Crowd   *CrowdSpec
	SlowDB  *SlowDBSpec

	// App is the PHP application behind Caddy: AppMediaWiki (the default) or
	// AppWordPress. It decides paths, headers, cookies and the configuration
	// files, not the mechanism.
	App App
	// Clients are automated clients with their own schedules (API and sync
	// clients, feed readers, a heavy scraper): context unless Trigger names them.
	Clients []ClientSpec
	// Pinning holds php-fpm workers with idle connections that never send a
	// request (another proxy's connection pool), bypassing Caddy.
	Pinning *PinSpec
	// CacheStatus, when set, names the page cache in a Cache-Status
	// response header (RFC 9211) on cacheable pages: "NAME; hit" when it
	// answered, "NAME; fwd=uri-miss" when PHP did. Empty logs none.
	CacheStatus string
	// CachePurge empties the page cache at a moment; it refills as pages
	// are requested again.
	CachePurge *CachePurgeSpec
	// LoggedInShare is the share of readers logged in (zero: 7%); on
	// WordPress a logged-in reader's every page runs PHP.
	LoggedInShare float64
	// Reloads, when set, replaces how readers whose page failed try again
	// (nil: at most twice, 45% of the time, 2-8 s later, from the same
	// browser and address).
	Reloads *ReloadSpec
	// CookieLog is how the access log keeps the Cookie header: as sent
	// (the server sets log_credentials), REDACTED (Caddy's default) or not
	// at all (a log filter deletes it).
	CookieLog CookieLog
	// VaryCookieLog: from seed 2 on, the seed draws CookieLog (varyBySeed).
	// The older scenarios keep theirs, which their tests read.
	VaryCookieLog bool
	// Timezone is the bundle's display zone ("" is Asia/Seoul, the site's).
	Timezone string
	// LogTime is the access log's ts encoding (Caddy's time_format) and
	// LogZoneOffsetS the host's UTC offset a string ts is written in.
	LogTime        LogTime
	LogZoneOffsetS int
	// CacheMark is the header with which the page cache (CacheStatus names
	// it) marks its answers: Cache-Status, X-Cache or Age.
	CacheMark CacheMark
	// BrowserHeaders: the log holds the browsers' whole header sets
	// (Sec-Fetch-Dest/-Site/-User, Sec-Ch-Ua-Platform, Priority,
	// Upgrade-Insecure-Requests), not the compact subset.
	BrowserHeaders bool
	// ReaderIPv6Share is the share of readers', editors' and crowds'
	// sessions on IPv6 (a /64 per household in its provider's /32); zero
	// keeps everyone on IPv4.
	ReaderIPv6Share float64
	// ReaderChrome is the Chrome release of the reader population (""
	// is chromeRelease).
	ReaderChrome string
	// NoBaseline: the evidence starts at the window's start whatever
	// Options.BaselineHours asks: there is no quiet time before it.
	NoBaseline bool
	// Trigger, when set, is the finding kind a correct analysis ranks as the
	// trigger; empty derives it (the crawler, else a slow database, else
	// pinning).
	Trigger string

	commits []commit
}

// App is the PHP application a scenario's site runs.
type App uint8

// Applications.
const (
	AppMediaWiki App = iota
	AppWordPress
)

// ClientSpec is an automated client with a schedule of its own: it is open
// loop (a scheduler, not a person) and sends from a few fixed addresses.
type ClientSpec struct {
	// Name labels the client in truth.json.
	Name      string
	UserAgent string
	// Accept is the Accept header ("" sends the bots' default).
	Accept string
	// IPs it sends from, in turn at random.
	IPs []string
	// Rate is requests/s at times (linear between knots, constant outside).
	Rate []RateAt
	// Requests are what it asks for, by weight.
	Requests []ClientRequest
	// Scraper marks a client that behaves like a crawler (pages it has no use
	// for, from one heavy address): an analysis may report it, never as the
	// trigger unless Scenario.Trigger says so.
	Scraper bool
	// Consequence marks a client whose rise follows the failures (a client
	// retrying what failed): truth.json gives it the role "consequence".
	Consequence bool
	// Auth is the scheme of the Authorization header it sends on every
	// request ("Basic", "Bearer"; "" none): an account's client (a sync
	// client with an app password, an API token). Caddy logs the header's
	// name with the value REDACTED unless log_credentials is on
	// (CookieLog CookieLogged), and a filter that deletes the Cookie
	// leaves it so.
	Auth string
}

// RateAt is a rate (requests/s) at a time.
type RateAt struct {
	At   time.Time
	Rate float64
}

// ClientRequest is one kind of request of a client. URI may hold one %s,
// replaced by a page title (or post slug), and one %d, replaced by a number.
type ClientRequest struct {
	Weight float64
	Method string
	URI    string
	// CPUS and WaitS are the median PHP CPU and database wait, seconds.
	CPUS, WaitS float64
	// JSON answers are application/json.
	JSON bool
	// Status replaces PHP's 200 (WebDAV's 207 Multi-Status).
	Status int
}

// PinSpec is idle connections from another proxy's pool reaching php-fpm
// directly: each takes a worker that then waits for a request that never
// comes, until php-fpm's side times out (HoldS). They use no CPU and leave no
// access-log line.
type PinSpec struct {
	From, To time.Time
	// Rate is new idle connections per second between From and To.
	Rate  float64
	HoldS float64
}

// configAt is the configuration in force at t: every commit up to t applied.
// php-fpm and Caddy pick changes up when the deploy runs (deployDelay later).
func (sc *Scenario) configAt(t time.Time) (SiteConfig, repoExtras) {
	var c SiteConfig
	var x repoExtras
	for _, cm := range sc.commits {
		if cm.at.Add(deployDelay).After(t) {
			break
		}
		cm.apply(&c, &x)
	}
	return c, x
}

// deployDelay is how long after a commit its deploy restarts php-fpm or reloads
// Caddy (a CI pipeline).
const deployDelay = 41 * time.Second

var registry = map[string]func() Scenario{
	"crawler-backlog":             crawlerBacklog,
	"crawler-backlog-readtimeout": crawlerBacklogReadTimeout,
	"crawler-backlog-fixed":       crawlerBacklogFixed,
	"crawler-backlog-wedge":       crawlerBacklogWedge,
	"crawler-backlog-cap64":       crawlerBacklogCap64,
	"flash-crowd":                 flashCrowd,
	"slow-database":               slowDatabase,
}

// Scenarios lists the scenario names, sorted.
func Scenarios() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Describe returns a one-line description of a scenario ("" if unknown).
func Describe(name string) string {
	f, ok := registry[name]
	if !ok {
		return ""
	}
	return f().Description
}

// Lookup returns a fresh copy of a scenario's definition.
func Lookup(name string) (Scenario, error) {
	f, ok := registry[name]
	if !ok {
		return Scenario{}, fmt.Errorf("simulate: unknown scenario %q (have %v)", name, Scenarios())
	}
	return f(), nil
}

// Configuration commits shared by the scenarios. Dates are KST.
var (
	cmInitial = commit{at: at(2026, 9, 1, 10, 12, 0), message: "Initial configuration: MediaWiki on php-fpm behind Caddy",
		apply: func(c *SiteConfig, x *repoExtras) {
			*c = SiteConfig{Image: "php:8.2-fpm-bookworm", PHPVersion: "8.2.24", Backlog: 511, ReadTimeoutS: 10}
			x.readme = []string{"Configuration of wiki.example.org: Caddy in front of php-fpm (MediaWiki)."}
			x.css = []string{"a { color: #0645ad; }", "a.new { color: #ba0000; }"}
		}}
	cmLinkWalk = commit{at: at(2026, 9, 30, 11, 5, 0), message: "Add link_walk rate limit after the 30 September crawl",
		apply: func(c *SiteConfig, _ *repoExtras) {
			c.Zones = append(c.Zones, RateLimit{Name: "link_walk", Events: 60, WindowS: 600})
		}}
	cmReadme = commit{at: at(2026, 10, 1, 16, 40, 0), message: "README: on-call notes",
		apply: func(_ *SiteConfig, x *repoExtras) {
			x.readme = append(x.readme, "", "On call: see the runbook in the ops wiki. Deploys go through CI on merge.")
		}}
	cmCSS = commit{at: at(2026, 10, 2, 10, 15, 0), message: "skin: darker colour for visited red links",
		apply: func(_ *SiteConfig, x *repoExtras) {
			x.css = append(x.css, "a.new:visited { color: #a55858; }")
		}}
	cmBump = commit{at: at(2026, 10, 2, 23, 48, 0), message: "Bump PHP to 8.3",
		apply: func(c *SiteConfig, _ *repoExtras) {
			c.Image, c.PHPVersion, c.Backlog = "php:8.3-fpm-bookworm", "8.3.12", 4096
		}}
	cmFix = commit{at: at(2026, 10, 3, 7, 7, 0), message: "Cap php-fpm queue at 64; limit page tools for logged-out clients",
		apply: func(c *SiteConfig, _ *repoExtras) {
			c.Backlog = 64
			c.Zones = append(c.Zones, RateLimit{Name: "page_tools", Events: 150, WindowS: 600})
		}}
	cmLaterReadme = commit{at: at(2026, 10, 10, 14, 2, 0), message: "README: rate-limit runbook",
		apply: func(_ *SiteConfig, x *repoExtras) {
			x.readme = append(x.readme, "", "Rate limits: page_tools (logged-out tools, 150/10m site-wide), link_walk.")
		}}
	cmLaterCSS = commit{at: at(2026, 10, 13, 18, 30, 0), message: "skin: print styles",
		apply: func(_ *SiteConfig, x *repoExtras) {
			x.css = append(x.css, "@media print { #sidebar { display: none; } }")
		}}
)

// wikiHistory is the wiki's configuration history from September to
// mid-October, none of it a cause: the scenarios whose incident lies after it.
func wikiHistory() []commit {
	return []commit{cmInitial, cmLinkWalk, cmReadme, cmCSS, cmBump, cmFix, cmLaterReadme, cmLaterCSS}
}

// initialWith is the initial commit with change on top: a site whose first
// configuration differs from the reference in a setting.
func initialWith(change func(*SiteConfig)) commit {
	initial := cmInitial
	initial.apply = func(c *SiteConfig, x *repoExtras) {
		cmInitial.apply(c, x)
		change(c)
	}
	return initial
}

func siteDefaults(sc *Scenario) {
	sc.Workers, sc.StartServers, sc.MinSpare, sc.MaxSpare = 16, 8, 4, 8
	sc.Cores = 4
	sc.HealthIntervalS, sc.HealthTimeoutS, sc.HealthFails = 1, 10, 3
	sc.DialTimeoutS = 3
	sc.ClientTimeoutS = 10
	sc.SlowlogTimeoutS = 10
	sc.ReaderSessions = 0.1
	sc.EditorSessions = 0.004
	sc.BotRate = 0.18
}

// crawlerBacklog is the reference incident with a proxy that honours
// health_timeout while its check waits in php-fpm's queue, and no read_timeout:
// requests wait as long as it takes and PHP answers them after their clients
// left. A check cut at 10 s fails as soon as the queue holds 10 s of work, so
// the upstream flaps and Caddy answers 503 while the queue stays at tens of
// seconds of work: it never nears the old backlog of 511, let alone 4,096, and
// no dial is dropped (truth.json notes that the backlog change played no part).
func crawlerBacklog() Scenario {
	sc := crawlerBacklogWedge() // no read_timeout either
	sc.Name = "crawler-backlog"
	sc.Description = "the reference crawl: a zh-CN Chrome crawler over thousands of IPs saturates 16 workers; " +
		"the proxy cuts queued health checks at health_timeout 10s (no read_timeout): 503 flapping, abandoned PHP " +
		"work, the queue stays near 10s of work (the 511 -> 4096 backlog change plays no part)"
	sc.HealthTimeoutQueued = true
	return sc
}

func crawlerBacklogReadTimeout() Scenario {
	sc := Scenario{
		Name: "crawler-backlog-readtimeout",
		Description: "the reference crawl against the lab's configuration: queued health checks fail at the FastCGI " +
			"read_timeout (10s), requests waiting longer are logged as 504, 503 flapping",
		From: at(2026, 10, 3, 2, 0, 0), To: at(2026, 10, 3, 3, 30, 0),
	}
	siteDefaults(&sc)
	c := DefaultCrawler()
	sc.Crawler = &c
	bump := cmBump
	bump.cause = true
	sc.commits = []commit{cmInitial, cmLinkWalk, cmReadme, cmCSS, bump, cmFix}
	return sc
}

func crawlerBacklogFixed() Scenario {
	sc := crawlerBacklogReadTimeout()
	sc.Name = "crawler-backlog-fixed"
	sc.Description = "the same crawl with the fix already in force: listen.backlog 64 and a page_tools rate limit " +
		"(429 from Caddy); no 503 storm"
	early := cmFix
	early.at = at(2026, 10, 1, 9, 30, 0)
	bump := cmBump
	bump.apply = func(c *SiteConfig, _ *repoExtras) { c.Image, c.PHPVersion = "php:8.3-fpm-bookworm", "8.3.12" }
	sc.commits = []commit{cmInitial, cmLinkWalk, early, cmReadme, cmCSS, bump}
	return sc
}

func crawlerBacklogWedge() Scenario {
	sc := crawlerBacklogReadTimeout()
	sc.Name = "crawler-backlog-wedge"
	sc.Description = "the same crawl on stock Caddy without a FastCGI read_timeout: queued health checks wait and " +
		"pass, no 5xx while the queue grows (clients time out, Caddy logs 200s lasting minutes: a silent wedge) " +
		"until the 4096 backlog fills and dials and checks time out at connect (502, 503)"
	sc.commits[0] = initialWith(func(c *SiteConfig) { c.ReadTimeoutS = 0 })
	return sc
}

func crawlerBacklogCap64() Scenario {
	sc := crawlerBacklogReadTimeout()
	sc.Name = "crawler-backlog-cap64"
	sc.Description = "the same crawl with listen.backlog 64 but no rate limit: overflow makes Caddy's dials and " +
		"health checks time out at connect (502s), the upstream still flaps (503s), abandoned PHP work falls"
	bump := cmBump
	bump.apply = func(c *SiteConfig, _ *repoExtras) {
		c.Image, c.PHPVersion, c.Backlog = "php:8.3-fpm-bookworm", "8.3.12", 64
	}
	bump.message = "Bump PHP to 8.3; cap php-fpm queue at 64"
	sc.commits = []commit{cmInitial, cmLinkWalk, cmReadme, cmCSS, bump}
	return sc
}

func flashCrowd() Scenario {
	sc := Scenario{
		Name: "flash-crowd",
		Description: "a legitimate surge: a news link sends thousands of readers (many IPs, sessions, varied " +
			"languages, assets after pages) to one cached article; no crawler, no outage",
		From: at(2026, 10, 14, 19, 30, 0), To: at(2026, 10, 14, 21, 30, 0),
	}
	siteDefaults(&sc)
	sc.Crowd = &CrowdSpec{
		Start: at(2026, 10, 14, 20, 5, 0), RampMinutes: 4, PeakSessions: 2.5, DecayMinutes: 22, EndMinutes: 80,
		Titles: []string{"한글날", "훈민정음", "세종대왕"},
		Referers: []string{"https://n.news.naver.com/article/023/0003881234", "https://v.daum.net/v/20261014200112345",
			"https://t.co/x1Kq9ZpL3w", "https://www.google.com/"},
	}
	sc.commits = wikiHistory()
	return sc
}

func slowDatabase() Scenario {
	sc := Scenario{
		Name: "slow-database",
		Description: "slow queries on the database server hold every worker while CPU stays low; the queue " +
			"(backlog 64) overflows; no crawler",
		From: at(2026, 10, 20, 13, 30, 0), To: at(2026, 10, 20, 15, 0, 0),
	}
	siteDefaults(&sc)
	sc.SlowDB = &SlowDBSpec{From: at(2026, 10, 20, 14, 5, 0), To: at(2026, 10, 20, 14, 35, 0), WaitFactor: 10, ExtraWaitS: 40}
	sc.ReaderSessions = 0.2 // a weekday afternoon
	sc.commits = wikiHistory()
	return sc
}
