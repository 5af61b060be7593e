package accesslog

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aftermath-forensics/aftermath/sources"
)

var knownReasons = map[string]bool{
	ReasonMalformedJSON: true, ReasonInvalidUTF8: true, ReasonLineTooLong: true, ReasonTruncatedLine: true,
	ReasonTruncatedGzip: true, ReasonCorruptGzip: true, ReasonNotAccessLog: true, ReasonUnknownShape: true,
	ReasonMissingTS: true, ReasonMissingStatus: true, ReasonMissingURI: true, ReasonMissingClientIP: true,
	ReasonBadTS: true, ReasonBadStatus: true, ReasonBadDuration: true, ReasonBadSize: true, ReasonBadClientIP: true,
	ReasonDockerPartial: true, ReasonConsoleNoFields: true,
}

func fuzzSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, file := range []string{sampleLog, "testdata/caddy-own.log"} {
		for _, l := range bytes.Split(readFile(f, file), []byte("\n")) {
			if len(l) > 0 {
				seeds = append(seeds, l)
			}
		}
	}
	for _, s := range []string{
		"", "{}", "[]", "null", `{"logger":"http.log.access"}`, "\xef\xbb\xbf{}",
		strings.Replace(baseLine, `"client_ip":"127.170.105.56"`, `"client_ip":"fe80::1%eth0"`, 1),
		strings.Replace(baseLine, `"ts":1795966450.4057534`, `"ts":"2026-11-29T15:34:10Z"`, 1),
		strings.Replace(baseLine, `"duration":0.035747075`, `"duration":"35ms"`, 1),
		strings.Replace(baseLine, `"uri":"/w/`, `"uri":"\ud800\u00e9?\\u0000`, 1),
		// the other shapes Caddy and its hosts write (corpus_test.go)
		`{"log":"{\"ts\":1,\"request\":{\"uri\":\"/\",\"client_ip\":\"1.1.1.1\"},\"status\":200}","stream":"stdout"}`,
		`{"MESSAGE":[123,125],"__REALTIME_TIMESTAMP":"1"}`,
		"2026/11/29 15:33:55.061\tINFO\thttp.log.access\thandled request",
		"2026/11/29 15:33:55.061 INFO http.log.access handled request {}",
		"1795966450.4057534\tinfo\thttp.log.access.log0\thandled request\t{\"request\":{\"uri\":\"/\",\"client_ip\":\"::1\"},\"status\":1}",
		`127.0.0.1 - - [29/Nov/2026:15:33:55 +0000] "GET / HTTP/1.1" 200 3 "-" "curl/7.88.1"`,
	} {
		seeds = append(seeds, []byte(s))
	}
	lines := sampleLines(f)
	for _, c := range corpusCases() {
		for _, i := range []int{0, 7, 20} {
			seeds = append(seeds, []byte(c.encode(lines[i])))
		}
	}
	return seeds
}

// FuzzParseLine: no input panics, every skip has a known reason, and every
// request satisfies what the detectors rely on.
func FuzzParseLine(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		lp := newLineParser()
		lp.cookie = sources.CompileCookiePattern("wikiUserID=")
		var r sources.Request
		reason := lp.parse(line, &r)
		if reason != "" {
			if !knownReasons[reason] {
				t.Fatalf("unknown reason %q", reason)
			}
			return
		}
		if r.Time.IsZero() || r.Time.Location().String() != "UTC" {
			t.Errorf("Time = %v", r.Time)
		}
		if !r.ClientIP.IsValid() || r.ClientIP.Zone() != "" || r.ClientIP.Is4In6() {
			t.Errorf("ClientIP = %v", r.ClientIP)
		}
		if r.Status < 0 || r.Status > 999 || r.Size < 0 || r.Duration < 0 || math.IsInf(r.Duration, 0) || math.IsNaN(r.Duration) {
			t.Errorf("Status, Size, Duration = %d, %d, %v", r.Status, r.Size, r.Duration)
		}
		if strings.IndexByte(r.Path, '?') >= 0 || r.Path+r.Query == "" {
			t.Errorf("Path, Query = %q, %q", r.Path, r.Query)
		}
		for _, s := range []string{r.Method, r.Host, r.Path, r.Query, r.UserAgent, r.Lang} {
			if !utf8.ValidString(s) {
				t.Errorf("invalid UTF-8 in %q", s)
			}
		}
		if len(r.Lang) > maxLangLen || strings.Trim(r.Lang, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			t.Errorf("Lang = %q", r.Lang)
		}
		if r.Origin == sources.OriginProxy && r.Status < 500 && r.Status != 429 {
			t.Errorf("proxy origin with status %d", r.Status)
		}
		if r.LoggedIn == sources.LoggedInYes && !r.HasCookie {
			t.Errorf("logged in without a cookie")
		}
		// The same parser must give the same answer again (no state leaks
		// between lines), and so must a fresh one.
		var again sources.Request
		if reason := lp.parse(line, &again); reason != "" || again != r {
			t.Errorf("second parse differs: %q %+v", reason, again)
		}
	})
}

// FuzzRead checks the pipeline against a plain line-by-line model: wherever
// blocks are cut and however many workers run, every line is counted once and
// is a request, a skip or blank, with the same requests in the same order.
func FuzzRead(f *testing.F) {
	sample := readFile(f, sampleLog)
	f.Add(sample, uint16(1500), uint8(2))
	f.Add(bytes.ReplaceAll(sample, []byte("\n"), []byte("\r\n")), uint16(3000), uint8(1))
	f.Add(append(bytes.Repeat([]byte{'x'}, 5000), sample...), uint16(2048), uint8(3))
	f.Add([]byte("\n\n \n"+baseLine), uint16(1), uint8(0))
	f.Add(sample[:len(sample)-300], uint16(1500), uint8(4))
	f.Fuzz(func(t *testing.T, input []byte, blockSel uint16, workers uint8) {
		if bytes.HasPrefix(input, []byte{0x1f, 0x8b}) {
			t.Skip("gzip is tested elsewhere")
		}
		block := 1024 + int(blockSel)%4096
		res := readWith("f.log", bytes.NewReader(input), Options{LoggedInCookie: "wikiUserID=", Workers: int(workers % 5)}, block)
		var unusable *UnusableError
		if res.err != nil && !errors.As(res.err, &unusable) {
			t.Fatal(res.err)
		}

		lp := newLineParser()
		lp.cookie = sources.CompileCookiePattern("wikiUserID=")
		// Whole-number durations are read in the unit the first lines show.
		head := input[:min(len(input), sniffSize)]
		lp.durUnit, _ = sniff(head, len(input) <= sniffSize, Options{}).durationUnit()
		var want []sources.Request
		var lines, skipped int64
		rest := input
		for len(rest) > 0 {
			line := rest
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				line, rest = rest[:i], rest[i+1:]
			} else {
				rest = nil
			}
			lines++
			if len(line) >= block {
				skipped++
				continue
			}
			if isBlank(line) {
				continue
			}
			var r sources.Request
			if reason := lp.parse(line, &r); reason != "" {
				skipped++
				continue
			}
			want = append(want, r)
		}
		if res.stats.Lines != lines || res.stats.Bytes != int64(len(input)) {
			t.Errorf("Lines, Bytes = %d, %d; want %d, %d", res.stats.Lines, res.stats.Bytes, lines, len(input))
		}
		if int64(res.skips.Count("")) != skipped {
			t.Errorf("skipped %d, want %d: %v", res.skips.Count(""), skipped, notes(res.skips))
		}
		if !sameRequests(res.reqs, want) || res.stats.Requests != int64(len(want)) {
			t.Errorf("got %d requests (stats %d), want %d", len(res.reqs), res.stats.Requests, len(want))
		}
		// Nothing usable is an error exactly when lines were skipped and none read.
		if wantUnusable := len(want) == 0 && skipped > 0; (unusable != nil) != wantUnusable {
			t.Errorf("err %v, want an UnusableError: %v", res.err, wantUnusable)
		}
	})
}
