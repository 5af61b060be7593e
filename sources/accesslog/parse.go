package accesslog

import (
	"bytes"
	"encoding/binary"
	"math"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/valyala/fastjson"
	"github.com/valyala/fastjson/fastfloat"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/failure"
)

// Bounds of a parser's intern table. Methods, hosts, languages and user agents
// repeat across millions of lines; interning them saves an allocation per field.
// The table is cleared when full, so a flood of distinct values (a bot rotating
// user agents) costs allocations, never memory.
const (
	maxInterned  = 4096
	maxInternLen = 512
)

// lineParser turns lines into Requests. It is owned by one goroutine at a time.
type lineParser struct {
	p      fastjson.Parser
	intern map[string]string
	cookie *sources.CookiePattern // Options.LoggedInCookie, compiled (nil: unknown)
	num    []byte                 // scratch for a number's text

	// prefilter is Options.Prefilter (nil: parse every line).
	prefilter func(line []byte) bool

	// The last string of each field, a cache in front of intern: a chunk's
	// lines mostly share a method and a host, and a client's requests come in
	// runs.
	lastMethod, lastHost, lastUA, lastLang string

	// Per input (set from the input's shape before its lines are parsed):
	// zone is where times written without a zone are read (nil: UTC, what
	// Caddy writes unless time_local is set); durUnit divides a duration
	// written as a whole number (1 for seconds, 1e3 for Caddy's
	// duration_format ms, 1e9 for ns); wantFP has parseChunk fingerprint
	// every request for the overlap check across inputs.
	zone    *time.Location
	durUnit float64
	wantFP  bool

	// Per line: the client's port (0 when not logged), for the fingerprint,
	// and the duration as written (durKind: 0 absent, 'f' a fraction, 'i' a
	// whole number durInt, 's' a Go duration string), for the sniff.
	port    uint16
	durKind byte
	durInt  int64
	// fracUnit divides a fractional duration: 1 (or 0) for Caddy's seconds,
	// 1e3 for the fractional milliseconds a log shipper's transform writes
	// (detected per input, or given as the duration format).
	fracUnit float64

	// unwrapped is set while the line inside a Docker or journald wrapper,
	// or rebuilt from a console line, is parsed: wrappers do not nest.
	unwrapped bool
	inner     []byte    // the unwrapped or rebuilt line (reused)
	hostTime  time.Time // when Docker or journald recorded the unwrapped line

	counts shapeCounts // what this parser saw, added to its input's at the end

	// uris remembers the request targets parsed lately (uriCache).
	uris uriCache
	// borrow is Options.BorrowTargets; while parseChunk parses with it,
	// borrowed is the chunk's data, which the targets found inside it view.
	borrow   bool
	borrowed []byte
}

func newLineParser() *lineParser {
	return &lineParser{intern: make(map[string]string, 256), durUnit: 1}
}

// parseChunk parses every line of c.data into c.reqs and c.skips.
func (lp *lineParser) parseChunk(c *chunk) {
	c.reqs, c.skips, c.fps = c.reqs[:0], c.skips[:0], c.fps[:0]
	data := c.data
	if lp.borrow {
		lp.borrowed = data
	}
	n := 0
	for len(data) > 0 {
		var line []byte
		terminated := true
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data, terminated = data, nil, false
		}
		n++
		if isBlank(line) {
			continue
		}
		if lp.prefilter != nil && !lp.prefilter(line) {
			continue
		}
		k := len(c.reqs)
		if k == cap(c.reqs) {
			c.reqs = append(c.reqs, sources.Request{})
		}
		c.reqs = c.reqs[:k+1]
		r := &c.reqs[k]
		*r = sources.Request{}
		if reason := lp.parse(line, r); reason != "" {
			if !terminated && (reason == ReasonMalformedJSON || reason == ReasonInvalidUTF8) {
				// A cut in the middle of a line (or of a multi-byte character).
				reason = ReasonTruncatedLine
			}
			c.reqs = c.reqs[:k]
			c.skip(reason, n)
		} else if lp.wantFP {
			c.fps = append(c.fps, lp.fingerprint(r))
		}
	}
	c.lines = n
	lp.borrowed = nil
}

// isBlank reports whether line holds only JSON whitespace (CR included, so
// CRLF blank lines are blank too).
func isBlank(line []byte) bool {
	for _, b := range line {
		if b != ' ' && b != '\t' && b != '\r' {
			return false
		}
	}
	return true
}

// parse fills r (zero on entry) from one line and returns "" or the reason the
// line is skipped.
func (lp *lineParser) parse(line []byte, r *sources.Request) string {
	// A byte-order mark at the start of a file edited on Windows is not corruption.
	line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(line) {
		return ReasonInvalidUTF8
	}
	lp.port, lp.durKind = 0, 0
	if lp.parseFast(line, r) {
		return ""
	}
	*r = sources.Request{}
	lp.port, lp.durKind = 0, 0
	reason := lp.parseSlow(line, r)
	if reason == ReasonMalformedJSON {
		if i := firstNonSpace(line); i < len(line) && line[i] != '{' && line[i] != '[' {
			// Not JSON at all: perhaps Caddy's console encoder.
			*r = sources.Request{}
			return lp.parseConsole(line[i:], r)
		}
	}
	return reason
}

func firstNonSpace(line []byte) int {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
		i++
	}
	return i
}

// parseSlow is parse with fastjson, for the lines the fast path gives up on.
func (lp *lineParser) parseSlow(line []byte, r *sources.Request) string {
	v, err := lp.p.ParseBytes(line) // fastjson skips the trailing '\r' of CRLF as whitespace
	if err != nil {
		return ReasonMalformedJSON
	}
	top, err := v.Object()
	if err != nil {
		return ReasonUnknownShape
	}
	var ts, logger, request, status, duration, size, respHeaders, level, msg *fastjson.Value
	top.Visit(func(k []byte, v *fastjson.Value) {
		switch string(k) {
		case "level":
			level = v
		case "msg":
			msg = v
		case "ts":
			ts = v
		case "logger":
			logger = v
		case "request":
			request = v
		case "status":
			status = v
		case "duration":
			duration = v
		case "size":
			size = v
		case "resp_headers":
			respHeaders = v
		}
	})
	if logger != nil {
		name, err := logger.StringBytes()
		if err != nil || !isAccessLogger(name) {
			return ReasonNotAccessLog
		}
	} else if request == nil {
		if inner, reason, ok := lp.unwrap(top); ok {
			if reason != "" {
				return reason
			}
			return lp.parseInner(inner, r)
		}
		if level != nil && msg != nil && ts != nil {
			// Caddy's default logger writes no "logger" key ("serving
			// initial configuration"): its own log, not a request.
			return ReasonNotAccessLog
		}
		return ReasonUnknownShape
	}

	if ts == nil {
		return ReasonMissingTS
	}
	t, ok := lp.parseTime(ts)
	if !ok {
		return ReasonBadTS
	}
	r.Time = t

	if status == nil {
		return ReasonMissingStatus
	}
	code, err := status.Int()
	if err != nil || code < 0 || code > 999 {
		return ReasonBadStatus
	}
	r.Status = code

	reqObj := objectOf(request)
	if reqObj == nil {
		return ReasonMissingURI
	}
	var uri, clientIP, remoteIP, remoteAddr, remotePort, method, host, headers, tls, proto *fastjson.Value
	reqObj.Visit(func(k []byte, v *fastjson.Value) {
		switch string(k) {
		case "uri":
			uri = v
		case "client_ip":
			clientIP = v
		case "remote_ip":
			remoteIP = v
		case "remote_addr":
			remoteAddr = v
		case "remote_port":
			remotePort = v
		case "method":
			method = v
		case "host":
			host = v
		case "headers":
			headers = v
		case "tls":
			tls = v
		case "proto":
			proto = v
		}
	})
	uriB := stringOf(uri)
	if len(uriB) == 0 {
		return ReasonMissingURI
	}

	// client_ip is the address after Caddy's trusted_proxies; remote_ip is the
	// TCP peer. Fall back only when client_ip is absent or empty (older Caddy):
	// an unparsable one is corruption, not a reason to trust the peer instead.
	src := clientIP
	if isEmptyString(src) {
		src = remoteIP
	}
	var ip netip.Addr
	if isEmptyString(src) {
		// The oldest Caddy lines have only remote_addr, "ip:port".
		if isEmptyString(remoteAddr) {
			return ReasonMissingClientIP
		}
		ap, ok := splitRemoteAddr(stringOf(remoteAddr))
		if !ok {
			return ReasonBadClientIP
		}
		ip, lp.port = ap.Addr(), ap.Port()
		lp.counts.remoteAddr++
	} else {
		var err error
		if ip, err = netip.ParseAddr(unsafeString(stringOf(src))); err != nil {
			return ReasonBadClientIP
		}
		if !isEmptyString(remoteAddr) {
			if ap, ok := splitRemoteAddr(stringOf(remoteAddr)); ok {
				lp.port = ap.Port()
			}
		}
	}
	if p := stringOf(remotePort); len(p) > 0 {
		lp.port = parsePort(p)
	}
	// One client, one key: drop zones and unmap ::ffff:a.b.c.d to IPv4.
	r.ClientIP = ip.WithZone("").Unmap()

	if duration != nil {
		d, ok := lp.parseDuration(duration)
		if !ok {
			return ReasonBadDuration
		}
		r.Duration = d
	}
	if size != nil {
		n, err := size.Int64()
		if err != nil || n < 0 {
			return ReasonBadSize
		}
		r.Size = n
	}

	r.Path, r.Query = lp.uri(uriB)
	// Caddy logs a "tls" object only for HTTPS requests; a log configured
	// without it still shows HTTP/2 and HTTP/3, which browsers speak only
	// over TLS.
	r.TLS = objectOf(tls) != nil || isTLSProto(stringOf(proto))
	r.Method = lp.str(stringOf(method))
	r.Host = lp.str(stringOf(host))
	lp.headers(headers, r)
	r.Origin, r.Cache = origin(respHeaders, r.Status)
	return ""
}

// isAccessLogger accepts "http.log.access" and its named children
// ("http.log.access.log0"): Caddy appends the server's log name.
func isAccessLogger(name []byte) bool {
	const prefix = "http.log.access"
	return bytes.HasPrefix(name, []byte(prefix)) && (len(name) == len(prefix) || name[len(prefix)] == '.')
}

// headers reads the request headers the detectors need. Caddy writes
// canonical MIME keys ("Sec-Ch-Ua"), but other writers and hand-made fixtures
// spell them otherwise ("Sec-CH-UA"), so names compare case-insensitively.
func (lp *lineParser) headers(hv *fastjson.Value, r *sources.Request) {
	h := objectOf(hv)
	if h == nil {
		return
	}
	var ua, lang, referer []byte
	var cookies *fastjson.Value
	h.Visit(func(k []byte, v *fastjson.Value) {
		switch len(k) {
		case len("User-Agent"):
			if bytes.EqualFold(k, []byte("User-Agent")) {
				ua = firstValue(v)
			}
		case len("Referer"):
			if bytes.EqualFold(k, []byte("Referer")) {
				referer = firstValue(v)
			}
		case len("Accept-Language"):
			if bytes.EqualFold(k, []byte("Accept-Language")) {
				lang = firstValue(v)
			}
		case len("Cookie"):
			if bytes.EqualFold(k, []byte("Cookie")) {
				cookies = v
			}
		case len("Sec-Ch-Ua"):
			if bytes.EqualFold(k, []byte("Sec-Ch-Ua")) {
				r.SecChUa = true
			}
		case len("Authorization"):
			if bytes.EqualFold(k, []byte("Authorization")) {
				r.Authorization = true
			}
		}
	})
	r.UserAgent = lp.str(ua)
	var buf [maxLangLen]byte
	r.Lang = lp.str(primaryLang(lang, &buf))
	r.HasCookie = cookies != nil
	r.LoggedIn = loggedIn(cookies, lp.cookie)
	r.SiteReferer = sameHost(referer, r.Host)
}

// sameHost reports whether the URL referer names host (a request's Host,
// which may carry a port): scheme and port aside, case-insensitively. A
// relative or unparsable referer names no host. It runs for every line with
// a Referer, so the referer is viewed as a string rather than the Host copied
// to bytes (which allocates for a Host longer than a small stack buffer);
// strings.EqualFold keeps neither.
func sameHost(referer []byte, host string) bool {
	_, rest, ok := strings.Cut(unsafeString(referer), "://")
	if !ok || host == "" {
		return false
	}
	// Most referers are the site's own pages, naming its host as the
	// request's Host does, then a path, query or fragment, or nothing:
	// where the Host holds no byte the referer's host is cut at, that is
	// the same host, without reading past ports, userinfo and case.
	if n := len(host); strings.HasPrefix(rest, host) && (len(rest) == n || refererHostEnd[rest[n]]) && !cutsHost(host) {
		return true
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:] // userinfo
	}
	return strings.EqualFold(stripPort(rest), stripPort(host))
}

// refererHostEnd holds the bytes that end a URL's host (and port):
// path, query and fragment.
var refererHostEnd = [256]bool{'/': true, '?': true, '#': true}

// cutsHost reports whether host holds a byte sameHost cuts a referer's
// host at: one of refererHostEnd, or the '@' after userinfo.
func cutsHost(host string) bool {
	for i := 0; i < len(host); i++ {
		if refererHostEnd[host[i]] || host[i] == '@' {
			return true
		}
	}
	return false
}

// stripPort drops a trailing ":port" from a host, keeping IPv6 brackets' content whole.
func stripPort(h string) string {
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		return h[:i]
	}
	return h
}

// loggedIn decides from the Cookie header's values. Without log_credentials
// Caddy writes the value as "REDACTED": present, but unreadable.
func loggedIn(cookies *fastjson.Value, pattern *sources.CookiePattern) sources.LoggedIn {
	if cookies == nil {
		return sources.LoggedInNo
	}
	if pattern == nil {
		return sources.LoggedInUnknown
	}
	redacted := false
	for _, v := range valuesOf(cookies) {
		b := stringOf(v)
		if pattern.Match(b) {
			return sources.LoggedInYes
		}
		if string(b) == "REDACTED" {
			redacted = true
		}
	}
	if redacted {
		return sources.LoggedInUnknown
	}
	return sources.LoggedInNo
}

// origin tells who answered from the response headers: PHP's answers carry
// X-Powered-By and Caddy's proxy adds Via; a 5xx without them is Caddy's own
// error page ("no healthy upstream", a FastCGI timeout); and a cache's
// headers say whether it answered instead of PHP.
func origin(rh *fastjson.Value, status int) (sources.Origin, sources.Cache) {
	h := objectOf(rh)
	if h == nil {
		return sources.OriginUnknown, sources.CacheUnknown
	}
	upstream := false
	var cache cacheEvidence
	h.Visit(func(k []byte, v *fastjson.Value) {
		if bytes.EqualFold(k, []byte(ViaHeader)) || bytes.EqualFold(k, []byte(PoweredByHeader)) {
			upstream = true
		}
		if which := cacheHeader(k); which != 0 {
			for _, x := range valuesOf(v) {
				cache.add(which, stringOf(x))
			}
		}
	})
	verdict := cache.verdict()
	return OriginOf(upstream, status, verdict), verdict
}

// The response headers that mark PHP's answers, matched case-insensitively:
// Caddy's reverse proxy adds Via, PHP adds X-Powered-By.
const (
	ViaHeader       = "Via"
	PoweredByHeader = "X-Powered-By"
)

// OriginOf tells who answered a line with response headers, by whether they
// carry PHP's marks (upstream: ViaHeader or PoweredByHeader), by status and
// by the cache's verdict. Both parsers decide with it, and so does a count
// made elsewhere that must place a line as they do (Loki's, under pushdown).
func OriginOf(upstream bool, status int, cache sources.Cache) sources.Origin {
	switch {
	case cache == sources.CacheHit && status < 500:
		// A cache answered from its store. It replays the headers PHP
		// sent when the copy was made (X-Powered-By), and a cache behind
		// Caddy adds Via of its own: the marks say nothing of who ran.
		return sources.OriginStatic
	case upstream:
		return sources.OriginUpstream
	case failure.Status(status):
		// Caddy's own refusals: no healthy upstream, a dial or read timeout,
		// or a rate_limit zone saying no.
		return sources.OriginProxy
	}
	return sources.OriginStatic
}

// maxLangLen bounds Lang: the longest registered language tags are about 35
// bytes; anything longer is junk that would only add distinct keys downstream.
const maxLangLen = 35

// primaryLang returns the first language range of an Accept-Language value,
// lower-cased: "zh-CN,zh;q=0.9" gives "zh-cn". It takes the first entry rather
// than the highest q, because browsers list their preference first and bots
// that send one tag send it first too. "*", empty and malformed give nil.
func primaryLang(v []byte, buf *[maxLangLen]byte) []byte {
	if i := bytes.IndexByte(v, ','); i >= 0 {
		v = v[:i]
	}
	if i := bytes.IndexByte(v, ';'); i >= 0 {
		v = v[:i]
	}
	v = bytes.Trim(v, " \t")
	if len(v) == 0 || len(v) > maxLangLen {
		return nil
	}
	for i, c := range v {
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return nil // includes "*"
		}
		buf[i] = c
	}
	return buf[:len(v)]
}

// parseTime reads Caddy's ts. The default is float Unix seconds; Caddy's
// time_format can make it milli-, micro- or nanoseconds (told apart by
// magnitude: seconds stay below 1e11 until the year 5138) or an RFC 3339 / ISO
// 8601 string. Times are kept to the microsecond, in UTC: a float64 of today's
// Unix seconds holds no more, and UTC keeps output independent of the machine.
// The digits are converted exactly from the text, because going through float64
// moves some milli- and microsecond stamps by one.
func (lp *lineParser) parseTime(v *fastjson.Value) (time.Time, bool) {
	switch v.Type() {
	case fastjson.TypeNumber:
		lp.num = v.MarshalTo(lp.num[:0]) // the number's text, as written
		return lp.timeOfNumber(lp.num)
	case fastjson.TypeString:
		return lp.timeOfString(string(stringOf(v))) // a rare path; time.Parse may keep parts of s
	}
	return time.Time{}, false
}

// timeOfString reads the string forms of Caddy's time_format: iso8601,
// rfc3339, rfc3339_nano and common_log carry their zone; wall, wall_milli
// and wall_nano do not, and are read in lp.zone.
func (lp *lineParser) timeOfString(s string) (time.Time, bool) {
	if t, ok := zonedTime(s); ok {
		return t, true
	}
	zone := lp.zone
	if zone == nil {
		zone = time.UTC
	}
	// Parsing accepts a fraction after the seconds that the layout does not
	// show, so one layout reads wall, wall_milli and wall_nano.
	if t, err := time.ParseInLocation(wallLayout, s, zone); err == nil {
		lp.counts.zoneless++
		if !lp.hostTime.IsZero() {
			// The wrapper's own clock says whether the zone was right.
			if off := lp.hostTime.Sub(t); off > zoneTolerance || off < -zoneTolerance {
				lp.counts.zoneOff++
				lp.counts.offBy = off.Round(15 * time.Minute)
			}
		}
		return t.Round(time.Microsecond).UTC(), true
	}
	return time.Time{}, false
}

// zonedTime reads the string forms of ts that carry their zone (iso8601,
// rfc3339, rfc3339_nano, common_log), in UTC. It changes nothing in lp, so
// the fast path may try it on a line it then gives to the slow path; the
// result holds nothing of s (time.Parse copies a zone's name, and UTC drops
// the zone), so s may be a view of a chunk that is reused.
//
// time.RFC3339Nano ends in "Z" or an offset written
// ±hh:mm and takes nothing after it: a string ending otherwise (iso8601's
// ±hhmm, common_log's) cannot match it, and is not tried, which saves the
// error time.Parse would build (on an iso8601 ts, more than the parse).
func zonedTime(s string) (time.Time, bool) {
	if !mayBeZoned(s) {
		return time.Time{}, false
	}
	for _, layout := range zonedLayouts {
		if layout == time.RFC3339Nano && !strings.HasSuffix(s, "Z") && (len(s) < 6 || s[len(s)-3] != ':') {
			continue
		}
		if t, err := time.Parse(layout, s); err == nil {
			return t.Round(time.Microsecond).UTC(), true
		}
	}
	return time.Time{}, false
}

// mayBeZoned says whether s can be one of zonedTime's forms: each ends in
// its zone, "Z" or an offset of at most six bytes that starts with its sign
// (+09:00, +0900), where a wall clock's ends in the digits of its seconds.
// A line of a wall-format log goes to the slow path without the fast path
// reading it first, and neither tries the layouts, whose errors allocate:
// BenchmarkParseLine/wall took 4.3 us a line with both, 2.6 without.
func mayBeZoned(s string) bool {
	return strings.ContainsAny(s[max(0, len(s)-6):], "Zz+-")
}

// timeOfNumber is parseTime for a number, given its text as written.
func (lp *lineParser) timeOfNumber(num []byte) (time.Time, bool) {
	if us, ok := caddySeconds(num); ok {
		return time.UnixMicro(us).UTC(), true
	}
	if n := intDigits(num); n >= 2 && n <= 10 && num[0] != '0' {
		// Seconds (what Caddy writes by default): at least 10 and below 1e10,
		// which no rounding of the float below takes to 1e11 or 0.
		if us, ok := scaleDecimal(num, 6); ok {
			return time.UnixMicro(us).UTC(), true
		}
	}
	f, err := fastfloat.Parse(unsafeString(num)) // what fastjson's Value.Float64 does
	if err != nil || math.IsNaN(f) || f <= 0 || f >= 9e18 {
		return time.Time{}, false
	}
	shift := -3 // nanoseconds
	switch {
	case f < 1e11:
		shift = 6
	case f < 1e14:
		shift = 3
	case f < 1e17:
		shift = 0
	}
	if us, ok := scaleDecimal(num, shift); ok {
		return time.UnixMicro(us).UTC(), true
	}
	// Exponent notation: not what zap writes, so float precision will do.
	return time.UnixMicro(int64(math.Round(f * math.Pow10(shift)))).UTC(), true
}

// caddySeconds is scaleDecimal(num, 6) for the ts Caddy writes in these
// years, ten digits of seconds (the first not 0), a point and six or seven
// more (zap's shortest float; 98% of the benchmark log's lines), read a
// word of eight digits at a time rather than a digit at a time: on the
// 64 MB log, intDigits and scaleDecimal cost 22M instructions, a tenth of
// the fast path's bookkeeping. ok is false for any other number, which
// timeOfNumber reads as before.
func caddySeconds(num []byte) (int64, bool) {
	if len(num) != 17 && len(num) != 18 || num[10] != '.' || num[0] == '0' {
		return 0, false
	}
	high, ok := eightDigits(binary.LittleEndian.Uint64(num[0:8]))
	if !ok || num[8] < '0' || num[8] > '9' || num[9] < '0' || num[9] > '9' {
		return 0, false
	}
	seconds := high*100 + uint64(num[8]-'0')*10 + uint64(num[9]-'0')
	// The fraction as the number's last eight bytes, those before it (the
	// point, and for six digits the last of the seconds) made '0'.
	lead := uint64(1)<<(8*(19-len(num))) - 1
	frac, ok := eightDigits(binary.LittleEndian.Uint64(num[len(num)-8:])&^lead | 0x3030303030303030&lead)
	if !ok {
		return 0, false
	}
	if len(num) == 18 {
		// Seven digits: the seventh rounds half up, as scaleDecimal does.
		frac = frac/10 + frac%10/5
	}
	return int64(seconds*1e6 + frac), true
}

// eightDigits reads x, eight bytes loaded little endian, as a number of
// eight decimal digits (the first byte the most significant), and reports
// false unless every byte is '0' to '9'.
func eightDigits(x uint64) (uint64, bool) {
	// A byte is a digit when its high half is 3, and still 3 after adding 6
	// (':' to '?' carry to 4); a carry past the byte comes only from a byte
	// that already fails.
	if x&0xf0f0f0f0f0f0f0f0|(x+0x0606060606060606)&0xf0f0f0f0f0f0f0f0>>4 != 0x3333333333333333 {
		return 0, false
	}
	x &= 0x0f0f0f0f0f0f0f0f
	x = x * (10<<8 + 1) >> 8 & 0x00ff00ff00ff00ff
	x = x * (100<<16 + 1) >> 16 & 0x0000ffff0000ffff
	return x * (10000<<32 + 1) >> 32, true
}

// intDigits counts the digits that num starts with.
func intDigits(num []byte) int {
	for i, c := range num {
		if c < '0' || c > '9' {
			return i
		}
	}
	return len(num)
}

// uri splits a request URI into its path and query, views of one string:
// b itself when it lies in the chunk being borrowed from (the lifetime
// Options.BorrowTargets promises is the chunk's: a target unescaped by the
// slow path lies in its parser's buffer, which the next line reuses, and one
// unwrapped from a Docker or journald line in a copy of its own), else the
// one uris holds for a target parsed lately, or a new one.
func (lp *lineParser) uri(b []byte) (path, query string) {
	var s string
	if within(b, lp.borrowed) {
		s = unsafeString(b)
	} else {
		s = lp.uris.get(b)
	}
	path, query, _ = strings.Cut(s, "?")
	return path, query
}

// within reports whether b is a part of buf (of its length, not its capacity).
func within(b, buf []byte) bool {
	if len(buf) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return at >= start && at-start <= uintptr(len(buf)) && uintptr(len(b)) <= uintptr(len(buf))-(at-start)
}

// scaleDecimal returns the plain decimal number b (digits, optionally a point
// and more digits) times 10^shift, rounded half up to an integer. It reports
// false for anything else (sign, exponent) or on overflow.
func scaleDecimal(b []byte, shift int) (int64, bool) {
	const maxBefore = (math.MaxInt64 - 9) / 10
	var n int64
	i := 0
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		if n > maxBefore {
			return 0, false
		}
		n = n*10 + int64(b[i]-'0')
		i++
	}
	if i == 0 {
		return 0, false
	}
	frac := b[i:]
	if len(frac) > 0 {
		if frac[0] != '.' || len(frac) == 1 {
			return 0, false
		}
		frac = frac[1:]
		for _, c := range frac {
			if c < '0' || c > '9' {
				return 0, false
			}
		}
	}
	if shift < 0 {
		p := int64(math.Pow10(-shift))
		q, r := n/p, n%p
		if 2*r >= p {
			q++
		}
		return q, true
	}
	for k := range shift {
		if n > maxBefore {
			return 0, false
		}
		n *= 10
		if k < len(frac) {
			n += int64(frac[k] - '0')
		}
	}
	if shift < len(frac) && frac[shift] >= '5' {
		n++
	}
	return n, true
}

// The layouts of Caddy's time_format values written as strings (Caddy's
// modules/logging/encoders.go): rfc3339 and rfc3339_nano, iso8601 (zap's
// ISO8601TimeEncoder) and common_log carry a zone.
var zonedLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z0700", "02/Jan/2006:15:04:05 -0700"}

// wallLayout is time_format wall (wall_milli and wall_nano add a fraction):
// no zone. Caddy writes it in UTC unless time_local is set.
const wallLayout = "2006/01/02 15:04:05"

// parseDuration reads Caddy's duration: by default float seconds, with
// duration_format ms or ns a whole number of those (lp.durUnit says which),
// with "string" a Go duration string. A fraction is always seconds: Caddy
// writes milli- and nanoseconds as integers.
func (lp *lineParser) parseDuration(v *fastjson.Value) (float64, bool) {
	switch v.Type() {
	case fastjson.TypeNumber:
		lp.num = v.MarshalTo(lp.num[:0])
		return lp.durationOfNumber(lp.num)
	case fastjson.TypeString:
		lp.durKind = 's'
		d, err := time.ParseDuration(string(stringOf(v)))
		if err != nil || d < 0 {
			return 0, false
		}
		return d.Seconds(), true
	}
	return 0, false
}

// durationOfNumber is parseDuration for a number, given its text as written.
func (lp *lineParser) durationOfNumber(num []byte) (float64, bool) {
	f, err := fastfloat.Parse(unsafeString(num))
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, false
	}
	if lp.durUnit == durationStringOnly {
		lp.counts.numericDurations++
		return 0, false
	}
	if n := intDigits(num); n == len(num) {
		lp.durKind, lp.durInt = 'i', int64(f)
		if lp.durUnit > 1 {
			return f / lp.durUnit, true
		}
		lp.counts.wholeSeconds++
		return f, true
	}
	lp.durKind = 'f'
	if lp.fracUnit > 1 {
		return f / lp.fracUnit, true
	}
	return f, true
}

// splitRemoteAddr reads remote_addr, "ip:port" ("[v6]:port"), or a bare address.
func splitRemoteAddr(b []byte) (netip.AddrPort, bool) {
	if ap, err := netip.ParseAddrPort(unsafeString(b)); err == nil {
		return ap, true
	}
	if ip, err := netip.ParseAddr(unsafeString(b)); err == nil {
		return netip.AddrPortFrom(ip, 0), true
	}
	return netip.AddrPort{}, false
}

// parsePort reads remote_port ("43211"); anything else is 0 (unknown).
func parsePort(b []byte) uint16 {
	if len(b) == 0 || len(b) > 5 {
		return 0
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	if n > 65535 {
		return 0
	}
	return uint16(n)
}

// objectOf returns v's object, or nil if v is absent or not an object.
func objectOf(v *fastjson.Value) *fastjson.Object {
	if v == nil || v.Type() != fastjson.TypeObject {
		return nil
	}
	o, _ := v.Object()
	return o
}

// isEmptyString reports whether v is absent, null or "": what older Caddy
// versions and some shippers write for a field they do not have.
func isEmptyString(v *fastjson.Value) bool {
	if v == nil {
		return true
	}
	switch v.Type() {
	case fastjson.TypeNull:
		return true
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		return len(b) == 0
	}
	return false
}

// stringOf returns v's string bytes (pointing into the parser's buffer), or
// nil if v is absent or not a string.
func stringOf(v *fastjson.Value) []byte {
	if v == nil || v.Type() != fastjson.TypeString {
		return nil
	}
	b, _ := v.StringBytes()
	return b
}

// valuesOf returns a header's values. Caddy logs headers as arrays of strings;
// a bare string is accepted too.
func valuesOf(v *fastjson.Value) []*fastjson.Value {
	switch v.Type() {
	case fastjson.TypeArray:
		a, _ := v.Array()
		return a
	case fastjson.TypeString:
		return []*fastjson.Value{v}
	}
	return nil
}

func firstValue(v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeArray:
		a, _ := v.Array()
		if len(a) > 0 {
			return stringOf(a[0])
		}
	case fastjson.TypeString:
		return stringOf(v)
	}
	return nil
}

// str copies b into a string, sharing the copy among equal values.
func (lp *lineParser) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > maxInternLen {
		return string(b)
	}
	if s, ok := lp.intern[string(b)]; ok {
		return s
	}
	if len(lp.intern) >= maxInterned {
		clear(lp.intern)
	}
	s := string(b)
	lp.intern[s] = s
	return s
}

// strLast is str behind a one-string cache.
func (lp *lineParser) strLast(last *string, b []byte) string {
	if string(b) == *last {
		return *last
	}
	s := lp.str(b)
	*last = s
	return s
}

// unsafeString views b as a string without copying, for calls on the hot path
// that keep nothing of their input: netip.ParseAddr keeps only a zone
// (interned as a copy, and dropped anyway) and its error values (discarded);
// sameHost only compares.
func unsafeString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func isTLSProto(p []byte) bool {
	return bytes.HasPrefix(p, []byte("HTTP/2")) || bytes.HasPrefix(p, []byte("HTTP/3"))
}
