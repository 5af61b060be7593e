package simulate

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// profile is a client's fingerprint: what it sends on every request. Strings are
// ASCII; the JSON writer escapes the quotes of Sec-Ch-Ua.
type profile struct {
	ua       string
	lang     string // Accept-Language ("" none)
	cookie   string // Cookie as Caddy logs it ("" none)
	auth     string // the Authorization header's scheme ("" none)
	loggedIn bool
	browser  bool   // renders pages: fetches assets, sends Sec-Fetch-*
	chua     string // Sec-Ch-Ua ("" for non-Chromium or a faked UA)
	mobile   bool
	platform string // Sec-Ch-Ua-Platform value
	accept   string // Accept of a navigation
	encoding string // Accept-Encoding
	from     string // bots' From header
	proto    string // HTTP/1.1, HTTP/2.0, HTTP/3.0
	alpn     string // tls.proto
	// fullHeaders: a client that is no browser but sends a browser's
	// whole header set (a crawler copying one), where the site logs it.
	fullHeaders bool
}

// ReaderBrowser is one browser of the reader population. A Chrome-based
// browser names its Chrome release as %v in UserAgent and SecChUa: the
// simulator's readers all run chromeRelease, the ingest benchmark's generator
// (cmd/ingestbench/benchlog) spreads several over its readers (WithChrome).
type ReaderBrowser struct {
	weight    float64 // share of the readers
	UserAgent string
	SecChUa   string // "" for non-Chromium
	Mobile    bool
	Platform  string // Sec-Ch-Ua-Platform value
	Family    string // chromium, safari, firefox
}

// chromeRelease is the Chrome release of the simulated readers.
const chromeRelease = "129"

// WithChrome fills Chrome's release into b's headers.
func (b ReaderBrowser) WithChrome(release string) ReaderBrowser {
	b.UserAgent = strings.ReplaceAll(b.UserAgent, "%v", release)
	b.SecChUa = strings.ReplaceAll(b.SecChUa, "%v", release)
	return b
}

// Accept is the Accept header of b's page navigations.
func (b ReaderBrowser) Accept() string {
	switch b.Family {
	case "chromium":
		return AcceptChromium
	case "safari":
		return acceptSafari
	}
	return acceptFirefox
}

// AcceptEncoding is b's Accept-Encoding header (Safari sends no zstd).
func (b ReaderBrowser) AcceptEncoding() string {
	if b.Family == "safari" {
		return "gzip, deflate, br"
	}
	return "gzip, deflate, br, zstd"
}

// Accept headers: a Chromium navigation's, Safari's and Firefox's, and the
// one search engines' crawlers send.
const (
	AcceptChromium = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
	acceptSafari   = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	acceptFirefox  = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/png,image/svg+xml,*/*;q=0.8"
	AcceptBot      = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
)

// readerBrowsers is the reader population of a Korean wiki: Chrome, Samsung
// Internet and Whale on Android and Windows, Safari on iPhone, some Edge and
// Firefox.
var readerBrowsers = []ReaderBrowser{
	{22, "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%v.0.0.0 Safari/537.36",
		`"Google Chrome";v="%v", "Not=A?Brand";v="8", "Chromium";v="%v"`, false, `"Windows"`, "chromium"},
	{15, "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%v.0.0.0 Mobile Safari/537.36",
		`"Google Chrome";v="%v", "Not=A?Brand";v="8", "Chromium";v="%v"`, true, `"Android"`, "chromium"},
	{12, "Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S921N) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 Chrome/122.0.0.0 Mobile Safari/537.36",
		`"Chromium";v="122", "Not(A:Brand";v="24", "Samsung Internet";v="26.0"`, true, `"Android"`, "chromium"},
	{18, "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1",
		"", true, "", "safari"},
	{8, "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Whale/3.28.266.14 Safari/537.36",
		`"Whale";v="3", "Not-A.Brand";v="8", "Chromium";v="126"`, false, `"Windows"`, "chromium"},
	{7, "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%v.0.0.0 Safari/537.36 Edg/%v.0.0.0",
		`"Microsoft Edge";v="%v", "Not=A?Brand";v="8", "Chromium";v="%v"`, false, `"Windows"`, "chromium"},
	{6, "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari/605.1.15",
		"", false, "", "safari"},
	{5, "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:131.0) Gecko/20100101 Firefox/131.0",
		"", false, "", "firefox"},
	{5, "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%v.0.0.0 Safari/537.36",
		`"Google Chrome";v="%v", "Not=A?Brand";v="8", "Chromium";v="%v"`, false, `"macOS"`, "chromium"},
	{2, "Mozilla/5.0 (iPhone; CPU iPhone OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 NAVER(inapp; search; 2000; 12.8.5; 15)",
		"", true, "", "safari"},
}

// browsers is readerBrowsers with chromeRelease filled in, once.
var browsers = func() []ReaderBrowser {
	bs := make([]ReaderBrowser, len(readerBrowsers))
	for i, b := range readerBrowsers {
		bs[i] = b.WithChrome(chromeRelease)
	}
	return bs
}()

type weighted struct {
	w float64
	v string
}

// languages of readers: mostly Korean, some English and others; a few
// legitimate zh-CN readers so that the crawler's language alone is not a tell.
var readerLangs = []weighted{
	{70, "ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7"}, {10, "ko-KR,ko;q=0.9"}, {8, "en-US,en;q=0.9"},
	{4, "en-US,en;q=0.9,ko;q=0.8"}, {3, "ja,en-US;q=0.9,en;q=0.8"}, {2, "zh-TW,zh;q=0.9,en-US;q=0.8,en;q=0.7"},
	{1.5, "zh-CN,zh;q=0.9,ko;q=0.8"}, {1, "de-DE,de;q=0.9,en;q=0.8"}, {0.5, "vi-VN,vi;q=0.9,en;q=0.8"},
}

// crowdLangs: a link shared on social media brings a wider mix.
var crowdLangs = []weighted{
	{60, "ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7"}, {8, "ko-KR,ko;q=0.9"}, {14, "en-US,en;q=0.9"},
	{6, "ja,en-US;q=0.9,en;q=0.8"}, {4, "zh-TW,zh;q=0.9,en-US;q=0.8,en;q=0.7"}, {3, "zh-CN,zh;q=0.9"},
	{2, "fr-FR,fr;q=0.9,en;q=0.8"}, {2, "es-ES,es;q=0.9"}, {1, "de-DE,de;q=0.9,en;q=0.8"},
}

func pickW(rng *rand.Rand, ws []weighted) string {
	total := 0.0
	for _, w := range ws {
		total += w.w
	}
	x := rng.Float64() * total
	for _, w := range ws {
		if x -= w.w; x < 0 {
			return w.v
		}
	}
	return ws[len(ws)-1].v
}

// pickBrowser draws a browser of bs by its share of the readers.
func pickBrowser(rng *rand.Rand, bs []ReaderBrowser) *ReaderBrowser {
	total := 0.0
	for i := range bs {
		total += bs[i].weight
	}
	x := rng.Float64() * total
	for i := range bs {
		if x -= bs[i].weight; x < 0 {
			return &bs[i]
		}
	}
	return &bs[0]
}

// PickReaderBrowser draws a reader's browser, its Chrome release left as %v.
func PickReaderBrowser(rng *rand.Rand) ReaderBrowser { return *pickBrowser(rng, readerBrowsers) }

// PickReaderLanguage draws a reader's Accept-Language.
func PickReaderLanguage(rng *rand.Rand) string { return pickW(rng, readerLangs) }

// newBrowser makes a reader's profile.
func newBrowser(rng *rand.Rand, bs []ReaderBrowser, langs []weighted, loggedIn bool, names *nameList) *profile {
	e := pickBrowser(rng, bs)
	p := &profile{ua: e.UserAgent, lang: pickW(rng, langs), browser: true, chua: e.SecChUa, mobile: e.Mobile,
		platform: e.Platform, loggedIn: loggedIn, proto: "HTTP/2.0", alpn: "h2", accept: e.Accept(), encoding: e.AcceptEncoding()}
	switch e.Family {
	case "chromium":
		if rng.Float64() < 0.3 {
			p.proto, p.alpn = "HTTP/3.0", "h3"
		}
	case "safari":
		if strings.HasPrefix(p.lang, "ko") {
			p.lang = "ko-KR,ko;q=0.9"
		}
	}
	switch {
	case loggedIn:
		id := 100 + rng.IntN(24000)
		p.cookie = "wikiUserID=" + strconv.Itoa(id) + "; wikiUserName=" + names.pick(rng) + "; wiki_session=REDACTED"
	case rng.Float64() < 0.05:
		// an anonymous session (after opening an edit form): a cookie, not logged in
		p.cookie = "wiki_session=REDACTED"
	}
	return p
}

// crawlerProfile is the crawler's fixed fingerprint.
func crawlerProfile(c *CrawlerSpec, names *nameList) *profile {
	p := &profile{ua: c.UserAgent, lang: c.AcceptLanguage, accept: AcceptChromium,
		encoding: "gzip, deflate, br", proto: "HTTP/1.1", alpn: "http/1.1", loggedIn: c.LoggedIn}
	if c.SecChUa {
		p.chua, p.platform = `"Not A(Brand";v="99", "Google Chrome";v="121", "Chromium";v="121"`, `"Windows"`
	}
	if c.HTTP2 {
		p.proto, p.alpn = "HTTP/2.0", "h2"
	}
	p.fullHeaders = c.BrowserHeaders
	if c.LoggedIn {
		p.cookie = "wikiUserID=31337; wikiUserName=" + names.list[0] + "; wiki_session=REDACTED"
	}
	return p
}

type bot struct {
	w      float64
	ua     string
	from   string
	ranges []string // /16 or /24 prefixes, "a.b.c" or "a.b"
}

var bots = []bot{
	{0.40, "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; +http://www.google.com/bot.html) Chrome/129.0.6668.89 Safari/537.36",
		"googlebot(at)googlebot.com", []string{"66.249.64", "66.249.66", "66.249.68", "66.249.70", "66.249.72", "66.249.79"}},
	{0.30, "Mozilla/5.0 (compatible; Yeti/1.1; +https://naver.me/spd)", "", []string{"110.93.150", "110.93.151", "211.249.40", "211.249.41"}},
	{0.20, "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36",
		"bingbot(at)microsoft.com", []string{"40.77.167", "157.55.39", "207.46.13", "52.167.144"}},
	{0.10, "Mozilla/5.0 (compatible; Daum/4.1; +http://cs.daum.net/faq/15/4118.html?faqId=28966)", "", []string{"203.133.168", "211.231.99"}},
}

func botProfiles() []*profile {
	ps := make([]*profile, len(bots))
	for i, b := range bots {
		ps[i] = &profile{ua: b.ua, from: b.from, accept: AcceptBot, encoding: "gzip, deflate, br", proto: "HTTP/1.1", alpn: "http/1.1"}
	}
	return ps
}

// Korean access networks (KT, SK, LG U+ fixed and mobile), by /16.
var krPrefixes = []string{"211.36", "118.235", "175.223", "121.131", "220.72", "223.38", "223.39", "223.62",
	"218.38", "1.224", "58.140", "106.101", "106.102", "211.234", "117.111", "121.190", "39.7", "112.169"}

// Elsewhere, for readers whose language is not Korean.
var otherPrefixes = []string{"126.212", "153.156", "73.162", "98.207", "24.5", "81.2", "91.64", "114.34", "36.226", "1.52", "14.161", "113.185"}

// ReaderIP draws a reader's IPv4 address: a Korean access network, or
// elsewhere for most readers whose language is not Korean.
func ReaderIP(rng *rand.Rand, lang string) string {
	pool := krPrefixes
	if !strings.HasPrefix(lang, "ko") && rng.Float64() < 0.7 {
		pool = otherPrefixes
	}
	p := pool[rng.IntN(len(pool))]
	return p + "." + strconv.Itoa(rng.IntN(256)) + "." + strconv.Itoa(1+rng.IntN(254))
}

// addrGen hands out crawler addresses. Fresh prefixes come from an affine
// bijection over all /24s (or /64s under 240e::/20-ish space), so distinct
// addresses and prefixes can be counted exactly without remembering them: a
// fresh prefix is never a prefix seen before.
type addrGen struct {
	rng      *rand.Rand
	ipv6     bool
	share    float64
	counter  uint64
	prefix   uint64
	host     uint64
	chain    uint64
	prefixes int64 // distinct prefixes handed out
	addrs    int64 // distinct addresses handed out
	// blocks, when set, are the /32s IPv6 /64s are drawn in (each fresh
	// /64 in one of them, by its number).
	blocks []uint32
}

func (g *addrGen) fresh() string {
	if g.addrs > 0 && g.rng.Float64() < g.share && g.chain < 200 {
		g.chain++
		g.addrs++
		return g.format(g.prefix, g.host, g.chain)
	}
	for {
		g.counter++
		var p uint64
		if g.ipv6 {
			p = (g.counter*2654435761 + 0x9e3779b9) & (1<<32 - 1)
		} else {
			p = (g.counter*40503 + 7919) & (1<<24 - 1)
			if !publicV4(p) {
				continue
			}
		}
		g.prefix, g.host, g.chain = p, g.rng.Uint64(), 0
		g.prefixes++
		g.addrs++
		return g.format(p, g.host, 0)
	}
}

func publicV4(p uint64) bool {
	a, b := p>>16, (p>>8)&0xff
	switch {
	case a == 0 || a == 10 || a == 127 || a >= 224:
		return false
	case a == 100 && b >= 64 && b < 128, a == 169 && b == 254, a == 172 && b >= 16 && b < 32:
		return false
	case a == 192 || a == 198 || a == 203:
		return false // private, benchmarking and documentation ranges live here
	}
	return true
}

// format writes the address number chain inside prefix p; base seeds the host
// part. IPv6 prefixes are 240e:PPPP:PPPP:SSSS::/64 (the first 48 bits are the
// bijection's output, so fresh prefixes never repeat).
func (g *addrGen) format(p, base, chain uint64) string {
	if g.ipv6 {
		// canonical text (RFC 5952), as Caddy logs it
		iid := base>>16 + chain*0x9e37
		var a [16]byte
		if n := len(g.blocks); n > 0 {
			binary.BigEndian.PutUint32(a[:], g.blocks[p%uint64(n)])
			binary.BigEndian.PutUint32(a[4:], uint32(p))
		} else {
			a[0], a[1] = 0x24, 0x0e
			binary.BigEndian.PutUint32(a[2:], uint32(p))
			binary.BigEndian.PutUint16(a[6:], uint16(base))
		}
		binary.BigEndian.PutUint64(a[8:], iid|1)
		return netip.AddrFrom16(a).String()
	}
	h := 1 + (base+chain*37)%254
	return strconv.FormatUint(p>>16, 10) + "." + strconv.FormatUint(p>>8&0xff, 10) + "." +
		strconv.FormatUint(p&0xff, 10) + "." + strconv.FormatUint(h, 10)
}

// v6Providers are access providers' IPv6 /32s (Korea's, Japan's, Europe's,
// America's), where readers' households and a crawler's proxies get a /64.
var v6Providers = []uint32{0x20010e60, 0x200102d8, 0x20014430, 0x24004050, 0x2a0023c5, 0x2a020c7c, 0x26001700, 0x240e03b4}

// readerIPv6 draws a reader's IPv6 address: a /64 of a provider's /32 and
// a random interface identifier.
func readerIPv6(rng *rand.Rand) string {
	var a [16]byte
	binary.BigEndian.PutUint32(a[:], v6Providers[rng.IntN(len(v6Providers))])
	binary.BigEndian.PutUint32(a[4:], rng.Uint32())
	binary.BigEndian.PutUint64(a[8:], rng.Uint64()|1)
	return netip.AddrFrom16(a).String()
}

// crawlerBlocks draws the n /32s a crawler's IPv6 addresses come from
// (nil for n 0): residential proxies' providers, the readers' among them.
func crawlerBlocks(n int, seed int64) []uint32 {
	if n <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 34))
	blocks := append([]uint32(nil), v6Providers...)
	rng.Shuffle(len(blocks), func(i, j int) { blocks[i], blocks[j] = blocks[j], blocks[i] })
	return blocks[:min(n, len(blocks))]
}

// ---- titles and names -------------------------------------------------------------

// TitleWords are the words the wiki's page titles are made of.
var TitleWords = strings.Fields(`역사 과학 철학 문학 대한민국 서울 부산 인천 대구 광주 대전 경제 정치 음악 영화 드라마 축구 야구
농구 컴퓨터 프로그래밍 수학 물리학 화학 생물학 지리 한국어 조선 고려 신라 백제 가야 발해 삼국시대 전쟁 혁명 헌법
법률 대학교 교육 종교 불교 기독교 유교 예술 미술 건축 요리 김치 한복 태권도 바둑 게임 인터넷 위키 언어학 사회학
심리학 천문학 지구 태양계 기후 환경 에너지 원자력 반도체 자동차 철도 지하철 항공 우주 로봇 인공지능 데이터
네트워크 보안 암호 소설 시인 작가 가수 배우 감독 올림픽 월드컵 한강 제주도 독도 백두산 설악산 민주주의 선거
국회 대통령 외교 무역 금융 은행 주식 부동산 노동 인권 여성 청소년 노인 의학 병원 약학 유전자 진화 공룡 화산
지진 태풍 바다 강 산 섬 고속도로 항구 공항 박물관 도서관 신문 방송 라디오 만화 애니메이션 웹툰 아이돌 힙합`)

// titleSet is the wiki's pages with a Zipf popularity, generated from a fixed
// seed so every run (whatever its seed) sees the same wiki.
type titleSet struct {
	enc []string // percent-encoded, spaces as _
	cdf []float64
}

func newTitles(n int) *titleSet {
	rng := rand.New(rand.NewPCG(20261003, 1))
	seen := map[string]bool{}
	ts := &titleSet{}
	for len(ts.enc) < n {
		a, b := TitleWords[rng.IntN(len(TitleWords))], TitleWords[rng.IntN(len(TitleWords))]
		var t string
		switch x := rng.Float64(); {
		case x < 0.35:
			t = a
			if seen[t] {
				t = a + "_" + b
			}
		case x < 0.70:
			t = a + "_" + b
		case x < 0.88:
			t = a + "의_" + b
		default:
			t = a + "_(" + b + ")"
		}
		if seen[t] {
			continue
		}
		seen[t] = true
		ts.enc = append(ts.enc, escapeTitle(t))
	}
	ts.cdf = make([]float64, n)
	sum := 0.0
	for i := range n {
		sum += 1 / math.Pow(float64(i+1), 1.05)
		ts.cdf[i] = sum
	}
	for i := range ts.cdf {
		ts.cdf[i] /= sum
	}
	return ts
}

func escapeTitle(t string) string { return url.PathEscape(t) }

// pick returns a title and its popularity rank.
func (ts *titleSet) pick(rng *rand.Rand) (string, int) {
	i := sort.SearchFloat64s(ts.cdf, rng.Float64())
	if i >= len(ts.enc) {
		i = len(ts.enc) - 1
	}
	return ts.enc[i], i
}

type nameList struct{ list []string }

func newNames() *nameList {
	rng := rand.New(rand.NewPCG(20261003, 2))
	first := strings.Fields("Sun Moon River Star Wiki Net Blue Sky Han Mir Jin Seo Ara Dal Byeol Haneul")
	second := strings.Fields("Walker Gnome Editor Set Rise Light Wind Fox Bear Tiger Crane Writer")
	nl := &nameList{}
	for range 400 {
		nl.list = append(nl.list, first[rng.IntN(len(first))]+second[rng.IntN(len(second))]+strconv.Itoa(10+rng.IntN(990)))
	}
	return nl
}

func (n *nameList) pick(rng *rand.Rand) string { return n.list[rng.IntN(len(n.list))] }
