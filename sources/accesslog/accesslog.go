// Package accesslog reads Caddy v2 JSON access logs, exactly as Caddy writes
// them (one JSON object per line, plain or gzip) or as Loki returns them (Loki
// keeps the line text), and turns each line into a compact sources.Request.
// It also reads them as Caddy's hosts keep them: wrapped by Docker's
// json-file driver or exported from journald (the line inside is read), and
// written by Caddy's console encoder (read from its JSON fields).
//
// Reading is streaming and parallel: one goroutine reads (and gunzips) 1 MiB
// blocks cut at newlines, several goroutines parse them, and the results are
// put back in file order before the caller's sink sees them. Memory is bounded
// by a few blocks per worker, whatever the input size. A line is parsed by a
// one-pass field extractor (fast.go) that hands anything unusual to fastjson,
// with the same result either way.
//
// Nothing in the input is dropped silently. Blank lines are ignored (they carry
// no data); every other line either becomes a Request or is counted in a
// sources.Skips under one of the Reason* constants, with the first few
// "file:line" locations, so that the report can say what it could not read.
// The one exception is a line the caller's Options.Prefilter rejects: the
// caller asked not to hear of it.
//
// Each input is sniffed once (its first 256 KiB) before its lines go to the
// parsers: whole-number durations are read in the unit the values show, and
// an input that yields nothing usable is described (Input.Diagnosis). The
// shapes that are not plain Caddy JSON are recognised line by line on the
// slow path only, so plain lines cost what they did.
//
// A request an earlier input, or the same input earlier, delivered (same
// time, client address and port, URI, status, duration) is counted once
// (overlap.go).
//
// How a line becomes a Request:
//   - Time is ts: float Unix seconds by default; every other time_format
//     Caddy has is accepted too (unix_milli_float, unix_nano by magnitude;
//     iso8601, rfc3339, rfc3339_nano, common_log with their zone; wall,
//     wall_milli, wall_nano in Options.Zone, UTC by default). It is kept to the
//     microsecond, in UTC.
//   - Duration is float seconds; a whole number is seconds, milliseconds or
//     nanoseconds as Options.DurationFormat says or the input's first lines
//     show (duration_format s, ms, ns); a Go duration string ("1.5s",
//     duration_format string) is read as such.
//   - ClientIP is request.client_ip (the address after trusted_proxies), or
//     request.remote_ip when client_ip is absent or empty, or the address of
//     request.remote_addr ("ip:port", the oldest Caddy lines); zones are
//     dropped and IPv4-mapped IPv6 addresses unmapped, so one client has one key.
//   - Path and Query are request.uri split at the first '?', still escaped.
//   - Lang is the first Accept-Language entry, lower-cased ("zh-CN,zh;q=0.9"
//     gives "zh-cn"): browsers list their preference first, so q values are not
//     sorted; "*" and anything not shaped like a language tag give "".
//   - LoggedIn: with no Options.LoggedInCookie, a Cookie header makes it
//     unknown and its absence no; with one, yes if any Cookie value contains it,
//     unknown if a value is exactly "REDACTED" (Caddy without log_credentials),
//     otherwise no.
//   - Cache: hit when resp_headers has a Cache-Status (RFC 9211) entry with
//     "hit", an X-Cache entry saying HIT, or an Age above zero; else miss when
//     one of them says the request went on (Cache-Status "fwd", X-Cache MISS
//     or PASS, Age 0); else unknown.
//   - Origin: static for a cache hit below 500 (the cache answered, whatever
//     PHP headers it replays), else upstream if resp_headers has Via or
//     X-Powered-By (PHP answered), else proxy for a status >= 500 or 429
//     (Caddy's own error page, or a rate_limit zone's refusal), else static;
//     and unknown when the line has no resp_headers at all.
//   - TLS is true when the line has a request.tls object (HTTPS); SecChUa when
//     the Sec-Ch-Ua header is present, Authorization when the Authorization
//     header is (whatever its value); UserAgent is the first User-Agent value.
//   - SiteReferer is true when the first Referer value is an absolute URL
//     whose host (port and case aside) is request.host: the client came from
//     one of the site's own pages.
//   - Header names are matched case-insensitively: Caddy writes canonical keys
//     ("Sec-Ch-Ua") but other writers do not ("Sec-CH-UA").
package accesslog

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/aftermath-forensics/aftermath/sources"
)

// Skip reasons, as they appear in sources.Skips and in report.json's
// data_quality. They are counted per line unless noted.
const (
	// ReasonMalformedJSON: the line is not valid JSON.
	ReasonMalformedJSON = "malformed JSON"
	// ReasonInvalidUTF8: the line holds bytes that are not UTF-8. Caddy escapes
	// everything it logs, so raw invalid bytes mean the line was corrupted (a torn
	// write, a bad disk, a broken shipper); no field of it is trusted.
	ReasonInvalidUTF8 = "invalid UTF-8"
	// ReasonLineTooLong: the line is longer than MaxLineBytes. It is discarded
	// while streaming, never held in memory whole.
	ReasonLineTooLong = "line too long"
	// ReasonTruncatedLine: the last line of a stream has no newline and does
	// not parse: the file (or the gzip stream) was cut mid-line.
	ReasonTruncatedLine = "truncated line"
	// ReasonTruncatedGzip: a gzip stream ended early. Counted once per stream, at
	// the last line read; the lines before it are kept.
	ReasonTruncatedGzip = "truncated gzip"
	// ReasonCorruptGzip: a gzip stream failed its checksum or format. Counted
	// once per stream; the lines before it are kept.
	ReasonCorruptGzip = "corrupt gzip"
	// ReasonNotAccessLog: valid JSON from another Caddy logger (e.g. the health
	// checker's lines in Caddy's own log).
	ReasonNotAccessLog = "not an access log line"
	// ReasonUnknownShape: JSON that is neither an object with a "logger" nor one
	// with a "request" object.
	ReasonUnknownShape = "unknown log shape"
	// ReasonMissingTS, ReasonMissingStatus, ReasonMissingURI,
	// ReasonMissingClientIP: a required field is absent (or has the wrong type,
	// for request.uri).
	ReasonMissingTS       = "missing ts"
	ReasonMissingStatus   = "missing status"
	ReasonMissingURI      = "missing request.uri"
	ReasonMissingClientIP = "missing client ip"
	// ReasonBadTS, ReasonBadStatus, ReasonBadDuration, ReasonBadSize,
	// ReasonBadClientIP: a field is present but its value is unusable (wrong
	// type, not finite, negative, out of range, not an IP address).
	ReasonBadTS       = "bad ts"
	ReasonBadStatus   = "bad status"
	ReasonBadDuration = "bad duration"
	ReasonBadSize     = "bad size"
	ReasonBadClientIP = "bad client ip"
)

// MaxLineBytes is the longest line accepted, its '\n' excluded (a '\r' before
// it counts). Caddy's lines are 0.5-3 KB; anything near this size is abuse or
// corruption, and a bound is what keeps memory flat.
const MaxLineBytes = defaultBlock - 1

// defaultBlock is the read block size: large enough to amortise channel and
// scheduling costs over ~800 lines, small enough that a few per worker are cheap.
const defaultBlock = 1 << 20

// Options tunes a read.
type Options struct {
	// OnRead, when set, is told how many bytes were read from an input
	// file as they are read (the file's bytes: compressed ones for a gzip
	// file), for progress shown to a person. It may be called from several
	// goroutines.
	OnRead func(n int64)
	// LoggedInCookie marks a logged-in user's Cookie header: a substring
	// ("wikiUserID=") or a regular expression (sources.CookiePattern); ""
	// means the site's pattern is unknown.
	LoggedInCookie string
	// Workers is the number of parser goroutines; 0 (or less) means
	// runtime.GOMAXPROCS(0), and more than 64 means 64. A read holds at most
	// 2*Workers+2 blocks of 1 MiB.
	Workers int
	// Prefilter, when set, sees each non-blank line before it is parsed, as
	// raw bytes without the newline (valid only during the call), and decides
	// whether the line is parsed at all: it lets a caller that wants a few
	// lines skip the JSON parse of the rest, which costs far more than a
	// search of the bytes. A line it rejects counts in Stats.Lines and nowhere
	// else: it is neither delivered nor counted as skipped, so a line that
	// would have been skipped as unreadable goes unreported too (a caller
	// that needs the skips reads without a prefilter). Everything in a line
	// is attacker-controlled: a prefilter must accept every line it cannot
	// rule out. It is called from the parser goroutines concurrently.
	Prefilter func(line []byte) bool
	// Zone is where times written without a zone are read (Caddy's
	// time_format wall, wall_milli, wall_nano, and the console encoder's
	// default). nil means UTC, which is what Caddy writes unless the log
	// sets time_local; the caller decides (bundle.LogZone), never from the
	// zone times are displayed in. ZoneWhy says why, for the notes.
	Zone    *time.Location
	ZoneWhy string
	// DurationFormat is Caddy's duration_format for durations written as
	// whole numbers: "s", "ms" or "ns" (or Caddy's other spellings of them).
	// "" or "auto" detects it per input from the first lines' values (stated
	// in the input's notes). A fraction is always read as seconds and a Go
	// duration string ("1.5s") as what it says; "string" (duration_format
	// string) refuses numbers, whose lines are skipped as ReasonBadDuration.
	DurationFormat string
	// BorrowTargets has the requests handed to the sink view their Path and
	// Query in the read's own buffer, instead of each getting a string of its
	// own: such a string is valid only until the sink returns, after which
	// the buffer is filled with the next lines. A sink that keeps a Path or
	// Query (or a substring of one) past its return must copy it
	// (strings.Clone); one that only looks at them, or copies what it keeps,
	// saves an allocation and a copy for every target not seen lately (a
	// crawler's are mostly new). The other strings of a Request are the
	// sink's either way. false (the default) gives every target its own
	// string.
	BorrowTargets bool
}

// Stats describes what a read saw.
type Stats struct {
	Files    int64 // streams opened
	Lines    int64 // lines seen, blank and skipped ones included
	Requests int64 // lines turned into a Request
	Bytes    int64 // uncompressed bytes read
	// OutOfOrder counts requests whose time is before the latest time already
	// seen (across all files of one Read). Caddy stamps a line when the response
	// ends, so a slow request logs after faster ones that started later: some
	// disorder is normal, and a large count says the files are in the wrong order.
	OutOfOrder int64
	// First and Last are the earliest and latest request times (not the times
	// of the first and last lines, which need not be the extremes).
	First, Last time.Time
	// Duplicates counts requests left out because an earlier input of the
	// same Read, or the same input earlier, held the same line (see
	// Input.Duplicates and Input.Repeated).
	Duplicates int64
	// Inputs describes each stream, in the order read.
	Inputs []Input
	// Notes are data-quality notes for report.json: how inputs were read
	// (unwrapped, a detected duration unit, a zone applied), what was counted
	// once, and what an unusable input looks like. The skip counts are not
	// among them: they are in the caller's sources.Skips.
	Notes []sources.QualityNote
}

func (s *Stats) add(o Stats) {
	s.Files += o.Files
	s.Lines += o.Lines
	s.Requests += o.Requests
	s.Bytes += o.Bytes
	s.OutOfOrder += o.OutOfOrder
	s.Duplicates += o.Duplicates
	s.Inputs = append(s.Inputs, o.Inputs...)
	s.Notes = append(s.Notes, o.Notes...)
	if !o.First.IsZero() && (s.First.IsZero() || o.First.Before(s.First)) {
		s.First = o.First
	}
	if o.Last.After(s.Last) {
		s.Last = o.Last
	}
}

// Read streams every file in paths, in order, plain or gzip (detected by its
// magic bytes, not its name), and calls sink with batches of requests in file
// order. sink is called from one goroutine, sequentially; the batch's backing
// array is reused after sink returns, so sink must copy what it keeps (the
// strings inside may be kept: they are never reused).
//
// Unusable input is counted in skips and is not an error; skips and sink may be
// nil when only the Stats are wanted. A
// truncated or corrupt gzip file is counted there too and reading goes on with
// the next file. Read returns an error when a file cannot be opened or read,
// when sink returns one (returned wrapped), or when ctx is done; Stats then
// covers what was delivered before it.
//
// Each input is read as its first lines show it was written (see Input and
// Stats.Notes): Docker json-file and journald wrappers are unwrapped, console
// encoder lines are read from their JSON fields, whole-number durations are
// read in the unit detected or given. A request that an earlier path, or the
// same path earlier, already delivered (same time, client address and port,
// URI, status and duration) is counted once, in Stats.Duplicates.
//
// Several paths are read in the order of their first requests' times, not
// in the order given: rotated files listed newest first (as a shell lists
// access.log access.log.1) still deliver requests in time order, which the
// rules' replay needs. A path whose first lines show no time keeps its place
// after the others.
//
// When the inputs held lines but not one usable request, Read returns a
// *UnusableError (with complete Stats) saying what each input looks like;
// an input that is unusable among usable ones only gets a note.
func Read(ctx context.Context, paths []string, opts Options, skips *sources.Skips, sink func([]sources.Request) error) (Stats, error) {
	rd := newReader(opts, skips, sink, defaultBlock)
	if err := rd.setDurationFormat(); err != nil {
		return Stats{}, err
	}
	var total Stats
	if len(paths) > 0 {
		o, err := newOverlap()
		if err != nil {
			// The read goes on; it only cannot tell repeated lines.
			total.Notes = append(total.Notes, sources.QualityNote{Source: "access", Severity: sources.SeverityWarning,
				Message: fmt.Sprintf("lines repeated in the access logs cannot be told apart, and would count twice: %v", err)})
		} else {
			rd.overlap = o
			defer o.close()
		}
	}
	if len(paths) > 1 {
		paths = byFirstTime(paths, opts)
	}
	for i, path := range paths {
		if rd.overlap != nil {
			rd.overlap.startInput(i)
		}
		st, err := rd.readFile(ctx, path)
		total.add(st)
		if err != nil {
			return total, err
		}
		if rd.overlap != nil {
			if err := rd.overlap.endInput(); err != nil {
				return total, err
			}
		}
	}
	return total, rd.unusable(total)
}

// byFirstTime orders paths by the earliest request time in their first lines
// (a stable sort; paths that show none, cannot be read or are not regular
// files go last, where reading them reports why).
func byFirstTime(paths []string, opts Options) []string {
	type keyed struct {
		path  string
		first time.Time
	}
	ks := make([]keyed, len(paths))
	for i, p := range paths {
		ks[i] = keyed{p, firstTime(p, opts)}
	}
	sort.SliceStable(ks, func(i, j int) bool {
		a, b := ks[i].first, ks[j].first
		return !a.IsZero() && (b.IsZero() || a.Before(b))
	})
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.path
	}
	return out
}

// firstTimeSniff is how much of a file byFirstTime looks at: a few dozen lines.
const firstTimeSniff = 64 << 10

func firstTime(path string, opts Options) time.Time {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		// A pipe (stdin, a process substitution) can be read only once.
		return time.Time{}
	}
	var r io.Reader = f
	br := bufio.NewReaderSize(f, 4096)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return time.Time{}
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	head := make([]byte, firstTimeSniff)
	n, err := io.ReadFull(r, head)
	return sniff(head[:n], err != nil, opts).first
}

// ReadReader is Read for one stream; name stands for it in skip locations
// ("name:line") and errors. Cancelling ctx is noticed between blocks: a Read
// on r that blocks delays it.
func ReadReader(ctx context.Context, name string, r io.Reader, opts Options, skips *sources.Skips, sink func([]sources.Request) error) (Stats, error) {
	rd := newReader(opts, skips, sink, defaultBlock)
	if err := rd.setDurationFormat(); err != nil {
		return Stats{}, err
	}
	st, err := rd.readStream(ctx, name, r)
	if err != nil {
		return st, err
	}
	return st, rd.unusable(st)
}

func (rd *reader) setDurationFormat() error {
	if rd.opts.DurationFormat == "" {
		return nil
	}
	if err := CheckDurationFormat(rd.opts.DurationFormat); err != nil {
		return fmt.Errorf("access log: %w", err)
	}
	return nil
}

// unusable returns an *UnusableError when no input gave a request although
// some lines were skipped. With a Prefilter the caller asked for a few lines
// only, and finding none is an answer.
func (rd *reader) unusable(st Stats) error {
	if st.Requests > 0 || st.Duplicates > 0 || rd.opts.Prefilter != nil {
		return nil
	}
	e := &UnusableError{}
	for _, in := range st.Inputs {
		if in.Diagnosis != "" {
			e.Inputs = append(e.Inputs, in)
		}
	}
	if len(e.Inputs) == 0 {
		return nil
	}
	return e
}

func (rd *reader) readFile(ctx context.Context, path string) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, fmt.Errorf("access log %s: %w", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		// *os.PathError already names the file.
		return Stats{}, fmt.Errorf("access log: %w", err)
	}
	defer f.Close()
	if rd.opts.OnRead != nil {
		return rd.readStream(ctx, path, readCounter{f, rd.opts.OnRead})
	}
	return rd.readStream(ctx, path, f)
}

// readCounter tells onRead how many bytes each Read returned.
type readCounter struct {
	r      io.Reader
	onRead func(int64)
}

func (c readCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.onRead(int64(n))
	}
	return n, err
}

// maxWorkers bounds Options.Workers, and with it the memory of a read.
const maxWorkers = 64

func workers(n int) int {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	return min(n, maxWorkers)
}
