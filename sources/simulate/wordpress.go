package simulate

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
)

// A WordPress site (Scenario.App = AppWordPress): the same engine, with
// WordPress's paths, cookies and configuration. Logged-out post views are
// answered by Caddy from WP Super Cache's static files; a query string
// (search, replytocom) or a logged-in cookie bypasses the cache and runs PHP.

const wpHost = "blog.example.org"

// host is the site's name in Caddy's log.
func (sc *Scenario) host() string {
	if a := sc.app(); a != nil {
		return a.host
	}
	if sc.App == AppWordPress {
		return wpHost
	}
	return "wiki.example.org"
}

// loggedInCookie is the cookie name (prefix) that marks a logged-in user.
func (sc *Scenario) loggedInCookie() string {
	if a := sc.app(); a != nil {
		return a.loggedIn
	}
	if sc.App == AppWordPress {
		return "wordpress_logged_in_"
	}
	return "wikiUserID="
}

// wpCookieHash is COOKIEHASH: md5 of the site URL, fixed per site.
const wpCookieHash = "5c1e2a8f0b7d4e6a9c3f1b2d8e7a6c40"

// wpCookie is a WordPress reader's Cookie as Caddy logs it (values redacted
// by WordPress's own names, the cookie names visible).
func wpCookie(p *profile, rng *rand.Rand) string {
	switch {
	case p.loggedIn:
		return "wordpress_logged_in_" + wpCookieHash + "=REDACTED; wp-settings-time-" + strconv.Itoa(2+rng.IntN(40)) + "=1790000000"
	case p.cookie != "":
		// someone who commented: WordPress remembers their name, not a login
		return "comment_author_" + wpCookieHash + "=REDACTED"
	}
	return ""
}

func wpPostPath(slug string) string { return "/2026/10/" + slug + "/" }

func wpTerm(rng *rand.Rand) string { return url.QueryEscape(TitleWords[rng.IntN(len(TitleWords))]) }

// wpToolURI is the URI of one of WordPress's uncached links on post slug t.
func wpToolURI(tool Tool, t string, rng *rand.Rand) string {
	switch tool {
	case ToolWPSearch:
		return "/?s=" + wpTerm(rng)
	case ToolWPRestSearch:
		return "/wp-json/wp/v2/search?search=" + wpTerm(rng) + "&per_page=10"
	}
	return wpPostPath(t) + "?replytocom=" + strconv.Itoa(3000+rng.IntN(40000))
}

// wpNextPage: a reader mostly reads posts (from the page cache when logged
// out), now and then searches, opens a reply link or an archive.
func (ss *session) wpNextPage(s *sim) {
	w := s.w
	ref := ss.ref
	if ss.last != "" {
		ref = "https://" + wpHost + ss.last
	}
	t := w.title()
	if len(ss.hot) > 0 && ss.last == "" {
		t = ss.hot[w.rng.IntN(len(ss.hot))]
	}
	mk := func(k kind, tool Tool, uri string) *request { return s.phpGet(ss, k, tool, uri, ref) }
	var r *request
	switch x := w.rng.Float64(); {
	case x < 0.86:
		r = s.cachedOrPHP(ss, wpPostPath(t), ref, 0.92)
	case x < 0.90:
		r = mk(kindTool, ToolWPSearch, wpToolURI(ToolWPSearch, t, w.rng))
	case x < 0.92:
		r = mk(kindTool, ToolWPRestSearch, wpToolURI(ToolWPRestSearch, t, w.rng))
	case x < 0.94:
		r = mk(kindTool, ToolWPReplyToCom, wpToolURI(ToolWPReplyToCom, t, w.rng))
	case x < 0.98:
		r = s.cachedOrPHP(ss, "/category/"+url.PathEscape(TitleWords[w.rng.IntN(len(TitleWords))])+"/", ref, 0.8)
	default:
		r = s.cachedOrPHP(ss, "/feed/", ref, 0.95)
	}
	if r.kind == kindPage && r.uri != "/feed/" && !strings.HasPrefix(r.uri, "/category/") {
		ss.last = r.uri
	}
	ss.tries = 0
	s.send(r)
}

// wpEditorStep: an author views a post, opens the editor, autosaves.
func (ss *session) wpEditorStep(s *sim) {
	w := s.w
	var r *request
	switch ss.editing {
	case 0:
		t := w.title()
		ss.last = wpPostPath(t)
		r = s.newReq(clsEditor, kindPage, ss.prof, ss.ip, ss.port, "GET", ss.last, "https://"+wpHost+"/wp-admin/edit.php")
	case 1:
		r = s.newReq(clsEditor, kindTool, ss.prof, ss.ip, ss.port, "GET",
			"/wp-admin/post.php?post="+strconv.Itoa(100+w.rng.IntN(4000))+"&action=edit", "https://"+wpHost+ss.last)
		r.tool = ToolEdit
	case 2:
		r = s.newReq(clsEditor, kindAPI, ss.prof, ss.ip, ss.port, "POST", "/wp-admin/admin-ajax.php",
			"https://"+wpHost+"/wp-admin/post.php")
		r.bytesIn = 2000 + w.rng.IntN(30000)
	default:
		return
	}
	s.cost(r)
	r.owner = editorOwner{ss}
	s.send(r)
}

// wpAssets are what a browser fetches after a WordPress page.
var wpAssets = []siteAsset{
	{"/wp-content/themes/twentytwentyfour/style.css?ver=1.2", "text/css; charset=utf-8", 9120, true},
	{"/wp-includes/js/jquery/jquery.min.js?ver=3.7.1", "text/javascript; charset=utf-8", 87533, true},
	{"/wp-content/themes/twentytwentyfour/assets/images/logo.png", "image/png", 10840, false},
	{"/favicon.ico", "image/vnd.microsoft.icon", 5430, false},
}

func wpAssetAccept(uri string) string {
	switch {
	case strings.Contains(uri, ".css"):
		return "text/css,*/*;q=0.1"
	case strings.HasSuffix(uri, ".jpg") || strings.HasSuffix(uri, ".png") || strings.HasSuffix(uri, ".ico"):
		return "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
	}
	return "*/*"
}

func (ss *session) wpFetchAssets(s *sim) {
	ss.fetchPageAssets(s, "https://"+wpHost+ss.last, wpAssets, func(img int) string {
		return "/wp-content/uploads/2026/" + fmt.Sprintf("%02d", 1+img%10) + "/img-" + strconv.Itoa(img) + "-768x512.jpg"
	})
}

// wpBotPage is a search engine's page on WordPress (y is botRequest's draw,
// past robots.txt): the feed, or a post, often from the cache.
func (s *sim) wpBotPage(get func(kind, string) *request, y float64, t string) *request {
	if y < 0.06 {
		r := get(kindPage, "/feed/")
		r.route, r.size = routeCache, 30000+s.w.rng.IntN(8000)
		return r
	}
	r := get(kindPage, wpPostPath(t))
	s.cachedOr(r, 0.7)
	return r
}

// ---- configuration files -------------------------------------------------------

func renderWPPool(sc *Scenario, c SiteConfig) string {
	return renderPHPPool(sc, c, "WordPress", wpHost)
}

func renderWPCaddyfile(sc *Scenario, c SiteConfig) string {
	var b strings.Builder
	b.WriteString(`{
	metrics
	log {
		output file /var/log/caddy/caddy.log
		format json
	}
}

` + wpHost + ` {
	root * /var/www/wordpress
	encode zstd gzip

	log {
		output file /var/log/caddy/access.log
		format json
	}

	# WP Super Cache: logged-out GETs without a query string come from its static files
	@supercache {
		method GET
		not header Cookie *wordpress_logged_in_*
		not header Cookie *comment_author_*
		expression {query} == ""
		file /wp-content/cache/supercache/{host}{path}index-https.html
	}
	rewrite @supercache {file_match.relative}

	@static path /wp-content/* /wp-includes/* /favicon.ico /robots.txt
	handle @static {
		file_server
	}

`)
	writePHPFastCGI(&b, c, sc)
	return b.String()
}

func renderWPDockerfile(c SiteConfig) string {
	return "FROM " + c.Image + `
RUN apt-get update \
 && apt-get install -y --no-install-recommends libzip-dev libpng-dev libjpeg-dev \
 && docker-php-ext-install mysqli opcache gd zip exif \
 && rm -rf /var/lib/apt/lists/*
COPY php-fpm.d/www.conf /usr/local/etc/php-fpm.d/www.conf
`
}

// Configuration commits of the WordPress site. Dates are KST.
var (
	cmWPInitial = commit{at: at(2026, 8, 3, 15, 20, 0), message: "Initial configuration: WordPress on php-fpm behind Caddy",
		apply: func(c *SiteConfig, x *repoExtras) {
			*c = SiteConfig{Image: "wordpress:6.6-php8.3-fpm", PHPVersion: "8.3.12", Backlog: 511, ReadTimeoutS: 10}
			x.readme = []string{"Configuration of " + wpHost + ": Caddy in front of php-fpm (WordPress, WP Super Cache)."}
			x.css = []string{"body { font-family: sans-serif; }"}
		}}
	cmWPReadme = commit{at: at(2026, 9, 14, 10, 2, 0), message: "README: cache purge notes",
		apply: func(_ *SiteConfig, x *repoExtras) {
			x.readme = append(x.readme, "", "Purge the page cache from wp-admin after a theme change.")
		}}
	cmWPBump = commit{at: at(2026, 10, 8, 11, 40, 0), message: "WordPress 6.6.2",
		apply: func(c *SiteConfig, _ *repoExtras) { c.Image = "wordpress:6.6.2-php8.3-fpm" }}
)
