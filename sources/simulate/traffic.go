package simulate

import (
	"math"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"time"
)

type kind uint8

const (
	kindPage    kind = iota // an article view
	kindAsset               // css, js, images, favicon
	kindTool                // a page tool (edit, history, ... see Tool)
	kindSearch              // api.php?action=opensearch while typing
	kindSpecial             // Special:RecentChanges, Special:Random
	kindSubmit              // POST action=submit
	kindRedLink             // action=edit&redlink=1
	kindAPI                 // the site calling its own api.php
	kindHealth
)

var kindNames = [...]string{"page", "asset", "tool", "search", "special", "submit", "redlink", "api", "health"}

func (k kind) String() string { return kindNames[k] }

// ---- rates ------------------------------------------------------------------------

// plf is a piecewise-linear rate (per second) over time, constant outside its knots.
type plf struct {
	t []int64
	v []float64
}

func (p *plf) add(t int64, v float64) { p.t = append(p.t, t); p.v = append(p.v, v) }

func (p *plf) at(x int64) float64 {
	n := len(p.t)
	if n == 0 {
		return 0
	}
	if x <= p.t[0] {
		return p.v[0]
	}
	if x >= p.t[n-1] {
		return p.v[n-1]
	}
	lo, hi := 0, n-1
	for hi-lo > 1 {
		m := (lo + hi) / 2
		if p.t[m] <= x {
			lo = m
		} else {
			hi = m
		}
	}
	if p.t[hi] == p.t[lo] {
		return p.v[hi]
	}
	f := float64(x-p.t[lo]) / float64(p.t[hi]-p.t[lo])
	return p.v[lo] + f*(p.v[hi]-p.v[lo])
}

// bound returns an upper bound of the rate over [a, b) and the end of the
// stretch it holds for (the next knot after a, at most b).
func (p *plf) bound(a, b int64) (float64, int64) {
	end := b
	for _, t := range p.t {
		if t > a {
			end = min(end, t)
			break
		}
	}
	return math.Max(p.at(a), p.at(end)), end
}

// diurnal is the relative traffic of a Korean site by hour (KST), mean about 1.
var diurnal = [24]float64{1.05, 0.8, 0.58, 0.42, 0.32, 0.28, 0.33, 0.5, 0.7, 0.85, 0.95, 1.0,
	1.05, 1.05, 1.0, 1.0, 1.0, 1.02, 1.08, 1.22, 1.38, 1.52, 1.5, 1.32}

func diurnalRate(begin, end int64, mean float64) *plf {
	p := &plf{}
	t0 := time.Unix(0, begin).In(kst).Truncate(time.Hour)
	for t := t0; t.UnixNano() <= end+int64(time.Hour); t = t.Add(time.Hour) {
		p.add(t.UnixNano(), mean*diurnal[t.Hour()])
	}
	return p
}

// poisson fires at the arrivals of a non-homogeneous Poisson process (thinning
// against the local bound of a piecewise-linear rate).
type poisson struct {
	rate  *plf
	scale float64
	rng   *rand.Rand
	fire  func(s *sim)
}

func (g *poisson) start(s *sim) {
	if t, ok := g.next(s.now, s.end); ok {
		s.push(t, evWake, nil, g, 0, 0)
	}
}

func (g *poisson) wake(s *sim, _ int32) {
	g.fire(s)
	g.start(s)
}

func (g *poisson) next(from, end int64) (int64, bool) {
	t := from
	for t < end {
		m, stretchEnd := g.rate.bound(t, end)
		m *= g.scale
		if m <= 0 {
			t = stretchEnd
			continue
		}
		t += int64(g.rng.ExpFloat64() / m * float64(second))
		if t >= stretchEnd {
			t = stretchEnd
			continue
		}
		if g.rng.Float64()*m < g.rate.at(t)*g.scale {
			return t, true
		}
	}
	return 0, false
}

// ---- the world the clients share --------------------------------------------------

type world struct {
	titles *titleSet
	names  *nameList
	bots   []*profile
	rng    *rand.Rand // readers, editors, bots, crowds
	// browsers is the reader population (browsers, or another Chrome
	// release under Scenario.ReaderChrome).
	browsers []ReaderBrowser
	// vrng draws what varyBySeed added to the population (IPv6 readers),
	// apart from rng so that a scenario as written draws as it did.
	vrng      *rand.Rand
	ipv6Share float64
}

// readerIP draws the address of a person's session: an IPv4 address as
// ReaderIP gives, or, for a share ipv6Share of them, an IPv6 address in
// their provider's /32.
func (w *world) readerIP(lang string) string {
	ip := ReaderIP(w.rng, lang)
	if w.ipv6Share > 0 && w.vrng.Float64() < w.ipv6Share {
		return readerIPv6(w.vrng)
	}
	return ip
}

func (w *world) title() string {
	t, _ := w.titles.pick(w.rng)
	return t
}

// newReq makes a request of a client; route and PHP cost follow from its kind.
func (s *sim) newReq(cls class, k kind, p *profile, ip string, port uint16, method, uri, ref string) *request {
	r := &request{cls: cls, kind: k, prof: p, ip: ip, port: port, method: method, uri: uri, referer: ref,
		timeout: secs(s.sc.ClientTimeoutS)}
	return r
}

func randPort(rng *rand.Rand) uint16 { return uint16(32768 + rng.IntN(28232)) }

// ---- readers -------------------------------------------------------------------------

// session is one reader (or crowd member, or editor) browsing a few pages. Its
// browser keeps one HTTP/2 connection, so remote_port stays the same.
type session struct {
	cls     class
	prof    *profile
	ip      string
	port    uint16
	pages   int
	assets  bool // site assets already in the browser cache
	revisit bool // returning visitor: assets revalidate to 304
	last    string
	tries   int
	pending *request // the page to retry
	hot     []string
	ref     string
	editing int // editor: 0 view, 1 edit form, 2 submit, 3 done
}

const (
	tagPage int32 = iota
	tagAssets
	tagRetry
)

func (s *sim) startReader(cls class, langs []weighted, hot []string, ref string) {
	w := s.w
	share := 0.07
	if s.sc.LoggedInShare > 0 {
		share = s.sc.LoggedInShare
	}
	loggedIn := w.rng.Float64() < share
	p := newBrowser(w.rng, w.browsers, langs, loggedIn, w.names)
	if s.sc.App == AppWordPress {
		p.cookie = wpCookie(p, w.rng)
	}
	if a := s.sc.app(); a != nil {
		p.cookie = a.cookie(p, w.rng)
	}
	ss := &session{cls: cls, prof: p, ip: w.readerIP(p.lang), port: randPort(w.rng),
		pages: 1 + int(w.rng.ExpFloat64()*1.6), revisit: w.rng.Float64() < 0.35, hot: hot, ref: ref}
	ss.wake(s, tagPage)
}

func (ss *session) wake(s *sim, tag int32) {
	switch tag {
	case tagPage:
		ss.nextPage(s)
	case tagRetry:
		if r := ss.pending; r != nil {
			ss.pending = nil
			c := *r
			c.retryOf = r.seq
			c.clearRuntime()
			if rs := s.sc.Reloads; rs != nil {
				ss.moveOn(s, rs)
				c.ip, c.port, c.prof = ss.ip, ss.port, ss.prof
			}
			s.send(&c)
		}
	case tagAssets:
		ss.fetchAssets(s)
	}
}

func (ss *session) nextPage(s *sim) {
	w := s.w
	if ss.cls == clsEditor {
		ss.editorStep(s)
		return
	}
	if s.sc.App == AppWordPress {
		ss.wpNextPage(s)
		return
	}
	if a := s.sc.app(); a != nil {
		ss.appNextPage(s, a)
		return
	}
	ref := "https://wiki.example.org/w/" + ss.last
	if ss.last == "" {
		ref = ss.ref
	}
	var r *request
	if len(ss.hot) > 0 && ss.last == "" {
		t := ss.hot[w.rng.IntN(len(ss.hot))]
		r = s.articleReq(ss, t, ref, 0.97)
	} else {
		r = s.readerAction(ss, ref)
	}
	ss.tries = 0
	s.send(r)
}

// readerAction picks what a reader opens next: mostly articles, a little of
// everything else, including now and then the tools a crawler walks.
func (s *sim) readerAction(ss *session, ref string) *request {
	w := s.w
	t := w.title()
	x := w.rng.Float64()
	mk := func(k kind, tool Tool, uri string) *request { return s.phpGet(ss, k, tool, uri, ref) }
	switch {
	case x < 0.84:
		hit := 0.72
		return s.articleReq(ss, t, ref, hit)
	case x < 0.88:
		q := t
		if len(q) > 9 {
			q = q[:9] // the first syllables typed
		}
		return mk(kindSearch, "", "/api.php?action=opensearch&format=json&formatversion=2&search="+q+"&namespace=0&limit=10")
	case x < 0.91:
		return mk(kindTool, ToolHistory, "/index.php?title="+t+"&action=history")
	case x < 0.925:
		return mk(kindSpecial, "", "/w/Special:RecentChanges")
	case x < 0.935:
		r := mk(kindSpecial, "", "/w/Special:Random")
		r.phpStatus, r.phpSize = 302, 0
		return r
	case x < 0.941:
		return mk(kindTool, ToolWhatLinksHereTitle, "/index.php?title=Special:WhatLinksHere&target="+t)
	case x < 0.945:
		return mk(kindTool, ToolWhatLinksHere, "/w/Special:WhatLinksHere/"+t)
	case x < 0.950:
		return mk(kindTool, ToolContributions, "/w/Special:Contributions/"+w.names.pick(w.rng))
	case x < 0.953:
		return mk(kindTool, ToolRecentChangesLinked, "/w/Special:RecentChangesLinked/"+t)
	case x < 0.955:
		return mk(kindTool, ToolCiteThisPage, "/index.php?title=Special:CiteThisPage&page="+t)
	case x < 0.960:
		return mk(kindRedLink, "", "/index.php?title="+t+"&action=edit&redlink=1")
	case x < 0.965:
		return mk(kindTool, ToolEdit, "/index.php?title="+t+"&action=edit")
	case x < 0.968:
		return mk(kindTool, ToolWatch, "/index.php?title="+t+"&action=watch")
	}
	return s.articleReq(ss, t, ref, 0.72)
}

// phpGet is ss's GET of uri that PHP answers, its work drawn now.
func (s *sim) phpGet(ss *session, k kind, tool Tool, uri, ref string) *request {
	r := s.newReq(ss.cls, k, ss.prof, ss.ip, ss.port, "GET", uri, ref)
	r.tool = tool
	s.cost(r)
	r.owner = ss
	return r
}

// articleReq: logged-out views are served from the HTML file cache when the
// page is in it (popular pages nearly always are), logged-in views never.
func (s *sim) articleReq(ss *session, t, ref string, hit float64) *request {
	ss.last = t
	return s.cachedOrPHP(ss, "/w/"+t, ref, hit)
}

// cachedOrPHP is ss's GET of a page that a cache (MediaWiki's HTML file
// cache, WordPress's page cache) answers for logged-out readers with
// probability hit; else PHP renders it.
func (s *sim) cachedOrPHP(ss *session, uri, ref string, hit float64) *request {
	r := s.newReq(ss.cls, kindPage, ss.prof, ss.ip, ss.port, "GET", uri, ref)
	r.owner = ss
	s.cachedOr(r, hit)
	return r
}

// cachedOr has the page cache answer r, a logged-out client's, with
// probability hit; else PHP renders it.
func (s *sim) cachedOr(r *request, hit float64) {
	if p := s.sc.CachePurge; p != nil {
		hit = p.hit(s.now, hit)
	}
	if !r.prof.loggedIn && s.w.rng.Float64() < hit {
		r.route, r.size = routeCache, 14000+s.w.rng.IntN(40000)
		return
	}
	s.cost(r)
	if p := s.sc.CachePurge; p != nil {
		r.wait *= p.cold(s.now)
	}
}

func (ss *session) done(s *sim, r *request) {
	if r.kind == kindAsset {
		return
	}
	w := s.w
	if r.gaveUp || r.status >= 500 {
		// reload once or twice, or leave
		tries, chance, gapMin, gapMax := 2, 0.45, 2.0, 8.0
		if rs := s.sc.Reloads; rs != nil {
			tries, chance, gapMin, gapMax = rs.Tries, rs.Chance, rs.GapMinS, rs.GapMaxS
		}
		if ss.tries < tries && w.rng.Float64() < chance {
			ss.tries++
			ss.pending = r
			s.after(secs(gapMin+w.rng.Float64()*(gapMax-gapMin)), ss, tagRetry)
			return
		}
		if w.rng.Float64() < 0.6 {
			return
		}
	} else if ss.prof.browser && r.kind != kindSearch && r.status < 400 {
		s.after(20*milli+int64(w.rng.Float64()*float64(150*milli)), ss, tagAssets)
	}
	if r.kind == kindSearch {
		// the reader picks a suggestion
		s.after(secs(1+w.rng.Float64()*3), ss, tagPage)
		return
	}
	ss.pages--
	if ss.pages > 0 {
		s.after(secs(4+w.rng.ExpFloat64()*25), ss, tagPage)
	}
}

// moveOn is where a reload of ss comes from under rs: now and then another
// network (a fresh address and connection) or another browser of the same
// person, with no session cookie of the site there.
func (ss *session) moveOn(s *sim, rs *ReloadSpec) {
	w := s.w
	if w.rng.Float64() < rs.NewAddress {
		ss.ip, ss.port = w.readerIP(ss.prof.lang), randPort(w.rng)
	}
	if w.rng.Float64() < rs.OtherBrowser {
		lang := ss.prof.lang
		ss.prof = newBrowser(w.rng, w.browsers, []weighted{{1, lang}}, false, w.names)
		ss.prof.cookie = ""
		ss.port = randPort(w.rng)
	}
}

// assets a browser fetches after a page: the site's css, js and logo the first
// time (revalidated to 304 for returning visitors), then images of the page.
var siteAssets = []siteAsset{
	{"/static/skin.css?v=20261002", "text/css; charset=utf-8", 5468, true},
	{"/static/wiki.js?v=20261002", "text/javascript; charset=utf-8", 31877, true},
	{"/static/logo.png", "image/png", 12840, false},
	{"/favicon.ico", "image/vnd.microsoft.icon", 5430, false},
}

func (ss *session) fetchAssets(s *sim) {
	if s.sc.App == AppWordPress {
		ss.wpFetchAssets(s)
		return
	}
	if a := s.sc.app(); a != nil {
		ss.appFetchAssets(s, a)
		return
	}
	ss.fetchPageAssets(s, "https://wiki.example.org/w/"+ss.last, siteAssets, func(img int) string {
		return "/images/thumb/" + strconv.Itoa(img%16) + "/" + strconv.Itoa(img) + ".jpg"
	})
}

// siteAsset is a static file a page loads: its URI, type, size and whether
// Caddy serves it precompressed.
type siteAsset struct {
	uri, ctype string
	size       int
	gz         bool
}

// fetchPageAssets is what a browser fetches after a page: the site's assets
// once per session (revalidated on a revisit), then 0-2 images, each drawn as
// one of 600 and named by image.
func (ss *session) fetchPageAssets(s *sim, ref string, assets []siteAsset, image func(int) string) {
	w := s.w
	if !ss.assets {
		ss.assets = true
		for i := range assets {
			r := s.newReq(ss.cls, kindAsset, ss.prof, ss.ip, ss.port, "GET", assets[i].uri, ref)
			r.route, r.notMod = routeStatic, ss.revisit
			s.send(r)
		}
	}
	for range w.rng.IntN(3) {
		r := s.newReq(ss.cls, kindAsset, ss.prof, ss.ip, ss.port, "GET", image(w.rng.IntN(600)), ref)
		r.route = routeStatic
		s.send(r)
	}
}

// ---- editors ---------------------------------------------------------------------------

func (s *sim) startEditor() {
	w := s.w
	p := newBrowser(w.rng, w.browsers, readerLangs[:2], true, w.names)
	if s.sc.App == AppWordPress {
		p.cookie = wpCookie(p, w.rng)
	}
	if a := s.sc.app(); a != nil {
		p.cookie = a.cookie(p, w.rng)
	}
	ss := &session{cls: clsEditor, prof: p, ip: w.readerIP(p.lang), port: randPort(w.rng),
		pages: 1 + w.rng.IntN(3)}
	ss.wake(s, tagPage)
}

// editorStep: view a page, open the edit form, submit (302 back to the page).
func (ss *session) editorStep(s *sim) {
	if s.sc.App == AppWordPress {
		ss.wpEditorStep(s)
		return
	}
	if a := s.sc.app(); a != nil {
		ss.appStaffStep(s, a)
		return
	}
	w := s.w
	var r *request
	switch ss.editing {
	case 0:
		ss.last = w.title()
		r = s.newReq(clsEditor, kindPage, ss.prof, ss.ip, ss.port, "GET", "/w/"+ss.last, "https://wiki.example.org/w/Special:RecentChanges")
	case 1:
		r = s.newReq(clsEditor, kindTool, ss.prof, ss.ip, ss.port, "GET", "/index.php?title="+ss.last+"&action=edit",
			"https://wiki.example.org/w/"+ss.last)
		r.tool = ToolEdit
	case 2:
		r = s.newReq(clsEditor, kindSubmit, ss.prof, ss.ip, ss.port, "POST", "/index.php?title="+ss.last+"&action=submit",
			"https://wiki.example.org/index.php?title="+ss.last+"&action=edit")
		r.bytesIn = 2000 + w.rng.IntN(30000)
	default:
		return
	}
	s.cost(r)
	r.owner = editorOwner{ss}
	s.send(r)
}

type editorOwner struct{ ss *session }

func (e editorOwner) done(s *sim, r *request) {
	ss, w := e.ss, s.w
	if r.status >= 500 || r.gaveUp {
		if ss.tries < 2 {
			ss.tries++
			s.after(secs(3+w.rng.Float64()*5), ss, tagPage)
		}
		return
	}
	ss.tries = 0
	switch ss.editing {
	case 0:
		ss.editing = 1
		s.after(secs(5+w.rng.ExpFloat64()*30), ss, tagPage)
	case 1:
		ss.editing = 2
		s.after(secs(40+w.rng.ExpFloat64()*200), ss, tagPage)
	case 2:
		ss.pages--
		ss.editing = 0
		if ss.pages > 0 {
			s.after(secs(20+w.rng.ExpFloat64()*120), ss, tagPage)
		}
	}
}

// ---- search bots ------------------------------------------------------------------------

// pickBot draws a search bot by its weight, one of its addresses and a title
// for it to read (in this order, so every scenario draws the same numbers).
func (s *sim) pickBot() (i int, ip, title string) {
	w := s.w
	x := w.rng.Float64()
	for ; i < len(bots)-1; i++ {
		if x -= bots[i].w; x < 0 {
			break
		}
	}
	b := &bots[i]
	ip = b.ranges[w.rng.IntN(len(b.ranges))] + "." + strconv.Itoa(1+w.rng.IntN(254))
	return i, ip, w.title()
}

// botRequest: search engines fetch robots.txt now and then, and pages (often
// from the cache); on the wiki some page histories too.
func (s *sim) botRequest() {
	w := s.w
	i, ip, t := s.pickBot()
	get := func(k kind, uri string) *request {
		return s.newReq(clsBot, k, w.bots[i], ip, randPort(w.rng), "GET", uri, "")
	}
	var r *request
	switch y := w.rng.Float64(); {
	case y < 0.02:
		r = get(kindAsset, "/robots.txt")
		r.route = routeStatic
	case s.sc.App == AppWordPress:
		r = s.wpBotPage(get, y, t)
	case s.sc.app() != nil:
		r = s.appBotPage(get, s.sc.app())
	case y < 0.05:
		r = get(kindTool, "/index.php?title="+t+"&action=history")
		r.tool = ToolHistory
		s.cost(r)
	default:
		r = get(kindPage, "/w/"+t)
		s.cachedOr(r, 0.4)
	}
	s.send(r)
}

// ---- the crawler ----------------------------------------------------------------------------

// crawler is an open-loop fleet: requests are dispatched at its rate whatever
// the answers, each from the current address (kept for RequestsPerIP requests
// on average), and a request answered with a 5xx is sent again from a fresh
// address a few seconds later.
type crawler struct {
	spec  *CrawlerSpec
	prof  *profile
	addrs *addrGen
	rng   *rand.Rand
	ip    string
	used  int
	// addrs6 hands out the IPv6 addresses when IPv6Share mixes families.
	addrs6 *addrGen
	// agents are the profiles of a rotating crawler (Agents), agent the
	// current address's.
	agents []*profile
	agent  *profile
	// revisits holds, by time, the later attempts of addresses already used
	// (AttemptsMax > 0).
	revisits revisitQueue
	// fixedUsed and fixedPrefixes are the fixed addresses (Addresses) it
	// sent from, and their /24s (IPv4) or /64s (IPv6).
	fixedUsed, fixedPrefixes map[string]bool
}

// revisit is a later attempt of an address at a time (unix ns).
type revisit struct {
	at   int64
	ip   string
	prof *profile
}

// revisitQueue is a min-heap of revisits by time.
type revisitQueue []revisit

func (q *revisitQueue) push(v revisit) {
	*q = append(*q, v)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].at <= h[i].at {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (q *revisitQueue) pop() revisit {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h[l].at < h[m].at {
			m = l
		}
		if r < n && h[r].at < h[m].at {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// freshAddr hands out a new address of the crawler's, of the family
// IPv6Share draws.
func (c *crawler) freshAddr(s *sim) string {
	g := c.addrs
	if c.addrs6 != nil && c.rng.Float64() < c.spec.IPv6Share {
		g = c.addrs6
	}
	ip := g.fresh()
	s.st.lastIPFresh, s.st.lastPfxFresh = true, g.chain == 0
	return ip
}

// prefixOf is an address's /24 (IPv4) or /64 (IPv6), as text.
func prefixOf(ip string) string {
	a := netip.MustParseAddr(ip)
	bits := 24
	if a.Is6() {
		bits = 64
	}
	return netip.PrefixFrom(a, bits).Masked().String()
}

// distinctAddrs counts the addresses and prefixes handed out.
func (c *crawler) distinctAddrs() (addrs, prefixes int64) {
	if len(c.spec.Addresses) > 0 {
		return int64(len(c.fixedUsed)), int64(len(c.fixedPrefixes))
	}
	addrs, prefixes = c.addrs.addrs, c.addrs.prefixes
	if c.addrs6 != nil {
		addrs, prefixes = addrs+c.addrs6.addrs, prefixes+c.addrs6.prefixes
	}
	return addrs, prefixes
}

// clients counts the crawler's IPv4 addresses and IPv6 /64s.
func (c *crawler) clients() int64 {
	if len(c.spec.Addresses) > 0 {
		return int64(len(c.fixedUsed))
	}
	n := c.addrs.addrs
	if c.addrs.ipv6 {
		n = c.addrs.prefixes
	}
	if c.addrs6 != nil {
		n += c.addrs6.prefixes
	}
	return n
}

// pickAgent draws one of a rotating crawler's profiles (nil without Agents).
func (c *crawler) pickAgent() *profile {
	if len(c.agents) == 0 {
		return nil
	}
	return c.agents[c.rng.IntN(len(c.agents))]
}

func newCrawlerRate(c *CrawlerSpec, begin, end int64) *plf {
	p := &plf{}
	onset := c.Onset.UnixNano()
	if !c.BaselineFrom.IsZero() && c.BaselineRate > 0 && c.BaselineFrom.Before(c.Onset) {
		bf := c.BaselineFrom.UnixNano()
		p.add(bf-1, 0)
		p.add(bf, c.BaselineRate)
	} else {
		p.add(onset-1, 0)
	}
	base := c.BaselineRate
	if c.BaselineFrom.IsZero() || !c.BaselineFrom.Before(c.Onset) {
		base = 0
	}
	p.add(onset, base)
	if len(c.Shape) > 0 {
		for _, k := range c.Shape {
			if k.Minute > 0 {
				p.add(onset+int64(minutes(k.Minute)), k.Rate)
			}
		}
		if last := c.Shape[len(c.Shape)-1]; last.Rate != 0 {
			p.add(onset+int64(minutes(last.Minute))+1, 0)
		}
		return p
	}
	t := onset + int64(minutes(c.RampMinutes))
	p.add(t, c.PeakRate)
	t += int64(minutes(c.HoldMinutes))
	p.add(t, c.PeakRate)
	t += int64(minutes(c.FadeMinutes))
	p.add(t, 0)
	_ = begin
	_ = end
	return p
}

func (c *crawler) dispatch(s *sim) {
	tool := c.spec.Tools[c.rng.IntN(len(c.spec.Tools))]
	t, _ := s.w.titles.pick(c.rng)
	if c.spec.AttemptsMax > 0 {
		c.attempt(s)
	}
	r := s.toolReq(clsCrawler, tool, c.prof, t, c.rng)
	c.send(s, r)
}

// attempt picks the address of the next attempt of a crawler that sends a
// few attempts per address, spread over minutes: an address whose next
// attempt is due, else a fresh one, whose later attempts are queued.
func (c *crawler) attempt(s *sim) {
	if len(c.revisits) > 0 && c.revisits[0].at <= s.now {
		v := c.revisits.pop()
		c.ip, c.agent = v.ip, v.prof
		if sw := c.pickAgent(); sw != nil && c.rng.Float64() < c.spec.AgentSwitch {
			c.agent = sw
		}
		c.used = -1 // kept by send
		return
	}
	c.ip, c.agent = c.freshAddr(s), c.pickAgent()
	c.used = -1
	n := c.spec.AttemptsMin + c.rng.IntN(c.spec.AttemptsMax-c.spec.AttemptsMin+1)
	at := s.now
	for i := 1; i < n; i++ {
		at += secs(c.spec.AttemptGapMinS + c.rng.Float64()*(c.spec.AttemptGapMaxS-c.spec.AttemptGapMinS))
		c.revisits.push(revisit{at: at, ip: c.ip, prof: c.agent})
	}
}

func (c *crawler) send(s *sim, r *request) {
	switch {
	case len(c.spec.Addresses) > 0:
		c.ip = c.spec.Addresses[c.rng.IntN(len(c.spec.Addresses))]
		if !c.fixedUsed[c.ip] {
			c.fixedUsed[c.ip] = true
			c.fixedPrefixes[prefixOf(c.ip)] = true
		}
	case c.used < 0 && r.retryOf == 0:
		// attempt chose the address
		c.used = 0
	case c.ip == "" || r.retryOf != 0 || c.rng.Float64() < 1/c.spec.RequestsPerIP:
		// keep the address with probability 1-1/RequestsPerIP: a geometric
		// number of consecutive requests per address, mean RequestsPerIP
		c.ip = c.freshAddr(s)
		c.used = 0
		if a := c.pickAgent(); a != nil && r.retryOf == 0 {
			c.agent = a
		}
	}
	if c.agent != nil && r.retryOf == 0 {
		r.prof = c.agent
	}
	c.used++
	r.ip, r.port = c.ip, randPort(c.rng)
	r.owner = c
	if c.spec.TimeoutS > 0 {
		r.timeout = secs(c.spec.TimeoutS)
	}
	s.send(r)
}

func (c *crawler) done(s *sim, r *request) {
	if r.status >= 500 && !r.gaveUp && int(r.tries) < c.spec.Retries {
		d := c.spec.RetryMinS + c.rng.Float64()*(c.spec.RetryMaxS-c.spec.RetryMinS)
		s.after(secs(d), &retryTimer{c, r}, 0)
	}
}

// retryTimer resends one request of the crawler when its delay is over.
type retryTimer struct {
	c *crawler
	r *request
}

func (rt *retryTimer) wake(s *sim, _ int32) {
	c, r := rt.c, rt.r
	n := *r
	n.clearRuntime()
	n.retryOf = r.seq
	if r.retryOf != 0 {
		n.retryOf = r.retryOf
	}
	n.tries = r.tries + 1
	c.send(s, &n)
}

// toolReq builds a request for a page tool on title t.
func (s *sim) toolReq(cls class, tool Tool, p *profile, t string, rng *rand.Rand) *request {
	var uri string
	switch tool {
	case ToolEdit:
		uri = "/index.php?title=" + t + "&action=edit"
	case ToolHistory:
		uri = "/index.php?title=" + t + "&action=history"
	case ToolWatch:
		uri = "/index.php?title=" + t + "&action=watch"
	case ToolContributions:
		uri = "/w/Special:Contributions/" + s.w.names.list[rng.IntN(len(s.w.names.list))]
	case ToolRecentChangesLinked:
		uri = "/w/Special:RecentChangesLinked/" + t
	case ToolCiteThisPage:
		uri = "/index.php?title=Special:CiteThisPage&page=" + t
	case ToolWhatLinksHere:
		uri = "/w/Special:WhatLinksHere/" + t
	case ToolWhatLinksHereTitle:
		uri = "/index.php?title=Special:WhatLinksHere&target=" + t
	case ToolNewItem:
		uri = "/w/Special:NewItem?site=kowiki&page=" + t
	case ToolWPSearch, ToolWPRestSearch, ToolWPReplyToCom:
		uri = wpToolURI(tool, t, rng)
	case ToolWPLogin:
		uri = "/wp-login.php"
	case ToolWPXMLRPC:
		uri = "/xmlrpc.php"
	case ToolLaravelProduct, ToolLaravelSearch, ToolLivewire, ToolNCShare, ToolNCShareZip, ToolNCPreview:
		uri = appToolURI(tool, rng)
	}
	method := "GET"
	if tool == ToolWPLogin || tool == ToolWPXMLRPC || tool == ToolLivewire {
		method = "POST"
	}
	r := s.newReq(cls, kindTool, p, "", 0, method, uri, "")
	r.tool = tool
	if method == "POST" {
		r.bytesIn = 60 + rng.IntN(200) // log=...&pwd=..., or one system.multicall
	}
	s.cost(r)
	return r
}

// clearRuntime resets what a run of the request filled in, for a resend.
func (r *request) clearRuntime() {
	c := request{cls: r.cls, kind: r.kind, tool: r.tool, prof: r.prof, ip: r.ip, port: r.port, method: r.method,
		uri: r.uri, referer: r.referer, bytesIn: r.bytesIn, retryOf: r.retryOf, tries: r.tries, owner: r.owner,
		timeout: r.timeout, route: r.route, notMod: r.notMod, cpu1: r.cpu1, wait: r.wait, cpu2: r.cpu2,
		phpStatus: r.phpStatus, phpSize: r.phpSize}
	if r.route != routePHP {
		c.size = r.size
	}
	*r = c
}

// ---- the site calling itself ----------------------------------------------------------------

// selfAPI: Special:NewItem has Wikibase check the page name through the site's
// own api.php, over HTTP through Caddy: a second request in the same queue
// while the first holds its worker, waiting up to MediaWiki's HTTP timeout (25 s).
func (s *sim) selfAPI(parent *request) {
	i := len("/w/Special:NewItem?site=kowiki&page=")
	title := ""
	if len(parent.uri) > i {
		title = parent.uri[i:]
	}
	r := s.newReq(clsSelfAPI, kindAPI, s.selfProf, "10.0.0.5", randPort(s.rng), "GET",
		"/api.php?action=wbgetentities&sites=kowiki&titles="+title+"&props=info&format=json", "")
	r.timeout = 25 * second
	r.parent = parent
	r.owner = apiOwner{}
	s.cost(r)
	s.send(r)
}

type apiOwner struct{}

func (apiOwner) done(s *sim, r *request) {
	if p := r.parent; p != nil && p.phase == phAPI && p.phpEnd == 0 {
		if r.gaveUp || r.status != 200 {
			p.phpSize = 6800 // the form with "could not check the title"
		}
		s.step(p)
	}
}

// ---- costs --------------------------------------------------------------------------------------

type cost struct {
	cpu, wait float64 // medians, seconds
	size      int     // median bytes (gzip)
	status    int
}

var toolCosts = map[Tool]cost{
	ToolEdit:                {0.32, 0.05, 24000, 200},
	ToolHistory:             {0.36, 0.12, 16000, 200},
	ToolWatch:               {0.10, 0.02, 5200, 200},
	ToolContributions:       {0.85, 0.25, 14000, 200},
	ToolRecentChangesLinked: {1.70, 0.30, 11000, 200},
	ToolCiteThisPage:        {0.26, 0.04, 5400, 200},
	ToolWhatLinksHere:       {1.35, 0.30, 8200, 200},
	ToolWhatLinksHereTitle:  {1.35, 0.30, 8200, 200},
	ToolNewItem:             {0.22, 0.02, 7400, 200},
	// WordPress: a search is a LIKE over posts, a replytocom page renders
	// the post and its comment tree; neither is in the page cache.
	ToolWPSearch:     {0.34, 0.30, 21000, 200},
	ToolWPRestSearch: {0.24, 0.28, 2600, 200},
	ToolWPReplyToCom: {0.22, 0.08, 28000, 200},
	// A failed login hashes the password (bcrypt/phpass) and renders the
	// form again; xmlrpc answers a fault. Both are 200.
	ToolWPLogin:  {0.30, 0.02, 4200, 200},
	ToolWPXMLRPC: {0.30, 0.02, 420, 200},
	// Laravel (apps.go): a product page loads the product, its variants
	// and related items; a search is a full-text query; a Livewire update
	// re-renders one component. Nextcloud: a share page lists a folder;
	// its download zips the folder while the worker waits on storage; a
	// preview scales an image.
	ToolLaravelProduct: {0.24, 0.05, 38000, 200},
	ToolLaravelSearch:  {0.30, 0.20, 30000, 200},
	ToolLivewire:       {0.06, 0.02, 2400, 200},
	ToolNCShare:        {0.22, 0.06, 21000, 200},
	ToolNCShareZip:     {0.45, 0.60, 2400000, 200},
	ToolNCPreview:      {0.18, 0.04, 14000, 200},
}

var kindCosts = [...]cost{
	kindPage:    {0.07, 0.025, 26000, 200},
	kindSearch:  {0.02, 0.012, 420, 200},
	kindSpecial: {0.25, 0.08, 12000, 200},
	kindSubmit:  {0.45, 0.20, 0, 302},
	kindRedLink: {0.12, 0.03, 9000, 200},
	kindAPI:     {0.10, 0.02, 380, 200},
}

// cost draws r's PHP work: lognormal around the medians above. Waits are for
// the database on another host, so they hold a worker without using CPU.
func (s *sim) cost(r *request) {
	var c cost
	if r.kind == kindTool {
		c = toolCosts[r.tool]
	} else {
		c = kindCosts[r.kind]
	}
	ln := func(m float64) float64 { return m * math.Exp(0.5*s.rng.NormFloat64()) }
	cpu := ln(c.cpu)
	r.cpu1, r.cpu2 = cpu*0.8, cpu*0.2
	r.wait = ln(c.wait)
	if r.phpStatus == 0 {
		r.phpStatus = c.status
		if r.kind == kindPage && s.rng.Float64() < 0.01 {
			r.phpStatus = 404
		}
	}
	if c.size > 0 && r.phpSize == 0 {
		r.phpSize = int(float64(c.size) * math.Exp(0.4*s.rng.NormFloat64()))
	}
	if r.tool == ToolNewItem {
		r.cpu2 = 0.06
	}
}

// dbWait applies a slow database to a wait phase starting now.
func (s *sim) dbWait(w float64) float64 {
	if w <= 0 {
		return 0
	}
	if d := s.sc.SlowDB; d != nil && s.now >= d.From.UnixNano() && s.now < d.To.UnixNano() {
		v := w*d.WaitFactor + s.rng.ExpFloat64()*d.ExtraWaitS
		if d.CapS > 0 {
			v = min(v, d.CapS)
		}
		return v
	}
	return w
}
