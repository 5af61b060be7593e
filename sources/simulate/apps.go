package simulate

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Applications beyond MediaWiki and WordPress (issue 25): the detectors were
// written beside those two, so their routes, cookies and cache habits are the
// ones the detectors know. A Laravel shop and a Nextcloud server bring others:
// numeric resource routes (/products/{id}), a JSON API under /api/v1/, POSTs
// that a page's components send (Livewire), WebDAV methods (PROPFIND, REPORT)
// under /remote.php/dav/, OCS endpoints, a session cookie every visitor holds
// (laravel_session, oc<instanceid>) so that a Cookie alone says nothing of a
// login, and a logged-in marker that only an expression names. They are
// described by data (appSite), so each is routes and costs, not code.

// Applications without code of their own in the engine (Scenario.App).
const (
	AppLaravel App = iota + AppWordPress + 1
	AppNextcloud
)

// Tools of the Laravel shop and the Nextcloud server: each is a route whose
// answer PHP renders every time.
const (
	ToolLaravelProduct Tool = "laravel-product" // GET /products/{id}
	ToolLaravelSearch  Tool = "laravel-search"  // GET /search?q=TERM
	ToolLivewire       Tool = "livewire-update" // POST /livewire/update (a component's round trip)
	ToolNCShare        Tool = "nc-share"        // GET /index.php/s/{token} (a public share's page)
	ToolNCShareZip     Tool = "nc-share-zip"    // GET /index.php/s/{token}/download (a folder zipped on the fly)
	ToolNCPreview      Tool = "nc-preview"      // GET /index.php/core/preview?fileId=N (a thumbnail rendered)
)

// appSite is an application the engine runs from data: its host, where its
// code lives, how its visitors' cookies look, what its readers, staff and
// search engines ask for, and which static files a page loads.
type appSite struct {
	name, host, root string
	// loggedIn is the logged-in cookie pattern for bundle.yaml (RE2).
	loggedIn string
	cookie   func(p *profile, rng *rand.Rand) string
	pages    []appPage // a reader's next page, by weight
	staff    []appPage // a staff session's steps, in order
	bot      []appPage // a search engine's page, by weight
	assets   []siteAsset
	image    func(n int) string
	// dockerImage and phpVersion start its configuration history.
	dockerImage, phpVersion string
}

// appPage is one kind of request of an application.
type appPage struct {
	weight float64
	method string
	uri    func(rng *rand.Rand) string
	kind   kind
	tool   Tool // for kindTool: its cost
	// hit, when set, is the chance a logged-out GET comes from a cache.
	hit float64
	// status replaces PHP's 200 (WebDAV's 207 Multi-Status).
	status int
}

// app is the scenario's data-described application (nil for MediaWiki and
// WordPress, which the engine writes out).
func (sc *Scenario) app() *appSite {
	switch sc.App {
	case AppLaravel:
		return laravelShop
	case AppNextcloud:
		return nextcloudServer
	}
	return nil
}

func pick(pages []appPage, rng *rand.Rand) *appPage {
	total := 0.0
	for i := range pages {
		total += pages[i].weight
	}
	x := rng.Float64() * total
	for i := range pages {
		if x -= pages[i].weight; x < 0 {
			return &pages[i]
		}
	}
	return &pages[len(pages)-1]
}

// appRequest builds p's request for a session.
func (s *sim) appRequest(ss *session, a *appSite, p *appPage, ref string) *request {
	uri := p.uri(s.w.rng)
	r := s.newReq(ss.cls, p.kind, ss.prof, ss.ip, ss.port, p.method, uri, ref)
	r.tool = p.tool
	r.owner = ss
	if p.status != 0 {
		r.phpStatus = p.status
	}
	if p.method != "GET" {
		r.bytesIn = 120 + s.w.rng.IntN(3000)
	}
	if p.hit > 0 && p.method == "GET" {
		s.cachedOr(r, p.hit)
	} else {
		s.cost(r)
	}
	return r
}

// appNextPage: a reader's next request, its Referer the last page.
func (ss *session) appNextPage(s *sim, a *appSite) {
	ref := ss.ref
	if ss.last != "" {
		ref = "https://" + a.host + ss.last
	}
	p := pick(a.pages, s.w.rng)
	r := s.appRequest(ss, a, p, ref)
	if r.kind == kindPage || r.kind == kindTool {
		ss.last = r.uri
	}
	ss.tries = 0
	s.send(r)
}

// appStaffStep: one step of a staff session (a shop's back office, a
// colleague editing a shared document).
func (ss *session) appStaffStep(s *sim, a *appSite) {
	if ss.editing >= len(a.staff) {
		return
	}
	ref := "https://" + a.host + "/"
	if ss.last != "" {
		ref = "https://" + a.host + ss.last
	}
	r := s.appRequest(ss, a, &a.staff[ss.editing], ref)
	r.owner = editorOwner{ss}
	if r.method == "GET" {
		ss.last = r.uri
	}
	s.send(r)
}

func (ss *session) appFetchAssets(s *sim, a *appSite) {
	ss.fetchPageAssets(s, "https://"+a.host+ss.last, a.assets, a.image)
}

// appBotPage is a search engine's page on an application.
func (s *sim) appBotPage(get func(kind, string) *request, a *appSite) *request {
	p := pick(a.bot, s.w.rng)
	r := get(p.kind, p.uri(s.w.rng))
	r.tool = p.tool
	if p.hit > 0 {
		s.cachedOr(r, p.hit)
	} else {
		s.cost(r)
	}
	return r
}

// appToolURI is the URI of an application tool for a crawler.
func appToolURI(tool Tool, rng *rand.Rand) string {
	switch tool {
	case ToolLaravelProduct:
		return productURI(rng)
	case ToolLaravelSearch:
		return "/search?q=" + url.QueryEscape(TitleWords[rng.IntN(len(TitleWords))])
	case ToolLivewire:
		return "/livewire/update"
	case ToolNCShare:
		return "/index.php/s/" + shareToken(rng)
	case ToolNCShareZip:
		return "/index.php/s/" + shareToken(rng) + "/download"
	}
	return "/index.php/core/preview?fileId=" + strconv.Itoa(10000+rng.IntN(90000)) + "&x=250&y=250&a=true"
}

func fixed(uri string) func(*rand.Rand) string { return func(*rand.Rand) string { return uri } }

// ---- a Laravel shop -------------------------------------------------------------

const laravelHost = "shop.example.com"

// laravelRememberCookie is Laravel's remember-me cookie of the web guard:
// remember_web_ and the SHA-1 of the guard's class, set only on login.
const laravelRememberCookie = "remember_web_59ba36addc2b2f9401580f014c7f58ea4e30989d"

func productURI(rng *rand.Rand) string { return "/products/" + strconv.Itoa(1000+rng.IntN(24000)) }

func laravelCategory(rng *rand.Rand) string {
	return strings.ToLower(url.PathEscape(TitleWords[rng.IntN(len(TitleWords))]))
}

var laravelShop = &appSite{
	name: "Laravel", host: laravelHost, root: "/var/www/shop/public",
	loggedIn: `remember_web_[0-9a-f]{40}=`,
	// Every visitor holds the session and the CSRF cookie; a login adds
	// the remember-me cookie.
	cookie: func(p *profile, rng *rand.Rand) string {
		c := "XSRF-TOKEN=eyJpdiI6" + strconv.FormatUint(rng.Uint64(), 36) + "; laravel_session=eyJpdiI6" + strconv.FormatUint(rng.Uint64(), 36)
		if p.loggedIn {
			c += "; " + laravelRememberCookie + "=eyJpdiI6" + strconv.FormatUint(rng.Uint64(), 36)
		}
		return c
	},
	pages: []appPage{
		{weight: 30, method: "GET", uri: productURI, kind: kindTool, tool: ToolLaravelProduct},
		{weight: 14, method: "GET", uri: fixed("/"), kind: kindPage},
		{weight: 14, method: "GET", uri: func(rng *rand.Rand) string {
			return "/categories/" + laravelCategory(rng) + "?page=" + strconv.Itoa(1+rng.IntN(6))
		}, kind: kindPage},
		{weight: 12, method: "GET", uri: func(rng *rand.Rand) string {
			return "/api/v1/products?category=" + laravelCategory(rng) + "&page=" + strconv.Itoa(1+rng.IntN(6))
		}, kind: kindAPI},
		{weight: 12, method: "POST", uri: fixed("/livewire/update"), kind: kindTool, tool: ToolLivewire},
		{weight: 7, method: "GET", uri: func(rng *rand.Rand) string { return appToolURI(ToolLaravelSearch, rng) }, kind: kindTool, tool: ToolLaravelSearch},
		{weight: 6, method: "GET", uri: fixed("/cart"), kind: kindPage},
		{weight: 5, method: "GET", uri: fixed("/api/v1/cart"), kind: kindAPI},
	},
	staff: []appPage{
		{method: "GET", uri: fixed("/admin/orders"), kind: kindPage},
		{method: "GET", uri: func(rng *rand.Rand) string { return "/admin" + productURI(rng) + "/edit" }, kind: kindTool, tool: ToolLaravelProduct},
		{method: "POST", uri: fixed("/livewire/update"), kind: kindTool, tool: ToolLivewire},
	},
	bot: []appPage{
		{weight: 70, method: "GET", uri: productURI, kind: kindTool, tool: ToolLaravelProduct},
		{weight: 20, method: "GET", uri: func(rng *rand.Rand) string { return "/categories/" + laravelCategory(rng) }, kind: kindPage},
		{weight: 10, method: "GET", uri: fixed("/sitemap.xml"), kind: kindPage},
	},
	assets: []siteAsset{
		{"/build/assets/app-4f8d2c1a.css", "text/css; charset=utf-8", 31240, true},
		{"/build/assets/app-9b3e7f20.js", "text/javascript; charset=utf-8", 142310, true},
		{"/vendor/livewire/livewire.min.js?id=cc800bf4", "text/javascript; charset=utf-8", 48120, true},
		{"/favicon.ico", "image/vnd.microsoft.icon", 5430, false},
	},
	image:       func(n int) string { return "/storage/products/" + strconv.Itoa(1000+n%24000) + "/thumb.webp" },
	dockerImage: "php:8.3-fpm-bookworm", phpVersion: "8.3.12",
}

// ---- a Nextcloud server ------------------------------------------------------------

const nextcloudHost = "cloud.example.org"

// ncInstanceCookie is the session cookie named for the instance id
// (oc<instanceid>), held by every visitor, logged in or not.
const ncInstanceCookie = "ocq4k2m8x7v1z3"

// shareToken is one of the server's public share links (15 characters of
// [a-zA-Z0-9], as Nextcloud makes them).
func shareToken(rng *rand.Rand) string {
	const alnum = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	n := uint64(rng.IntN(900)) * 0x9e3779b97f4a7c15
	b := make([]byte, 15)
	for i := range b {
		b[i] = alnum[n%uint64(len(alnum))]
		n = n/uint64(len(alnum)) + uint64(i)*7919
	}
	return string(b)
}

func ncFolder(rng *rand.Rand) string {
	return []string{"/Projects", "/Documents", "/Photos", "/Shared", "/Projects/2026"}[rng.IntN(5)]
}

var nextcloudServer = &appSite{
	name: "Nextcloud", host: nextcloudHost, root: "/var/www/nextcloud",
	loggedIn: `(^|;\s*)nc_(username|token)=`,
	cookie: func(p *profile, rng *rand.Rand) string {
		c := ncInstanceCookie + "=" + strconv.FormatUint(rng.Uint64(), 36) + "; oc_sessionPassphrase=" + strconv.FormatUint(rng.Uint64(), 36) +
			"; __Host-nc_sameSiteCookielax=true; __Host-nc_sameSiteCookiestrict=true"
		if p.loggedIn {
			c += "; nc_username=user" + strconv.Itoa(rng.IntN(300)) + "; nc_token=" + strconv.FormatUint(rng.Uint64(), 36) +
				"; nc_session_id=" + strconv.FormatUint(rng.Uint64(), 36)
		}
		return c
	},
	pages: []appPage{
		{weight: 22, method: "GET", uri: func(rng *rand.Rand) string { return "/index.php/apps/files/?dir=" + url.QueryEscape(ncFolder(rng)) }, kind: kindPage},
		{weight: 20, method: "GET", uri: fixed("/ocs/v2.php/apps/notifications/api/v2/notifications?format=json"), kind: kindAPI},
		{weight: 16, method: "PROPFIND", uri: func(rng *rand.Rand) string {
			return "/remote.php/dav/files/user" + strconv.Itoa(rng.IntN(300)) + ncFolder(rng) + "/"
		}, kind: kindAPI, status: 207},
		{weight: 6, method: "REPORT", uri: func(rng *rand.Rand) string { return "/remote.php/dav/files/user" + strconv.Itoa(rng.IntN(300)) + "/" }, kind: kindAPI, status: 207},
		{weight: 12, method: "GET", uri: func(rng *rand.Rand) string { return appToolURI(ToolNCPreview, rng) }, kind: kindTool, tool: ToolNCPreview},
		{weight: 14, method: "GET", uri: func(rng *rand.Rand) string { return appToolURI(ToolNCShare, rng) }, kind: kindTool, tool: ToolNCShare},
		{weight: 3, method: "GET", uri: func(rng *rand.Rand) string { return appToolURI(ToolNCShareZip, rng) }, kind: kindTool, tool: ToolNCShareZip},
		{weight: 5, method: "GET", uri: fixed("/ocs/v2.php/apps/files_sharing/api/v1/shares?format=json&shared_with_me=true"), kind: kindAPI},
		{weight: 2, method: "GET", uri: fixed("/status.php"), kind: kindAPI},
	},
	staff: []appPage{
		{method: "GET", uri: fixed("/index.php/apps/files/?dir=/Shared"), kind: kindPage},
		{method: "PUT", uri: func(rng *rand.Rand) string {
			return "/remote.php/dav/files/user" + strconv.Itoa(rng.IntN(300)) + "/Shared/notes-" + strconv.Itoa(rng.IntN(90)) + ".md"
		}, kind: kindAPI, status: 204},
		{method: "PROPFIND", uri: fixed("/remote.php/dav/files/user1/Shared/"), kind: kindAPI, status: 207},
	},
	bot: []appPage{
		{weight: 80, method: "GET", uri: func(rng *rand.Rand) string { return appToolURI(ToolNCShare, rng) }, kind: kindTool, tool: ToolNCShare},
		{weight: 20, method: "GET", uri: fixed("/index.php/login"), kind: kindPage},
	},
	assets: []siteAsset{
		{"/dist/core-common.js?v=8d0f1a2b", "text/javascript; charset=utf-8", 912000, true},
		{"/dist/core-main.js?v=8d0f1a2b", "text/javascript; charset=utf-8", 221000, true},
		{"/core/css/server.css?v=8d0f1a2b", "text/css; charset=utf-8", 64000, true},
		{"/core/img/favicon.ico", "image/vnd.microsoft.icon", 4286, false},
	},
	image: func(n int) string {
		return "/core/img/filetypes/" + []string{"folder", "image", "x-office-document", "application-pdf"}[n%4] + ".svg"
	},
	dockerImage: "nextcloud:29.0.7-fpm", phpVersion: "8.2.24",
}

// MirallAgent is the Nextcloud desktop client's User-Agent on Linux.
const MirallAgent = "Mozilla/5.0 (Linux) mirall/3.13.2 (Nextcloud, ubuntu-6.8.0-45-generic ClientArchitecture: x86_64 OsArchitecture: x86_64)"

// ---- configuration files -------------------------------------------------------

func renderAppPool(sc *Scenario, c SiteConfig, a *appSite) string {
	return renderPHPPool(sc, c, a.name, a.host)
}

// renderPHPPool writes the pool file the WordPress and data-described sites
// share; the reference wiki's (renderPool) keeps its own comments and
// pm.max_requests: merging them would change every wiki scenario's bundle.
func renderPHPPool(sc *Scenario, c SiteConfig, app, host string) string {
	return fmt.Sprintf(`; php-fpm pool for %s (%s). Deployed by CI on merge.
[www]
user = www-data
group = www-data

listen = 127.0.0.1:9000
listen.backlog = %d

pm = dynamic
pm.max_children = %d
pm.start_servers = %d
pm.min_spare_servers = %d
pm.max_spare_servers = %d
pm.max_requests = 500

pm.status_path = /fpm-status
pm.status_listen = 127.0.0.1:9001
ping.path = /fpm-ping

request_slowlog_timeout = %ds
slowlog = /proc/self/fd/2
catch_workers_output = yes
`, app, host, c.Backlog, sc.maxChildren(c), sc.StartServers, sc.MinSpare, sc.MaxSpare, int(sc.SlowlogTimeoutS))
}

// renderAppCaddyfile writes the site's Caddyfile, with the access log's
// Cookie as the scenario logs it: Caddy redacts it unless the server sets
// log_credentials, and a log filter can delete it.
func renderAppCaddyfile(sc *Scenario, c SiteConfig, a *appSite) string {
	var b strings.Builder
	b.WriteString("{\n\tmetrics\n")
	if sc.CookieLog == CookieLogged {
		b.WriteString("\tservers {\n\t\tlog_credentials\n\t}\n")
	}
	b.WriteString(`	log {
		output file /var/log/caddy/caddy.log
		format json
	}
}

` + a.host + ` {
	root * ` + a.root + `
	encode zstd gzip

	log {
		output file /var/log/caddy/access.log
`)
	if sc.CookieLog == CookieOmitted {
		b.WriteString("\t\tformat filter {\n\t\t\trequest>headers>Cookie delete\n\t\t\twrap json\n\t\t}\n")
	} else {
		b.WriteString("\t\tformat json\n")
	}
	b.WriteString("\t}\n\n")
	if sc.App == AppNextcloud {
		b.WriteString(`	redir /.well-known/carddav /remote.php/dav/ 301
	redir /.well-known/caldav /remote.php/dav/ 301

`)
	}
	b.WriteString("\t@static path /build/* /vendor/* /storage/* /dist/* /core/css/* /core/img/* /favicon.ico /robots.txt\n\thandle @static {\n\t\tfile_server\n\t}\n\n")
	writePHPFastCGI(&b, c, sc)
	return b.String()
}

func renderAppDockerfile(c SiteConfig) string {
	return "FROM " + c.Image + `
RUN apt-get update \
 && apt-get install -y --no-install-recommends libzip-dev libpng-dev libicu-dev \
 && docker-php-ext-install pdo_mysql opcache intl zip gd \
 && rm -rf /var/lib/apt/lists/*
COPY php-fpm.d/www.conf /usr/local/etc/php-fpm.d/www.conf
`
}

// appInitial is an application's first configuration commit.
func appInitial(a *appSite, at0 time.Time) commit {
	return commit{at: at0, message: "Initial configuration: " + a.name + " on php-fpm behind Caddy",
		apply: func(c *SiteConfig, x *repoExtras) {
			*c = SiteConfig{Image: a.dockerImage, PHPVersion: a.phpVersion, Backlog: 511, ReadTimeoutS: 10}
			x.readme = []string{"Configuration of " + a.host + ": Caddy in front of php-fpm (" + a.name + ")."}
			x.css = []string{"body { font-family: sans-serif; }"}
		}}
}
