package accesslog

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"net/netip"
	"strings"

	"github.com/valyala/fastjson/fastfloat"

	"github.com/aftermath-forensics/aftermath/sources"
)

// The fast path reads a line in one pass over its bytes, picking out the fields
// a Request needs and skipping the rest without building a tree: on Caddy's
// lines it costs about 60% of fastjson's parse plus the visits of the slow
// path (BenchmarkParseLine), which it does not replace: it gives up on anything unusual (an escaped
// character in a field it keeps, a key written twice, a field of an unexpected
// type, any reason to skip the line) and the slow path then decides, so that
// both paths give the same Request or the same skip reason for every line.
// FuzzFastPath holds them to that.
//
// It accepts exactly the JSON that fastjson accepts (same whitespace, same
// string ends, same lenient numbers, inf and nan included): a line the fast
// path reads is one the slow path reads too.

// maxFastDepth is the nesting the fast path follows; deeper lines (never
// Caddy's, at most 4 deep) go to fastjson, which allows 300.
const maxFastDepth = 32

// scan is a cursor over one line.
type scan struct {
	s []byte
	i int
}

func (sc *scan) ws() {
	if sc.i < len(sc.s) && sc.s[sc.i] > ' ' {
		return // Caddy writes no whitespace: one comparison
	}
	sc.wsSlow()
}

func (sc *scan) wsSlow() {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\n', '\t', '\r':
			sc.i++
		default:
			return
		}
	}
}

// str reads a string at sc.i (which holds '"') and returns its raw content and
// whether it holds a backslash. Like fastjson, it ends at the first quote not
// escaped by an odd run of backslashes (which is where a backslash escaping
// the byte after it ends it too), and does not check the escapes.
func (sc *scan) str() (raw []byte, esc, ok bool) {
	start := sc.i + 1
	j := start
	for {
		n := quoteOrBackslash(sc.s[j:])
		if n < 0 {
			return nil, false, false
		}
		j += n
		if sc.s[j] == '"' {
			sc.i = j + 1
			return sc.s[start:j], esc, true
		}
		esc = true
		j += 2 // the backslash and the byte it escapes
		if j > len(sc.s) {
			return nil, false, false
		}
	}
}

// skipStr is str for a value that is not kept: it looks for quotes only,
// which is faster on long strings, and does not report escapes.
func (sc *scan) skipStr() bool {
	start := sc.i + 1
	j := start
	for {
		n := bytes.IndexByte(sc.s[j:], '"')
		if n < 0 {
			return false
		}
		q := j + n
		if sc.s[q-1] != '\\' || q == start {
			sc.i = q + 1
			return true
		}
		k := q - 1
		for k > start && sc.s[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			sc.i = q + 1
			return true
		}
		j = q + 1
	}
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// quoteOrBackslash returns the index of the first '"' or '\\' in s, or -1,
// eight bytes at a time.
func quoteOrBackslash(s []byte) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:])
		q, b := x^('"'*lsb), x^('\\'*lsb)
		// The lowest flagged byte is the first match (borrows only flag bytes above one).
		if m := ((q - lsb) &^ q & msb) | ((b - lsb) &^ b & msb); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			return i
		}
	}
	return -1
}

// value skips one value at sc.i as fastjson's parseValue would parse it, and
// returns its first byte (0 on error).
func (sc *scan) value(depth int) byte {
	if sc.i >= len(sc.s) || depth >= maxFastDepth {
		return 0
	}
	c := sc.s[sc.i]
	switch c {
	case '{':
		if !sc.object(depth + 1) {
			return 0
		}
	case '[':
		if !sc.array(depth + 1) {
			return 0
		}
	case '"':
		if !sc.skipStr() {
			return 0
		}
	case 't':
		if !sc.literal("true") {
			return 0
		}
	case 'f':
		if !sc.literal("false") {
			return 0
		}
	case 'n':
		if !sc.literal("null") {
			if len(sc.s)-sc.i >= 3 && strings.EqualFold(string(sc.s[sc.i:sc.i+3]), "nan") {
				sc.i += 3
				return c
			}
			return 0
		}
	default:
		if !sc.number() {
			return 0
		}
	}
	return c
}

func (sc *scan) literal(lit string) bool {
	if len(sc.s)-sc.i >= len(lit) && string(sc.s[sc.i:sc.i+len(lit)]) == lit {
		sc.i += len(lit)
		return true
	}
	return false
}

// number follows fastjson's parseRawNumber: a run of digits, '.', '-', '+',
// 'e', 'E', or inf/nan after an optional sign.
func (sc *scan) number() bool {
	s := sc.s[sc.i:]
	for k, ch := range s {
		if '0' <= ch && ch <= '9' || ch == '.' || ch == '-' || ch == 'e' || ch == 'E' || ch == '+' {
			continue
		}
		if k == 0 || k == 1 && (s[0] == '-' || s[0] == '+') {
			if len(s)-k >= 3 {
				if x := string(s[k : k+3]); strings.EqualFold(x, "inf") || strings.EqualFold(x, "nan") {
					sc.i += k + 3
					return true
				}
			}
			return false
		}
		sc.i += k
		return true
	}
	sc.i = len(sc.s)
	return true
}

// object skips an object at sc.i ('{').
func (sc *scan) object(depth int) bool {
	more, ok := sc.open()
	for ok && more {
		if _, _, ok = sc.key(); !ok {
			return false
		}
		if sc.value(depth) == 0 {
			return false
		}
		more, ok = sc.next('}')
	}
	return ok
}

func (sc *scan) array(depth int) bool {
	sc.i++
	sc.ws()
	if sc.i >= len(sc.s) {
		return false
	}
	if sc.s[sc.i] == ']' {
		sc.i++
		return true
	}
	for {
		sc.ws()
		if sc.value(depth) == 0 {
			return false
		}
		more, ok := sc.next(']')
		if !ok || !more {
			return ok
		}
	}
}

// open steps into an object at sc.i ('{') and reports whether it has members.
func (sc *scan) open() (more, ok bool) {
	sc.i++
	sc.ws()
	if sc.i >= len(sc.s) {
		return false, false
	}
	if sc.s[sc.i] == '}' {
		sc.i++
		return false, true
	}
	return true, true
}

// key reads a member's key and its ':', leaving sc.i at the value.
func (sc *scan) key() (k []byte, esc, ok bool) {
	sc.ws()
	if sc.i >= len(sc.s) || sc.s[sc.i] != '"' {
		return nil, false, false
	}
	if k, esc, ok = sc.str(); !ok {
		return nil, false, false
	}
	if sc.i >= len(sc.s) || sc.s[sc.i] != ':' {
		sc.ws()
		if sc.i >= len(sc.s) || sc.s[sc.i] != ':' {
			return nil, false, false
		}
	}
	sc.i++
	sc.ws()
	return k, esc, true
}

// next moves past the ',' or the closing byte after a member or element.
func (sc *scan) next(closing byte) (more, ok bool) {
	sc.ws()
	if sc.i >= len(sc.s) {
		return false, false
	}
	switch sc.s[sc.i] {
	case ',':
		sc.i++
		return true, true
	case closing:
		sc.i++
		return false, true
	}
	return false, false
}

// span is a value's raw text; kind is its first byte, 0 if absent.
type span struct {
	kind byte
	raw  []byte
}

// strVal reads a string value without escapes; ok is false (give up) for
// anything else at sc.i.
func (sc *scan) strVal() ([]byte, bool) {
	if sc.i >= len(sc.s) || sc.s[sc.i] != '"' {
		return nil, false
	}
	raw, esc, ok := sc.str()
	return raw, ok && !esc
}

// optStr reads a value the slow path takes with stringOf: a string without
// escapes, or nil for a value of another type.
func (sc *scan) optStr(depth int) ([]byte, bool) {
	if sc.i < len(sc.s) && sc.s[sc.i] == '"' {
		return sc.strVal()
	}
	return nil, sc.value(depth) != 0
}

// num reads a plain number (starting with a digit) and returns its text.
func (sc *scan) num(depth int) ([]byte, bool) {
	start := sc.i
	if sc.i >= len(sc.s) || sc.s[sc.i] < '0' || sc.s[sc.i] > '9' {
		return nil, false
	}
	if sc.value(depth) == 0 {
		return nil, false
	}
	return sc.s[start:sc.i], true
}

// fastLine is what the fast path collects from a line before deciding.
type fastLine struct {
	seen                          uint32
	logger, ts, status, dur, size []byte
	uri, clientIP, remoteIP       []byte
	remoteAddr, remotePort        []byte
	method, host, proto           []byte
	ua, lang, referer             []byte
	cookie                        span // the Cookie header's value (an array)
	clientNull, remoteNull        bool
	addrNull                      bool
	tls, secChUa, authorization   bool
	hasRequest, hasResp, upstream bool
	cache                         cacheEvidence
}

// Bits of fastLine.seen: a key seen twice sends the line to the slow path,
// which keeps the last one.
const (
	fLogger = 1 << iota
	fTS
	fStatus
	fDur
	fSize
	fRequest
	fResp
	fURI
	fClientIP
	fRemoteIP
	fMethod
	fHost
	fHeaders
	fTLS
	fProto
	fUA
	fLang
	fCookie
	fRemoteAddr
	fRemotePort
	fReferer
)

func (f *fastLine) once(bit uint32) bool {
	if f.seen&bit != 0 {
		return false
	}
	f.seen |= bit
	return true
}

// parseFast fills r from line and reports true, or reports false and leaves
// the line to the slow path. line has passed the BOM and UTF-8 checks.
func (lp *lineParser) parseFast(line []byte, r *sources.Request) bool {
	sc := scan{s: line}
	var f fastLine
	sc.ws()
	if sc.i >= len(line) || line[sc.i] != '{' {
		return false
	}
	if !lp.fastTop(&sc, &f) {
		return false
	}
	sc.ws()
	if sc.i != len(line) {
		return false
	}
	return lp.fastRequest(&f, r)
}

// fastTop reads the top-level object (depth 1).
func (lp *lineParser) fastTop(sc *scan, f *fastLine) bool {
	more, ok := sc.open()
	for ok && more {
		k, esc, kok := sc.key()
		if !kok || esc {
			return false
		}
		switch string(k) {
		case "ts":
			if !f.once(fTS) {
				return false
			}
			f.ts, ok = sc.num(1)
		case "logger":
			if !f.once(fLogger) {
				return false
			}
			f.logger, ok = sc.strVal()
		case "request":
			if !f.once(fRequest) || sc.i >= len(sc.s) || sc.s[sc.i] != '{' {
				return false
			}
			f.hasRequest = true
			ok = lp.fastRequestObject(sc, f)
		case "status":
			if !f.once(fStatus) {
				return false
			}
			f.status, ok = sc.num(1)
		case "duration":
			if !f.once(fDur) {
				return false
			}
			f.dur, ok = sc.num(1)
		case "size":
			if !f.once(fSize) {
				return false
			}
			f.size, ok = sc.num(1)
		case "resp_headers":
			if !f.once(fResp) || sc.i >= len(sc.s) || sc.s[sc.i] != '{' {
				return false
			}
			f.hasResp = true
			ok = fastRespHeaders(sc, f)
		default:
			ok = sc.value(1) != 0
		}
		if !ok {
			return false
		}
		more, ok = sc.next('}')
	}
	return ok
}

// fastRequestObject reads Caddy's "request" object (depth 2).
func (lp *lineParser) fastRequestObject(sc *scan, f *fastLine) bool {
	more, ok := sc.open()
	for ok && more {
		k, esc, kok := sc.key()
		if !kok || esc {
			return false
		}
		switch string(k) {
		case "uri":
			if !f.once(fURI) {
				return false
			}
			f.uri, ok = sc.strVal()
		case "client_ip":
			if !f.once(fClientIP) {
				return false
			}
			f.clientIP, f.clientNull, ok = sc.ipVal()
		case "remote_ip":
			if !f.once(fRemoteIP) {
				return false
			}
			f.remoteIP, f.remoteNull, ok = sc.ipVal()
		case "remote_addr":
			if !f.once(fRemoteAddr) {
				return false
			}
			f.remoteAddr, f.addrNull, ok = sc.ipVal()
		case "remote_port":
			if !f.once(fRemotePort) {
				return false
			}
			f.remotePort, ok = sc.optStr(2)
		case "method":
			if !f.once(fMethod) {
				return false
			}
			f.method, ok = sc.optStr(2)
		case "host":
			if !f.once(fHost) {
				return false
			}
			f.host, ok = sc.optStr(2)
		case "proto":
			if !f.once(fProto) {
				return false
			}
			f.proto, ok = sc.optStr(2)
		case "tls":
			if !f.once(fTLS) {
				return false
			}
			f.tls = sc.i < len(sc.s) && sc.s[sc.i] == '{'
			ok = sc.value(2) != 0
		case "headers":
			if !f.once(fHeaders) || sc.i >= len(sc.s) || sc.s[sc.i] != '{' {
				return false
			}
			ok = fastHeaders(sc, f)
		default:
			ok = sc.value(2) != 0
		}
		if !ok {
			return false
		}
		more, ok = sc.next('}')
	}
	return ok
}

// ipVal reads client_ip or remote_ip: a string without escapes, or null.
func (sc *scan) ipVal() (ip []byte, null, ok bool) {
	if sc.i < len(sc.s) && sc.s[sc.i] == 'n' && sc.literal("null") {
		return nil, true, true
	}
	ip, ok = sc.strVal()
	return ip, false, ok
}

// fastHeaders reads the request headers (depth 3), as lineParser.headers does.
func fastHeaders(sc *scan, f *fastLine) bool {
	more, ok := sc.open()
	for ok && more {
		k, esc, kok := sc.key()
		if !kok || esc {
			return false
		}
		switch {
		case len(k) == len("User-Agent") && equalFold(k, "User-Agent"):
			if !f.once(fUA) {
				return false
			}
			f.ua, ok = sc.firstValue()
		case len(k) == len("Referer") && equalFold(k, "Referer"):
			if !f.once(fReferer) {
				return false
			}
			f.referer, ok = sc.firstValue()
		case len(k) == len("Accept-Language") && equalFold(k, "Accept-Language"):
			if !f.once(fLang) {
				return false
			}
			f.lang, ok = sc.firstValue()
		case len(k) == len("Cookie") && equalFold(k, "Cookie"):
			if !f.once(fCookie) || sc.i >= len(sc.s) || sc.s[sc.i] != '[' {
				return false
			}
			start := sc.i
			ok = sc.value(3) != 0
			f.cookie = span{kind: '[', raw: sc.s[start:sc.i]}
		case len(k) == len("Sec-Ch-Ua") && equalFold(k, "Sec-Ch-Ua"):
			f.secChUa = true
			ok = sc.value(3) != 0
		case len(k) == len("Authorization") && equalFold(k, "Authorization"):
			f.authorization = true
			ok = sc.value(3) != 0
		default:
			ok = sc.value(3) != 0
		}
		if !ok {
			return false
		}
		more, ok = sc.next('}')
	}
	return ok
}

// firstValue reads a header's value, an array whose first element is a string
// without escapes, and returns that string (nil for an empty array).
func (sc *scan) firstValue() ([]byte, bool) {
	if sc.i >= len(sc.s) || sc.s[sc.i] != '[' {
		return nil, false
	}
	sc.i++
	sc.ws()
	if sc.i < len(sc.s) && sc.s[sc.i] == ']' {
		sc.i++
		return nil, true
	}
	first, ok := sc.strVal()
	if !ok {
		return nil, false
	}
	for {
		more, ok := sc.next(']')
		if !ok || !more {
			return first, ok
		}
		sc.ws()
		if sc.value(4) == 0 {
			return nil, false
		}
	}
}

// eachString reads a header's value, an array of strings without escapes,
// calling fn with each; anything else gives the line to the slow path.
func (sc *scan) eachString(fn func([]byte)) bool {
	if sc.i >= len(sc.s) || sc.s[sc.i] != '[' {
		return false
	}
	sc.i++
	sc.ws()
	if sc.i < len(sc.s) && sc.s[sc.i] == ']' {
		sc.i++
		return true
	}
	for {
		sc.ws()
		v, ok := sc.strVal()
		if !ok {
			return false
		}
		fn(v)
		more, ok := sc.next(']')
		if !ok || !more {
			return ok
		}
	}
}

// fastRespHeaders reads resp_headers (depth 2) for the names origin looks for.
func fastRespHeaders(sc *scan, f *fastLine) bool {
	more, ok := sc.open()
	for ok && more {
		k, esc, kok := sc.key()
		if !kok || esc {
			return false
		}
		if len(k) == len(ViaHeader) && equalFold(k, ViaHeader) || len(k) == len(PoweredByHeader) && equalFold(k, PoweredByHeader) {
			f.upstream = true
		}
		if which := cacheHeader(k); which != 0 {
			if !sc.eachString(func(v []byte) { f.cache.add(which, v) }) {
				return false
			}
		} else if sc.value(2) == 0 {
			return false
		}
		more, ok = sc.next('}')
	}
	return ok
}

// fastRequest turns the collected fields into r, in the slow path's order of
// checks; any check that fails gives the line to the slow path.
func (lp *lineParser) fastRequest(f *fastLine, r *sources.Request) bool {
	if f.seen&fLogger != 0 {
		if !isAccessLogger(f.logger) {
			return false
		}
	} else if !f.hasRequest {
		return false
	}
	if f.ts == nil {
		return false
	}
	t, ok := lp.timeOfNumber(f.ts)
	if !ok {
		return false
	}
	if f.status == nil {
		return false
	}
	code, err := fastfloat.ParseInt64(unsafeString(f.status))
	if err != nil || code < 0 || code > 999 {
		return false
	}
	if !f.hasRequest || len(f.uri) == 0 {
		return false
	}
	src := f.clientIP
	if len(src) == 0 {
		// absent, null or "": fall back to the TCP peer
		src = f.remoteIP
	}
	var ip netip.Addr
	viaAddr := false
	if len(src) == 0 {
		// The oldest Caddy lines have only remote_addr, "ip:port".
		ap, ok := splitRemoteAddr(f.remoteAddr)
		if !ok {
			return false
		}
		ip, lp.port = ap.Addr(), ap.Port()
		viaAddr = true
	} else {
		if ip, err = netip.ParseAddr(unsafeString(src)); err != nil {
			return false
		}
		if len(f.remoteAddr) > 0 {
			if ap, ok := splitRemoteAddr(f.remoteAddr); ok {
				lp.port = ap.Port()
			}
		}
	}
	if len(f.remotePort) > 0 {
		lp.port = parsePort(f.remotePort)
	}
	var dur float64
	if f.dur != nil {
		// A refused number is counted once, by the slow path.
		if lp.durUnit == durationStringOnly {
			return false
		}
		if dur, ok = lp.durationOfNumber(f.dur); !ok {
			return false
		}
	}
	var size int64
	if f.size != nil {
		n, err := fastfloat.ParseInt64(unsafeString(f.size))
		if err != nil || n < 0 {
			return false
		}
		size = n
	}
	var loggedIn sources.LoggedIn
	if f.cookie.kind != 0 {
		var ok bool
		if loggedIn, ok = fastLoggedIn(f.cookie.raw, lp.cookie); !ok {
			return false
		}
	} else {
		loggedIn = sources.LoggedInNo
	}

	r.Time = t
	r.Status = int(code)
	r.ClientIP = ip.WithZone("").Unmap()
	r.Duration = dur
	r.Size = size
	r.Path, r.Query = lp.uri(f.uri)
	r.TLS = f.tls || isTLSProto(f.proto)
	r.Method = lp.strLast(&lp.lastMethod, f.method)
	r.Host = lp.strLast(&lp.lastHost, f.host)
	if f.seen&fHeaders != 0 {
		// Without a headers object the slow path leaves all of these zero,
		// LoggedIn included (unknown, not no).
		r.UserAgent = lp.strLast(&lp.lastUA, f.ua)
		var buf [maxLangLen]byte
		r.Lang = lp.strLast(&lp.lastLang, primaryLang(f.lang, &buf))
		r.HasCookie = f.cookie.kind != 0
		r.LoggedIn = loggedIn
		r.SecChUa = f.secChUa
		r.Authorization = f.authorization
		r.SiteReferer = sameHost(f.referer, r.Host)
	}
	r.Origin = sources.OriginUnknown
	if f.hasResp {
		r.Cache = f.cache.verdict()
		r.Origin = OriginOf(f.upstream, r.Status, r.Cache)
	}
	if viaAddr {
		lp.counts.remoteAddr++
	}
	return true
}

// fastLoggedIn is loggedIn over a Cookie array already checked as JSON: its
// elements must be strings without escapes (else the slow path decides).
func fastLoggedIn(arr []byte, pattern *sources.CookiePattern) (sources.LoggedIn, bool) {
	if pattern == nil {
		return sources.LoggedInUnknown, true
	}
	sc := scan{s: arr}
	sc.i++
	sc.ws()
	redacted := false
	if sc.i < len(arr) && arr[sc.i] == ']' {
		return sources.LoggedInNo, true
	}
	for {
		sc.ws()
		b, ok := sc.strVal()
		if !ok {
			return 0, false
		}
		if pattern.Match(b) {
			return sources.LoggedInYes, true
		}
		if string(b) == "REDACTED" {
			redacted = true
		}
		more, ok := sc.next(']')
		if !ok {
			return 0, false
		}
		if !more {
			break
		}
	}
	if redacted {
		return sources.LoggedInUnknown, true
	}
	return sources.LoggedInNo, true
}

// equalFold is bytes.EqualFold with a shortcut for the canonical spelling,
// which is how Caddy writes header names.
func equalFold(k []byte, name string) bool {
	return string(k) == name || bytes.EqualFold(k, []byte(name))
}
