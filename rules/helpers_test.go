package rules

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// hit is one request of a hand-built access log.
type hit struct {
	at       time.Time // arrival
	dur      float64   // seconds
	ip       string
	uri      string
	ua       string
	lang     string // the whole Accept-Language header ("" for none)
	cookie   string // "" for none
	hints    bool   // sends Sec-Ch-Ua
	tls      bool
	status   int
	upstream bool   // answered by PHP (Via and X-Powered-By)
	referer  string // "" for none
}

// writeLog writes hits as Caddy writes them: one JSON line each, stamped and
// ordered by the end of the response, not by arrival.
func writeLog(t testing.TB, dir string, hits []hit) string {
	t.Helper()
	// The order of the ends, each computed once: a stable sort of the hits
	// themselves moved whole structs and recomputed both ends per comparison
	// (a third of writeLog).
	type ending struct {
		at  time.Time
		hit int
	}
	order := make([]ending, len(hits))
	for i, h := range hits {
		order[i] = ending{h.at.Add(time.Duration(h.dur * float64(time.Second))), i}
	}
	slices.SortStableFunc(order, func(a, b ending) int { return a.at.Compare(b.at) })
	path := filepath.Join(dir, fmt.Sprintf("access-%d.log", len(hits)))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 256<<10)
	var line []byte
	for _, e := range order {
		line = appendLogLine(line[:0], logLineOf(hits[e.hit], e.at))
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// logLine is an access-log line as Caddy writes it, for writeLog. Its
// fields are in the order of their JSON names, as json.Marshal writes a
// map's keys: the lines are the bytes a map of them gave, written several
// times faster (map encoding was a quarter of the package's test CPU).
type logLine struct {
	Duration    float64        `json:"duration"`
	Level       string         `json:"level"`
	Logger      string         `json:"logger"`
	Msg         string         `json:"msg"`
	Request     logRequest     `json:"request"`
	RespHeaders logRespHeaders `json:"resp_headers"`
	Size        int            `json:"size"`
	Status      int            `json:"status"`
	TS          float64        `json:"ts"`
}

type logRequest struct {
	ClientIP   string        `json:"client_ip"`
	Headers    logReqHeaders `json:"headers"`
	Host       string        `json:"host"`
	Method     string        `json:"method"`
	Proto      string        `json:"proto"`
	RemoteIP   string        `json:"remote_ip"`
	RemotePort string        `json:"remote_port"`
	TLS        *logTLS       `json:"tls,omitempty"`
	URI        string        `json:"uri"`
}

// logReqHeaders are the request headers a hit can carry; one left empty is
// not logged.
type logReqHeaders struct {
	Accept         []string `json:"Accept"`
	AcceptLanguage []string `json:"Accept-Language,omitempty"`
	Cookie         []string `json:"Cookie,omitempty"`
	Referer        []string `json:"Referer,omitempty"`
	SecChUa        []string `json:"Sec-Ch-Ua,omitempty"`
	UserAgent      []string `json:"User-Agent,omitempty"`
}

type logRespHeaders struct {
	ContentType []string `json:"Content-Type"`
	Via         []string `json:"Via,omitempty"`
	XPoweredBy  []string `json:"X-Powered-By,omitempty"`
}

type logTLS struct {
	Proto      string `json:"proto"`
	Resumed    bool   `json:"resumed"`
	ServerName string `json:"server_name"`
	Version    int    `json:"version"`
}

// appendLogLine appends l as one line of JSON, the bytes json.Encoder
// writes for it without HTML escapes (an & as \u0026 would send the line to
// accesslog's slow path and past the line filter, and Caddy writes it
// plain): encoding it by reflection was most of writeLog, itself a tenth of
// the package's test CPU.
func appendLogLine(b []byte, l logLine) []byte {
	str := simulate.AppendJSONString
	list := func(b []byte, name string, vs []string, omitEmpty bool) []byte {
		if omitEmpty && len(vs) == 0 {
			return b
		}
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = append(str(b, name), ':')
		if vs == nil {
			return append(b, "null"...)
		}
		b = append(b, '[')
		for i, v := range vs {
			if i > 0 {
				b = append(b, ',')
			}
			b = str(b, v)
		}
		return append(b, ']')
	}
	r := &l.Request
	b = append(b, `{"duration":`...)
	b = appendJSONFloat(b, l.Duration)
	b = str(append(b, `,"level":`...), l.Level)
	b = str(append(b, `,"logger":`...), l.Logger)
	b = str(append(b, `,"msg":`...), l.Msg)
	b = str(append(b, `,"request":{"client_ip":`...), r.ClientIP)
	b = append(b, `,"headers":{`...)
	h := &r.Headers
	b = list(b, "Accept", h.Accept, false)
	b = list(b, "Accept-Language", h.AcceptLanguage, true)
	b = list(b, "Cookie", h.Cookie, true)
	b = list(b, "Referer", h.Referer, true)
	b = list(b, "Sec-Ch-Ua", h.SecChUa, true)
	b = list(b, "User-Agent", h.UserAgent, true)
	b = str(append(b, `},"host":`...), r.Host)
	b = str(append(b, `,"method":`...), r.Method)
	b = str(append(b, `,"proto":`...), r.Proto)
	b = str(append(b, `,"remote_ip":`...), r.RemoteIP)
	b = str(append(b, `,"remote_port":`...), r.RemotePort)
	if tls := r.TLS; tls != nil {
		b = str(append(b, `,"tls":{"proto":`...), tls.Proto)
		b = strconv.AppendBool(append(b, `,"resumed":`...), tls.Resumed)
		b = str(append(b, `,"server_name":`...), tls.ServerName)
		b = append(strconv.AppendInt(append(b, `,"version":`...), int64(tls.Version), 10), '}')
	}
	b = str(append(b, `,"uri":`...), r.URI)
	b = append(b, `},"resp_headers":{`...)
	rh := &l.RespHeaders
	b = list(b, "Content-Type", rh.ContentType, false)
	b = list(b, "Via", rh.Via, true)
	b = list(b, "X-Powered-By", rh.XPoweredBy, true)
	b = strconv.AppendInt(append(b, `},"size":`...), int64(l.Size), 10)
	b = strconv.AppendInt(append(b, `,"status":`...), int64(l.Status), 10)
	b = appendJSONFloat(append(b, `,"ts":`...), l.TS)
	return append(b, "}\n"...)
}

// appendJSONFloat appends f as encoding/json writes a float64.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// logLineOf is h's line, logged at end.
func logLineOf(h hit, end time.Time) logLine {
	one := func(v string) []string {
		if v == "" {
			return nil
		}
		return []string{v}
	}
	req := logRequest{ClientIP: h.ip, RemoteIP: h.ip, RemotePort: "40000", Proto: "HTTP/1.1", Method: "GET", Host: "wiki.example.org", URI: h.uri,
		Headers: logReqHeaders{Accept: []string{"text/html"}, UserAgent: one(h.ua), AcceptLanguage: one(h.lang), Cookie: one(h.cookie), Referer: one(h.referer)}}
	if h.hints {
		req.Headers.SecChUa = []string{`"Chromium";v="129"`}
	}
	if h.tls {
		req.Proto = "HTTP/2.0"
		req.TLS = &logTLS{Resumed: false, Version: 772, Proto: "h2", ServerName: "wiki.example.org"}
	}
	status := h.status
	if status == 0 {
		status = 200
	}
	resp := logRespHeaders{ContentType: []string{"text/html"}}
	if h.upstream {
		resp.Via, resp.XPoweredBy = []string{"1.1 Caddy"}, []string{"PHP/8.3.12"}
	}
	return logLine{Level: "info", TS: float64(end.UnixNano()) / 1e9, Logger: "http.log.access.log0", Msg: "handled request",
		Request: req, Duration: h.dur, Size: 1000, Status: status, RespHeaders: resp}
}

// Browsers of the hand-built traffic.
const (
	uaChrome  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36"
	uaEdge    = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36 Edg/129.0.0.0"
	uaSafari  = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari/605.1.15"
	uaFirefox = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	uaBot     = "python-requests/2.31.0"
)

// reader is an ordinary client profile of the hand-built site.
type reader struct {
	ua, lang string
	hints    bool
	cookie   string
}

// ordinaryTraffic makes readers and editors from `from` to `to`: page views,
// assets, now and then a tool; logged-in editors use tools a lot. Tools are
// given as URIs with %s for a title.
func ordinaryTraffic(rng *rand.Rand, from, to time.Time, perMin int, tools []string) []hit {
	readers := []reader{
		{uaChrome, "ko-KR,ko;q=0.9,en-US;q=0.8", true, ""},
		{uaSafari, "ko-KR,ko;q=0.9", false, ""},
		{uaChrome, "en-US,en;q=0.9", true, ""},
		{uaFirefox, "en-US,en;q=0.5", false, ""},
		{uaEdge, "ko-KR,ko;q=0.9", true, "wiki_session=abc"},
	}
	editor := reader{uaFirefox, "ko-KR,ko;q=0.8", false, "wikiUserID=42; wikiUserName=Editor; wiki_session=xyz"}
	var out []hit
	n := int(to.Sub(from).Minutes()) * perMin
	for i := 0; i < n; i++ {
		at := from.Add(time.Duration(rng.Int64N(int64(to.Sub(from)))))
		rd := readers[rng.IntN(len(readers))]
		ip := fmt.Sprintf("211.36.%d.%d", rng.IntN(200), 1+rng.IntN(250))
		title := fmt.Sprintf("Page_%d", rng.IntN(5000))
		h := hit{at: at, dur: 0.03 + rng.Float64()*0.05, ip: ip, ua: rd.ua, lang: rd.lang, hints: rd.hints, tls: true,
			cookie: rd.cookie, upstream: true, uri: "/wiki/" + title}
		switch x := rng.IntN(100); {
		case x < 3:
			// an editor at work: logged in, tools
			h.ua, h.lang, h.hints, h.cookie = editor.ua, editor.lang, editor.hints, editor.cookie
			h.uri = fmt.Sprintf(tools[rng.IntN(len(tools))], title)
			h.dur = 0.2
		case x < 5:
			// a reader opens a tool
			h.uri = fmt.Sprintf(tools[rng.IntN(len(tools))], title)
			h.dur = 0.2
		case x < 40:
			h.uri, h.upstream, h.dur = "/static/skin.css", false, 0.002
		case x < 42:
			h.uri = "/wiki/Special:Search?search=" + title
		}
		out = append(out, h)
	}
	return out
}

// crawlerTraffic makes a crawler walking tools from many fresh addresses, at
// perMin requests a minute.
func crawlerTraffic(rng *rand.Rand, from, to time.Time, perMin int, rd reader, tools []string, ipv6 bool) []hit {
	var out []hit
	n := int(to.Sub(from).Minutes()) * perMin
	for i := 0; i < n; i++ {
		at := from.Add(time.Duration(rng.Int64N(int64(to.Sub(from)))))
		ip := fmt.Sprintf("%d.%d.%d.%d", 1+rng.IntN(220), rng.IntN(256), rng.IntN(256), 1+rng.IntN(250))
		if ipv6 {
			ip = fmt.Sprintf("2001:db8:%x:%x::%x", rng.IntN(65536), rng.IntN(65536), 1+rng.IntN(65535))
		}
		title := fmt.Sprintf("Page_%d", rng.IntN(5000))
		out = append(out, hit{at: at, dur: 0.3 + rng.Float64()*0.4, ip: ip, ua: rd.ua, lang: rd.lang, hints: rd.hints, tls: true,
			cookie: rd.cookie, upstream: true, uri: fmt.Sprintf(tools[rng.IntN(len(tools))], title)})
	}
	return out
}

// crawlerFinding is the crawler_burst finding detect would produce for a
// crawler of that profile (spread over many addresses).
func crawlerFinding(t testing.TB, rd reader, from, to time.Time) detect.Finding {
	t.Helper()
	r := sources.Request{UserAgent: rd.ua, Lang: primary(rd.lang), LoggedIn: sources.LoggedInNo, SecChUa: rd.hints, TLS: true}
	if rd.cookie != "" {
		r.HasCookie = true
	}
	key := request.Key(&r)
	return detect.Finding{ID: "crawler_burst-1", Kind: detect.KindCrawlerBurst, Start: from, End: to, Cluster: &key,
		Facts: detect.MustParseFacts(detect.KindCrawlerBurst, map[string]float64{"spread": 1, "distinct_ips": 1000, "requests_per_ip_median": 1})}
}

// primary is the first language tag, lower-cased, as the access log reader reads it.
func primary(lang string) string {
	for i, c := range lang {
		if c == ',' || c == ';' {
			lang = lang[:i]
			break
		}
	}
	out := []byte(lang)
	for i, c := range out {
		if 'A' <= c && c <= 'Z' {
			out[i] = c + 'a' - 'A'
		}
	}
	return string(out)
}
