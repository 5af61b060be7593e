package accesslog

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"net/netip"
	"strings"
	"time"

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

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// quoteOrBackslash flags the bytes of the word x (eight bytes read little
// endian) that are '"' or '\\': the lowest flagged byte is the first match
// (borrows only flag bytes above one), 0 if none.
func quoteOrBackslash(x uint64) uint64 {
	q, b := x^('"'*lsb), x^('\\'*lsb)
	return ((q - lsb) &^ q & msb) | ((b - lsb) &^ b & msb)
}

// skip skips the value of a member the fast path does not read, as value
// does, and reports whether it could. A string ("level", "msg") it skips
// itself, with one call to skipString where value's frame cost more than
// the string; the headers' loops take their usual value, an array of one
// string, the same way (oneString), before they call skip.
func (sc *scan) skip(depth int) bool {
	if s, i := sc.s, sc.i; i < len(s) && s[i] == '"' && depth < maxFastDepth {
		j := skipString(s, i)
		if j < 0 {
			return false
		}
		sc.i = j
		return true
	}
	return sc.value(depth) != 0
}

// oneString reports whether the value at sc.i starts as an array of one
// string, a header's usual value, does: the loops over headers then skip it
// with skipString and closesOneString, inlined, a call less per header than
// value (skipString is too big to inline, and so is anything that calls it).
func (sc *scan) oneString() bool {
	i := sc.i
	return i+1 < len(sc.s) && sc.s[i] == '[' && sc.s[i+1] == '"'
}

// closesOneString reports whether j, where skipString ended the string
// oneString saw, is the array's ']'; if so it moves past it.
func (sc *scan) closesOneString(j int) bool {
	if j >= 0 && j < len(sc.s) && sc.s[j] == ']' {
		sc.i = j + 1
		return true
	}
	return false
}

// value skips one value at sc.i as fastjson's parseValue would parse it, and
// returns its first byte (0 on error). It is one loop over the bytes, not a
// call per member: the fast path skips most of a line's values (the headers
// it does not read, tls, resp_headers), and on Caddy's lines the calls cost
// more than the bytes. open holds a bit per container it is inside, set for
// an array.
func (sc *scan) value(depth int) byte {
	s, i := sc.s, sc.i
	if i >= len(s) || depth >= maxFastDepth {
		return 0
	}
	first := s[i]
	var open uint64
	nested := 0
	var c byte
	var inArray bool
value:
	if i >= len(s) || depth+nested >= maxFastDepth {
		return 0
	}
	switch c = s[i]; c {
	case '"':
		if i = skipString(s, i); i < 0 {
			return 0
		}
	case '{':
		i = skipWS(s, i+1)
		if i >= len(s) {
			return 0
		}
		if s[i] == '}' {
			i++
			break
		}
		open &^= 1 << nested
		nested++
		goto key
	case '[':
		i = skipWS(s, i+1)
		if i >= len(s) {
			return 0
		}
		if s[i] == ']' {
			i++
			break
		}
		open |= 1 << nested
		nested++
		goto value
	case 't':
		if len(s)-i < 4 || string(s[i:i+4]) != "true" {
			return 0
		}
		i += 4
	case 'f':
		if len(s)-i < 5 || string(s[i:i+5]) != "false" {
			return 0
		}
		i += 5
	case 'n':
		if len(s)-i < 3 {
			return 0
		}
		if len(s)-i >= 4 && string(s[i:i+4]) == "null" {
			i += 4
		} else if strings.EqualFold(string(s[i:i+3]), "nan") {
			i += 3
		} else {
			return 0
		}
	default:
		if i = skipNumber(s, i); i < 0 {
			return 0
		}
	}
after:
	if nested == 0 {
		sc.i = i
		return first
	}
	i = skipWS(s, i)
	if i >= len(s) {
		return 0
	}
	inArray = open&(1<<(nested-1)) != 0
	switch c = s[i]; {
	case c == ',':
		i++
		if inArray {
			i = skipWS(s, i)
			goto value
		}
		goto key
	case c == ']' && inArray, c == '}' && !inArray:
		i++
		nested--
		goto after
	}
	return 0
key:
	i = skipWS(s, i)
	if i >= len(s) || s[i] != '"' {
		return 0
	}
	if i = skipString(s, i); i < 0 {
		return 0
	}
	if i >= len(s) || s[i] != ':' {
		i = skipWS(s, i)
		if i >= len(s) || s[i] != ':' {
			return 0
		}
	}
	i = skipWS(s, i+1)
	goto value
}

// skipWS returns the index of the first byte at or after i that is not JSON
// whitespace.
func skipWS(s []byte, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\n', '\t', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the string at s[i] (which holds '"'),
// or -1 if it does not end: at the first quote not escaped by an odd run of
// backslashes, as fastjson ends it (without checking the escapes). Keys and most values are short, so it looks at the
// first two words in place, eight bytes at a time (as a 17-byte array, with
// no bounds to check); a longer string, or one
// with a backslash, is searched for quotes with bytes.IndexByte, and each
// quote's run of backslashes counted back to the string's start.
func skipString(s []byte, i int) int {
	start := i + 1
	j := start
	if i >= 0 && i+17 <= len(s) {
		// The two words as a fixed-size array: no bounds to check.
		w := (*[17]byte)(s[i : i+17])
		k := uint(17) // the index in w of the first '"' or '\\' after the quote
		if m := quoteOrBackslash(binary.LittleEndian.Uint64(w[1:9])); m != 0 {
			k = 1 + uint(bits.TrailingZeros64(m)>>3)
		} else if m := quoteOrBackslash(binary.LittleEndian.Uint64(w[9:17])); m != 0 {
			k = 9 + uint(bits.TrailingZeros64(m)>>3)
		}
		if k < 17 && w[k] == '"' {
			return i + int(k) + 1
		}
		j = i + int(k)
	} else {
		for ; j < len(s); j++ {
			if c := s[j]; c == '"' || c == '\\' {
				break
			}
		}
		if j < len(s) && s[j] == '"' {
			return j + 1
		}
	}
	for {
		n := bytes.IndexByte(s[j:], '"')
		if n < 0 {
			return -1
		}
		q := j + n
		if q == start || s[q-1] != '\\' {
			return q + 1
		}
		k := q - 1
		for k > start && s[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// skipNumber follows fastjson's parseRawNumber: a run of digits, '.', '-',
// '+', 'e', 'E', or inf/nan after an optional sign. It returns the index after
// the number, or -1.
func skipNumber(s []byte, i int) int {
	j := i
	for j < len(s) && numberByte[s[j]] {
		j++
	}
	if k := j - i; k == 0 || k == 1 && (s[i] == '-' || s[i] == '+') {
		if j == len(s) {
			return len(s) // a lone sign at the end, as fastjson takes it
		}
		if len(s)-j >= 3 {
			if x := string(s[j : j+3]); strings.EqualFold(x, "inf") || strings.EqualFold(x, "nan") {
				return j + 3
			}
		}
		return -1
	}
	return j
}

// numberByte marks the bytes of fastjson's raw numbers.
var numberByte = [256]bool{
	'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true, '7': true, '8': true, '9': true,
	'.': true, '-': true, '+': true, 'e': true, 'E': true,
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

// key reads a member's key and its ':', leaving sc.i at the value. A key with
// a backslash gives the line to the slow path (ok false), as any failure does.
// A line has some forty keys, so the search for the key's end is written here
// rather than called.
//
// Caddy's keys are at most 24 bytes without escapes (but for
// Upgrade-Insecure-Requests), followed by ':' and the value without
// whitespace: at most three words of a 27-byte window find the end,
// with no bounds to check past the window's, in two thirds fewer
// instructions than keySlow's loop (a tenth of the whole analysis's were
// there). Anything else (a longer key, a backslash, whitespace, the line's
// end near) goes to keySlow, which decides as it always did.
func (sc *scan) key() ([]byte, bool) {
	s, i := sc.s, sc.i
	if i >= 0 && i+27 <= len(s) && s[i] == '"' {
		w := (*[27]byte)(s[i : i+27])
		k := uint(0) // the index in w of the first '"' or '\\' after the opening quote
		if m := quoteOrBackslash(binary.LittleEndian.Uint64(w[1:9])); m != 0 {
			k = 1 + uint(bits.TrailingZeros64(m)>>3)
		} else if m := quoteOrBackslash(binary.LittleEndian.Uint64(w[9:17])); m != 0 {
			k = 9 + uint(bits.TrailingZeros64(m)>>3)
		} else if m := quoteOrBackslash(binary.LittleEndian.Uint64(w[17:25])); m != 0 {
			k = 17 + uint(bits.TrailingZeros64(m)>>3)
		}
		if k = min(k, 24); k > 0 && w[k] == '"' && w[k+1] == ':' && w[k+2] > ' ' {
			sc.i = i + int(k) + 2
			return w[1:k], true
		}
	}
	return sc.keySlow()
}

// keySlow is key without its window: any key, escapes and whitespace
// included, as fastjson reads them.
func (sc *scan) keySlow() ([]byte, bool) {
	s, i := sc.s, sc.i
	if i < len(s) && s[i] <= ' ' {
		i = skipWS(s, i)
	}
	if i >= len(s) || s[i] != '"' {
		return nil, false
	}
	start := i + 1
	j := start
	for {
		if j+8 > len(s) {
			for j < len(s) && s[j] != '"' && s[j] != '\\' {
				j++
			}
			break
		}
		if m := quoteOrBackslash(binary.LittleEndian.Uint64(s[j:])); m != 0 {
			j += bits.TrailingZeros64(m) / 8
			break
		}
		j += 8
	}
	if j >= len(s) || s[j] != '"' {
		return nil, false
	}
	k := s[start:j]
	j++
	if j >= len(s) || s[j] != ':' {
		j = skipWS(s, j)
		if j >= len(s) || s[j] != ':' {
			return nil, false
		}
	}
	j++
	if j < len(s) && s[j] <= ' ' {
		j = skipWS(s, j)
	}
	sc.i = j
	return k, true
}

// next moves past the ',' or the closing byte after a member or element.
func (sc *scan) next(closing byte) (more, ok bool) {
	if sc.comma() {
		return true, true
	}
	return sc.nextSlow(closing)
}

// comma moves past a ',' right at sc.i, the usual end of a member (Caddy
// writes no whitespace), and reports whether there was one. It is next
// without the call to nextSlow, which makes next too big to inline: the
// loops over an object's members call it and nextSlow only without a comma,
// saving a call per member (a line has some forty).
func (sc *scan) comma() bool {
	if sc.i < len(sc.s) && sc.s[sc.i] == ',' {
		sc.i++
		return true
	}
	return false
}

func (sc *scan) nextSlow(closing byte) (more, ok bool) {
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
// anything else at sc.i. Without a backslash the string ends at the first
// quote, so two searches decide.
func (sc *scan) strVal() ([]byte, bool) {
	if sc.i >= len(sc.s) || sc.s[sc.i] != '"' {
		return nil, false
	}
	start := sc.i + 1
	n := bytes.IndexByte(sc.s[start:], '"')
	if n < 0 {
		return nil, false
	}
	raw := sc.s[start : start+n]
	if bytes.IndexByte(raw, '\\') >= 0 {
		return nil, false
	}
	sc.i = start + n + 1
	return raw, true
}

// optStr reads a value the slow path takes with stringOf: a string without
// escapes, or nil for a value of another type.
func (sc *scan) optStr(depth int) ([]byte, bool) {
	if sc.i < len(sc.s) && sc.s[sc.i] == '"' {
		return sc.strVal()
	}
	return nil, sc.skip(depth)
}

// num reads a plain number (starting with a digit) and returns its text. It
// ends where value would end it, at skipNumber's end, without value's call
// (four numbers a line).
func (sc *scan) num() ([]byte, bool) {
	s, start := sc.s, sc.i
	if start >= len(s) || s[start] < '0' || s[start] > '9' {
		return nil, false
	}
	end := skipNumber(s, start)
	if end < 0 {
		return nil, false
	}
	sc.i = end
	return s[start:end], true
}

// fastLine is what the fast path collects from a line before deciding.
type fastLine struct {
	seen                          uint32
	logger, ts, status, dur, size []byte
	tsString                      bool // ts is a string (time_format iso8601 and the like), not a number
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
		k, kok := sc.key()
		if !kok {
			return false
		}
		switch string(k) {
		case "ts":
			if !f.once(fTS) {
				return false
			}
			if f.tsString = sc.i < len(sc.s) && sc.s[sc.i] == '"'; f.tsString {
				f.ts, ok = sc.strVal()
				ok = ok && mayBeZoned(unsafeString(f.ts))
			} else {
				f.ts, ok = sc.num()
			}
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
			f.status, ok = sc.num()
		case "duration":
			if !f.once(fDur) {
				return false
			}
			f.dur, ok = sc.num()
		case "size":
			if !f.once(fSize) {
				return false
			}
			f.size, ok = sc.num()
		case "resp_headers":
			if !f.once(fResp) || sc.i >= len(sc.s) || sc.s[sc.i] != '{' {
				return false
			}
			f.hasResp = true
			ok = fastRespHeaders(sc, f)
		default:
			ok = sc.skip(1)
		}
		if !ok {
			return false
		}
		if !sc.comma() {
			more, ok = sc.nextSlow('}')
		}
	}
	return ok
}

// fastRequestObject reads Caddy's "request" object (depth 2).
func (lp *lineParser) fastRequestObject(sc *scan, f *fastLine) bool {
	more, ok := sc.open()
	for ok && more {
		k, kok := sc.key()
		if !kok {
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
			ok = sc.skip(2)
		case "headers":
			if !f.once(fHeaders) || sc.i >= len(sc.s) || sc.s[sc.i] != '{' {
				return false
			}
			ok = fastHeaders(sc, f)
		default:
			ok = sc.skip(2)
		}
		if !ok {
			return false
		}
		if !sc.comma() {
			more, ok = sc.nextSlow('}')
		}
	}
	return ok
}

// ipVal reads client_ip or remote_ip: a string without escapes, or null.
func (sc *scan) ipVal() (ip []byte, null, ok bool) {
	if len(sc.s)-sc.i >= 4 && string(sc.s[sc.i:sc.i+4]) == "null" {
		sc.i += 4
		return nil, true, true
	}
	ip, ok = sc.strVal()
	return ip, false, ok
}

// fastHeaders reads the request headers (depth 3), as lineParser.headers does.
func fastHeaders(sc *scan, f *fastLine) bool {
	more, ok := sc.open()
	for ok && more {
		k, kok := sc.key()
		if !kok {
			return false
		}
		switch {
		case foldUserAgent.is(k):
			if !f.once(fUA) {
				return false
			}
			f.ua, ok = sc.firstValue()
		case foldReferer.is(k):
			if !f.once(fReferer) {
				return false
			}
			f.referer, ok = sc.firstValue()
		case foldAcceptLanguage.is(k):
			if !f.once(fLang) {
				return false
			}
			f.lang, ok = sc.firstValue()
		case foldCookie.is(k):
			if !f.once(fCookie) || sc.i >= len(sc.s) || sc.s[sc.i] != '[' {
				return false
			}
			start := sc.i
			ok = sc.skip(3)
			f.cookie = span{kind: '[', raw: sc.s[start:sc.i]}
		case foldSecChUa.is(k):
			f.secChUa = true
			ok = sc.skip(3)
		case foldAuthorization.is(k):
			f.authorization = true
			ok = sc.skip(3)
		default:
			if sc.oneString() && sc.closesOneString(skipString(sc.s, sc.i+1)) {
				break
			}
			ok = sc.skip(3)
		}
		if !ok {
			return false
		}
		if !sc.comma() {
			more, ok = sc.nextSlow('}')
		}
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
		k, kok := sc.key()
		if !kok {
			return false
		}
		if equalFoldSameLength(k, ViaHeader) || foldPoweredBy.is(k) {
			f.upstream = true
		}
		if which := cacheHeader(k); which != 0 {
			if !sc.eachString(func(v []byte) { f.cache.add(which, v) }) {
				return false
			}
		} else if !(sc.oneString() && sc.closesOneString(skipString(sc.s, sc.i+1))) && !sc.skip(2) {
			return false
		}
		if !sc.comma() {
			more, ok = sc.nextSlow('}')
		}
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
	var t time.Time
	var ok bool
	if f.tsString {
		// Only the forms with a zone: a wall clock's is counted and checked
		// against the host's (timeOfString), which the slow path does once.
		t, ok = zonedTime(unsafeString(f.ts))
	} else {
		t, ok = lp.timeOfNumber(f.ts)
	}
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

// equalFold is bytes.EqualFold for an ASCII name, without the call when k
// is as long as name (equalFoldSameLength).
func equalFold(k []byte, name string) bool {
	if len(k) != len(name) {
		// k can still match through a rune longer than the letter it folds
		// to: "\u212aey" is "key".
		return bytes.EqualFold(k, []byte(name))
	}
	return equalFoldSameLength(k, name)
}

// equalFoldSameLength is bytes.EqualFold for a k as long as the ASCII name,
// in one pass over the bytes without a call: most header names fastHeaders
// is asked about have the length of a wanted one without being it (Accept and
// Cookie, Accept-Encoding and Accept-Language, Connection and User-Agent,
// Cache-Control and Authorization), and on the 256 MB benchmark log
// bytes.EqualFold cost 49M instructions on them.
//
// At the same length, bytes.EqualFold can only fold an ASCII letter to its
// other case: the two non-ASCII runes that fold to ASCII letters (U+017F to
// s, U+212A to k) are longer than the letter, and any other byte at or above
// 0x80 matches nothing in name. So two bytes match when they are equal, or
// differ only in bit 0x20 and name's is a letter (not '-', which that bit
// would match to a carriage return).
func equalFoldSameLength(k []byte, name string) bool {
	if len(k) != len(name) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if d := k[i] ^ name[i]; d != 0 {
			if lower := name[i] | 0x20; d != 0x20 || lower < 'a' || lower > 'z' {
				return false
			}
		}
	}
	return true
}

// A foldName is a header name of 4 to 16 ASCII bytes that a key is compared
// with as equalFoldSameLength does, in two word loads rather than a loop over
// its bytes: its first and last 8 bytes (4 for a name shorter than 8), with
// its letters in lower case (lo, hi), and the bit 0x20 set at its letters
// (loMask, hiMask). A key of its length is it when each word of the key, with
// the mask's bits set, is the name's: a letter matches either case, any other
// byte only itself.
type foldName struct {
	n              int
	lo, hi         uint64
	loMask, hiMask uint64
}

// newFoldName returns name's foldName; name must be 4 to 16 ASCII bytes.
func newFoldName(name string) foldName {
	if len(name) < 4 || len(name) > 16 {
		panic("foldName: " + name + " is not 4 to 16 bytes")
	}
	lower, mask := make([]byte, len(name)), make([]byte, len(name))
	for i := range len(name) {
		c := name[i]
		if c >= 0x80 {
			panic("foldName: " + name + " is not ASCII")
		}
		if l := c | 0x20; l >= 'a' && l <= 'z' {
			lower[i], mask[i] = l, 0x20
		} else {
			lower[i] = c
		}
	}
	f := foldName{n: len(name)}
	f.lo, f.hi = foldWords(lower)
	f.loMask, f.hiMask = foldWords(mask)
	return f
}

// foldWords returns b's first and last words as foldName.is reads a key.
func foldWords(b []byte) (first, last uint64) {
	if len(b) >= 8 {
		return binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[len(b)-8:])
	}
	return uint64(binary.LittleEndian.Uint32(b)), uint64(binary.LittleEndian.Uint32(b[len(b)-4:]))
}

// is reports whether k is f's name, in any case (bytes.EqualFold: k is
// as long as the name, so only ASCII letters fold; see equalFoldSameLength).
func (f *foldName) is(k []byte) bool {
	if len(k) != f.n {
		return false
	}
	if len(k) >= 8 {
		return binary.LittleEndian.Uint64(k)|f.loMask == f.lo && binary.LittleEndian.Uint64(k[len(k)-8:])|f.hiMask == f.hi
	}
	return uint64(binary.LittleEndian.Uint32(k))|f.loMask == f.lo && uint64(binary.LittleEndian.Uint32(k[len(k)-4:]))|f.hiMask == f.hi
}

// The header names fastHeaders, fastRespHeaders and cacheHeader read
// (ViaHeader and AgeHeader are shorter than a foldName).
var (
	foldUserAgent      = newFoldName("User-Agent")
	foldReferer        = newFoldName("Referer")
	foldAcceptLanguage = newFoldName("Accept-Language")
	foldCookie         = newFoldName("Cookie")
	foldSecChUa        = newFoldName("Sec-Ch-Ua")
	foldAuthorization  = newFoldName("Authorization")
	foldPoweredBy      = newFoldName(PoweredByHeader)
	foldCacheStatus    = newFoldName(CacheStatusHeader)
	foldXCache         = newFoldName(XCacheHeader)
)
