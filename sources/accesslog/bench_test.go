package accesslog

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchlog"
	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchref"
	"github.com/aftermath-forensics/aftermath/sources"
)

// genLog writes n lines shaped like the lab recording's: the same keys in the
// same order, Chrome's client hints, Korean titles percent-encoded, PHP and
// Caddy response headers, proxy 503/504s. Lines average about 1,300 bytes.
func genLog(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	type client struct {
		ua, lang, extra string
	}
	chrome := `"Sec-Ch-Ua":["\"Chromium\";v=\"125\", \"Google Chrome\";v=\"125\", \"Not.A/Brand\";v=\"24\""],"Sec-Ch-Ua-Mobile":["?0"],"Sec-Ch-Ua-Platform":["\"Windows\""],"Sec-Fetch-Dest":["document"],"Sec-Fetch-Mode":["navigate"],"Sec-Fetch-Site":["same-origin"],"Sec-Fetch-User":["?1"],"Upgrade-Insecure-Requests":["1"],`
	clients := []client{
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36", "ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7", chrome},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36", "zh-CN,zh;q=0.9", chrome},
		{"Mozilla/5.0 (Linux; Android 14; SM-S918N) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.6422.113 Mobile Safari/537.36", "ko-KR,ko;q=0.9", chrome},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15", "en-US,en;q=0.9", `"Sec-Fetch-Dest":["document"],"Sec-Fetch-Mode":["navigate"],"Sec-Fetch-Site":["none"],`},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "", `"From":["googlebot(at)googlebot.com"],`},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1", "ja-JP,ja;q=0.9", ``},
	}
	titles := []string{"%ED%86%A0%EB%A1%A0_%28%EC%B1%85%29", "%EC%84%B1%EB%A7%A4%EB%A7%A4_%EB%B9%84%ED%8C%90", "%EC%97%AC%EC%84%B1%EC%9A%B4%EB%8F%99", "%ED%98%90%EC%98%A4%ED%91%9C%ED%98%84_%EC%9A%B4%EB%8F%99", "Main_Page"}
	var buf bytes.Buffer
	ts := 1795966435.0
	for range n {
		ts += rng.Float64() * 0.02
		c := clients[rng.IntN(len(clients))]
		ip := fmt.Sprintf("%d.%d.%d.%d", 1+rng.IntN(223), rng.IntN(256), rng.IntN(256), 1+rng.IntN(254))
		title := titles[rng.IntN(len(titles))]
		uri := "/w/" + title
		if rng.IntN(3) == 0 {
			uri = "/index.php?title=Special:RecentChangesLinked/" + title + "&action=history"
		}
		lang := ""
		if c.lang != "" {
			lang = `"Accept-Language":["` + c.lang + `"],`
		}
		cookie := ""
		if rng.IntN(25) == 0 {
			cookie = fmt.Sprintf(`"Cookie":["wikiUserID=%d; wikiUserName=Wiki%d; wiki_session=REDACTED"],`, rng.IntN(9000), rng.IntN(9000))
		}
		level, status, dur, size := "info", 200, 0.02+rng.Float64()*0.3, 1000+rng.IntN(40000)
		resp := `"Server-Timing":["app;dur=33"],"Content-Type":["text/html; charset=UTF-8"],"Vary":["Accept-Encoding"],"Via":["0.0 Caddy"],"X-Frame-Options":["DENY"],"Cache-Control":["s-maxage=300, must-revalidate, max-age=0"],"Content-Language":["ko"],"Content-Encoding":["gzip"],"X-Content-Type-Options":["nosniff"],"X-Powered-By":["PHP/8.2.26"]`
		switch rng.IntN(10) {
		case 0:
			level, status, dur, size = "error", 503, 0.0002, 0
			resp = `"X-Frame-Options":["DENY"],"Server":["Caddy"],"X-Content-Type-Options":["nosniff"]`
		case 1:
			level, status, dur, size = "error", 504, 10.001, 0
			resp = `"Server":["Caddy"],"X-Content-Type-Options":["nosniff"],"X-Frame-Options":["DENY"]`
		}
		fmt.Fprintf(&buf, `{"level":%q,"ts":%.7f,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":%q,"remote_port":"%d","client_ip":%q,"proto":"HTTP/2.0","method":"GET","host":"wiki.example.org","uri":%q,"headers":{"Accept":["text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"],"Accept-Encoding":["gzip, deflate, br, zstd"],%s%s"Referer":["https://wiki.example.org/w/%s"],%s"User-Agent":[%q]},"tls":{"resumed":false,"version":772,"cipher_suite":4865,"proto":"h2","server_name":"wiki.example.org"}},"bytes_read":0,"user_id":"","duration":%.9f,"size":%d,"status":%d,"resp_headers":{%s}}`+"\n",
			level, ts, ip, 1024+rng.IntN(60000), ip, uri, lang, c.extra, title, cookie, c.ua, dur, size, status, resp)
	}
	return buf.Bytes()
}

func BenchmarkRead(b *testing.B) {
	data := genLog(16000, 42)
	lines := bytes.Count(data, []byte("\n"))
	gz := gzipped(b, data)
	for _, bc := range []struct {
		name    string
		input   []byte
		workers int
	}{
		{"plain", data, 0},
		{"plain/workers=1", data, 1},
		{"gzip", gz, 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data))) // uncompressed bytes, so gzip compares with plain
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu0 := benchref.CPUTime()
			b.ResetTimer()
			for b.Loop() {
				st, err := ReadReader(context.Background(), "bench.log", bytes.NewReader(bc.input),
					Options{LoggedInCookie: "wikiUserID=", Workers: bc.workers}, nil,
					func([]sources.Request) error { return nil })
				if err != nil || st.Requests != int64(lines) {
					b.Fatalf("err %v, %d of %d requests", err, st.Requests, lines)
				}
			}
			b.StopTimer()
			cpu := benchref.CPUTime() - cpu0
			runtime.ReadMemStats(&after)
			total := float64(b.N) * float64(lines)
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/total, "allocs/line")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/line")
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/total, "cpu-ns/line")
			}
		})
	}
}

// BenchmarkParseLine is one goroutine's cost per line, without the pipeline:
// parse (the fast path, as Read uses it) and parseSlow (fastjson, for the lines
// the fast path gives up on).
// The "benchlog" lines are those of the 256 MB log that make bench reads
// (cmd/ingestbench/benchlog): header keys in random order, Chromium's client
// hints with escaped quotes, the lab's response headers.
func BenchmarkParseLine(b *testing.B) {
	var gen bytes.Buffer
	if _, err := benchlog.Generate(&gen, benchlog.GenOptions{Size: 2 << 20, Clients: 2000}); err != nil {
		b.Fatal(err)
	}
	// The same lines with ts as time_format writes it: iso8601 (zoned, the
	// fast path reads it) and wall_milli (no zone, the slow path's).
	timeFormat := func(format func(time.Time) string) []byte {
		return []byte(tsRE.ReplaceAllStringFunc(string(genLog(1000, 7)), withTS(format)))
	}
	for _, bc := range []struct {
		name  string
		data  []byte
		parse func(*lineParser, []byte, *sources.Request) string
	}{
		{"fast", genLog(1000, 7), (*lineParser).parse},
		{"slow", genLog(1000, 7), (*lineParser).parseSlow},
		{"benchlog", gen.Bytes(), (*lineParser).parse},
		{"iso8601", timeFormat(quoted("2006-01-02T15:04:05.000Z0700", time.UTC)), (*lineParser).parse},
		{"wall", timeFormat(quoted("2006/01/02 15:04:05.000", time.UTC)), (*lineParser).parse},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lineList := bytes.Split(bytes.TrimSuffix(bc.data, []byte("\n")), []byte("\n"))
			lp := newLineParser()
			lp.cookie = sources.CompileCookiePattern("wikiUserID=")
			b.SetBytes(int64(len(bc.data) / len(lineList)))
			b.ReportAllocs()
			i := 0
			var r sources.Request // outside the loop: it escapes through bc.parse
			cpu0 := benchref.CPUTime()
			for b.Loop() {
				r = sources.Request{}
				if reason := bc.parse(lp, lineList[i%len(lineList)], &r); reason != "" {
					b.Fatal(reason)
				}
				i++
			}
			// CPU time, unlike wall time, leaves out the neighbours' turns on a busy machine.
			if cpu := benchref.CPUTime() - cpu0; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(i), "cpu-ns/line")
			}
		})
	}
}

func TestGenLogIsRealistic(t *testing.T) {
	data := genLog(2000, 1)
	res := readString(string(data), Options{LoggedInCookie: "wikiUserID="})
	if res.err != nil || res.skips.Count("") != 0 || len(res.reqs) != 2000 {
		t.Fatalf("err %v, skips %v, %d requests", res.err, notes(res.skips), len(res.reqs))
	}
	if avg := len(data) / 2000; avg < 1100 || avg > 1500 {
		t.Errorf("average line is %d bytes, want about 1,300", avg)
	}
	origins := map[sources.Origin]int{}
	for _, r := range res.reqs {
		origins[r.Origin]++
		if !r.TLS {
			t.Fatalf("generated lines are HTTPS; got %+v", r)
		}
	}
	if origins[sources.OriginProxy] == 0 || origins[sources.OriginUpstream] == 0 {
		t.Errorf("origins %v: want both proxy and upstream answers", origins)
	}
}

// BenchmarkSameHost is the Referer check every line with an absolute Referer
// pays, with a Host longer than the compiler's stack buffer for a conversion
// and a port on both sides: it should allocate nothing.
func BenchmarkSameHost(b *testing.B) {
	referer := []byte("https://A-Rather-Long-Subdomain-For-A-Wiki.department.example.org:443/w/index.php?title=Special:RecentChanges")
	host := "a-rather-long-subdomain-for-a-wiki.department.example.org:8443"
	b.ReportAllocs()
	for b.Loop() {
		if !sameHost(referer, host) {
			b.Fatal("the site's own referer was not recognised")
		}
	}
}

// BenchmarkReadLog is Read of the log named in READ_LOG (make bench's 256 MB
// one, say), each request handed to a sink that keeps nothing: the parser's
// cost on a real log's variety of targets and clients, which genLog's few
// repeat far more. It skips without READ_LOG.
func BenchmarkReadLog(b *testing.B) {
	name := os.Getenv("READ_LOG")
	if name == "" {
		b.Skip("READ_LOG names no log")
	}
	b.ReportAllocs()
	var lines int64
	cpu0 := benchref.CPUTime()
	for b.Loop() {
		res, err := Read(context.Background(), []string{name}, Options{LoggedInCookie: "wikiUserID="}, nil,
			func([]sources.Request) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		lines += res.Requests
		b.SetBytes(res.Bytes)
	}
	if cpu := benchref.CPUTime() - cpu0; cpu > 0 && lines > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(lines), "cpu-ns/line")
	}
}
