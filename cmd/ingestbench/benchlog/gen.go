// Package benchlog writes the benchmarks' logs: large, realistic Caddy access
// logs that aftermath's ingest and analysis, and the bare reference loop
// (benchref), are measured on (issues 9 and 26). It is a package apart from
// the loop because it draws on the simulator, which the loop's program
// (cmd/bareloop) must not link.
//
// The generator streams: it writes any size (1 GiB, 4 GiB) without holding more
// than one line in memory. Its lines have the shapes of Caddy 2.11's access log
// as recorded in the lab incident and written by the simulator: a Korean
// MediaWiki behind php_fastcgi, browsers with their real request headers
// (Chromium's client hints, Sec-Fetch-*), Cookie and Set-Cookie logged as
// "REDACTED" (Caddy without log_credentials), MediaWiki's response headers, a
// "tls" object on HTTPS lines, header keys in Go's random map order. Lines
// average about 1,400 bytes. Its readers (browsers, languages, addresses), the
// words of its titles, its ETags and its JSON strings are the simulator's
// (sources/simulate), so the two cannot drift apart.
//
// The population of a given seed is the same whatever the size: the same
// clients, pages and fingerprints over the same span of time, only denser. A
// denser log still holds more distinct keys, because more of the population
// shows up in each minute: the 4 GiB log of seed 1 has 16.8 times the lines
// of the 256 MB one, 1.7 times the addresses, 3.0 times the paths and 15
// times the (address, minute) pairs. A memory that grows with lines, not with
// distinct keys, is told apart on a log written with Repeat: the traffic of a
// smaller log, each line written several times, so that the keys are exactly
// the smaller log's.
package benchlog

import (
	"bufio"
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// GenOptions shapes a generated log.
type GenOptions struct {
	// Size is the number of bytes to write; the last line is completed, so the
	// log is at most one line longer.
	Size int64
	// Seed picks the clients, pages and order of requests; the same seed and
	// span give the same traffic at any size. Default 1.
	Seed uint64
	// Start is the time of the first line. Default 2026-10-02T15:00:00Z.
	Start time.Time
	// Span is the time the log covers, its lines spread evenly over it (request
	// by request they follow each other at random intervals, and a slow
	// response is logged late, as Caddy does). Default 24 h.
	Span time.Duration
	// Clients is the number of distinct readers (each its own address);
	// default 40,000. Every one of them has a session before any comes back,
	// so any log of a few hundred megabytes holds them all. Bots and the health
	// check come on top.
	Clients int
	// NoIncident leaves out the incident: by default the hour starting 11/24
	// into the span has a crawler on top of the usual traffic (a logged-out
	// Chrome zh-CN fingerprint without client hints, from 8,000 addresses in
	// as many /24s, each used in turn, walking page tools: the lab incident's
	// shape), a third of that hour's lines, with the 503s and 504s of a
	// saturated pool.
	NoIncident bool
	// Repeat writes each line this many times in a row: the log of Size
	// bytes (the same addresses, pages, fingerprints and minutes, line for
	// line) at Repeat times the lines and bytes, for the flat-memory check.
	// Default 1.
	Repeat int
}

// Incident bounds, as shares of the span, and the crawler's share of the
// incident's lines.
const (
	incidentFrom  = 11.0 / 24
	incidentTo    = 12.0 / 24
	crawlerShare  = 1.0 / 3
	crawlerAddrs  = 8000
	crawlerUA     = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"
	crawlerAccept = simulate.AcceptChromium
)

// GenStats describes a generated log.
type GenStats struct {
	Bytes, Lines int64
	HTTPS        int64 // lines with a tls object
	First, Last  time.Time
}

// Generate writes a log of about o.Size bytes to w (o.Repeat times that with
// Repeat).
func Generate(w io.Writer, o GenOptions) (GenStats, error) {
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 10, 2, 15, 0, 0, 0, time.UTC)
	}
	if o.Span <= 0 {
		o.Span = 24 * time.Hour
	}
	if o.Clients <= 0 {
		o.Clients = 40000
	}
	o.Repeat = max(o.Repeat, 1)
	g := newGen(o)
	bw := bufio.NewWriterSize(w, 1<<20)
	var st GenStats
	// drawn is the size of the log without repeats: it places each line in
	// the span, so that a repeated log's lines are the plain log's.
	for drawn := int64(0); drawn < o.Size; {
		line, tls, ts := g.next(drawn)
		for range o.Repeat {
			if _, err := bw.Write(line); err != nil {
				return st, err
			}
		}
		drawn += int64(len(line))
		st.Bytes += int64(len(line) * o.Repeat)
		st.Lines += int64(o.Repeat)
		if tls {
			st.HTTPS += int64(o.Repeat)
		}
		if t := time.Unix(0, ts).UTC(); st.First.IsZero() || t.Before(st.First) {
			st.First = t
		}
		if t := time.Unix(0, ts).UTC(); t.After(st.Last) {
			st.Last = t
		}
	}
	return st, bw.Flush()
}

// ---- the population ---------------------------------------------------------------

// Chrome releases of the readers (the simulator's population has one), so
// that a fingerprint's versions vary as in real traffic.
var chromeVersions = []string{"129", "129", "129", "128", "128", "127", "126", "125"}

// acceptImage is the Accept of a browser's image request.
const acceptImage = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"

// client is one reader: an address and a browser, fixed for the whole log.
type client struct {
	ip       string
	ua, chua string
	platform string
	mobile   bool
	family   string
	accept   string // Accept of a navigation
	encoding string // Accept-Encoding
	lang     string
	cookie   bool // logs "Cookie":["REDACTED"]
	loggedIn bool
	proto    string // HTTP/2.0, HTTP/3.0, HTTP/1.1
	alpn     string
	bot      bool
	crawler  bool
	from     string
	https    bool
}

type bot struct {
	w        float64
	ua, from string
	ranges   []string
	https    bool
}

var bots = []bot{
	{0.35, "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; +http://www.google.com/bot.html) Chrome/129.0.6668.89 Safari/537.36",
		"googlebot(at)googlebot.com", []string{"66.249.64", "66.249.66", "66.249.68", "66.249.70", "66.249.72", "66.249.79"}, true},
	{0.25, "Mozilla/5.0 (compatible; Yeti/1.1; +https://naver.me/spd)", "", []string{"110.93.150", "110.93.151", "211.249.40", "211.249.41"}, true},
	{0.15, "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36",
		"bingbot(at)microsoft.com", []string{"40.77.167", "157.55.39", "207.46.13", "52.167.144"}, true},
	{0.10, "Mozilla/5.0 (compatible; Daum/4.1; +http://cs.daum.net/faq/15/4118.html?faqId=28966)", "", []string{"203.133.168", "211.231.99"}, false},
	{0.10, "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.2; +https://openai.com/gptbot", "", []string{"20.171.206", "20.171.207", "52.230.152"}, true},
	{0.05, "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", "", []string{"54.36.148", "54.36.149", "51.222.253"}, true},
}

var specials = []string{"Special:RecentChanges", "Special:Search", "Special:Random", "Special:WhatLinksHere",
	"%ED%8A%B9%EC%88%98:%EC%B5%9C%EA%B7%BC%EB%B0%94%EB%80%9C", "Special:Contributions", "Special:AllPages"}

var assets = []struct{ uri, ctype string }{
	{"/load.php?lang=ko&modules=site.styles&only=styles&skin=vector-2022", "text/css; charset=utf-8"},
	{"/load.php?lang=ko&modules=startup&only=scripts&raw=1&skin=vector-2022", "text/javascript; charset=utf-8"},
	{"/load.php?lang=ko&modules=ext.cite.styles%7Cskins.vector.icons%2Cstyles&only=styles&skin=vector-2022", "text/css; charset=utf-8"},
	{"/static/images/icons/wiki.png", "image/png"},
	{"/static/favicon/wiki.ico", "image/vnd.microsoft.icon"},
	{"/resources/assets/poweredby_mediawiki.svg", "image/svg+xml"},
}

type gen struct {
	rng          *rand.Rand
	o            GenOptions
	clients      []client
	bots         []client
	titles       []string
	names        []string
	crawler      []client
	crawlerOrder []int
	crawled      int     // crawler requests so far
	order        []int   // the clients' first sessions, in this order
	session      int     // sessions started so far
	cur          *client // the session being replayed
	curLeft      int
	last         string // the session's last page (its Referer)
	line         []byte
	hdrs         []header
}

type header struct{ name, value string }

func newGen(o GenOptions) *gen {
	// The population depends on the seed only, never on the size.
	pop := rand.New(rand.NewPCG(o.Seed, 0x5eed))
	g := &gen{rng: rand.New(rand.NewPCG(o.Seed, 0x1095)), o: o}
	words := simulate.TitleWords
	for i := range 20000 {
		a, b := words[pop.IntN(len(words))], words[pop.IntN(len(words))]
		var t string
		switch i % 4 {
		case 0:
			t = a
		case 1:
			t = a + "_" + b
		case 2:
			t = b + "_" + strconv.Itoa(1900+i%120)
		default:
			t = a + "_(" + b + ")"
		}
		if i >= len(words) && i%4 == 0 {
			t += "_" + strconv.Itoa(i)
		}
		g.titles = append(g.titles, url.PathEscape(t))
	}
	for i := range 400 {
		g.names = append(g.names, "Wiki"+strconv.Itoa(1000+i*7))
	}
	seen := map[string]bool{}
	for len(g.clients) < o.Clients {
		c := newReader(pop)
		if !seen[c.ip] {
			seen[c.ip] = true
			g.clients = append(g.clients, c)
		}
	}
	g.order = pop.Perm(len(g.clients))
	for i := range crawlerAddrs {
		// A fresh /24 for each address (an affine walk over the public space).
		p := (uint32(i)*40503 + 7919) & (1<<24 - 1)
		for a := p >> 16; a == 0 || a == 10 || a == 127 || a >= 224 || a == 192 || a == 172 || a == 100 || a == 169; a = p >> 16 {
			p = (p + 0x010000) & (1<<24 - 1)
		}
		g.crawler = append(g.crawler, client{ip: strconv.Itoa(int(p>>16)) + "." + strconv.Itoa(int(p>>8&0xff)) + "." +
			strconv.Itoa(int(p&0xff)) + "." + strconv.Itoa(1+pop.IntN(254)), ua: crawlerUA, family: "chromium",
			lang: "zh-CN,zh;q=0.9", proto: "HTTP/1.1", alpn: "http/1.1", https: true, crawler: true})
	}
	g.crawlerOrder = pop.Perm(len(g.crawler))
	for _, b := range bots {
		n := int(b.w * 400)
		for range n {
			r := b.ranges[pop.IntN(len(b.ranges))]
			g.bots = append(g.bots, client{ip: r + "." + strconv.Itoa(1+pop.IntN(254)), ua: b.ua, from: b.from,
				bot: true, proto: "HTTP/1.1", alpn: "http/1.1", https: b.https})
		}
	}
	return g
}

// newReader draws a reader as the simulator does (its browser, language and
// address), with one of several Chrome releases.
func newReader(rng *rand.Rand) client {
	e := simulate.PickReaderBrowser(rng)
	e = e.WithChrome(chromeVersions[rng.IntN(len(chromeVersions))])
	c := client{ua: e.UserAgent, chua: e.SecChUa, mobile: e.Mobile, platform: e.Platform, family: e.Family,
		accept: e.Accept(), encoding: e.AcceptEncoding(), lang: simulate.PickReaderLanguage(rng),
		proto: "HTTP/2.0", alpn: "h2", https: true}
	if e.Family == "chromium" && rng.Float64() < 0.3 {
		c.proto, c.alpn = "HTTP/3.0", "h3"
	}
	if rng.Float64() < 0.08 {
		c.proto, c.alpn = "HTTP/1.1", "http/1.1"
		if rng.Float64() < 0.5 {
			// plain HTTP before the redirect, from old bookmarks and links
			c.https, c.alpn = false, ""
		}
	}
	switch x := rng.Float64(); {
	case x < 0.04:
		c.cookie, c.loggedIn = true, true
	case x < 0.10:
		c.cookie = true
	}
	switch {
	case rng.Float64() < 0.05:
		// IPv6 from a Korean carrier's 2001:2d8::/32 and 2001:e60::/32
		var a [16]byte
		a[0], a[1], a[2], a[3] = 0x20, 0x01, 0x02, 0xd8
		if rng.IntN(2) == 0 {
			a[2], a[3] = 0x0e, 0x60
		}
		binary.BigEndian.PutUint32(a[4:], rng.Uint32())
		binary.BigEndian.PutUint64(a[8:], rng.Uint64())
		c.ip = netip.AddrFrom16(a).String()
	default:
		c.ip = simulate.ReaderIP(rng, c.lang)
	}
	return c
}

// timeOf places the line that starts at byte written: its offset from Start,
// and whether it falls in the incident. Lines are spread evenly over the span,
// denser in the incident by the crawler's lines on top.
func (g *gen) timeOf(written int64) (int64, bool) {
	span, size := float64(g.o.Span), float64(max(g.o.Size, 1))
	w := float64(written)
	if g.o.NoIncident {
		return int64(span * w / size), false
	}
	// rate is bytes per nanosecond outside the incident; inside, the crawler
	// adds crawlerShare of the lines on top.
	dense := 1 / (1 - crawlerShare)
	inc := (incidentTo - incidentFrom) * span
	rate := size / (span - inc + inc*dense)
	a := incidentFrom * span * rate // bytes before the incident
	b := a + inc*rate*dense         // bytes up to its end
	switch {
	case w < a:
		return int64(w / rate), false
	case w < b:
		return int64(incidentFrom*span + (w-a)/(rate*dense)), true
	}
	return int64(incidentTo*span + (w-b)/rate), false
}

// title picks a page with a Zipf-like popularity.
func (g *gen) title() string {
	u := g.rng.Float64()
	return g.titles[int(float64(len(g.titles))*u*u*u)]
}

// ---- one line ---------------------------------------------------------------------

type kind uint8

const (
	kindPage kind = iota
	kindAsset
	kindImage
	kindSearch
	kindAPI
	kindTool
	kindSpecial
	kindHealth
	kindRobots
)

// next returns the next line (with its newline), whether it is HTTPS, and its
// time in Unix nanoseconds. written is the log's size so far: it places the
// line in the span.
func (g *gen) next(written int64) ([]byte, bool, int64) {
	rng := g.rng
	// Time: the share of the log written so far, plus the response time that
	// Caddy waits for before logging.
	at, incident := g.timeOf(written)
	base := g.o.Start.UnixNano() + at

	var c *client
	k := kindPage
	switch x := rng.Float64(); {
	case incident && rng.Float64() < crawlerShare:
		// Addresses in turn: each is used before any is used again.
		c = &g.crawler[g.crawlerOrder[g.crawled%len(g.crawler)]]
		g.crawled++
		k = kindTool
		if rng.IntN(3) == 0 {
			k = kindSpecial
		}
	case x < 0.004:
		k = kindHealth
	case x < 0.10:
		c = &g.bots[rng.IntN(len(g.bots))]
		if rng.Float64() < 0.02 {
			k = kindRobots
		}
	default:
		// A session: a page, then its assets and images, then the next page.
		if g.cur == nil || g.curLeft <= 0 {
			i := rng.IntN(len(g.clients))
			if g.session < len(g.order) {
				i = g.order[g.session]
			}
			g.session++
			g.cur = &g.clients[i]
			g.curLeft = 1 + rng.IntN(12)
			g.last = ""
		}
		g.curLeft--
		c = g.cur
		switch y := rng.Float64(); {
		case y < 0.36:
			k = kindPage
		case y < 0.56:
			k = kindAsset
		case y < 0.72:
			k = kindImage
		case y < 0.80:
			k = kindSearch
		case y < 0.85:
			k = kindAPI
		case y < 0.94:
			k = kindTool
		default:
			k = kindSpecial
		}
	}
	if k == kindHealth {
		c = &healthClient
	}

	method, uri := "GET", ""
	switch k {
	case kindPage:
		uri = "/w/" + g.title()
		if c.bot && rng.Float64() < 0.2 {
			uri = "/index.php?title=" + g.title() + "&oldid=" + strconv.Itoa(100000+rng.IntN(900000))
		}
	case kindAsset:
		uri = assets[rng.IntN(len(assets))].uri
	case kindImage:
		// MediaWiki's thumbnail URLs: hashed directories of the file name, a
		// width from the few the skin asks for.
		t := g.title()
		h := simulate.ETag(t)
		uri = "/images/thumb/" + h[1:2] + "/" + h[1:3] + "/" + t + ".jpg/" + []string{"220", "250", "330", "440"}[rng.IntN(4)] + "px-" + t + ".jpg"
	case kindSearch:
		uri = "/rest.php/v1/search/title?q=" + g.title()[:9] + "&limit=10"
	case kindAPI:
		uri = "/api.php?action=query&format=json&prop=pageimages%7Cinfo&titles=" + g.title() + "&formatversion=2"
	case kindTool:
		t := g.title()
		if c.crawler {
			uri = "/index.php?title=" + t + "&action=history"
			if rng.IntN(2) == 0 {
				uri = "/index.php?title=Special:WhatLinksHere/" + t
			}
			break
		}
		switch rng.IntN(5) {
		case 0:
			uri = "/index.php?title=" + t + "&action=history"
		case 1:
			uri = "/index.php?title=" + t + "&action=edit"
			if c.loggedIn && rng.IntN(3) == 0 {
				method, uri = "POST", "/index.php?title="+t+"&action=submit"
			}
		case 2:
			uri = "/index.php?title=" + t + "&diff=" + strconv.Itoa(100000+rng.IntN(900000)) + "&oldid=" + strconv.Itoa(100000+rng.IntN(900000))
		case 3:
			uri = "/index.php?title=" + t + "&action=info"
		default:
			uri = "/index.php?title=Special:WhatLinksHere/" + t
		}
	case kindSpecial:
		s := specials[rng.IntN(len(specials))]
		if c.crawler {
			s = "Special:WhatLinksHere"
		}
		switch {
		case s == "Special:Search":
			uri = "/index.php?search=" + g.title() + "&title=Special%3A%EA%B2%80%EC%83%89&ns0=1"
		case s == "Special:WhatLinksHere" || s == "Special:Contributions":
			uri = "/w/" + s + "/" + g.title()
		default:
			uri = "/w/" + s
		}
	case kindHealth:
		uri = "/healthz.php"
	case kindRobots:
		uri = "/robots.txt"
	}

	// Who answered, and how long it took.
	status, size, origin := 200, 0, "php"
	dur := 0.02 + rng.ExpFloat64()*0.06
	switch k {
	case kindAsset, kindImage, kindRobots:
		origin, dur, size = "static", 0.0001+rng.Float64()*0.0008, 2000+rng.IntN(60000)
		if k == kindAsset && rng.Float64() < 0.3 {
			status, size = 304, 0
		}
	case kindHealth:
		dur, size = 0.001+rng.Float64()*0.002, 3
	case kindTool, kindSpecial:
		dur, size = 0.1+rng.ExpFloat64()*0.2, 3000+rng.IntN(90000)
	default:
		size = 1000 + rng.IntN(60000)
	}
	if method == "POST" {
		status, size = 302, 0
	}
	switch x := rng.Float64(); {
	case k == kindHealth:
	case incident && x < 0.3 && origin == "php":
		// The crawler saturates the pool: Caddy answers for PHP.
		origin, size = "proxy", 0
		status, dur = 503, 0.0001+rng.Float64()*0.0004
		if x < 0.1 {
			status, dur = 504, 10+rng.Float64()*0.003
		}
	case incident && origin == "php":
		dur = 1 + rng.ExpFloat64()*3 // queued behind the crawler
	case x < 0.006 && origin == "php":
		status, size = 404, 3000+rng.IntN(4000)
	case x < 0.012 && origin == "php":
		// the pool saturated: Caddy's own error pages
		origin, size = "proxy", 0
		status, dur = 503, 0.0001+rng.Float64()*0.0004
		if rng.IntN(3) == 0 {
			status, dur = 504, 10+rng.Float64()*0.003
		}
	case x < 0.0125:
		origin, status, size, dur = "ratelimit", 429, 0, 0.00005
	}
	ts := base + int64(dur*1e9)

	b := g.line[:0]
	level := "info"
	if status >= 500 {
		level = "error"
	}
	b = append(b, `{"level":"`...)
	b = append(b, level...)
	b = append(b, `","ts":`...)
	b = strconv.AppendFloat(b, float64(ts)/1e9, 'f', -1, 64)
	b = append(b, `,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":`...)
	b = simulate.AppendJSONString(b, c.ip)
	b = append(b, `,"remote_port":"`...)
	b = strconv.AppendInt(b, int64(1024+rng.IntN(64000)), 10)
	b = append(b, `","client_ip":`...)
	b = simulate.AppendJSONString(b, c.ip)
	b = append(b, `,"proto":`...)
	b = simulate.AppendJSONString(b, c.proto)
	b = append(b, `,"method":"`...)
	b = append(b, method...)
	b = append(b, `","host":"wiki.example.org","uri":`...)
	b = simulate.AppendJSONString(b, uri)
	b = append(b, `,"headers":{`...)
	b = g.appendHeaders(b, g.requestHeaders(c, k, method))
	b = append(b, '}')
	https := c.https && k != kindHealth
	if https {
		b = append(b, `,"tls":{"resumed":`...)
		b = strconv.AppendBool(b, rng.IntN(4) == 0)
		b = append(b, `,"version":772,"cipher_suite":`...)
		b = strconv.AppendInt(b, int64([]int{4865, 4865, 4866, 4867}[rng.IntN(4)]), 10)
		b = append(b, `,"proto":"`...)
		b = append(b, c.alpn...)
		b = append(b, `","server_name":"wiki.example.org"}`...)
	}
	b = append(b, `},"bytes_read":`...)
	bytesRead := 0
	if method == "POST" {
		bytesRead = 200 + rng.IntN(4000)
	}
	b = strconv.AppendInt(b, int64(bytesRead), 10)
	b = append(b, `,"user_id":"","duration":`...)
	b = strconv.AppendFloat(b, math.Round(dur*1e9)/1e9, 'f', -1, 64)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, int64(size), 10)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"resp_headers":{`...)
	b = g.appendHeaders(b, g.responseHeaders(c, k, origin, status, size, uri, dur))
	b = append(b, "}}\n"...)
	g.line = b
	if k == kindPage && !c.bot {
		g.last = uri
	}
	return b, https, ts
}

var healthClient = client{ip: "127.0.0.1", ua: "curl/7.88.1", proto: "HTTP/1.1"}

func (g *gen) requestHeaders(c *client, k kind, method string) []header {
	h := g.hdrs[:0]
	add := func(name, value string) { h = append(h, header{name, value}) }
	switch {
	case k == kindHealth:
		add("User-Agent", c.ua)
		add("Accept", "*/*")
	case c.crawler:
		add("Accept", crawlerAccept)
		add("Accept-Encoding", "gzip, deflate, br")
		add("Accept-Language", c.lang)
		add("Connection", "keep-alive")
		add("Upgrade-Insecure-Requests", "1")
		add("User-Agent", c.ua)
	case c.bot:
		add("Accept", simulate.AcceptBot)
		add("Accept-Encoding", "gzip, deflate, br")
		if c.from != "" {
			add("From", c.from)
		}
		add("User-Agent", c.ua)
		if c.proto == "HTTP/1.1" {
			add("Connection", "keep-alive")
		}
	default:
		accept, dest, mode := c.accept, "document", "navigate"
		switch k {
		case kindAsset:
			accept, dest, mode = "text/css,*/*;q=0.1", "style", "no-cors"
		case kindImage:
			accept, dest, mode = acceptImage, "image", "no-cors"
		case kindSearch, kindAPI:
			accept, dest, mode = "application/json, text/javascript, */*; q=0.01", "empty", "cors"
		}
		add("Accept", accept)
		add("Accept-Encoding", c.encoding)
		add("Accept-Language", c.lang)
		if method == "POST" {
			add("Content-Type", "application/x-www-form-urlencoded")
			add("Origin", "https://wiki.example.org")
		}
		if c.cookie {
			add("Cookie", "REDACTED")
		}
		if k == kindPage || k == kindTool {
			add("Priority", "u=0, i")
		}
		ref := g.last
		if ref == "" {
			ref = "/w/" + g.titles[0]
		}
		if k != kindPage || g.last != "" {
			add("Referer", "https://wiki.example.org"+ref)
		}
		if c.chua != "" {
			add("Sec-Ch-Ua", c.chua)
			if c.mobile {
				add("Sec-Ch-Ua-Mobile", "?1")
			} else {
				add("Sec-Ch-Ua-Mobile", "?0")
			}
			add("Sec-Ch-Ua-Platform", c.platform)
		}
		add("Sec-Fetch-Dest", dest)
		add("Sec-Fetch-Mode", mode)
		add("Sec-Fetch-Site", "same-origin")
		if mode == "navigate" {
			add("Sec-Fetch-User", "?1")
			add("Upgrade-Insecure-Requests", "1")
		}
		add("User-Agent", c.ua)
		if k == kindSearch || k == kindAPI {
			add("X-Requested-With", "XMLHttpRequest")
		}
	}
	g.hdrs = h
	return h
}

var cacheControls = []string{"s-maxage=300, must-revalidate, max-age=0", "private, must-revalidate, max-age=0", "no-cache"}

func (g *gen) responseHeaders(c *client, k kind, origin string, status, size int, uri string, dur float64) []header {
	h := g.hdrs[:0]
	add := func(name, value string) { h = append(h, header{name, value}) }
	switch origin {
	case "static":
		if status != 304 {
			add("Accept-Ranges", "bytes")
			add("Content-Length", strconv.Itoa(size))
			ct := "image/jpeg"
			if k == kindAsset {
				for _, a := range assets {
					if a.uri == uri {
						ct = a.ctype
					}
				}
			}
			if k == kindRobots {
				ct = "text/plain; charset=utf-8"
			}
			add("Content-Type", ct)
		}
		add("Etag", simulate.ETag(uri))
		add("Last-Modified", "Thu, 01 Oct 2026 07:40:12 GMT")
		add("Server", "Caddy")
		add("Vary", "Accept-Encoding")
	case "php":
		if k == kindHealth {
			add("Content-Type", "text/plain;charset=UTF-8")
			add("Cache-Control", "no-store")
			add("Via", "0.0 Caddy")
			break
		}
		cc := cacheControls[0]
		if c.loggedIn || k != kindPage {
			cc = cacheControls[1]
		}
		add("Cache-Control", cc)
		add("Content-Language", "ko")
		switch {
		case k == kindSearch || k == kindAPI:
			add("Content-Type", "application/json; charset=utf-8")
		case status == 302:
			add("Content-Type", "text/html; charset=UTF-8")
			add("Location", "https://wiki.example.org/w/"+g.title())
		default:
			add("Content-Encoding", "gzip")
			add("Content-Type", "text/html; charset=UTF-8")
		}
		if status == 404 {
			add("Status", "404 Not Found")
		}
		if c.cookie {
			add("Set-Cookie", "REDACTED")
		}
		add("Server-Timing", "app;dur="+strconv.Itoa(int(dur*1000)))
		add("Vary", "Accept-Encoding, Cookie")
		add("Via", "0.0 Caddy")
		add("X-Content-Type-Options", "nosniff")
		add("X-Frame-Options", "DENY")
		add("X-Powered-By", "PHP/8.2.26")
	case "ratelimit":
		add("Retry-After", strconv.Itoa(1+g.rng.IntN(60)))
		add("Server", "Caddy")
	default:
		add("Server", "Caddy")
	}
	g.hdrs = h
	return h
}

// appendHeaders writes headers as Caddy does, "Name":["value"], in the random
// order of a Go map.
func (g *gen) appendHeaders(b []byte, h []header) []byte {
	g.rng.Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
	for i, kv := range h {
		if i > 0 {
			b = append(b, ',')
		}
		b = simulate.AppendJSONString(b, kv.name)
		b = append(b, ':', '[')
		b = simulate.AppendJSONString(b, kv.value)
		b = append(b, ']')
	}
	return b
}
