package accesslog

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

func parseOne(line, cookie string) (sources.Request, string) {
	lp := newLineParser()
	lp.cookie = sources.CompileCookiePattern(cookie)
	var r sources.Request
	reason := lp.parse([]byte(line), &r)
	return r, reason
}

func TestParseBaseLine(t *testing.T) {
	got, reason := parseOne(baseLine, "wikiUserID=")
	if reason != "" {
		t.Fatalf("skipped: %s", reason)
	}
	want := sources.Request{
		Time:      time.UnixMicro(1795966450405753).UTC(),
		ClientIP:  netip.MustParseAddr("127.170.105.56"),
		Method:    "GET",
		Host:      "wiki.lab.test",
		Path:      "/w/%EC%84%B1%EB%A7%A4%EB%A7%A4_%EB%B9%84%ED%8C%90",
		Status:    200,
		Duration:  0.035747075,
		Size:      1026,
		UserAgent: "Mozilla/5.0 (Linux; Android 14; SM-S918N) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.6422.113 Mobile Safari/537.36",
		Lang:      "ko-kr",
		LoggedIn:  sources.LoggedInNo,
		Origin:    sources.OriginUpstream,
	}
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestParseLine changes one thing in a real line and checks what comes out.
func TestParseLine(t *testing.T) {
	set := func(path string, v any) func(map[string]any) {
		return func(m map[string]any) {
			keys := strings.Split(path, ".")
			for _, k := range keys[:len(keys)-1] {
				m = m[k].(map[string]any)
			}
			if v == nil {
				delete(m, keys[len(keys)-1])
			} else {
				m[keys[len(keys)-1]] = v
			}
		}
	}
	null := json.RawMessage("null")
	healthCheckerLine, _, _ := strings.Cut(string(readFile(t, "testdata/caddy-own.log")), "\n")
	num := func(s string) json.Number { return json.Number(s) }
	tests := []struct {
		name   string
		mod    func(map[string]any)
		raw    string // used instead of mod when set
		reason string
		check  func(t *testing.T, r sources.Request)
	}{
		{name: "IPv6 client", mod: set("request.client_ip", "2001:db8::5"), check: func(t *testing.T, r sources.Request) {
			if r.ClientIP != netip.MustParseAddr("2001:db8::5") {
				t.Errorf("ClientIP = %v", r.ClientIP)
			}
		}},
		{name: "IPv6 with zone loses the zone", mod: set("request.client_ip", "fe80::1%eth0"), check: func(t *testing.T, r sources.Request) {
			if r.ClientIP != netip.MustParseAddr("fe80::1") {
				t.Errorf("ClientIP = %v", r.ClientIP)
			}
		}},
		{name: "IPv4-mapped IPv6 becomes IPv4", mod: set("request.client_ip", "::ffff:192.0.2.7"), check: func(t *testing.T, r sources.Request) {
			if r.ClientIP != netip.MustParseAddr("192.0.2.7") {
				t.Errorf("ClientIP = %v", r.ClientIP)
			}
		}},
		{name: "client_ip wins over remote_ip", mod: func(m map[string]any) {
			req(m)["client_ip"] = "203.0.113.9"
			req(m)["remote_ip"] = "10.0.0.1"
		}, check: func(t *testing.T, r sources.Request) {
			if r.ClientIP != netip.MustParseAddr("203.0.113.9") {
				t.Errorf("ClientIP = %v", r.ClientIP)
			}
		}},
		{name: "no client_ip falls back to remote_ip", mod: func(m map[string]any) {
			delete(req(m), "client_ip")
			req(m)["remote_ip"] = "10.0.0.1"
		}, check: func(t *testing.T, r sources.Request) {
			if r.ClientIP != netip.MustParseAddr("10.0.0.1") {
				t.Errorf("ClientIP = %v", r.ClientIP)
			}
		}},
		{name: "empty client_ip falls back to remote_ip", mod: func(m map[string]any) {
			req(m)["client_ip"] = ""
			req(m)["remote_ip"] = "10.0.0.2"
		}, check: func(t *testing.T, r sources.Request) {
			if r.ClientIP != netip.MustParseAddr("10.0.0.2") {
				t.Errorf("ClientIP = %v", r.ClientIP)
			}
		}},
		{name: "unparsable client_ip", mod: set("request.client_ip", "127.0.0.999"), reason: ReasonBadClientIP},
		{name: "client_ip not a string", mod: set("request.client_ip", num("12")), reason: ReasonBadClientIP},
		{name: "no address at all", mod: func(m map[string]any) {
			delete(req(m), "client_ip")
			delete(req(m), "remote_ip")
		}, reason: ReasonMissingClientIP},

		{name: "query split at the first ?", mod: set("request.uri", "/index.php?title=A?B&action=edit"), check: func(t *testing.T, r sources.Request) {
			if r.Path != "/index.php" || r.Query != "title=A?B&action=edit" {
				t.Errorf("Path, Query = %q, %q", r.Path, r.Query)
			}
		}},
		{name: "empty query", mod: set("request.uri", "/a?"), check: func(t *testing.T, r sources.Request) {
			if r.Path != "/a" || r.Query != "" {
				t.Errorf("Path, Query = %q, %q", r.Path, r.Query)
			}
		}},
		{name: "escaped uri is unescaped", raw: strings.Replace(baseLine, `"uri":"/w/`, `"uri":"\/w\/\u00e9\"`, 1), check: func(t *testing.T, r sources.Request) {
			if !strings.HasPrefix(r.Path, `/w/é"`) {
				t.Errorf("Path = %q", r.Path)
			}
		}},
		{name: "missing uri", mod: set("request.uri", nil), reason: ReasonMissingURI},
		{name: "empty uri", mod: set("request.uri", ""), reason: ReasonMissingURI},
		{name: "uri not a string", mod: set("request.uri", num("5")), reason: ReasonMissingURI},
		{name: "request not an object", mod: set("request", "GET /"), reason: ReasonMissingURI},

		{name: "missing ts", mod: set("ts", nil), reason: ReasonMissingTS},
		{name: "ts junk string", mod: set("ts", "yesterday"), reason: ReasonBadTS},
		{name: "ts negative", mod: set("ts", num("-5")), reason: ReasonBadTS},
		{name: "ts NaN", raw: strings.Replace(baseLine, `"ts":1795966450.4057534`, `"ts":NaN`, 1), reason: ReasonBadTS},
		{name: "ts not a number", raw: strings.Replace(baseLine, `"ts":1795966450.4057534`, `"ts":1-2`, 1), reason: ReasonBadTS},
		{name: "ts in milliseconds", mod: set("ts", num("1795966450405.7534")), check: wantTime(time.UnixMicro(1795966450405753))},
		{name: "ts in microseconds", mod: set("ts", num("1795966450405753")), check: wantTime(time.UnixMicro(1795966450405753))},
		{name: "ts in nanoseconds", mod: set("ts", num("1795966450405753500")), check: wantTime(time.UnixMicro(1795966450405754))},
		{name: "ts as RFC 3339", mod: set("ts", "2026-11-29T15:34:10.405753Z"), check: wantTime(time.UnixMicro(1795966450405753))},
		{name: "ts as zap ISO 8601", mod: set("ts", "2026-11-30T00:34:10.405+0900"), check: wantTime(time.UnixMilli(1795966450405))},

		{name: "missing status", mod: set("status", nil), reason: ReasonMissingStatus},
		{name: "status as string", mod: set("status", "200"), reason: ReasonBadStatus},
		{name: "status out of range", mod: set("status", num("1000")), reason: ReasonBadStatus},
		{name: "status fractional", mod: set("status", num("200.5")), reason: ReasonBadStatus},
		{name: "status 0 is kept", mod: set("status", num("0")), check: func(t *testing.T, r sources.Request) {
			if r.Status != 0 {
				t.Errorf("Status = %d", r.Status)
			}
		}},

		{name: "duration as Go string", mod: set("duration", "1.5s"), check: func(t *testing.T, r sources.Request) {
			if r.Duration != 1.5 {
				t.Errorf("Duration = %v", r.Duration)
			}
		}},
		{name: "missing duration is zero", mod: set("duration", nil), check: func(t *testing.T, r sources.Request) {
			if r.Duration != 0 {
				t.Errorf("Duration = %v", r.Duration)
			}
		}},
		{name: "negative duration", mod: set("duration", num("-0.1")), reason: ReasonBadDuration},
		{name: "duration junk", mod: set("duration", "soon"), reason: ReasonBadDuration},
		{name: "negative size", mod: set("size", num("-1")), reason: ReasonBadSize},
		{name: "size as string", mod: set("size", "12"), reason: ReasonBadSize},

		{name: "health checker logger", raw: healthCheckerLine, reason: ReasonNotAccessLog},
		{name: "access logger without suffix", mod: set("logger", "http.log.access"), check: func(*testing.T, sources.Request) {}},
		{name: "logger with a look-alike prefix", mod: set("logger", "http.log.accessory"), reason: ReasonNotAccessLog},
		{name: "logger not a string", mod: set("logger", num("1")), reason: ReasonNotAccessLog},
		{name: "no logger but a request", mod: set("logger", nil), check: func(*testing.T, sources.Request) {}},
		{name: "no logger, no request: Caddy's default logger", raw: `{"level":"info","ts":1795966434.7949092,"msg":"maxprocs: Leaving GOMAXPROCS=2"}`, reason: ReasonNotAccessLog},
		{name: "JSON array", raw: `[1,2,3]`, reason: ReasonUnknownShape},
		{name: "JSON string", raw: `"handled request"`, reason: ReasonUnknownShape},
		{name: "malformed JSON", raw: baseLine[:len(baseLine)-1], reason: ReasonMalformedJSON},
		{name: "trailing garbage", raw: baseLine + `}`, reason: ReasonMalformedJSON},
		{name: "common log format", raw: `127.0.0.1 - - [29/Nov/2026:15:34:10 +0000] "GET / HTTP/1.1" 200 1026`, reason: ReasonMalformedJSON},
		{name: "invalid UTF-8 in a string", raw: strings.Replace(baseLine, "SM-S918N", "SM-\xff\xfe", 1), reason: ReasonInvalidUTF8},
		{name: "byte-order mark", raw: "\xef\xbb\xbf" + baseLine, check: func(*testing.T, sources.Request) {}},
		{name: "CR at the end", raw: baseLine + "\r", check: func(*testing.T, sources.Request) {}},
		{name: "HTTPS", mod: set("request.tls", map[string]any{"resumed": false, "version": 772, "cipher_suite": 4865, "proto": "h2", "server_name": "wiki.lab.test"}), check: func(t *testing.T, r sources.Request) {
			if !r.TLS {
				t.Errorf("TLS = false for a line with a tls object")
			}
		}},
		{name: "HTTP/3 without a tls object", mod: set("request.proto", "HTTP/3.0"), check: func(t *testing.T, r sources.Request) {
			if !r.TLS {
				t.Errorf("TLS = false for HTTP/3, which browsers speak only over TLS")
			}
		}},
		{name: "tls null", mod: set("request.tls", null), check: func(t *testing.T, r sources.Request) {
			if r.TLS {
				t.Errorf("TLS = true for tls:null")
			}
		}},
		{name: "resp_headers null", mod: set("resp_headers", null), check: func(t *testing.T, r sources.Request) {
			if r.Origin != sources.OriginUnknown {
				t.Errorf("Origin = %v", r.Origin)
			}
		}},
		{name: "headers not an object", mod: set("request.headers", "x"), check: func(t *testing.T, r sources.Request) {
			if r.UserAgent != "" || r.Lang != "" || r.HasCookie {
				t.Errorf("got header fields from nothing: %+v", r)
			}
		}},
		{name: "header value as bare string", mod: set("request.headers.User-Agent", "curl/8"), check: func(t *testing.T, r sources.Request) {
			if r.UserAgent != "curl/8" {
				t.Errorf("UserAgent = %q", r.UserAgent)
			}
		}},
		{name: "empty header array", mod: set("request.headers.User-Agent", []string{}), check: func(t *testing.T, r sources.Request) {
			if r.UserAgent != "" {
				t.Errorf("UserAgent = %q", r.UserAgent)
			}
		}},
		{name: "first User-Agent value", mod: set("request.headers.User-Agent", []string{"a", "b"}), check: func(t *testing.T, r sources.Request) {
			if r.UserAgent != "a" {
				t.Errorf("UserAgent = %q", r.UserAgent)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := tt.raw
			if line == "" {
				line = caddyLine(t, tt.mod)
			}
			r, reason := parseOne(line, "wikiUserID=")
			if reason != tt.reason {
				t.Fatalf("reason = %q, want %q", reason, tt.reason)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

func wantTime(want time.Time) func(*testing.T, sources.Request) {
	return func(t *testing.T, r sources.Request) {
		t.Helper()
		if !r.Time.Equal(want) {
			t.Errorf("Time = %v, want %v", r.Time.UTC(), want.UTC())
		}
	}
}

func TestParseTimeKeepsMicroseconds(t *testing.T) {
	for _, tc := range []struct {
		ts   string
		want int64
	}{
		{"1795966435.061845", 1795966435061845},
		{"1795966450.2466521", 1795966450246652},
		{"1795966450.0000005", 1795966450000001}, // rounds, not truncates
		{"1795966450", 1795966450000000},
		{"1795966450.9999996", 1795966451000000}, // the carry reaches the seconds
		{"1.7959664502466521e9", 1795966450246652},
	} {
		line := strings.Replace(baseLine, `"ts":1795966450.4057534`, `"ts":`+tc.ts, 1)
		r, reason := parseOne(line, "")
		if reason != "" || r.Time.UnixMicro() != tc.want {
			t.Errorf("ts %s: got %d (%q), want %d", tc.ts, r.Time.UnixMicro(), reason, tc.want)
		}
	}
}

func TestLang(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"zh-CN,zh;q=0.9", "zh-cn"},
		{"ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7", "ko-kr"},
		{"en-US", "en-us"},
		{"de", "de"},
		{" fr ; q=0.5, en", "fr"},
		{"en;q=0.1,ja;q=0.9", "en"}, // first entry, not the highest q
		{"en_US", "en_us"},
		{"*", ""},
		{"*;q=0.5", ""},
		{"", ""},
		{",en", ""},
		{"<script>", ""},
		{"zh-Hant-TW-x-private-use-and-then-some-more", ""},
		{"\u00e9n", ""},
	} {
		line := caddyLine(t, func(m map[string]any) { headers(m)["Accept-Language"] = []string{tc.in} })
		r, reason := parseOne(line, "")
		if reason != "" || r.Lang != tc.want {
			t.Errorf("Accept-Language %q: Lang = %q (%q), want %q", tc.in, r.Lang, reason, tc.want)
		}
	}
	line := caddyLine(t, func(m map[string]any) { delete(headers(m), "Accept-Language") })
	if r, _ := parseOne(line, ""); r.Lang != "" {
		t.Errorf("no Accept-Language: Lang = %q", r.Lang)
	}
}

func TestLoggedIn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pattern string
		cookie  []string // nil: no Cookie header
		want    sources.LoggedIn
		has     bool
	}{
		{"no pattern, no cookie", "", nil, sources.LoggedInNo, false},
		{"no pattern, cookie", "", []string{"wikiUserID=7; x=y"}, sources.LoggedInUnknown, true},
		{"no pattern, redacted", "", []string{"REDACTED"}, sources.LoggedInUnknown, true},
		{"pattern, no cookie", "wikiUserID=", nil, sources.LoggedInNo, false},
		{"pattern found", "wikiUserID=", []string{"wikiUserID=7479; wikiUserName=W; wiki_session=REDACTED"}, sources.LoggedInYes, true},
		{"pattern in second value", "wikiUserID=", []string{"a=b", "wikiUserID=1"}, sources.LoggedInYes, true},
		{"redacted", "wikiUserID=", []string{"REDACTED"}, sources.LoggedInUnknown, true},
		{"readable, without pattern", "wikiUserID=", []string{"_ga=GA1.2"}, sources.LoggedInNo, true},
		{"pattern is case-sensitive", "wikiUserID=", []string{"wikiuserid=1"}, sources.LoggedInNo, true},
		{"empty cookie array", "wikiUserID=", []string{}, sources.LoggedInNo, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := caddyLine(t, func(m map[string]any) {
				if tc.cookie != nil {
					headers(m)["Cookie"] = tc.cookie
				}
			})
			r, reason := parseOne(line, tc.pattern)
			if reason != "" {
				t.Fatal(reason)
			}
			if r.LoggedIn != tc.want || r.HasCookie != tc.has {
				t.Errorf("LoggedIn, HasCookie = %v, %v; want %v, %v", r.LoggedIn, r.HasCookie, tc.want, tc.has)
			}
		})
	}
}

func TestHeaderNamesIgnoreCase(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers map[string]any
		ua      string
		secChUa bool
		cookie  bool
		auth    bool
	}{
		{"canonical", map[string]any{"User-Agent": []string{"A"}, "Sec-Ch-Ua": []string{`"Chromium";v="125"`}, "Cookie": []string{"x=1"}}, "A", true, true, false},
		{"spec spelling", map[string]any{"user-agent": []string{"B"}, "Sec-CH-UA": []string{`"Chromium"`}, "COOKIE": []string{"x=1"}}, "B", true, true, false},
		{"related hints only", map[string]any{"User-Agent": []string{"C"}, "Sec-Ch-Ua-Mobile": []string{"?0"}, "Sec-Ch-Ua-Platform": []string{`"Linux"`}}, "C", false, false, false},
		// Caddy without log_credentials keeps the name, its value REDACTED.
		{"authorization redacted", map[string]any{"User-Agent": []string{"D"}, "Authorization": []string{"REDACTED"}}, "D", false, false, true},
		{"authorization lower-case, whole", map[string]any{"authorization": []string{"Basic dTpw"}}, "", false, false, true},
		{"proxy authorization is not the client's", map[string]any{"Proxy-Authorization": []string{"REDACTED"}}, "", false, false, false},
		{"none", map[string]any{}, "", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := caddyLine(t, func(m map[string]any) { req(m)["headers"] = tc.headers })
			r, reason := parseOne(line, "")
			if reason != "" {
				t.Fatal(reason)
			}
			if r.UserAgent != tc.ua || r.SecChUa != tc.secChUa || r.HasCookie != tc.cookie || r.Authorization != tc.auth {
				t.Errorf("UserAgent, SecChUa, HasCookie, Authorization = %q, %v, %v, %v; want %q, %v, %v, %v",
					r.UserAgent, r.SecChUa, r.HasCookie, r.Authorization, tc.ua, tc.secChUa, tc.cookie, tc.auth)
			}
		})
	}
}

func TestOrigin(t *testing.T) {
	caddyErr := map[string]any{"Server": []string{"Caddy"}, "X-Frame-Options": []string{"DENY"}}
	for _, tc := range []struct {
		name   string
		status int
		resp   any // nil: no resp_headers
		want   sources.Origin
	}{
		{"PHP via Caddy", 200, map[string]any{"Via": []string{"0.0 Caddy"}}, sources.OriginUpstream},
		{"PHP error page", 500, map[string]any{"X-Powered-By": []string{"PHP/8.2"}}, sources.OriginUpstream},
		{"lower-case via", 200, map[string]any{"via": []string{"1.1 Caddy"}}, sources.OriginUpstream},
		{"no healthy upstream", 503, caddyErr, sources.OriginProxy},
		{"Caddy's own 500", 500, caddyErr, sources.OriginProxy},
		{"FastCGI timeout", 504, caddyErr, sources.OriginProxy},
		{"rate_limit refusal", 429, caddyErr, sources.OriginProxy},
		{"dial failure", 502, map[string]any{}, sources.OriginProxy},
		{"static file", 200, map[string]any{"Content-Type": []string{"image/png"}, "Etag": []string{`"x"`}}, sources.OriginStatic},
		{"static 404", 404, caddyErr, sources.OriginStatic},
		{"no resp_headers", 200, nil, sources.OriginUnknown},
		{"no resp_headers on a 503", 503, nil, sources.OriginUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := caddyLine(t, func(m map[string]any) {
				m["status"] = tc.status
				if tc.resp == nil {
					delete(m, "resp_headers")
				} else {
					m["resp_headers"] = tc.resp
				}
			})
			r, reason := parseOne(line, "")
			if reason != "" {
				t.Fatal(reason)
			}
			if r.Origin != tc.want {
				t.Errorf("Origin = %v, want %v", r.Origin, tc.want)
			}
		})
	}
}

// TestInternedStringsAreCopies guards the rule that nothing in a Request points
// into the parser's buffer, which the next line overwrites.
func TestInternedStringsAreCopies(t *testing.T) {
	lp := newLineParser()
	var first sources.Request
	if reason := lp.parse([]byte(baseLine), &first); reason != "" {
		t.Fatal(reason)
	}
	keep := first
	other := strings.NewReplacer("GET", "PUT", "wiki.lab.test", "zzzz.lab.test", "Android", "Windows", "/w/", "/x/", "ko-KR", "en-GB").Replace(baseLine)
	for range 3 {
		var r sources.Request
		if reason := lp.parse([]byte(other), &r); reason != "" {
			t.Fatal(reason)
		}
	}
	if keep.Method != "GET" || keep.Host != "wiki.lab.test" || !strings.Contains(keep.UserAgent, "Android") ||
		!strings.HasPrefix(keep.Path, "/w/") || keep.Lang != "ko-kr" {
		t.Errorf("first request changed under us: %+v", keep)
	}
}

// TestInternTableIsBounded: a bot rotating user agents must cost allocations,
// not memory.
func TestInternTableIsBounded(t *testing.T) {
	lp := newLineParser()
	for i := range 3 * maxInterned {
		line := strings.Replace(baseLine, "SM-S918N", fmt.Sprintf("SM-%d", i), 1)
		var r sources.Request
		if reason := lp.parse([]byte(line), &r); reason != "" {
			t.Fatal(reason)
		}
		if len(lp.intern) > maxInterned {
			t.Fatalf("intern table holds %d strings after %d lines", len(lp.intern), i+1)
		}
	}
	long := strings.Replace(baseLine, "SM-S918N", strings.Repeat("L", maxInternLen), 1)
	var r sources.Request
	lp.parse([]byte(long), &r)
	if _, ok := lp.intern[r.UserAgent]; ok {
		t.Errorf("a %d-byte user agent was interned", len(r.UserAgent))
	}
}

// TestSameHost: the host comparison itself, on what a log line can carry.
// A port is dropped on either side only after the last ':' outside IPv6
// brackets, so an IPv6 address is not cut at its own colons; hosts longer
// than a small stack buffer compare like short ones.
func TestSameHost(t *testing.T) {
	long := "a-rather-long-subdomain-for-a-wiki.department.example.org"
	for _, tc := range []struct {
		referer, host string
		want          bool
	}{
		{"https://wiki.lab.test/w/A", "wiki.lab.test", true},
		{"https://wiki.lab.test:8443/w/A", "wiki.lab.test", true},
		{"https://wiki.lab.test/w/A", "wiki.lab.test:8443", true},
		{"https://wiki.lab.test:443/", "wiki.lab.test:8443", true}, // ports aside, even different ones
		{"https://wiki.lab.test:8443/", "wiki.lab.test.evil:8443", false},
		{"HTTPS://WIKI.Lab.Test/", "wiki.lab.test", true},
		{"https://ÄRZTE.example/", "ärzte.example", true}, // Unicode case folds, not only ASCII
		{"http://[::1]/w/A", "[::1]:8080", true},
		{"http://[::1]:8080/w/A", "[::1]", true},
		{"http://[2001:db8::1]/", "[2001:db8::2]", false}, // cutting at the last ':' would make both "[2001:db8:"
		{"http://[2001:db8::1]:443/", "[2001:DB8::1]:8443", true},
		{"https://" + long + "/w/A", long, true},
		{"https://" + strings.ToUpper(long) + ":8443/w/A", long + ":443", true},
		{"https://" + long + "/w/A", long[1:], false},
		{"https://user:pw@wiki.lab.test:8443/", "wiki.lab.test", true},
		{"https://wiki.lab.test@evil.example/", "wiki.lab.test", false},
		{"//wiki.lab.test/w/A", "wiki.lab.test", false}, // scheme-relative: no "://", read as relative
		{"https://wiki.lab.test?q=1", "wiki.lab.test", true},
		{"https://wiki.lab.test#top", "wiki.lab.test", true},
		{"https:///w/A", "", false},
		// The referer starts with the Host, which holds what the referer's
		// host is cut at: it names another host.
		{"https://wiki.lab.test@evil.example/", "wiki.lab.test@evil.example", false},
		{"https://wiki.lab.test/x/y", "wiki.lab.test/x", false},
		{"https://wiki.lab.test?x", "wiki.lab.test?x", false},
		{"https://wiki.lab.test.evil/", "wiki.lab.test", false},
		{"https://wiki.lab.test", "wiki.lab.test", true},
	} {
		if got := sameHost([]byte(tc.referer), tc.host); got != tc.want {
			t.Errorf("sameHost(%q, %q) = %v, want %v", tc.referer, tc.host, got, tc.want)
		}
	}
}

// TestSiteReferer: whether the Referer names the request's own host, on both
// parsers. A referer that merely contains the host (an open redirect, a
// search for it, a look-alike domain) is not from the site.
func TestSiteReferer(t *testing.T) {
	for _, tc := range []struct {
		name, host string
		referer    []string // nil: no Referer header
		want       bool
	}{
		{"no referer", "wiki.lab.test", nil, false},
		{"a page of the site", "wiki.lab.test", []string{"http://wiki.lab.test/w/%EC%84%B1"}, true},
		{"https, host with port", "wiki.lab.test:8443", []string{"https://wiki.lab.test/w/A"}, true},
		{"referer with port and case", "wiki.lab.test", []string{"HTTPS://Wiki.Lab.Test:443/"}, true},
		{"no path", "wiki.lab.test", []string{"https://wiki.lab.test"}, true},
		{"search engine", "wiki.lab.test", []string{"https://www.google.com/search?q=wiki.lab.test"}, false},
		{"look-alike suffix", "wiki.lab.test", []string{"https://wiki.lab.test.evil.example/"}, false},
		{"userinfo trick", "wiki.lab.test", []string{"https://wiki.lab.test@evil.example/"}, false},
		{"relative", "wiki.lab.test", []string{"/w/A"}, false},
		{"empty", "wiki.lab.test", []string{""}, false},
		{"IPv6 host", "[::1]:8080", []string{"http://[::1]/w/A"}, true},
		{"no Host logged", "", []string{"http://wiki.lab.test/"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := caddyLine(t, func(m map[string]any) {
				req(m)["host"] = tc.host
				if tc.referer != nil {
					headers(m)["Referer"] = tc.referer
				}
			})
			checkFastAgrees(t, []byte(line), "")
			r, reason := parseOne(line, "")
			if reason != "" {
				t.Fatal(reason)
			}
			if r.SiteReferer != tc.want {
				t.Errorf("SiteReferer = %v, want %v", r.SiteReferer, tc.want)
			}
		})
	}
}
