package rules

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
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
	sorted := append([]hit(nil), hits...)
	end := func(h hit) time.Time { return h.at.Add(time.Duration(h.dur * float64(time.Second))) }
	sort.SliceStable(sorted, func(i, j int) bool { return end(sorted[i]).Before(end(sorted[j])) })
	path := filepath.Join(dir, fmt.Sprintf("access-%d.log", len(hits)))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, h := range sorted {
		headers := map[string][]string{"Accept": {"text/html"}}
		if h.ua != "" {
			headers["User-Agent"] = []string{h.ua}
		}
		if h.lang != "" {
			headers["Accept-Language"] = []string{h.lang}
		}
		if h.cookie != "" {
			headers["Cookie"] = []string{h.cookie}
		}
		if h.hints {
			headers["Sec-Ch-Ua"] = []string{`"Chromium";v="129"`}
		}
		if h.referer != "" {
			headers["Referer"] = []string{h.referer}
		}
		proto := "HTTP/1.1"
		req := map[string]any{"remote_ip": h.ip, "remote_port": "40000", "client_ip": h.ip, "proto": proto,
			"method": "GET", "host": "wiki.example.org", "uri": h.uri, "headers": headers}
		if h.tls {
			req["proto"] = "HTTP/2.0"
			req["tls"] = map[string]any{"resumed": false, "version": 772, "proto": "h2", "server_name": "wiki.example.org"}
		}
		status := h.status
		if status == 0 {
			status = 200
		}
		resp := map[string][]string{"Content-Type": {"text/html"}}
		if h.upstream {
			resp["Via"] = []string{"1.1 Caddy"}
			resp["X-Powered-By"] = []string{"PHP/8.3.12"}
		}
		line := map[string]any{"level": "info", "ts": float64(end(h).UnixNano()) / 1e9, "logger": "http.log.access.log0",
			"msg": "handled request", "request": req, "duration": h.dur, "size": 1000, "status": status, "resp_headers": resp}
		b, err := json.Marshal(line)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
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
