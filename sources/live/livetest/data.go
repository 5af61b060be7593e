package livetest

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"
)

// AccessStream is the labels a fake Loki holds the access log under, which
// the selector {job="caddy"} reads: a new map on each call.
func AccessStream() map[string]string { return map[string]string{"job": "caddy", "host": "wiki"} }

// CaddyTime dates a Caddy JSON log line by its "ts" (float Unix seconds), to
// the microsecond, as a log shipper's timestamp stage would.
//
// Caddy writes "ts" second, after "level": read there, the number is had
// without parsing the rest of the line (the request, a tenth of a live
// test's time when every line was parsed whole); any other line is parsed.
func CaddyTime(line string) (time.Time, bool) {
	ts, ok := leadingTS(line)
	if !ok {
		v, err := fastjson.Parse(line)
		if err != nil {
			return time.Time{}, false
		}
		ts = v.GetFloat64("ts")
	}
	if ts == 0 {
		return time.Time{}, false
	}
	return time.UnixMicro(int64(math.Round(ts * 1e6))).UTC(), true
}

// leadingTS reads "ts" from a line that begins {"level":"<word>","ts":<number>,
// (false for any other shape).
func leadingTS(line string) (float64, bool) {
	rest, ok := strings.CutPrefix(line, `{"level":"`)
	if !ok {
		return 0, false
	}
	i := strings.IndexByte(rest, '"')
	if i < 0 || strings.ContainsAny(rest[:i], `\`) {
		return 0, false
	}
	rest, ok = strings.CutPrefix(rest[i+1:], `,"ts":`)
	if !ok {
		return 0, false
	}
	j := strings.IndexAny(rest, ",}")
	if j <= 0 {
		return 0, false
	}
	ts, err := strconv.ParseFloat(rest[:j], 64)
	return ts, err == nil
}

// FPMTime dates a php-fpm log line, "[02-Oct-2026 17:00:00] WARNING: ...",
// in UTC.
func FPMTime(line string) (time.Time, bool) {
	if len(line) < 22 || line[0] != '[' {
		return time.Time{}, false
	}
	end := strings.IndexByte(line, ']')
	if end < 0 {
		return time.Time{}, false
	}
	s := line[1:end]
	for _, layout := range []string{"02-Jan-2006 15:04:05.000000", "02-Jan-2006 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// CaddyLine is an access-log line as Caddy 2.11 writes it (the fields the
// readers use), for synthetic traffic.
func CaddyLine(ts time.Time, ip, ua, lang, uri string, status int, duration float64, size int) string {
	level := "info"
	if status >= 500 {
		level = "error"
	}
	resp := `"resp_headers":{"Content-Type":["text/html; charset=UTF-8"],"X-Powered-By":["PHP/8.3.12"]}`
	if status == 503 {
		resp = `"resp_headers":{}`
	}
	return fmt.Sprintf(`{"level":%q,"ts":%s,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":%q,"remote_port":"51234","client_ip":%q,"proto":"HTTP/1.1","method":"GET","host":"wiki.example.org","uri":%q,"headers":{"User-Agent":[%q],"Accept-Language":[%q],"Accept":["text/html"]}},"bytes_read":0,"user_id":"","duration":%s,"size":%d,"status":%d,%s}`,
		level, strconv.FormatFloat(float64(ts.UnixMicro())/1e6, 'f', 6, 64), ip, ip, uri, ua, lang,
		strconv.FormatFloat(duration, 'f', 6, 64), size, status, resp)
}
