package simulate

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	fastgzip "github.com/klauspost/compress/gzip"
)

func itoa(i int) string { return strconv.Itoa(i) }

// gzPipe compresses what is written to it in its own goroutine, so that the
// simulation and gzip use both cores. Chunks are handed over whole: the output
// bytes do not depend on scheduling.
type gzPipe struct {
	path  string
	zw    *gzFile
	buf   []byte
	ch    chan []byte
	free  chan []byte
	done  chan error
	raw   int64
	lines int64
}

const chunk = 256 << 10

func newGzPipe(path string, level int) (*gzPipe, error) {
	zw, err := createGz(path, level)
	if err != nil {
		return nil, err
	}
	p := &gzPipe{path: path, zw: zw, buf: make([]byte, 0, chunk+4096),
		ch: make(chan []byte, 4), free: make(chan []byte, 6), done: make(chan error, 1)}
	go p.loop()
	return p, nil
}

func (p *gzPipe) loop() {
	var err error
	for b := range p.ch {
		if err == nil {
			_, err = p.zw.Write(b)
		}
		select {
		case p.free <- b[:0]:
		default:
		}
	}
	if cerr := p.zw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		err = fmt.Errorf("simulate: writing %s: %w", p.path, err)
	}
	p.done <- err
}

// line appends one line (b without its newline).
func (p *gzPipe) line(b []byte) {
	p.buf = append(p.buf, b...)
	p.buf = append(p.buf, '\n')
	p.raw += int64(len(b)) + 1
	p.lines++
	if len(p.buf) >= chunk {
		p.flush()
	}
}

func (p *gzPipe) flush() {
	if len(p.buf) == 0 {
		return
	}
	p.ch <- p.buf
	select {
	case b := <-p.free:
		p.buf = b
	default:
		p.buf = make([]byte, 0, chunk+4096)
	}
}

func (p *gzPipe) close() error {
	p.flush()
	close(p.ch)
	return <-p.done
}

// gzFile is a gzip file being written at a gzipLevel: its compressor, the
// buffer between it and the file, and the file, closed in that order. The
// buffer is there because compress/flate hands its writer every 240 bytes
// of output, one write(2) each without one; the bytes are the same.
type gzFile struct {
	io.WriteCloser // the compressor (mustGzip)
	fw             *bufio.Writer
	f              *os.File
}

// createGz creates path as a gzip file written at level.
func createGz(path string, level int) (*gzFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	fw := bufio.NewWriterSize(f, 64<<10)
	return &gzFile{WriteCloser: mustGzip(fw, level), fw: fw, f: f}, nil
}

// Close ends the gzip stream, flushes it and closes the file, with the
// first error of the three.
func (g *gzFile) Close() error {
	err := g.WriteCloser.Close()
	if ferr := g.fw.Flush(); err == nil {
		err = ferr
	}
	if cerr := g.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// mustGzip writes at Options.gzipLevel; it runs beside the simulation, and
// the bundle should stay small enough to keep around unless a test throws it
// away. BestSpeed is klauspost's, the package the access log is read with: on
// a 151 MB simulated access log it compressed in about a quarter of the
// standard library's BestSpeed CPU, to a slightly smaller file (12.2 MB
// against 13.2 MB); the other levels stay the standard library's, so that
// bundles kept around are written as before.
func mustGzip(w io.Writer, level int) io.WriteCloser {
	if level == gzip.BestSpeed {
		zw, _ := fastgzip.NewWriterLevel(w, fastgzip.BestSpeed) // the level is valid
		return zw
	}
	zw, _ := gzip.NewWriterLevel(w, level) // the level is one of gzipLevel's
	return zw
}

// outputs are the files the simulation streams while it runs.
type outputs struct {
	acc   *gzPipe
	caddy *gzPipe
	truth *gzPipe
	fpm   *bufio.Writer
	fpmF  *os.File
	fpmN  int64

	line    []byte // scratch for one line
	reqObj  []byte // scratch: the "request" object of the current request
	lastCad int64  // last ts written to caddy.log (keeps it ordered)
	errID   []byte
}

func openOutputs(dir string, gzipLevel int) (*outputs, error) {
	o := &outputs{}
	var err error
	if o.acc, err = newGzPipe(dir+"/access/access.log.gz", gzipLevel); err != nil {
		return nil, err
	}
	if o.caddy, err = newGzPipe(dir+"/logs/caddy.log.gz", gzipLevel); err != nil {
		return nil, err
	}
	if o.truth, err = newGzPipe(dir+"/truth-requests.csv.gz", gzipLevel); err != nil {
		return nil, err
	}
	if o.fpmF, err = os.Create(dir + "/logs/php-fpm.log"); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	o.fpm = bufio.NewWriterSize(o.fpmF, 64<<10)
	o.truth.line([]byte(truthHeader))
	return o, nil
}

func (o *outputs) close() error {
	errs := []error{o.acc.close(), o.caddy.close(), o.truth.close(), o.fpm.Flush(), o.fpmF.Close()}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ---- JSON ---------------------------------------------------------------------------------

// AppendJSONString appends s as a JSON string the way zap (Caddy's logger)
// does: quotes, backslashes and control characters escaped, UTF-8 as is.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	// Runs of bytes that need no escape are copied whole: most of a log
	// line's strings have none, and the byte-at-a-time copy was a third of
	// the simulation's own CPU in the tests' profile.
	start := 0
	for {
		i := nextEscape(s, start)
		if i == len(s) {
			break
		}
		b = append(b, s[start:i]...)
		start = i + 1
		switch c := s[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// nextEscape is the index of the first byte of s from i on that a JSON
// string escapes (a control character, a quote or a backslash), len(s) if
// none. It tests eight bytes at a time (the byte-at-a-time test was 5.5% of
// the detect tests' CPU, most of it on URIs and user agents that need no
// escape), then the last few one by one.
func nextEscape(s string, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// A byte below 0x20, or one equal to '"' or '\\' (zero once xored
		// with it): the classic tests of "some byte is less than n", exact
		// for the word as a whole when n <= 0x80.
		quote, backslash := w^(ones*'"'), w^(ones*'\\')
		if ((w-ones*0x20)&^w|(quote-ones)&^quote|(backslash-ones)&^backslash)&highs != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return i
		}
	}
	return len(s)
}

// appendTS appends a time as zap's epoch float seconds.
func appendTS(b []byte, ns int64) []byte {
	return strconv.AppendFloat(b, float64(ns)/1e9, 'f', -1, 64)
}

func appendDur(b []byte, ns int64) []byte {
	return strconv.AppendFloat(b, float64(ns)/1e9, 'f', -1, 64)
}

// hdr appends "Name":["value"], with a leading comma unless first.
func hdr(b []byte, first *bool, name, value string) []byte {
	if !*first {
		b = append(b, ',')
	}
	*first = false
	b = AppendJSONString(b, name)
	b = append(b, ':', '[')
	b = AppendJSONString(b, value)
	return append(b, ']')
}

// requestObject builds Caddy's "request" object for r into o.reqObj.
func (o *outputs) requestObject(s *sim, r *request) []byte {
	b := o.reqObj[:0]
	b = append(b, `{"remote_ip":`...)
	b = AppendJSONString(b, r.ip)
	b = append(b, `,"remote_port":"`...)
	b = strconv.AppendUint(b, uint64(r.port), 10)
	b = append(b, `","client_ip":`...)
	b = AppendJSONString(b, r.ip)
	b = append(b, `,"proto":`...)
	p := r.prof
	b = AppendJSONString(b, p.proto)
	b = append(b, `,"method":`...)
	b = AppendJSONString(b, r.method)
	b = append(b, `,"host":"`...)
	b = append(b, s.sc.host()...)
	b = append(b, `","uri":`...)
	b = AppendJSONString(b, r.uri)
	b = append(b, `,"headers":{`...)
	first := true
	switch {
	case r.cls == clsSelfAPI:
		b = hdr(b, &first, "Accept-Encoding", "deflate, gzip, br, zstd")
		b = hdr(b, &first, "User-Agent", p.ua)
	case r.cls == clsBot || r.cls == clsClient:
		b = hdr(b, &first, "Accept", p.accept)
		b = hdr(b, &first, "Accept-Encoding", p.encoding)
		if p.auth != "" {
			// The value is a made-up token: a simulated log carries no
			// credential, even where log_credentials would keep one.
			v := "REDACTED"
			if s.sc.CookieLog == CookieLogged {
				v = p.auth + " c2ltdWxhdGVkOnRva2Vu"
			}
			b = hdr(b, &first, "Authorization", v)
		}
		if p.from != "" {
			b = hdr(b, &first, "From", p.from)
		}
		b = hdr(b, &first, "User-Agent", p.ua)
	default:
		accept, mode := p.accept, "navigate"
		switch r.kind {
		case kindAsset:
			mode = "no-cors"
			switch {
			case s.sc.App == AppWordPress || s.sc.app() != nil:
				accept = wpAssetAccept(r.uri)
			case strings.HasSuffix(r.uri, ".jpg") || r.uri == "/static/logo.png" || r.uri == "/favicon.ico":
				accept = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
			case strings.HasPrefix(r.uri, "/static/skin"):
				accept = "text/css,*/*;q=0.1"
			default:
				accept = "*/*"
			}
		case kindSearch:
			accept, mode = "application/json, text/javascript, */*; q=0.01", "cors"
		}
		b = hdr(b, &first, "Accept", accept)
		b = hdr(b, &first, "Accept-Encoding", p.encoding)
		if p.lang != "" {
			b = hdr(b, &first, "Accept-Language", p.lang)
		}
		if r.kind == kindSubmit {
			b = hdr(b, &first, "Content-Type", "application/x-www-form-urlencoded")
		}
		if p.cookie != "" {
			switch s.sc.CookieLog {
			case CookieLogged:
				b = hdr(b, &first, "Cookie", p.cookie)
			case CookieRedacted:
				b = hdr(b, &first, "Cookie", "REDACTED")
			}
		}
		if r.notMod {
			b = hdr(b, &first, "If-None-Match", ETag(r.uri))
		}
		// Browsers also send Sec-Ch-Ua-Platform, Sec-Fetch-Dest/-Site/-User,
		// Priority and Upgrade-Insecure-Requests; the older scenarios leave
		// them out to keep lines compact, a varied one (BrowserHeaders)
		// writes them as the browser sends them.
		full := s.sc.BrowserHeaders && (p.browser || p.fullHeaders)
		if full && mode == "navigate" {
			b = hdr(b, &first, "Priority", "u=0, i")
		}
		if r.referer != "" {
			b = hdr(b, &first, "Referer", r.referer)
		}
		if p.chua != "" {
			b = hdr(b, &first, "Sec-Ch-Ua", p.chua)
			if p.mobile {
				b = hdr(b, &first, "Sec-Ch-Ua-Mobile", "?1")
			} else {
				b = hdr(b, &first, "Sec-Ch-Ua-Mobile", "?0")
			}
			if full && p.platform != "" {
				b = hdr(b, &first, "Sec-Ch-Ua-Platform", p.platform)
			}
		}
		if full {
			b = hdr(b, &first, "Sec-Fetch-Dest", fetchDest(mode, accept))
		}
		b = hdr(b, &first, "Sec-Fetch-Mode", mode)
		if full {
			b = hdr(b, &first, "Sec-Fetch-Site", fetchSite(mode, r.referer, s.sc.host()))
			if mode == "navigate" {
				b = hdr(b, &first, "Sec-Fetch-User", "?1")
				b = hdr(b, &first, "Upgrade-Insecure-Requests", "1")
			}
		}
		b = hdr(b, &first, "User-Agent", p.ua)
		if r.kind == kindSearch {
			b = hdr(b, &first, "X-Requested-With", "XMLHttpRequest")
		}
	}
	// Caddy adds a "tls" object on HTTPS connections; it is left out to keep
	// lines compact (the lab recording's plain-HTTP lines have none either).
	b = append(b, `}}`...)
	o.reqObj = b
	return b
}

// fetchDest is Sec-Fetch-Dest of a request fetched in mode with accept.
func fetchDest(mode, accept string) string {
	switch {
	case mode == "navigate":
		return "document"
	case mode == "cors":
		return "empty"
	case strings.HasPrefix(accept, "image/"):
		return "image"
	case strings.HasPrefix(accept, "text/css"):
		return "style"
	}
	return "script"
}

// fetchSite is Sec-Fetch-Site: a navigation typed or bookmarked is "none",
// one from a page of host "same-origin", from anywhere else "cross-site";
// a page's own subresources are same-origin.
func fetchSite(mode, referer, host string) string {
	switch {
	case mode != "navigate":
		return "same-origin"
	case referer == "":
		return "none"
	case strings.HasPrefix(referer, "https://"+host+"/"), strings.HasPrefix(referer, "http://"+host+"/"):
		return "same-origin"
	}
	return "cross-site"
}

// ETag is the entity tag Caddy's file server would give the file at uri: a
// hash of the uri standing for the file's size and modification time.
func ETag(uri string) string {
	h := uint64(14695981039346656037)
	for i := 0; i < len(uri); i++ {
		h = (h ^ uint64(uri[i])) * 1099511628211
	}
	return `"` + strconv.FormatUint(h%(1<<40), 36) + "-" + strconv.FormatUint(h>>44%4000, 36) + `"`
}

var lastModified = "Thu, 01 Oct 2026 07:40:12 GMT"

// access writes r's access-log line.
func (o *outputs) access(s *sim, r *request) {
	b := o.line[:0]
	level := "info"
	if r.status >= 500 {
		level = "error"
	}
	b = append(b, `{"level":"`...)
	b = append(b, level...)
	b = append(b, `","ts":`...)
	b = appendLogTS(b, s.now, s.sc.LogTime, s.sc.LogZoneOffsetS)
	b = append(b, `,"logger":"http.log.access.log0","msg":"handled request","request":`...)
	b = append(b, o.requestObject(s, r)...)
	b = append(b, `,"bytes_read":`...)
	b = strconv.AppendInt(b, int64(r.bytesIn), 10)
	b = append(b, `,"user_id":"","duration":`...)
	b = appendDur(b, s.now-r.start)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, int64(r.size), 10)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.status), 10)
	b = append(b, `,"resp_headers":{`...)
	b = o.respHeaders(s, b, r)
	b = append(b, `}}`...)
	o.line = b
	o.acc.line(b)
}

func (o *outputs) respHeaders(s *sim, b []byte, r *request) []byte {
	first := true
	switch r.origin {
	case "static", "cache":
		if name := s.sc.CacheStatus; name != "" && r.origin == "cache" {
			b = appendCacheMark(b, &first, s.sc.CacheMark, name, true, r.uri, s.now)
		}
		if r.status != 304 { // a 304 has no body to describe
			ctype, gz := "text/html; charset=utf-8", true
			if r.origin == "static" {
				ctype, gz = "image/jpeg", false
				for i := range siteAssets {
					if siteAssets[i].uri == r.uri {
						ctype, gz = siteAssets[i].ctype, siteAssets[i].gz
					}
				}
				for i := range wpAssets {
					if s.sc.App == AppWordPress && wpAssets[i].uri == r.uri {
						ctype, gz = wpAssets[i].ctype, wpAssets[i].gz
					}
				}
				if a := s.sc.app(); a != nil {
					for i := range a.assets {
						if a.assets[i].uri == r.uri {
							ctype, gz = a.assets[i].ctype, a.assets[i].gz
						}
					}
				}
				if r.uri == "/robots.txt" {
					ctype = "text/plain; charset=utf-8"
				}
			}
			if gz {
				b = hdr(b, &first, "Content-Encoding", "gzip")
			} else {
				b = hdr(b, &first, "Accept-Ranges", "bytes")
				b = hdr(b, &first, "Content-Length", strconv.Itoa(r.size))
			}
			b = hdr(b, &first, "Content-Type", ctype)
		}
		b = hdr(b, &first, "Etag", ETag(r.uri))
		b = hdr(b, &first, "Last-Modified", lastModified)
		b = hdr(b, &first, "Server", "Caddy")
		b = hdr(b, &first, "Vary", "Accept-Encoding")
	case "php":
		cc := "s-maxage=300, must-revalidate, max-age=0"
		if r.prof.loggedIn || r.kind != kindPage {
			cc = "private, must-revalidate, max-age=0"
		}
		b = hdr(b, &first, "Cache-Control", cc)
		if name := s.sc.CacheStatus; name != "" && r.kind == kindPage && !r.prof.loggedIn && r.method == "GET" {
			b = appendCacheMark(b, &first, s.sc.CacheMark, name, false, r.uri, s.now)
		}
		switch {
		case r.kind == kindSearch || r.kind == kindAPI || r.tool == ToolWPRestSearch:
			b = hdr(b, &first, "Content-Type", "application/json; charset=utf-8")
		case r.status == 302:
			b = hdr(b, &first, "Content-Type", "text/html; charset=UTF-8")
			loc := "https://wiki.example.org/w/"
			if r.kind == kindSubmit {
				loc += r.uri[len("/index.php?title=") : len(r.uri)-len("&action=submit")]
			} else {
				t, _ := s.w.titles.pick(s.rng)
				loc += t
			}
			b = hdr(b, &first, "Location", loc)
		default:
			b = hdr(b, &first, "Content-Encoding", "gzip")
			b = hdr(b, &first, "Content-Type", "text/html; charset=UTF-8")
		}
		if r.status == 404 {
			b = hdr(b, &first, "Status", "404 Not Found")
		}
		b = hdr(b, &first, "Vary", "Accept-Encoding, Cookie")
		b = hdr(b, &first, "Via", "0.0 Caddy")
		b = hdr(b, &first, "X-Powered-By", "PHP/"+s.cfg.PHPVersion)
	case "ratelimit":
		b = hdr(b, &first, "Retry-After", strconv.Itoa(r.retryAfter))
		b = hdr(b, &first, "Server", "Caddy")
	default: // proxy errors
		b = hdr(b, &first, "Server", "Caddy")
	}
	return b
}

// ---- Caddy's own log ---------------------------------------------------------------------

func (o *outputs) caddyTS(now int64) int64 {
	if now < o.lastCad {
		now = o.lastCad
	}
	o.lastCad = now
	return now
}

// caddyError writes the error log line Caddy writes before the access line of
// a 5xx it made (http.log.error.log0).
func (o *outputs) caddyError(s *sim, r *request, status int, msg string) {
	b := o.line[:0]
	b = append(b, `{"level":"error","ts":`...)
	b = appendTS(b, o.caddyTS(s.now-25*micro))
	b = append(b, `,"logger":"http.log.error.log0","msg":`...)
	b = AppendJSONString(b, msg)
	b = append(b, `,"request":`...)
	b = append(b, o.requestObject(s, r)...)
	b = append(b, `,"duration":`...)
	b = appendDur(b, max(s.now-25*micro-r.start, 1000))
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"err_id":"`...)
	for range 9 {
		b = append(b, "abcdefghijklmnopqrstuvwxyz0123456789"[s.rng.IntN(36)])
	}
	trace := "reverseproxy.statusError (reverseproxy.go:1776)"
	if status == 503 {
		trace = "reverseproxy.(*Handler).proxyLoopIteration (reverseproxy.go:666)"
	}
	b = append(b, `","err_trace":`...)
	b = AppendJSONString(b, trace)
	b = append(b, '}')
	o.line = b
	o.caddy.line(b)
}

func (o *outputs) healthFailed(s *sim, errText string) {
	b := o.line[:0]
	b = append(b, `{"level":"info","ts":`...)
	b = appendTS(b, o.caddyTS(s.now))
	b = append(b, `,"logger":"http.handlers.reverse_proxy.health_checker.active","msg":"HTTP request failed","host":"127.0.0.1:9000","error":`...)
	b = AppendJSONString(b, errText)
	b = append(b, '}')
	o.line = b
	o.caddy.line(b)
}

func (o *outputs) healthUp(s *sim) {
	b := o.line[:0]
	b = append(b, `{"level":"info","ts":`...)
	b = appendTS(b, o.caddyTS(s.now))
	b = append(b, `,"logger":"http.handlers.reverse_proxy.health_checker.active","msg":"host is up","host":"127.0.0.1:9000"}`...)
	o.line = b
	o.caddy.line(b)
}

// ---- php-fpm's log (UTC, as in its container) ------------------------------------------------

func (o *outputs) fpmLog(s *sim, msg string) {
	t := time.Unix(0, s.now).UTC()
	fmt.Fprintf(o.fpm, "[%s] %s\n", t.Format("02-Jan-2006 15:04:05"), msg)
	o.fpmN++
}

// slowLog is what request_slowlog_timeout writes to the error log.
func (o *outputs) slowLog(s *sim, pid int, r *request) {
	script, q := "/var/www/mediawiki/index.php", ""
	uri := r.uri
	if strings.HasPrefix(uri, "/api.php") {
		script = "/var/www/mediawiki/api.php"
	}
	if a := s.sc.app(); a != nil {
		script = a.root + "/index.php"
		if strings.HasPrefix(uri, "/remote.php") || strings.HasPrefix(uri, "/ocs/v2.php") || strings.HasPrefix(uri, "/status.php") {
			script = a.root + uri[:strings.Index(uri, ".php")+4]
		}
	}
	if s.sc.App == AppWordPress {
		script = "/var/www/wordpress/index.php"
		if strings.HasPrefix(uri, "/wp-admin/") {
			script = "/var/www/wordpress" + uri
			if i := strings.IndexByte(script, '?'); i >= 0 {
				script = script[:i]
			}
		}
	}
	for i := 0; i < len(uri); i++ {
		if uri[i] == '?' {
			q = uri[i:]
			break
		}
	}
	name := "/index.php"
	if script[len(script)-7:] == "api.php" {
		name = "/api.php"
	}
	if s.sc.App == AppWordPress {
		name = strings.TrimPrefix(script, "/var/www/wordpress")
	}
	if a := s.sc.app(); a != nil {
		name = strings.TrimPrefix(script, a.root)
	}
	el := float64(s.now-r.phpStart) / 1e9
	o.fpmLog(s, fmt.Sprintf("WARNING: [pool www] child %d, script '%s' (request: \"%s %s%s\") executing too slow (%.6f sec), logging",
		pid, script, r.method, name, q, el))
	o.fpmLog(s, fmt.Sprintf("NOTICE: child %d stopped for tracing", pid))
	o.fpmLog(s, fmt.Sprintf("NOTICE: about to trace %d", pid))
	o.fpmLog(s, fmt.Sprintf("NOTICE: finished trace of %d", pid))
}

// ---- ground truth, one row per client request -------------------------------------------------

// truthHeader: times after start_unix are milliseconds from it (empty when it
// did not happen): latency_ms (when the client saw the end: a response or its
// own timeout), caddy_ms (Caddy's log line), php_start_ms and php_end_ms (when
// PHP ran it, possibly long after the client left), queue_wait_ms (in php-fpm's
// listen queue).
const truthHeader = "seq,class,kind,tool,start_unix,latency_ms,src_ip,src_port,method,url,logged_in," +
	"accept_language,user_agent,status,outcome,origin,caddy_ms,php_start_ms,php_end_ms,queue_wait_ms," +
	"abandoned,retry_of,bytes"

func appendUnix(b []byte, ns int64) []byte {
	if ns == 0 {
		return b
	}
	return strconv.AppendFloat(b, float64(ns)/1e9, 'f', 3, 64)
}

func appendRel(b []byte, ns, start int64) []byte {
	if ns == 0 {
		return b
	}
	return strconv.AppendInt(b, (ns-start)/milli, 10)
}

func appendCSV(b []byte, s string) []byte {
	needs := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ',' || c == '"' || c == '\n' {
			needs = true
			break
		}
	}
	if !needs {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

func (o *outputs) truthRow(s *sim, r *request) {
	if r.cls == clsHealth {
		return
	}
	b := o.line[:0]
	b = strconv.AppendInt(b, r.seq, 10)
	b = append(b, ',')
	b = append(b, r.cls.String()...)
	b = append(b, ',')
	b = append(b, r.kind.String()...)
	b = append(b, ',')
	b = append(b, r.tool...)
	b = append(b, ',')
	b = appendUnix(b, r.start)
	b = append(b, ',')
	b = strconv.AppendInt(b, (r.clientEnd-r.start)/milli, 10)
	b = append(b, ',')
	b = append(b, r.ip...)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(r.port), 10)
	b = append(b, ',')
	b = append(b, r.method...)
	b = append(b, ',')
	b = appendCSV(b, r.uri)
	b = append(b, ',')
	if r.prof.loggedIn {
		b = append(b, '1')
	} else {
		b = append(b, '0')
	}
	b = append(b, ',')
	b = appendCSV(b, r.prof.lang)
	b = append(b, ',')
	b = appendCSV(b, r.prof.ua)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.status), 10)
	b = append(b, ',')
	b = append(b, outcome(r)...)
	b = append(b, ',')
	b = append(b, r.origin...)
	b = append(b, ',')
	b = appendRel(b, r.caddyEnd, r.start)
	b = append(b, ',')
	b = appendRel(b, r.phpStart, r.start)
	b = append(b, ',')
	b = appendRel(b, r.phpEnd, r.start)
	b = append(b, ',')
	if r.phpStart > 0 {
		b = strconv.AppendInt(b, (r.phpStart-r.connectAt)/milli, 10)
	}
	b = append(b, ',')
	if abandoned(r) {
		b = append(b, '1')
	} else {
		b = append(b, '0')
	}
	b = append(b, ',')
	if r.retryOf != 0 {
		b = strconv.AppendInt(b, r.retryOf, 10)
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.size), 10)
	o.line = b
	o.truth.line(b)
}

// outcome is what the client saw.
func outcome(r *request) string {
	switch {
	case r.gaveUp:
		return "timeout"
	case r.status >= 400:
		return "error"
	}
	return "ok"
}

// abandoned: PHP finished the request after its client had stopped waiting for
// it (the client timed out, or Caddy had already answered 504 or 502).
func abandoned(r *request) bool {
	return r.phpEnd > 0 && (r.phpEnd > r.clientEnd || r.phpEnd > r.caddyEnd)
}

var _ io.Writer = (*bufio.Writer)(nil)
