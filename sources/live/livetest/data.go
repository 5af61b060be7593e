package livetest

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/valyala/fastjson"
)

// PushFile pushes every line of a log file (plain or .gz) into stream
// labels, stamped by stamp. A line stamp cannot date takes the time of the
// line before it (continuation lines); lines before the first dated one are
// dropped. Lines with the same stamp as the line before get it plus 1 ns,
// 2 ns, ... (as a shipper keeps the order of lines logged in one second),
// so that Loki does not merge identical lines. It returns the number of
// lines pushed.
func (f *Loki) PushFile(t testing.TB, labels map[string]string, path string, stamp func(line string) (time.Time, bool)) int {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var r io.Reader = fh
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(fh)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var last time.Time
	n, seq := 0, 0
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		ts, ok := stamp(line)
		if !ok {
			ts = last
		}
		if ts.IsZero() {
			continue
		}
		if ts.Equal(last) {
			seq++
		} else {
			last, seq = ts, 0
		}
		f.Push(labels, ts.Add(time.Duration(seq)), line)
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// CaddyTime dates a Caddy JSON log line by its "ts" (float Unix seconds), to
// the microsecond, as a log shipper's timestamp stage would.
func CaddyTime(line string) (time.Time, bool) {
	v, err := fastjson.Parse(line)
	if err != nil {
		return time.Time{}, false
	}
	ts := v.GetFloat64("ts")
	if ts == 0 {
		return time.Time{}, false
	}
	return time.UnixMicro(int64(math.Round(ts * 1e6))).UTC(), true
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
