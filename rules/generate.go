package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
)

// Zone is one caddy-ratelimit v0.1.0 zone, before it is printed: what it
// matches, how it is keyed and how many events it admits per window. It holds
// no Caddyfile syntax; caddyfile.go prints it and validate.go renders the JSON
// Caddy must produce from that print.
type Zone struct {
	// Name is the zone's name, [a-z0-9_] only. v0.1.0 keeps a zone's state
	// across config reloads by name, so names are unique within a proposal.
	Name string
	// PerClient keys the zone by {client_ip}: one bucket per client. Otherwise
	// the key is the zone's name, a static string: one bucket for all clients.
	PerClient bool
	// Window is the sliding window; Events the requests admitted within it.
	Window time.Duration
	Events int
	// Targets are the zone's match blocks: v0.1.0 appends one matcher set per
	// `match` block and a request is in the zone when any set matches. Every set
	// carries the same Conditions.
	Targets []Target
	Cond    Conditions

	// What the zone answers, for Why and the backtest (not printed).
	finding   string
	crawler   int          // index of the crawler the zone answers
	tools     []string     // tool labels matched, most requested first
	covered   int          // crawler requests in the window that the targets cover
	requests  int          // crawler requests in the window
	condWhy   []prose.Text // why each condition was (or was not) added
	targetWhy []prose.Text // why a query key is matched by the shape of its values
	sizing    prose.Text   // the sizing arithmetic
	resized   prose.Text   // how the backtest resized the zone, if it did
	tolerated prose.Text   // the baseline's refusals it was not resized for, if any
	tightened prose.Text   // how the backtest tightened the zone to reach the goal, if it did
	spared    prose.Text   // how the backtest grew the zone to spare other clients, if it did
	missed    prose.Text   // that the zone still refuses too many other clients, if it does
	// crawlerMissed says that the zone still lets too much of its crawler
	// through, if it does.
	crawlerMissed prose.Text
}

// Key is the zone's key as written in the Caddyfile.
func (z *Zone) Key() string {
	if z.PerClient {
		return "{client_ip}"
	}
	return z.Name
}

// Target is what one match block selects besides the shared Conditions. Exactly
// one of its parts is set.
type Target struct {
	// Paths are path matcher patterns (Caddy matches them case-insensitively
	// on the cleaned, unescaped path; a trailing * is a prefix match).
	Paths []string
	// QueryKey and QueryValues make a query matcher: the key must be present
	// with one of the values ("*" accepts any value). QueryKey and
	// ValueRegexp instead make a vars_regexp on the key's values
	// (queryValueVar; a pattern that never matches "", so the key must be
	// present too): where the crawler's values have a shape the ordinary
	// ones lack (queryvalues.go).
	QueryKey    string
	QueryValues []string
	ValueRegexp string
	// TitleNames match the title= query parameter against special pages by
	// name, case-insensitively, with or without a subpage ("Special:X/Page").
	TitleNames []string
}

// Conditions restrict every match block of a zone to the crawler's kind of client.
type Conditions struct {
	// NotCookie excludes requests whose Cookie contains it (the site's
	// logged-in cookie pattern): `not header Cookie *NotCookie*`.
	NotCookie string
	// NotCookieRegexp excludes requests whose Cookie the site's logged-in
	// pattern, a regular expression, matches:
	// `not header_regexp Cookie <NotCookieRegexp>`.
	NotCookieRegexp string
	// NoCookie requires no Cookie header at all: used when the site's
	// logged-in pattern is unknown and the crawler sent no cookie.
	NoCookie bool
	// Lang requires the first Accept-Language entry to be this tag
	// (case-insensitive), as detect's fingerprint reads it.
	Lang string
	// NoClientHints requires the Sec-Ch-Ua header to be absent.
	NoClientHints bool
	// AnyLang requires an Accept-Language header, whatever its language
	// (`header Accept-Language *`): an actor rotating browser languages
	// still sends one, and clients that send none (many declared bots and
	// tools) pass the zone.
	AnyLang bool
	// UserAgent requires the User-Agent to contain this token (e.g. "Chrome/").
	UserAgent string
	// UserAgentVersions, when set, narrows UserAgent to these major versions
	// ("121", "120"): header_regexp User-Agent Chrome/(?:121|120)(?:\D|$).
	// Crawlers tend to keep one stale browser version; readers update.
	UserAgentVersions []string
	// Method requires the request method ("POST"): a flood of POSTs is
	// held while readers' GETs of the same paths pass.
	Method string
	// NoSiteReferer excludes requests whose Referer is a page of the site
	// itself (http or https, the request's own host): a reader who clicks a
	// tool on a page sends one, a crawler that sent none is still held.
	// `not header Referer http://{http.request.host}/* https://...`.
	NoSiteReferer bool
}

// siteRefererPatterns are the header matcher values of Conditions.NoSiteReferer:
// Caddy expands the placeholder to the request's host without its port, as
// the log reader compares sources.Request.SiteReferer.
var siteRefererPatterns = []string{"http://{http.request.host}/*", "https://{http.request.host}/*"}

// uaVersionRegexp is the header_regexp pattern of Conditions.UserAgentVersions.
func uaVersionRegexp(token string, versions []string) string {
	return regexp.QuoteMeta(token) + `(?:` + strings.Join(versions, "|") + `)(?:\D|$)`
}

// tokenVersion reports whether a user agent holds token ("" never is held),
// and the major version that follows it ("121" for "Chrome/" in
// "... Chrome/121.0.0.0 ...", "" if none), from one search: the profile pass
// asks both of every request.
func tokenVersion(ua, token string) (held bool, version string) {
	if token == "" {
		return false, ""
	}
	i := strings.Index(ua, token)
	if i < 0 {
		return false, ""
	}
	rest := ua[i+len(token):]
	n := 0
	for n < len(rest) && n < 8 && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	return true, rest[:n]
}

// titleVar is the placeholder the title= target matches: every title
// parameter, percent-decoded and joined by "," (Caddy's query placeholder).
// MediaWiki reads the last one when a request repeats it, so a crawler that
// put an ordinary title first would evade titleRegexp's anchored pattern.
const titleVar = "{http.request.uri.query.title}"

// titleRegexp is the vars_regexp pattern of a TitleNames target.
func titleRegexp(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return `(?i)^(?:` + strings.Join(q, "|") + `)(?:/|$)`
}

// langRegexp is the header_regexp pattern of Conditions.Lang: the first entry
// of Accept-Language, blanks trimmed, equal to tag. It mirrors how the access
// log reader derives sources.Request.Lang, so the zone and the fingerprint agree.
func langRegexp(tag string) string {
	return `(?i)^[ \t]*` + regexp.QuoteMeta(tag) + `[ \t]*(?:[,;]|$)`
}

// crawlerEvidence is what the profile pass learnt about one crawler_burst
// finding's fingerprint in the incident window, and about ordinary clients.
type crawlerEvidence struct {
	Finding  string
	Key      request.ClusterKey
	Spread   bool
	Requests int
	// Fingerprints counts the fingerprints of the actor (more than one when
	// it rotated user agents and languages: no one of them is its own, and
	// the zone keys on none); Method is "POST" for a flood of POSTs.
	Fingerprints int
	Method       string
	// Labels counts the crawler's requests by detect.ToolLabel.
	Labels map[string]*labelEvidence
	// ToolRequests counts its requests for tools (classes tool, special, api):
	// what a zone matches. Of those, CookieRequests carried any Cookie
	// header, HintRequests sent Sec-Ch-Ua and UATokenRequests had the family
	// token (uaToken) in their User-Agent; Versions counts them by the major
	// version after that token. Counting the walk alone keeps out the ordinary
	// readers who happen to share the crawler's fingerprint and read articles.
	// SiteRefererRequests carried a Referer naming the site, and
	// OrdinarySiteReferer counts the ordinary logged-out tool requests (other
	// fingerprints, all the data, and in the window the readers who share the
	// crawler's) that did: readers clicking tools on pages.
	ToolRequests        int
	CookieRequests      int
	HintRequests        int
	UATokenRequests     int
	SiteRefererRequests int
	OrdinarySiteReferer int
	// LangRequests counts its tool requests that carried an Accept-Language
	// header. OrdinaryPresence counts the ordinary logged-out tool requests
	// (other fingerprints, all the data) by which headers they carried
	// (hasCookie, hasLang, hasSiteReferer bits) and by which of this
	// crawler's conditions they meet (the Ordinary mask): how many a
	// header-presence condition would spare of those the zone's other
	// conditions hold.
	LangRequests     int
	OrdinaryPresence [8][8]int
	// Ordinary counts ordinary logged-out requests (other fingerprints) by tool
	// label and by which of this crawler's conditions they meet (condLang,
	// condHints, condUA bits), over all the data; OrdinaryAll counts every
	// ordinary logged-out page request (assets excluded) the same way.
	Ordinary    map[string]*[8]int
	OrdinaryAll [8]int
	// Versions: see ToolRequests ("121" in "Chrome/121.0.0.0"). OrdinaryVer
	// and OrdinaryAllVer split the ordinary counts above by that version (""
	// when the token or a version is absent).
	Versions       map[string]int
	OrdinaryVer    map[string]map[string]*[8]int
	OrdinaryAllVer map[string]*[8]int
	// QueryValues samples the values the crawler gave each such key in the
	// window (siteEvidence.QueryValues holds the ordinary ones).
	QueryValues map[string]*valueSample
	// narrowed says which tools were left out of Labels, and why, when a
	// first proposal's zone refused too many other clients (narrow.go).
	narrowed prose.Text
	// agents remembers what the profile pass derived from the user agents
	// of ordinary requests lately (ordinaryAgent).
	agents request.AddressMemo[ordinaryAgent]
}

// labelEvidence is one tool label of a crawler: how often, under which path
// prefixes (path-form special pages) and at which paths (API endpoints).
type labelEvidence struct {
	N        int
	Prefixes map[string]int
	Paths    map[string]int
}

// siteEvidence is what the whole site's traffic says about URL forms.
type siteEvidence struct {
	// SpecialPath and SpecialTitle count requests for special pages in their
	// path form (/w/Special:X) and title= form, by any client.
	SpecialPath, SpecialTitle int
	// Prefixes counts the path prefixes of path-form special pages ("/w/").
	Prefixes map[string]int
	// Cookie is the site's logged-in cookie pattern ("" unknown).
	Cookie string
	// QueryValues samples, per query key a crawler's expensive templates
	// would match as key=*, the values ordinary logged-out requests gave it
	// (over all the data; queryvalues.go).
	QueryValues map[string]*valueSample
}

// Header bits of crawlerEvidence.OrdinaryPresence.
const (
	hasCookie      = 1 << iota // any Cookie header
	hasLang                    // any Accept-Language header
	hasSiteReferer             // a Referer from the site's own pages
)

// inZone counts the ordinary logged-out tool requests z would still match
// by its fingerprint conditions and header conditions so far, of those
// whose header bits satisfy want (a condition under consideration).
func (c *crawlerEvidence) inZone(z *Zone, want func(headers int) bool) int {
	mask := fingerprintMask(z)
	n := 0
	for h := range c.OrdinaryPresence {
		switch {
		case z.Cond.NoCookie && h&hasCookie != 0,
			z.Cond.AnyLang && h&hasLang == 0,
			z.Cond.NoSiteReferer && h&hasSiteReferer != 0,
			!want(h):
			continue
		}
		n += sumMask(&c.OrdinaryPresence[h], mask)
	}
	return n
}

// Condition bits of crawlerEvidence.Ordinary.
const (
	condLang  = 1 << iota // primary Accept-Language equals the crawler's
	condHints             // no Sec-Ch-Ua header
	condUA                // User-Agent holds the crawler's family token
)

// Generation thresholds.
const (
	// minLabelShare: a tool is matched when it carried at least this share of
	// the crawler's requests (and minLabelRequests of them): the rest is noise
	// from other clients that happen to share the fingerprint.
	minLabelShare    = 0.01
	minLabelRequests = 3
	// maxMisses: a header condition is used when at most this share of the
	// requests under the crawler's fingerprint fail it. A fingerprint (detect's
	// cluster key) can hold a few ordinary clients besides the crawler; they
	// must not veto a condition that describes the crawler itself.
	maxMisses = 0.01
	// maxLabels bounds the tools one zone names, to keep the rule readable.
	maxLabels = 40
	// minPrefixShare: a site-wide special-page prefix is used for a tool the
	// crawler walked only in the title= form when it carries this share.
	minPrefixShare = 0.1
)

// uaToken returns the User-Agent substring that names a fingerprint's family
// ("Chrome/"), or "" when the family has no such token.
func uaToken(family string) string {
	if !safeToken(family) {
		return ""
	}
	return family + "/"
}

// generate builds one zone per crawler from the profile, without sizing
// (Window and Events are set by the sizing pass). Values from the logs that are
// not provably inert in a Caddyfile token, a path pattern and a regular
// expression are dropped and reported in the notes.
func generate(crawlers []*crawlerEvidence, site siteEvidence) ([]Zone, []sources.QualityNote) {
	var zones []Zone
	var notes []sources.QualityNote
	used := map[string]bool{}
	for i, c := range crawlers {
		z, zn := zoneFor(c, site)
		notes = append(notes, zn...)
		if z == nil {
			continue
		}
		z.crawler = i
		z.Name = uniqueName(z.Name, used)
		zones = append(zones, *z)
	}
	return zones, notes
}

// zoneFor builds the zone answering one crawler, or nil with the reason.
func zoneFor(c *crawlerEvidence, site siteEvidence) (*Zone, []sources.QualityNote) {
	var notes []sources.QualityNote
	note := func(sev sources.Severity, t prose.Text) {
		notes = append(notes, sources.Note("rules", sev, t))
	}
	z := &Zone{finding: c.Finding, requests: c.Requests, PerClient: !c.Spread}

	labels := selectLabels(c)
	type special struct{ path, title bool }
	specials := map[string]*special{}
	var specialOrder []string
	var actions, paths, dropped []string
	var routeTargets []Target
	droppedN := 0
	var diff, oldid bool
	for _, l := range labels {
		ev := c.Labels[l]
		name, byPath, isSpecial := request.SpecialLabel(l)
		switch {
		case isSpecial:
			if !safeName(name) {
				dropped, droppedN = append(dropped, l), droppedN+ev.N
				continue
			}
			s := specials[name]
			if s == nil {
				s = &special{}
				specials[name] = s
				specialOrder = append(specialOrder, name)
			}
			if byPath {
				s.path = true
			} else {
				s.title = true
			}
		case strings.HasPrefix(l, "action="):
			a := strings.TrimPrefix(l, "action=")
			if !safeAction(a) {
				dropped, droppedN = append(dropped, l), droppedN+ev.N
				continue
			}
			actions = append(actions, a)
		case strings.HasPrefix(l, "/"):
			// A route template measured as expensive (costlyroutes.go).
			t, ok := routeTarget(l)
			if !ok {
				dropped, droppedN = append(dropped, l), droppedN+ev.N
				continue
			}
			routeTargets = append(routeTargets, t)
		case l == "diff":
			diff = true
		case l == "oldid":
			oldid = true
		case l == string(request.ClassAPI):
			ok := false
			for _, p := range topKeys(ev.Paths, 0) {
				if float64(ev.Paths[p]) >= minPrefixShare*float64(ev.N) && safePath(p) {
					paths = append(paths, p)
					ok = true
				}
			}
			if !ok {
				dropped, droppedN = append(dropped, l), droppedN+ev.N
				continue
			}
		default:
			continue
		}
		z.tools = append(z.tools, l)
		z.covered += ev.N
	}
	if len(dropped) > 0 {
		quoted := make([]string, len(dropped))
		for i, d := range dropped {
			quoted[i] = strconv.QuoteToASCII(clip(d, 60))
		}
		note(sources.SeverityWarning, Messages.Say("rules.unsafe_tools", struct {
			Finding string
			N       int
			Names   string
		}{c.Finding, droppedN, clip(strings.Join(quoted, ", "), 300)}))
	}

	// Special pages: both URL forms wherever the site uses both, so that a
	// crawler (or the next one) cannot walk around the rule by switching form.
	var pathPatterns, titleNames []string
	sitePrefixes := topKeys(site.Prefixes, 3)
	for _, name := range specialOrder {
		s := specials[name]
		if s.path || site.SpecialPath > 0 {
			var prefixes []string
			if ev := c.Labels[request.SpecialPathLabel(name)]; ev != nil {
				prefixes = topKeys(ev.Prefixes, 3)
			}
			if len(prefixes) == 0 {
				for _, p := range sitePrefixes {
					if float64(site.Prefixes[p]) >= minPrefixShare*float64(site.SpecialPath) {
						prefixes = append(prefixes, p)
					}
				}
			}
			for _, p := range prefixes {
				if safePrefix(p) {
					pathPatterns = append(pathPatterns, p+name, p+name+"/*")
				}
			}
		}
		if s.title || site.SpecialTitle > 0 {
			titleNames = append(titleNames, name)
		}
	}
	pathPatterns = append(pathPatterns, paths...)
	if len(pathPatterns) > 0 {
		z.Targets = append(z.Targets, Target{Paths: dedup(pathPatterns)})
	}
	if len(titleNames) > 0 {
		z.Targets = append(z.Targets, Target{TitleNames: dedup(titleNames)})
	}
	if len(actions) > 0 {
		z.Targets = append(z.Targets, Target{QueryKey: "action", QueryValues: dedup(actions)})
	}
	if diff {
		z.Targets = append(z.Targets, Target{QueryKey: "diff", QueryValues: []string{"*"}})
	}
	if oldid {
		z.Targets = append(z.Targets, Target{QueryKey: "oldid", QueryValues: []string{"*"}})
	}
	for _, t := range mergeRouteTargets(routeTargets) {
		if t.QueryKey != "" && slices.Equal(t.QueryValues, []string{"*"}) {
			if p, why, ok := valuePattern(t.QueryKey, c.QueryValues[t.QueryKey], site.QueryValues[t.QueryKey]); ok {
				t = Target{QueryKey: t.QueryKey, ValueRegexp: p}
				z.targetWhy = append(z.targetWhy, why)
			}
		}
		z.Targets = append(z.Targets, t)
	}
	if len(z.Targets) == 0 {
		note(sources.SeverityInfo, Messages.Say("rules.nothing_to_name", c.Finding))
		return nil, notes
	}

	if c.narrowed.String() != "" {
		z.condWhy = append(z.condWhy, c.narrowed)
	}

	// Logged in or not.
	cookieRegexp := ""
	if _, literal := sources.CompileCookiePattern(site.Cookie).Literal(); site.Cookie != "" && !literal {
		// A regular expression goes to a header_regexp matcher, when Caddy
		// can be given it as it stands and the backtest can build a Cookie
		// it matches (without one, logged-in requests would be counted as
		// limited).
		if safeCookieRegexp(site.Cookie) {
			cookieRegexp = site.Cookie
		} else {
			note(sources.SeverityInfo, Messages.Say("rules.regex_cookie", struct{ Finding, Cookie string }{c.Finding, clip(site.Cookie, 60)}))
		}
		site.Cookie = ""
	}
	if site.Cookie != "" && !safeCookie(site.Cookie) {
		// The zone is written without it, as for a site whose pattern is
		// unknown, and the notes below say what it then checks: a limit
		// of what a rule can say, not evidence missing (which alone makes
		// a run incomplete).
		note(sources.SeverityInfo, Messages.Say("rules.unsafe_cookie", struct{ Finding, Cookie string }{c.Finding, clip(site.Cookie, 60)}))
		site.Cookie = ""
	}
	switch {
	case c.Key.LoggedIn == sources.LoggedInYes:
		z.condWhy = append(z.condWhy, Messages.Say("rules.cond.crawler_logged_in", nil))
		note(sources.SeverityWarning, Messages.Say("rules.crawler_logged_in", c.Finding))
	case site.Cookie != "":
		z.Cond.NotCookie = site.Cookie
		z.condWhy = append(z.condWhy, Messages.Say("rules.cond.cookie", site.Cookie))
	case cookieRegexp != "":
		z.Cond.NotCookieRegexp = cookieRegexp
		z.condWhy = append(z.condWhy, Messages.Say("rules.cond.cookie_regexp", cookieRegexp))
	case float64(c.CookieRequests) <= maxMisses*float64(c.ToolRequests):
		z.Cond.NoCookie = true
		z.condWhy = append(z.condWhy, Messages.Say("rules.cond.no_cookie", nil))
		note(sources.SeverityInfo, Messages.Say("rules.cookie_unknown", c.Finding))
	default:
		z.condWhy = append(z.condWhy, Messages.Say("rules.cond.cookie_unknown", nil))
		note(sources.SeverityWarning, Messages.Say("rules.cookie_unknown_sent", c.Finding))
	}

	if c.Method != "" {
		z.Cond.Method = c.Method
		z.condWhy = append(z.condWhy, Messages.Say("rules.cond.method", c.Method))
	}
	if !z.PerClient {
		addConditions(z, c, labels)
		addRefererCondition(z, c)
		addNoCookieCondition(z, c)
		addAnyLangCondition(z, c)
	}
	z.Name = zoneName(z)
	return z, notes
}

// addConditions narrows a site-wide zone to the crawler's fingerprint, one
// condition at a time, as long as each one spares ordinary clients the zone
// would otherwise hold: the crawler meets them all by construction (they are
// parts of its cluster key), so they cost nothing against it and only cut
// collateral. This matters most when the crawler was already present before
// the burst: every ordinary request left in its bucket can be refused on an
// ordinary day. The ordinary clients counted are the logged-out users of the
// same tools; when there are none, all ordinary logged-out page requests stand
// in for them (a header that sets the crawler apart from every reader also
// keeps future readers of these tools out).
func addConditions(z *Zone, c *crawlerEvidence, labels []string) {
	allPages := false // the ordinary clients counted are all logged-out page requests
	// byVer holds the ordinary counts by browser version and condition mask.
	byVer := map[string]*[8]int{}
	for _, l := range labels {
		for v, cs := range c.OrdinaryVer[l] {
			if byVer[v] == nil {
				byVer[v] = new([8]int)
			}
			for m, k := range cs {
				byVer[v][m] += k
			}
		}
	}
	counts := func(mask int) int {
		n := 0
		for _, l := range labels {
			if cs := c.Ordinary[l]; cs != nil {
				n += sumMask(cs, mask)
			}
		}
		return n
	}
	if counts(0) == 0 {
		allPages = true
		counts = func(mask int) int { return sumMask(&c.OrdinaryAll, mask) }
		byVer = c.OrdinaryAllVer
	}
	token := uaToken(c.Key.UA)
	uaOK := token != "" && float64(c.ToolRequests-c.UATokenRequests) <= maxMisses*float64(c.ToolRequests)
	// An actor that rotated fingerprints shares no User-Agent or language:
	// keying on its largest part's would let the rest through.
	rotating := c.Fingerprints > 1
	if rotating {
		uaOK = false
		z.condWhy = append(z.condWhy, Messages.Say("rules.cond.rotating", c.Fingerprints))
	}
	cands := []struct {
		bit  int
		ok   bool
		what prose.Text
		set  func()
	}{
		{condLang, !rotating && c.Key.Lang != "" && safeLang(c.Key.Lang), Messages.Say("rules.cand.lang", c.Key.Lang),
			func() { z.Cond.Lang = c.Key.Lang }},
		// Evidence, not the key: the key marks missing hints only over HTTPS,
		// but a crawler that never sent them is told apart by it either way
		// (ordinary readers who share its key, e.g. real Chrome over HTTP/2,
		// send them and are rightly left out).
		{condHints, float64(c.HintRequests) <= maxMisses*float64(c.ToolRequests), Messages.Say("rules.cand.hints", nil),
			func() { z.Cond.NoClientHints = true }},
		{condUA, uaOK, Messages.Say("rules.cand.ua", token), func() { z.Cond.UserAgent = token }},
	}
	mask := 0
	total := counts(0)
	for _, cd := range cands {
		if !cd.ok {
			continue
		}
		cur, next := counts(mask), counts(mask|cd.bit)
		if cur == 0 {
			break
		}
		if next < cur {
			cd.set()
			mask |= cd.bit
			z.condWhy = append(z.condWhy, Messages.Say("rules.cond.leaves", struct {
				What     prose.Text
				Left, Of string
				AllPages bool
			}{cd.what, fmtInt(next), fmtInt(cur), allPages}))
		}
	}
	// Last, the browser's major versions, when a few of them carry the whole
	// crawl and ordinary clients of the same family run others: crawlers tend
	// to keep one stale version while readers update.
	if vs := crawlerVersions(c); uaOK && len(vs) > 0 {
		cur, next := counts(mask), 0
		for _, v := range vs {
			if cs := byVer[v]; cs != nil {
				next += sumMask(cs, mask|condUA) // a version implies the token
			}
		}
		if cur > 0 && next < cur {
			z.Cond.UserAgent = token
			z.Cond.UserAgentVersions = vs
			mask |= condUA
			z.condWhy = append(z.condWhy, Messages.Say("rules.cond.versions", struct {
				UA, Left, Of string
				AllPages     bool
			}{token + strings.Join(vs, "|"), fmtInt(next), fmtInt(cur), allPages}))
		}
	}
	if mask == 0 && total > 0 {
		z.condWhy = append(z.condWhy, Messages.Say("rules.cond.shared", struct {
			Of       string
			AllPages bool
		}{fmtInt(total), allPages}))
	}
}

// addRefererCondition spares the requests that come from the site's own pages
// when the crawler sent (next to) none and readers of the site were seen to
// send them with its tools: a click from a page is what readers who share the
// fingerprint do, and no condition on the fingerprint can tell them apart. It
// costs nothing against the crawler as recorded; one that learns to send such
// a Referer passes the zone, which the Why says.
func addRefererCondition(z *Zone, c *crawlerEvidence) {
	if c.OrdinarySiteReferer == 0 {
		// A log without Referer headers, or a site whose readers never
		// click these tools: nothing measured says the condition spares anyone.
		return
	}
	if c.ToolRequests == 0 || float64(c.SiteRefererRequests) > maxMisses*float64(c.ToolRequests) {
		z.condWhy = append(z.condWhy, Messages.Say("rules.cond.referer_sent", struct{ Sent, Tools string }{fmtInt(c.SiteRefererRequests), fmtInt(c.ToolRequests)}))
		return
	}
	z.Cond.NoSiteReferer = true
	z.condWhy = append(z.condWhy, Messages.Say("rules.cond.referer", struct{ Readers, Sent, Tools string }{
		fmtInt(c.OrdinarySiteReferer), fmtInt(c.SiteRefererRequests), fmtInt(c.ToolRequests)}))
}

// addNoCookieCondition limits only requests without any Cookie header when
// the crawler sent (next to) none and ordinary logged-out visitors that the
// zone's other conditions still hold were seen to send one with its tools (a
// session cookie every visitor holds, a consent cookie): what the whole actor
// shares and they do not, measured rather than named. Where it would spare
// nobody the zone goes without it. It costs nothing against the crawler as recorded; one
// that learns to keep a cookie passes the zone, which the Why says. A log
// that omits the Cookie shows none on either side and adds nothing. The
// logged-in exclusion stays written beside it: implied today, it still holds
// if the condition is ever taken out.
func addNoCookieCondition(z *Zone, c *crawlerEvidence) {
	if z.Cond.NoCookie || c.ToolRequests == 0 || float64(c.CookieRequests) > maxMisses*float64(c.ToolRequests) {
		return
	}
	spared := c.inZone(z, func(h int) bool { return h&hasCookie != 0 })
	if !worthSparing(z, c, "Cookie", spared, c.CookieRequests) {
		return
	}
	z.Cond.NoCookie = true
	z.condWhy = append(z.condWhy, Messages.Say("rules.cond.cookie_absent", struct{ Ordinary, Sent, Tools string }{
		fmtInt(spared), fmtInt(c.CookieRequests), fmtInt(c.ToolRequests)}))
}

// addAnyLangCondition limits only requests that carry an Accept-Language
// header when the crawler sent one with (next to) every tool request and the
// zone names no language of its own (a rotating actor's): ordinary logged-out
// clients that the zone's other conditions still hold, seen to send none
// with these tools (declared bots and tools, most of them), then pass the
// zone. Where it would spare nobody the zone goes without it. Measured, not named; one that learns to drop
// the header passes, which the Why says.
func addAnyLangCondition(z *Zone, c *crawlerEvidence) {
	if z.Cond.Lang != "" || c.ToolRequests == 0 || float64(c.ToolRequests-c.LangRequests) > maxMisses*float64(c.ToolRequests) {
		return
	}
	spared := c.inZone(z, func(h int) bool { return h&hasLang == 0 })
	if !worthSparing(z, c, "Accept-Language", spared, c.ToolRequests-c.LangRequests) {
		return
	}
	z.Cond.AnyLang = true
	z.condWhy = append(z.condWhy, Messages.Say("rules.cond.any_lang", struct{ Ordinary, Missing, Tools string }{
		fmtInt(spared), fmtInt(c.ToolRequests - c.LangRequests), fmtInt(c.ToolRequests)}))
}

// worthSparing says whether a header-presence condition on header
// (addNoCookieCondition, addAnyLangCondition) is worth adding to z: it
// spares spared ordinary logged-out tool requests that the zone's other
// conditions hold, and lets through lost of the crawler's tool requests
// (those that sent, or lacked, the header). Such a condition narrows the
// zone for good (a crawler that learns the header passes it), so it must
// spare more requests than it lets through of the crawler, and at least
// the goal for others' share (collateralGoal) of the ordinary logged-out
// page requests counted (OrdinaryAll, assets excluded: a smaller basis than
// the backtest's, so the bar is lower, not higher): fewer would not take
// the rule past that goal even if the zone refused every one of them, and
// a rule that does miss it says so (othersMissed). A condition that rests
// on a handful of requests, one client's header, stays out, and the Why
// says what it would have spared. Nothing spared says nothing: the header
// tells nobody apart.
func worthSparing(z *Zone, c *crawlerEvidence, header string, spared, lost int) bool {
	if spared == 0 {
		return false
	}
	least := int(math.Ceil(collateralGoal * float64(sumMask(&c.OrdinaryAll, 0))))
	if spared > lost && spared >= least {
		return true
	}
	z.condWhy = append(z.condWhy, Messages.Say("rules.cond.presence_small", struct {
		Header, Spared, Least, Pages, Goal, Lost, Tools string
	}{header, fmtInt(spared), fmtInt(max(least, lost+1)), fmtInt(sumMask(&c.OrdinaryAll, 0)), pct(collateralGoal), fmtInt(lost), fmtInt(c.ToolRequests)}))
	return false
}

func sumMask(counts *[8]int, mask int) int {
	n := 0
	for m, k := range counts {
		if m&mask == mask {
			n += k
		}
	}
	return n
}

// maxVersions bounds the browser versions a zone names.
const maxVersions = 8

// crawlerVersions returns the fewest major versions (at most maxVersions)
// that carry all but maxMisses of the crawler's requests, most used first; nil
// if there are none such.
func crawlerVersions(c *crawlerEvidence) []string {
	if len(c.Versions) == 0 || c.ToolRequests == 0 {
		return nil
	}
	var out []string
	covered := 0
	for _, v := range topKeys(c.Versions, 0) {
		if v == "" || len(out) == maxVersions {
			break
		}
		out = append(out, v)
		covered += c.Versions[v]
		if float64(c.ToolRequests-covered) <= maxMisses*float64(c.ToolRequests) {
			return out
		}
	}
	return nil
}

// selectLabels returns the crawler's tool labels worth naming, most requested first.
func selectLabels(c *crawlerEvidence) []string {
	var out []string
	for _, l := range topKeysFn(len(c.Labels), func(yield func(string, int)) {
		for l, ev := range c.Labels {
			yield(l, ev.N)
		}
	}) {
		n := c.Labels[l].N
		if n < minLabelRequests || float64(n) < minLabelShare*float64(c.Requests) {
			break
		}
		out = append(out, l)
		if len(out) == maxLabels {
			break
		}
	}
	return out
}

// zoneName names a zone after the conditions it carries, and only those:
// "tools_zh_cn_logged_out" holds no User-Agent condition, so it does not say
// "chrome" even when the crawler it answers claimed Chrome (a name that did
// would tell the operator that other browsers pass); Why lists them all.
//
// A name that cannot state every condition within maxName (browser versions
// counted as "chrome_3_versions", then the rest cut) ends in a short hash of
// the name in full. Without it two zones that differ only in what was cut
// would share a name: generate's uniqueName would tell them apart by their
// order ("_2"), but not two proposals deployed side by side, and
// caddy-ratelimit keeps one zone per name in a rate_limit block and its
// state by name across the whole server.
func zoneName(z *Zone) string {
	const (
		maxName = 60 // zoneNameOK allows 64; uniqueName may add "_NN"
		hashLen = 6  // hex digits: 24 bits, against the handful of zones of one site
	)
	full := strings.Join(zoneNameWords(z, false), "_")
	if len(full) <= maxName {
		return full
	}
	name := strings.Join(zoneNameWords(z, true), "_")
	if keep := maxName - len("_") - hashLen; len(name) > keep {
		name = strings.TrimRight(name[:keep], "_")
	}
	sum := sha256.Sum256([]byte(full))
	return name + "_" + hex.EncodeToString(sum[:])[:hashLen]
}

// zoneNameWords lists the parts of a zone's name in full: "tools", how it is
// keyed, then one part per condition, with the browser versions listed or,
// when countVersions, counted.
func zoneNameWords(z *Zone, countVersions bool) []string {
	words := []string{"tools"}
	if z.PerClient {
		words = append(words, "per_client")
	}
	c := z.Cond
	if c.UserAgent != "" {
		ua := slug(strings.TrimSuffix(c.UserAgent, "/"))
		switch {
		case len(c.UserAgentVersions) == 0:
		case countVersions:
			ua += fmt.Sprintf("_%d_versions", len(c.UserAgentVersions))
		default:
			ua += "_" + strings.Join(c.UserAgentVersions, "_")
		}
		words = append(words, ua)
	}
	if c.Lang != "" {
		words = append(words, slug(c.Lang))
	}
	if c.AnyLang {
		words = append(words, "with_lang")
	}
	if c.NoClientHints {
		words = append(words, "no_hints")
	}
	if c.Method != "" {
		words = append(words, slug(c.Method))
	}
	if c.NotCookie != "" || c.NotCookieRegexp != "" {
		words = append(words, "logged_out")
	}
	if c.NoCookie {
		words = append(words, "no_cookie")
	}
	if c.NoSiteReferer {
		words = append(words, "no_site_referer")
	}
	if len(words) == 1 {
		words = append(words, "any_client")
	}
	return words
}

// conditionsText lists, for humans, exactly the conditions every match block
// of z carries besides its targets, and the parts of the crawler's
// fingerprint it does not check.
func conditionsText(z *Zone, k request.ClusterKey) (checked, unchecked []prose.Text) {
	c := z.Cond
	switch {
	case c.NotCookie != "":
		checked = append(checked, Messages.Say("rules.checks.cookie", c.NotCookie))
	case c.NotCookieRegexp != "":
		checked = append(checked, Messages.Say("rules.checks.cookie_regexp", c.NotCookieRegexp))
	case c.NoCookie:
	default:
		unchecked = append(unchecked, Messages.Say("rules.checks.logged_in", nil))
	}
	if c.NoCookie {
		checked = append(checked, Messages.Say("rules.checks.no_cookie", nil))
	}
	switch {
	case c.Lang != "":
		checked = append(checked, Messages.Say("rules.checks.lang", c.Lang))
	case c.AnyLang:
		checked = append(checked, Messages.Say("rules.checks.with_lang", nil))
		if k.Lang != "" {
			unchecked = append(unchecked, Messages.Say("rules.checks.any_lang", k.Lang))
		}
	case k.Lang != "":
		unchecked = append(unchecked, Messages.Say("rules.checks.any_lang", k.Lang))
	}
	switch {
	case c.UserAgent != "" && len(c.UserAgentVersions) > 0:
		checked = append(checked, Messages.Say("rules.checks.versions", struct{ UA, Versions string }{c.UserAgent, strings.Join(c.UserAgentVersions, ", ")}))
	case c.UserAgent != "":
		checked = append(checked, Messages.Say("rules.checks.ua", c.UserAgent))
	default:
		unchecked = append(unchecked, Messages.Say("rules.checks.any_ua", k.UA))
	}
	if c.NoClientHints {
		checked = append(checked, Messages.Say("rules.checks.no_hints", nil))
	} else {
		unchecked = append(unchecked, Messages.Say("rules.checks.hints", nil))
	}
	if c.NoSiteReferer {
		checked = append(checked, Messages.Say("rules.checks.no_referer", nil))
	}
	if c.Method != "" {
		checked = append(checked, Messages.Say("rules.checks.method", c.Method))
	}
	return checked, unchecked
}

func uniqueName(name string, used map[string]bool) string {
	out := name
	for i := 2; used[out]; i++ {
		out = fmt.Sprintf("%s_%d", name, i)
	}
	used[out] = true
	return out
}

// slug keeps [a-z0-9] and turns runs of anything else into one '_'.
func slug(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			under = false
		} else if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	out := strings.TrimRight(b.String(), "_")
	if out == "" {
		return "x"
	}
	return out
}

// Safety of log-derived values. Each check is an allowlist: a value passes only
// if every rune is one that means nothing to the Caddyfile lexer (quotes,
// braces for placeholders and {$ENV}, '#', '<<', whitespace), to Caddy's path
// matcher (glob * ? [ ] \, and % which switches to escaped matching), to the
// header matcher (leading or trailing *) and to regular expressions (which get
// regexp.QuoteMeta anyway). Invalid UTF-8 and control characters never pass.

// nameRune reports whether r may appear in a special-page name.
func nameRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || strings.ContainsRune("_-.:", r)
}

// safeName accepts a special-page name such as "Special:WhatLinksHere" or "특수:가리키는문서".
func safeName(s string) bool {
	if s == "" || len(s) > 200 || !utf8.ValidString(s) || s[0] == '-' || s[0] == '.' {
		return false
	}
	for _, r := range s {
		if !nameRune(r) {
			return false
		}
	}
	return true
}

// safePrefix accepts a path prefix that ends in '/' ("/w/", "/index.php/").
func safePrefix(p string) bool {
	return p == "/" || strings.HasSuffix(p, "/") && safePath(strings.TrimSuffix(p, "/"))
}

// safePath accepts an absolute path of safe segments ("/w/api.php"), none of
// them "." or ".." (Caddy cleans request paths, so such a pattern never matches).
func safePath(p string) bool {
	if len(p) < 2 || len(p) > 200 || p[0] != '/' {
		return false
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." || !safeName(seg) {
			return false
		}
	}
	return true
}

// safeAction accepts a MediaWiki action name.
func safeAction(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// safeLang accepts a language tag as sources.Request.Lang holds it ("zh-cn").
func safeLang(s string) bool {
	if s == "" || len(s) > 35 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// safeToken accepts a user-agent product name ("Chrome", "python-requests").
func safeToken(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// safeCookie accepts a logged-in cookie pattern ("wikiUserID="): printable
// ASCII without blanks, quotes, braces, backslashes or '*' (which would turn
// the header matcher's substring match into something else).
func safeCookie(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("{}*\"'`\\", c) >= 0 {
			return false
		}
	}
	return true
}

// safeCookieRegexp accepts a logged-in cookie pattern that is a regular
// expression when a header_regexp matcher can carry it unchanged (quoteRegexp:
// no control character, no brace but RE2's repetition counts and class names,
// not both a backtick and a backslash), it is of a length a person can review,
// and a printable Cookie value it matches exists for the backtest and the
// replay to send (sources.CookiePattern.Example).
func safeCookieRegexp(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	if _, err := quoteRegexp(s); err != nil {
		return false
	}
	_, ok := sources.CompileCookiePattern(s).Example()
	return ok
}

// topKeys returns the keys of m by count, highest first (ties by key), at most
// n of them (0: all).
func topKeys(m map[string]int, n int) []string {
	return topKeysFn(n, func(yield func(string, int)) {
		for k, v := range m {
			yield(k, v)
		}
	})
}

func topKeysFn(n int, each func(yield func(string, int))) []string {
	type kv struct {
		k string
		v int
	}
	var all []kv
	each(func(k string, v int) { all = append(all, kv{k, v}) })
	sort.Slice(all, func(i, j int) bool {
		if all[i].v != all[j].v {
			return all[i].v > all[j].v
		}
		return all[i].k < all[j].k
	})
	if n > 0 && len(all) > n {
		all = all[:n]
	}
	out := make([]string, len(all))
	for i, e := range all {
		out[i] = e.k
	}
	return out
}

func dedup(xs []string) []string {
	seen := map[string]bool{}
	out := xs[:0:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// clip shortens s to n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
func fmtInt(n int) string { return detect.FormatInt(int64(n)) }
