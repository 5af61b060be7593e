package accesslog

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/valyala/fastjson/fastfloat"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchlog"
	"github.com/aftermath-forensics/aftermath/sources"
)

// fastSeeds are lines that probe where the fast path must give up or agree:
// escapes, repeated keys, unusual types, fastjson's lenient numbers.
func fastSeeds() []string {
	r := func(old, new string) string { return strings.Replace(baseLine, old, new, 1) }
	return append(skippedValueLines(), []string{
		baseLine,
		"  " + baseLine + " \r",
		r(`"uri":"/w/`, `"uri":"/w/\"`),
		r(`"uri":"/w/`, `"uri":"/w/\\`),
		r(`"uri":"/w/`, `"uri":"/w/\\\"x`),
		r(`"User-Agent":["Mozilla`, `"User-Agent":["\u004dozilla`),
		r(`"User-Agent":[`, `"User-Agent":[1,`),
		r(`"User-Agent":[`, `"User-Agent":[],"X":[`),
		r(`"User-Agent":["Mozilla/5.0 (Linux; Android 14; SM-S918N) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.6422.113 Mobile Safari/537.36"]`, `"User-Agent":"curl/8"`),
		r(`"User-Agent"`, `"user-agent":["a"],"USER-AGENT"`),
		r(`"User-Agent"`, `"User\u002dAgent"`),
		r(`"Accept-Language":[`, `"Accept-Language":["*"],"accept-language":[`),
		r(`"Connection":["close"]`, `"Cookie":["wikiUserID=3; x=y"]`),
		r(`"Connection":["close"]`, `"Cookie":["REDACTED"]`),
		r(`"Connection":["close"]`, `"Cookie":["a","REDACTED","b"]`),
		r(`"Connection":["close"]`, `"Cookie":[]`),
		r(`"Connection":["close"]`, `"Cookie":"wikiUserID=3"`),
		r(`"Connection":["close"]`, `"Cookie":[null]`),
		r(`"Connection":["close"]`, `"Cookie":["\u0077ikiUserID=1"]`),
		r(`"Connection":["close"]`, `"Sec-CH-UA":null`),
		r(`"headers":{`, `"headers":{},"h":{`),
		r(`"headers":{`, `"tls":{"proto":"h2"},"headers":{`),
		r(`"headers":{`, `"tls":null,"headers":{`),
		r(`"headers":{`, `"tls":[],"headers":{`),
		r(`"proto":"HTTP/1.1"`, `"proto":"HTTP/2.0"`),
		r(`"proto":"HTTP/1.1"`, `"proto":2`),
		r(`"proto":"HTTP/1.1"`, `"proto":"HTTP\/3"`),
		r(`"method":"GET"`, `"method":null`),
		r(`"method":"GET"`, `"method":"G\tET"`),
		r(`"host":"wiki.lab.test"`, `"host":["x"]`),
		r(`"client_ip":"127.170.105.56"`, `"client_ip":null`),
		r(`"client_ip":"127.170.105.56"`, `"client_ip":""`),
		r(`"client_ip":"127.170.105.56"`, `"client_ip":5`),
		r(`"client_ip":"127.170.105.56"`, `"client_ip":"::ffff:1.2.3.4"`),
		r(`"client_ip":"127.170.105.56"`, `"client_ip":"fe80::1%eth0"`),
		r(`"client_ip":"127.170.105.56"`, `"client_ip":"1.2.3.4","client_ip":"5.6.7.8"`),
		r(`"remote_ip":"127.170.105.56"`, `"remote_ip":nan`),
		r(`"ts":1795966450.4057534`, `"ts":1795966450`),
		r(`"ts":1795966450.4057534`, `"ts":1.7959664504057534e9`),
		r(`"ts":1795966450.4057534`, `"ts":1795966450405.7534`),
		r(`"ts":1795966450.4057534`, `"ts":1795966450405753400`),
		r(`"ts":1795966450.4057534`, `"ts":-1795966450`),
		r(`"ts":1795966450.4057534`, `"ts":1795966450.4.0`),
		r(`"ts":1795966450.4057534`, `"ts":NaN`),
		r(`"ts":1795966450.4057534`, `"ts":inf`),
		r(`"ts":1795966450.4057534`, `"ts":"2026-11-29T15:34:10Z"`),
		// the string forms of time_format: those with a zone the fast path
		// reads, a wall clock's it leaves to the slow path (which counts it)
		r(`"ts":1795966450.4057534`, `"ts":"2026-11-30T00:34:10.405+0900"`),
		r(`"ts":1795966450.4057534`, `"ts":"2026-11-29T15:34:10.405Z"`),
		r(`"ts":1795966450.4057534`, `"ts":"2026-11-29T10:04:10.4057534-05:30"`),
		r(`"ts":1795966450.4057534`, `"ts":"2026-11-29T15:34:10.4057535Z"`),
		r(`"ts":1795966450.4057534`, `"ts":"2026-11-29T15:34:10+00:00"`),
		r(`"ts":1795966450.4057534`, `"ts":"29/Nov/2026:15:34:10 +0000"`),
		r(`"ts":1795966450.4057534`, `"ts":"2026/11/29 15:34:10.405"`),
		r(`"ts":1795966450.4057534`, `"ts":"2026-11-29T15:34:10\u002e405Z"`),
		r(`"ts":1795966450.4057534`, `"ts":"2026-11-31T15:34:10.405Z"`),
		r(`"ts":1795966450.4057534`, `"ts":"2026-11-29T15:34:10.405+09"`),
		r(`"ts":1795966450.4057534`, `"ts":"2026-11-29T15:34:10.405 +0900"`),
		r(`"ts":1795966450.4057534`, `"ts":""`),
		r(`"ts":1795966450.4057534`, `"ts":"1795966450.4057534"`),
		r(`"ts":1795966450.4057534`, `"ts":"2026-11-29T15:34:10Z","ts":1`),
		r(`"ts":1795966450.4057534`, `"ts":1,"ts":2`),
		r(`"status":200`, `"status":200.0`),
		r(`"status":200`, `"status":1e2`),
		r(`"status":200`, `"status":-0`),
		r(`"status":200`, `"status":"200"`),
		r(`"status":200`, `"status":+200`),
		r(`"duration":0.035747075`, `"duration":3e-2`),
		r(`"duration":0.035747075`, `"duration":-0.0`),
		r(`"duration":0.035747075`, `"duration":Infinity`),
		r(`"duration":0.035747075`, `"duration":"35ms"`),
		r(`"size":1026`, `"size":1026.5`),
		r(`"size":1026`, `"size":-1`),
		r(`"size":1026`, `"size":99999999999999999999`),
		r(`"resp_headers":{`, `"resp_headers":{"via":1,`),
		r(`"Via":["0.0 Caddy"],`, ``),
		r(`"Via":["0.0 Caddy"],`, `"X-Powered-By":{"a":[[[[]]]]},`),
		r(`"status":200,"resp_headers":{`, `"status":503,"resp_headers":{"X":[],`),
		r(`"Via":["0.0 Caddy"],`, `"Cache-Status":["Souin; fwd=uri-miss; key=GET-/?s=;hit"],"X-Cache":["MISS, HIT"],"Age":["3"],`),
		r(`"Via":["0.0 Caddy"],`, `"Age":5,"X-Cache":"HIT","cache-status":[],`),
		r(`"Via":["0.0 Caddy"],`, `"Cache-Status":[""a;b"; hit=?0","x; fwd"],`),
		r(`"resp_headers":{`, `"resp_headers":null,"r":{`),
		r(`"logger":"http.log.access.log0"`, `"logger":"http.log.access"`),
		r(`"logger":"http.log.access.log0"`, `"logger":"http.log.accessx"`),
		r(`"logger":"http.log.access.log0"`, `"logger":"http.log.access\u002elog0"`),
		r(`"logger":"http.log.access.log0",`, ``),
		r(`"bytes_read":0`, `"bytes_read":[1,{"a":true,"b":false,"c":null,"d":-1.5e+3}]`),
		r(`"bytes_read":0`, `"bytes_read":tru`),
		r(`"bytes_read":0`, `"bytes_read":[1,]`),
		r(`"bytes_read":0`, `"bytes_read":{,}`),
		r(`"bytes_read":0`, `"bytes_read":"\\\\"`),
		r(`"bytes_read":0`, `"bytes_read" : 0 ,"x":-nan, "y":+Inf`),
		r(`"bytes_read":0`, `"bytes_read":`+strings.Repeat("[", 40)+strings.Repeat("]", 40)),
		r(`"request":{`, `"request":{"request":{},`),
		// where the shortcuts of the skip could go wrong (more in
		// skippedValueLines): a header array of one string that is not quite
		// that, an escaped key, unfinished literals and numbers
		r(`"Connection":["close"]`, `"Connection":["close",]`),
		r(`"Connection":["close"]`, `"Connection":["close"}`),
		r(`"Connection":["close"]`, `"Connection":["close"`),
		r(`"Connection":["close"]`, `"Conn\"ection":["close"]`),
		r(`"headers":{`, `"tls":{"a":[1,2}},"headers":{`),
		r(`"bytes_read":0`, `"bytes_read":-`),
		r(`"bytes_read":0`, `"bytes_read":+inf`),
		r(`"bytes_read":0`, `"bytes_read":1e`),
		r(`"bytes_read":0`, `"bytes_read":nul`),
		r(`"bytes_read":0`, `"bytes_read":NAN`),
		r(`"Via":["0.0 Caddy"],`, `"Via":["0.0 Caddy"],"Via":["1.1 other"],`),
		baseLine + "x",
		baseLine + "}",
		baseLine[:len(baseLine)-1],
		`{"request":{"uri":"/","client_ip":"1.1.1.1"},"ts":1,"status":0}`,
		`{"request":{"uri":"/","remote_ip":"1.1.1.1","headers":{"Cookie":["REDACTED"]}},"ts":1,"status":1}`,
		`{"request":{"uri":"?","client_ip":"::1"},"ts":1e10,"status":999,"resp_headers":{}}`,
		`{"request":[],"ts":1,"status":200}`,
		`{"ts":1,"status":200}`,
		`[1]`, `{}`, `{"a":1}x`, `"x"`,
		// the oldest Caddy lines: remote_addr only, or next to remote_ip
		`{"request":{"uri":"/","remote_addr":"1.1.1.1:80"},"ts":1,"status":1}`,
		`{"request":{"uri":"/","remote_addr":"[2001:db8::1]:443"},"ts":1,"status":1}`,
		`{"request":{"uri":"/","remote_addr":"1.1.1.1"},"ts":1,"status":1}`,
		`{"request":{"uri":"/","remote_addr":"1.1.1.1:99999"},"ts":1,"status":1}`,
		`{"request":{"uri":"/","remote_addr":null,"remote_ip":"1.1.1.1"},"ts":1,"status":1}`,
		`{"request":{"uri":"/","remote_addr":"1.1.1.1:80","remote_ip":"2.2.2.2","remote_port":""},"ts":1,"status":1}`,
		`{"request":{"uri":"/","client_ip":"1.1.1.1","remote_port":"x1"},"ts":1,"status":1}`,
		`{"request":{"uri":"/","client_ip":"1.1.1.1","remote_port":7},"ts":1,"status":1}`,
		// whole-number durations (ms, ns) and their edges
		`{"request":{"uri":"/","client_ip":"1.1.1.1"},"ts":1,"status":1,"duration":35}`,
		`{"request":{"uri":"/","client_ip":"1.1.1.1"},"ts":1,"status":1,"duration":035}`,
		`{"request":{"uri":"/","client_ip":"1.1.1.1"},"ts":1,"status":1,"duration":1e3}`,
		`{"request":{"uri":"/","client_ip":"1.1.1.1"},"ts":1,"status":1,"duration":99999999999999999999}`,
	}...)
}

// TestFastPathTakesCaddyLines: real and generated Caddy lines go the fast way
// (the speed of ingest depends on it); the rare ones that do not are still read.
func TestFastPathTakesCaddyLines(t *testing.T) {
	var gen bytes.Buffer
	if _, err := benchlog.Generate(&gen, benchlog.GenOptions{Size: 2 << 20, Clients: 500}); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"lab sample": readFile(t, sampleLog), "genLog": genLog(500, 3), "benchlog": gen.Bytes()} {
		lp := newLineParser()
		lp.cookie = sources.CompileCookiePattern("wikiUserID=")
		n, fast := 0, 0
		for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
			n++
			var r sources.Request
			if lp.parseFast(line, &r) {
				fast++
			}
		}
		if fast < n*99/100 {
			t.Errorf("%s: %d of %d lines took the fast path", name, fast, n)
		}
	}
}

// TestFastPathTakesZonedStringTimes: a log written with time_format
// iso8601, rfc3339_nano or common_log goes the fast way too, to the same
// time; a wall clock's (no zone) does not, as the slow path counts it.
func TestFastPathTakesZonedStringTimes(t *testing.T) {
	at := func(ns int) time.Time { return time.Date(2026, 11, 29, 15, 34, 10, ns, time.UTC) }
	for ts, want := range map[string]time.Time{
		`"2026-11-30T00:34:10.405+0900"`:      at(405000000), // iso8601 east of UTC, as zap writes it
		`"2026-11-29T10:04:10.4057534-05:30"`: at(405753000), // rfc3339_nano, rounded to the microsecond
		`"2026-11-29T15:34:10.405753Z"`:       at(405753000),
		`"29/Nov/2026:15:34:10 +0000"`:        at(0), // common_log: whole seconds
		`"2026/11/29 15:34:10.405753"`:        {},    // wall: no zone, the slow path's
		`"2026-11-29T15:34:10.405\u002b0000"`: {},    // an escape: the slow path's
	} {
		line := strings.Replace(baseLine, `"ts":1795966450.4057534`, `"ts":`+ts, 1)
		var got sources.Request
		if took := newLineParser().parseFast([]byte(line), &got); took != !want.IsZero() {
			t.Errorf("ts %s: the fast path took it: %v, want %v", ts, took, !want.IsZero())
		} else if took && got.Time != want {
			t.Errorf("ts %s: read as %v, want %v", ts, got.Time, want)
		}
	}
}

// TestZonedTimeIsTheLayouts: zonedTime, which does not try rfc3339 on a
// string that cannot end as it does, reads what trying every layout in
// turn reads.
func TestZonedTimeIsTheLayouts(t *testing.T) {
	for _, s := range []string{
		"2026-11-29T15:34:10Z", "2026-11-29T15:34:10.405Z", "2026-11-29T15:34:10.4057534+09:00", "2026-11-29T15:34:10-05:30",
		"2026-11-29T15:34:10.405+0900", "2026-11-29T15:34:10.405Z0900", "2026-11-29T15:34:10.405+09", "2026-11-29T15:34:10.405z",
		"2026-11-29T15:34:10.405+09:00 ", "2026-11-29T15:34:10+09:0", "29/Nov/2026:15:34:10 +0000", "29/Nov/2026:15:34:10 Z",
		"2026-11-29t15:34:10z", "2026-11-29T15:34:10.Z", "2026-11-29T24:00:00Z", "Z", ":00:00", "", "2026/11/29 15:34:10",
	} {
		var want time.Time
		for _, layout := range zonedLayouts {
			if v, err := time.Parse(layout, s); err == nil {
				want = v.Round(time.Microsecond).UTC()
				break
			}
		}
		if got, ok := zonedTime(s); got != want || ok == want.IsZero() {
			t.Errorf("zonedTime(%q) = %v, %v; the layouts read %v", s, got, ok, want)
		}
	}
}

// skippedValueLines are valid lines whose values the fast path skips hold
// what a shortcut could trip on: escaped quotes and backslashes where a search
// for the closing quote would stop early, at and past the words looked at in
// place; whitespace; nesting; names that share a prefix with one it reads.
func skippedValueLines() []string {
	r := func(old, new string) string { return strings.Replace(baseLine, old, new, 1) }
	return []string{
		r(`"Connection":["close"]`, `"Connection":["close" ]`),
		r(`"Connection":["close"]`, `"Connection":[ "close"]`),
		r(`"Connection":["close"]`, `"Connection":["close","keep-alive"]`),
		r(`"Connection":["close"]`, `"Connection":["\"close\""]`),
		r(`"Connection":["close"]`, `"Connection":["clo\\"]`),
		r(`"Connection":["close"]`, `"Connection":["clo\\\"se"]`),
		r(`"Connection":["close"]`, `"Connection":["0123456\"]"]`),
		r(`"Connection":["close"]`, `"Connection":["01234567\\"]`),
		r(`"Connection":["close"]`, `"Connection":["0123456789abcdef\"]"]`),
		r(`"Connection":["close"]`, `"Connection":["0123456789abcdefghij\\\\\"]"]`),
		r(`"Connection":["close"]`, `"User-Agent-Extra":["x"],"User-Agen":["y"],"Cookie2":["wikiUserID=1"]`),
		r(`"headers":{`, `"tls":{"server_name":"a\"},{","alpn":["h2","\\"],"v":-1.5e3},"headers":{`),
		r(`"headers":{`, `"tls":{"a":{"b":[{"c":[]},{}]},"d":[[["]"]]]},"headers":{`),
		r(`"headers":{`, `"tls":{"a":1 , "b" : [ 2 , { } ] },"headers":{`),
		r(`"bytes_read":0`, `"bytes_read":"\\\"}"`),
		r(`"resp_headers":{`, `"resp_headers":{"X-Powered-By-Not":["x"],`),
	}
}

// TestFastPathSkipsWhatItDoesNotRead: the fast path takes skippedValueLines
// and reads them as the slow path does. Giving up on them would be correct but
// slow, so agreement alone would not show a skip that loses its place.
func TestFastPathSkipsWhatItDoesNotRead(t *testing.T) {
	for _, line := range skippedValueLines() {
		lp := newLineParser()
		var got sources.Request
		if !lp.parseFast([]byte(line), &got) {
			t.Errorf("the fast path gave up on %s", line)
			continue
		}
		var want sources.Request
		if reason := newLineParser().parseSlow([]byte(line), &want); reason != "" || got != want {
			t.Errorf("line %s:\nfast path: %+v\nslow path: %q %+v", line, got, reason, want)
		}
	}
}

// TestFastPathAgrees runs the probe lines through both paths.
func TestFastPathAgrees(t *testing.T) {
	for _, cookie := range []string{"", "wikiUserID="} {
		for _, line := range fastSeeds() {
			checkFastAgrees(t, []byte(line), cookie)
		}
	}
}

// FuzzFastPath: for every line, parse (fast path first) gives exactly what the
// slow path alone gives: the same reason, or the same Request.
func FuzzFastPath(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	for _, s := range fastSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkFastAgrees(t, line, "wikiUserID=")
	})
}

func checkFastAgrees(t *testing.T, line []byte, cookie string) {
	t.Helper()
	line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(line) {
		return
	}
	// Durations read as seconds, and as milliseconds (duration_format ms).
	for _, unit := range []float64{1, 1e3} {
		slow, both := newLineParser(), newLineParser()
		slow.cookie, both.cookie = sources.CompileCookiePattern(cookie), sources.CompileCookiePattern(cookie)
		slow.durUnit, both.durUnit = unit, unit
		var want, got sources.Request
		wantReason := slow.parseSlow(line, &want)
		gotReason := both.parse(line, &got)
		if wantReason == ReasonMalformedJSON && gotReason != wantReason {
			// Not JSON: parse tried the console encoder, which has no fast
			// path, unless the fast path took the line, which it must not.
			var r sources.Request
			if fast := newLineParser(); fast.parseFast(line, &r) {
				t.Errorf("line %q: the fast path took a line fastjson refuses: %+v", line, r)
			}
			continue
		}
		if gotReason != wantReason || got != want {
			t.Errorf("line %q, cookie %q, unit %g:\nfast path: %q %+v\nslow path: %q %+v", line, cookie, unit, gotReason, got, wantReason, want)
		}
		if wantReason == "" && (slow.port != both.port || slow.counts != both.counts) {
			t.Errorf("line %q: port %d, counts %+v (fast); %d, %+v (slow)", line, both.port, both.counts, slow.port, slow.counts)
		}
	}
}

// timeOfNumberOriginal is parseTime's number branch before issue 9 (without
// its shortcut for plain seconds), the reference for timeOfNumber.
func timeOfNumberOriginal(num []byte) (time.Time, bool) {
	f, err := fastfloat.Parse(string(num))
	if err != nil || math.IsNaN(f) || f <= 0 || f >= 9e18 {
		return time.Time{}, false
	}
	shift := -3
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
	return time.UnixMicro(int64(math.Round(f * math.Pow10(shift)))).UTC(), true
}

func FuzzTimeOfNumber(f *testing.F) {
	for _, s := range []string{"1795966450.4057534", "9999999999.9999999", "99999999999.99999999", "10", "10.", "9.5",
		"1795966450", "0179596645.1", "1795966450.1.2", "1790955175.916586", "1790955175.9165865", "1790955175.91:5862", "0790955175.9165862", "1795966450e3", "1795966450405.7534", "1e9", "-1", "nan", "1795966450.99999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, num string) {
		lp := newLineParser()
		got, gotOK := lp.timeOfNumber([]byte(num))
		want, wantOK := timeOfNumberOriginal([]byte(num))
		if gotOK != wantOK || !got.Equal(want) {
			t.Errorf("timeOfNumber(%q) = %v %v, the original %v %v", num, got, gotOK, want, wantOK)
		}
	})
}

// caddySeconds answers as intDigits and scaleDecimal(num, 6) do, on Caddy's
// ts of 17 and 18 bytes with each byte replaced by every other byte: a
// digit check that let ':' or '/' through (the neighbours of the digits),
// a point in the wrong place, a leading 0 or a wrong rounding of the
// seventh digit would answer differently. It must also take every such ts
// that is plain digits, or timeOfNumber would be no faster.
func TestCaddySecondsIsScaleDecimal(t *testing.T) {
	tried, taken := 0, 0
	for _, ts := range []string{"1790955175.9165862", "1790955175.916586", "9999999999.9999995", "1000000000.0000004", "1790955175.9165849"} {
		for at := range len(ts) {
			for c := range 256 {
				num := []byte(ts)
				num[at] = byte(c)
				got, ok := caddySeconds(num)
				want, wantOK := scaleDecimal(num, 6)
				wantOK = wantOK && intDigits(num) == 10 && num[0] != '0'
				if ok && (!wantOK || got != want) || !ok && wantOK {
					t.Fatalf("%q: caddySeconds %d %v, scaleDecimal %d %v", num, got, ok, want, wantOK)
				}
				tried++
				if ok {
					taken++
				}
			}
		}
	}
	if tried < 20000 || taken < 400 {
		t.Fatalf("only %d cases, %d taken", tried, taken)
	}
}

// key's window agrees with keySlow on every key it might misread: keys of
// 0 to 26 bytes (the window holds 24), a backslash (before a ':' too) or a
// quote at each place,
// whitespace on either side of the ':', and the line ending at each byte
// after the key, up to a tail that gives even an empty key the window's 27
// bytes (without it, no key shorter than 14 bytes reached the window). A
// window that took a backslash for the key's end, missed whitespace after
// the ':' or read past a short line would answer differently.
func TestKeyWindowAgreesWithKeySlow(t *testing.T) {
	var keys []string
	for n := 0; n <= 26; n++ {
		name := strings.Repeat("k", n)
		keys = append(keys, name)
		for at := 0; at < n; at++ {
			keys = append(keys, name[:at]+`\`+name[at+1:], name[:at]+`\"`+name[at+1:], name[:at]+`\:`+name[at+1:], name[:at]+`"`+name[at+1:])
		}
	}
	tail := `,"next":"` + strings.Repeat("n", 20) + `"}`
	tried := 0
	for _, k := range keys {
		for _, after := range []string{`:"v","x":1}`, `:1}`, ` :1}`, `: 1}`, ":\t1}", `:`, `,`, ``} {
			line := `"` + k + `"` + after + tail
			for cut := len(line); cut > len(k); cut-- {
				for _, pad := range []string{"", " "} {
					s := []byte(pad + line[:cut])
					fast, slow := scan{s: s}, scan{s: s}
					fk, fok := fast.key()
					sk, sok := slow.keySlow()
					if fok != sok || !bytes.Equal(fk, sk) || fok && fast.i != slow.i {
						t.Fatalf("%q: key gives %q %v at %d, keySlow %q %v at %d", s, fk, fok, fast.i, sk, sok, slow.i)
					}
					tried++
				}
			}
		}
	}
	if tried < 10000 {
		t.Fatalf("only %d cases", tried)
	}
}

// skipString ends a string where an escape-skipping scan does (the first
// quote not escaped by an odd run of backslashes), for strings of 0 to 40
// bytes with a quote, a backslash or two before a quote at each place, the
// line cut at each byte: inside its two-word window, across its end and on
// a line too short for it. A window that took a backslash for the end, or
// read its seventeenth byte as the string's, would answer differently.
func TestSkipStringAgreesWithAnEscapeScan(t *testing.T) {
	escapeScan := func(s []byte, i int) int {
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	}
	tried := 0
	for n := 0; n <= 40; n++ {
		body := strings.Repeat("v", n)
		bodies := []string{body}
		for at := 0; at < n; at++ {
			for _, put := range []string{`"`, `\`, `\"`, `\\"`, `\\\"`} {
				bodies = append(bodies, body[:at]+put+body[at:])
			}
		}
		for _, b := range bodies {
			line := `"` + b + `"]}`
			for cut := len(line); cut >= 1; cut-- {
				s := []byte(line[:cut])
				if got, want := skipString(s, 0), escapeScan(s, 0); got != want {
					t.Fatalf("%q: skipString %d, want %d", s, got, want)
				}
				tried++
			}
		}
	}
	if tried < 10000 {
		t.Fatalf("only %d cases", tried)
	}
}

// TestEqualFoldIsBytesEqualFold: equalFold, equalFoldSameLength and foldName answer as
// bytes.EqualFold for every name they are asked about, on every spelling of
// the name with one byte replaced by any other, on mixed case, and on names
// of the same length that are another header (Accept for Cookie). A byte
// that differs only in bit 0x20 from a '-' (a carriage return) must not
// match, nor a letter written as a rune that folds to it ("\u212aey" is
// "key" to bytes.EqualFold, at another length).
func TestEqualFoldIsBytesEqualFold(t *testing.T) {
	names := []string{"User-Agent", "Referer", "Accept-Language", "Cookie", "Sec-Ch-Ua", "Authorization",
		ViaHeader, PoweredByHeader, CacheStatusHeader, XCacheHeader, AgeHeader,
		CacheStatusKey, CacheStatusDetail, CacheStatusHit, "fwd"}
	check := func(k []byte, name string) {
		t.Helper()
		want := bytes.EqualFold(k, []byte(name))
		if got := equalFold(k, name); got != want {
			t.Errorf("equalFold(%q, %q) = %v, bytes.EqualFold says %v", k, name, got, want)
		}
		if len(k) == len(name) {
			if got := equalFoldSameLength(k, name); got != want {
				t.Errorf("equalFoldSameLength(%q, %q) = %v, bytes.EqualFold says %v", k, name, got, want)
			}
		}
		if len(name) >= 4 && len(name) <= 16 {
			f := newFoldName(name)
			// At another length the callers want no match (they never
			// took one): "Coo\u212aie" is not the Cookie header.
			if got := f.is(k); got != (want && len(k) == len(name)) {
				t.Errorf("foldName(%q).is(%q) = %v, bytes.EqualFold says %v", name, k, got, want)
			}
		}
	}
	matches := 0
	for _, name := range names {
		for _, k := range []string{name, strings.ToLower(name), strings.ToUpper(name), "uSeR-aGeNt", "sEC-cH-uA",
			"Accept", "Accept-Encoding", "Connection", "Cache-Control", "Sec-Ch-Ub", "User\rAgent", "Sec\rCh\rUa",
			"\u212aey", "\u212aEY", "Coo\u212aie", "\u017fec-Ch-Ua", "Via ", ""} {
			check([]byte(k), name)
			if equalFold([]byte(k), name) {
				matches++
			}
		}
		for i := range len(name) {
			for c := range 256 {
				k := []byte(name)
				k[i] = byte(c)
				check(k, name)
			}
		}
	}
	// The spellings above that are the name: itself, lower and upper case
	// for each, the two mixed-case ones, and those with a longer rune (all
	// of another length): "\u212aey" and "\u212aEY" for key, "Coo\u212aie"
	// and "\u017fec-Ch-Ua".
	if want := 3*len(names) + 2 + 4; matches != want {
		t.Errorf("%d spellings matched, want %d", matches, want)
	}
}
