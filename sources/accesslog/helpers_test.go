package accesslog

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// baseLine is a real line from the lab recording (a 200 proxied to PHP), the
// starting point that caddyLine modifies.
const baseLine = `{"level":"info","ts":1795966450.4057534,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"127.170.105.56","remote_port":"43211","client_ip":"127.170.105.56","proto":"HTTP/1.1","method":"GET","host":"wiki.lab.test","uri":"/w/%EC%84%B1%EB%A7%A4%EB%A7%A4_%EB%B9%84%ED%8C%90","headers":{"Accept":["text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"],"Accept-Encoding":["gzip, deflate, br"],"Accept-Language":["ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7"],"Upgrade-Insecure-Requests":["1"],"Connection":["close"],"User-Agent":["Mozilla/5.0 (Linux; Android 14; SM-S918N) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.6422.113 Mobile Safari/537.36"]}},"bytes_read":0,"user_id":"","duration":0.035747075,"size":1026,"status":200,"resp_headers":{"Via":["0.0 Caddy"],"Content-Type":["text/html; charset=UTF-8"],"Vary":["Accept-Encoding"],"Content-Encoding":["gzip"],"X-Content-Type-Options":["nosniff"],"X-Frame-Options":["DENY"],"Content-Language":["ko"],"Cache-Control":["s-maxage=300, must-revalidate, max-age=0"],"Server-Timing":["app;dur=34"]}}`

// caddyLine returns baseLine after mod has changed its decoded form. Numbers
// stay json.Number so ts keeps its digits.
func caddyLine(t testing.TB, mod func(m map[string]any)) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(baseLine))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(m)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as Caddy (zap) writes: no \u003c for '<'
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func req(m map[string]any) map[string]any     { return m["request"].(map[string]any) }
func headers(m map[string]any) map[string]any { return req(m)["headers"].(map[string]any) }

// result is everything one read produced.
type result struct {
	reqs  []sources.Request
	stats Stats
	skips *sources.Skips
	err   error
}

// readWith reads r through the whole pipeline with a given block size, so tests
// can put chunk boundaries anywhere.
func readWith(name string, r io.Reader, opts Options, block int) result {
	res := result{skips: &sources.Skips{}}
	rd := newReader(opts, res.skips, func(b []sources.Request) error {
		res.reqs = append(res.reqs, b...)
		return nil
	}, block)
	res.stats, res.err = rd.readStream(context.Background(), name, r)
	if res.err == nil {
		res.err = rd.unusable(res.stats)
	}
	return res
}

func readString(s string, opts Options) result {
	return readWith("t.log", strings.NewReader(s), opts, defaultBlock)
}

// notes maps each skip reason to its rendered note (count and locations).
func notes(s *sources.Skips) map[string]string {
	out := map[string]string{}
	for _, n := range s.Notes("access", "lines") {
		_, reason, _ := strings.Cut(n.Message, "skipped: ")
		reason, _, _ = strings.Cut(reason, " (first at ")
		out[reason] = n.Message
	}
	return out
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonNumber(s string) json.Number { return json.Number(s) }

// statCounts is Stats without its slices, so that they compare with ==.
type statCounts struct {
	Files, Lines, Requests, Bytes, OutOfOrder, Duplicates int64
	First, Last                                           time.Time
}

func plainStats(s Stats) statCounts {
	return statCounts{s.Files, s.Lines, s.Requests, s.Bytes, s.OutOfOrder, s.Duplicates, s.First, s.Last}
}
