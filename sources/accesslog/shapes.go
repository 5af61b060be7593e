package accesslog

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math"
	"strconv"
	"time"

	"github.com/valyala/fastjson"

	"github.com/aftermath-forensics/aftermath/sources"
)

// How Caddy's lines reach a file besides Caddy writing them itself:
//   - Docker's json-file driver wraps each line written to stdout/stderr:
//     {"log":"<the line, escaped>\n","stream":"stdout","time":"<RFC 3339>"},
//     and splits lines longer than 16 KiB into several entries, all but the
//     last without the final "\n";
//   - `journalctl -o json` exports one object per journal entry, the line in
//     MESSAGE (a string, or an array of byte values when it is not UTF-8);
//   - Caddy's console encoder (the default on a terminal) writes
//     "<time>\t<level>\t<logger>\t<msg>\t<fields as JSON>", the time in
//     wall_milli unless time_format says otherwise, the level often wrapped in
//     colour escapes.
// The wrapped line is read as if Caddy had written it to a file; a console
// line is rebuilt as the JSON line Caddy would have written.

// Skip reasons of the shapes above.
const (
	// ReasonDockerPartial: a Docker json-file entry holding part of a line
	// (Docker splits lines longer than 16 KiB); the parts are not joined.
	ReasonDockerPartial = "Docker json-file partial line"
	// ReasonConsoleNoFields: a console-encoder line from an access logger
	// without the JSON fields after the message, so without a request.
	ReasonConsoleNoFields = "console line without its JSON fields"
)

// shapeCounts counts the lines of an input that were not plain Caddy JSON.
type shapeCounts struct {
	docker, journald, console int64
	zoneless                  int64 // times written without a zone (wall)
	remoteAddr                int64 // client address from remote_addr (ip:port) only
	// zoneOff counts zone-less times that disagree with the time Docker or
	// journald recorded for the line by more than zoneTolerance; offBy is how
	// far (the host's time minus the line's, to 15 minutes).
	zoneOff int64
	offBy   time.Duration
	// wholeSeconds counts whole-number durations read as seconds.
	wholeSeconds int64
	// numericDurations counts durations refused for being numbers, under
	// the duration format string.
	numericDurations int64
}

// zoneTolerance is how far a line's time may be from the time its host
// recorded: Docker and journald stamp a line when they receive it, moments
// after Caddy wrote it; zones differ by a quarter of an hour or more.
const zoneTolerance = 10 * time.Minute

func (c *shapeCounts) add(o shapeCounts) {
	c.docker += o.docker
	c.journald += o.journald
	c.console += o.console
	c.zoneless += o.zoneless
	c.remoteAddr += o.remoteAddr
	c.zoneOff += o.zoneOff
	c.wholeSeconds += o.wholeSeconds
	c.numericDurations += o.numericDurations
	if o.offBy != 0 {
		c.offBy = o.offBy
	}
}

// unwrap recognises a Docker json-file or journald entry in a top-level object
// with neither "logger" nor "request", and returns the line inside it (in
// lp.inner). ok is false for any other object; reason is set when the entry is
// a wrapper whose line cannot be used.
func (lp *lineParser) unwrap(top *fastjson.Object) (inner []byte, reason string, ok bool) {
	if lp.unwrapped {
		return nil, "", false
	}
	if log := top.Get("log"); log != nil && log.Type() == fastjson.TypeString && top.Get("stream") != nil {
		b := stringOf(log)
		if !bytes.HasSuffix(b, []byte("\n")) {
			return nil, ReasonDockerPartial, true
		}
		lp.counts.docker++
		if t, err := time.Parse(time.RFC3339Nano, string(stringOf(top.Get("time")))); err == nil {
			lp.hostTime = t
		}
		lp.inner = append(lp.inner[:0], bytes.TrimRight(b, "\r\n")...)
		return lp.inner, "", true
	}
	msg := top.Get("MESSAGE")
	if msg == nil || top.Get("__REALTIME_TIMESTAMP") == nil && top.Get("_SYSTEMD_UNIT") == nil && top.Get("__CURSOR") == nil {
		return nil, "", false
	}
	lp.counts.journald++
	if us, err := strconv.ParseInt(string(stringOf(top.Get("__REALTIME_TIMESTAMP"))), 10, 64); err == nil {
		lp.hostTime = time.UnixMicro(us)
	}
	lp.inner = lp.inner[:0]
	switch msg.Type() {
	case fastjson.TypeString:
		lp.inner = append(lp.inner, stringOf(msg)...)
	case fastjson.TypeArray:
		// journald's form for a message that is not valid UTF-8.
		a, _ := msg.Array()
		for _, v := range a {
			n, err := v.Int()
			if err != nil || n < 0 || n > 255 {
				return nil, ReasonMalformedJSON, true
			}
			lp.inner = append(lp.inner, byte(n))
		}
	default:
		return nil, ReasonUnknownShape, true
	}
	lp.inner = bytes.TrimRight(lp.inner, "\r\n")
	return lp.inner, "", true
}

// parseInner parses a line taken out of a wrapper (in lp.inner, which it may
// reuse): a JSON line or a console line.
func (lp *lineParser) parseInner(inner []byte, r *sources.Request) string {
	lp.unwrapped = true
	defer func() { lp.unwrapped, lp.hostTime = false, time.Time{} }()
	// The inner line is copied: the parse below reuses the parser's buffers.
	line := append([]byte(nil), inner...)
	*r = sources.Request{}
	return lp.parse(line, r)
}

// parseConsole reads a line of Caddy's console encoder (line starts at its
// first non-blank byte). A line that does not start with a time is not one:
// it is malformed JSON, as any other line that is not JSON.
func (lp *lineParser) parseConsole(line []byte, r *sources.Request) string {
	c, ok := splitConsole(line)
	if !ok {
		return ReasonMalformedJSON
	}
	t, ok := lp.consoleTime(c.time)
	if !ok {
		return ReasonMalformedJSON
	}
	lp.counts.console++
	if !isAccessLogger(c.logger) {
		return ReasonNotAccessLog
	}
	if c.fields == nil {
		return ReasonConsoleNoFields
	}
	// Rebuild the JSON line Caddy would have written: ts (exact microseconds)
	// and logger first, then the fields.
	b := append(lp.inner[:0], `{"ts":`...)
	us := t.UnixMicro()
	b = strconv.AppendInt(b, us/1e6, 10)
	b = append(b, '.')
	frac := strconv.AppendInt(nil, 1e6+us%1e6, 10)
	b = append(b, frac[1:]...)
	b = append(b, `,"logger":"http.log.access"`...)
	rest := bytes.TrimLeft(c.fields[1:], " \t")
	if len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	b = append(b, rest...)
	lp.inner = b
	wasUnwrapped := lp.unwrapped
	lp.unwrapped = true
	defer func() { lp.unwrapped = wasUnwrapped }()
	*r = sources.Request{}
	return lp.parse(append([]byte(nil), b...), r)
}

// consoleLine is a console-encoder line cut into its parts.
type consoleLine struct {
	time, level, logger, msg []byte
	fields                   []byte // from the '{' of the JSON fields; nil without
}

// splitConsole cuts a console line. The encoder separates its parts with tabs;
// a line copied from a terminal may have spaces instead, and then a wall time
// ("2026/10/03 02:15:00.123") is two words.
func splitConsole(line []byte) (consoleLine, bool) {
	var c consoleLine
	head := line
	if i := bytes.Index(line, []byte("\t{")); i >= 0 {
		head, c.fields = line[:i], line[i+1:]
	} else if i := bytes.Index(line, []byte(" {")); i >= 0 {
		head, c.fields = line[:i], line[i+1:]
	}
	head = bytes.TrimRight(head, " \t\r")
	var parts [][]byte
	if bytes.IndexByte(head, '\t') >= 0 {
		parts = bytes.SplitN(head, []byte("\t"), 4)
	} else {
		words := bytes.Fields(head)
		if len(words) >= 2 && len(words[0]) == len("2006/01/02") && words[0][4] == '/' {
			words = append([][]byte{line[:len(words[0])+1+len(words[1])]}, words[2:]...)
		}
		if len(words) < 3 {
			return c, false
		}
		parts = append(words[:3:3], bytes.Join(words[3:], []byte(" ")))
	}
	if len(parts) < 3 {
		return c, false
	}
	c.time, c.level, c.logger = parts[0], parts[1], parts[2]
	if len(parts) > 3 {
		c.msg = parts[3]
	}
	return c, true
}

// consoleTime reads a console line's time: any of Caddy's time formats.
func (lp *lineParser) consoleTime(b []byte) (time.Time, bool) {
	if len(b) == 0 {
		return time.Time{}, false
	}
	if b[0] >= '0' && b[0] <= '9' && intDigits(b) >= 10 && bytes.IndexByte(b, '/') < 0 && bytes.IndexByte(b, '-') < 0 {
		return lp.timeOfNumber(b)
	}
	return lp.timeOfString(string(b))
}

// fpSeed keys the fingerprints of one process; they are never stored.
var fpSeed = maphash.MakeSeed()

// fingerprint identifies a request across inputs: the same time (to the
// microsecond), client address and port, URI, status and duration. Two
// distinct requests share all of these only by a collision of the 64-bit hash.
func (lp *lineParser) fingerprint(r *sources.Request) uint64 {
	var h maphash.Hash
	h.SetSeed(fpSeed)
	var b [8 + 16 + 2 + 2 + 8]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(r.Time.UnixMicro()))
	a16 := r.ClientIP.As16()
	copy(b[8:], a16[:])
	binary.LittleEndian.PutUint16(b[24:], lp.port)
	binary.LittleEndian.PutUint16(b[26:], uint16(r.Status))
	binary.LittleEndian.PutUint64(b[28:], math.Float64bits(r.Duration))
	h.Write(b[:])
	h.WriteString(r.Path)
	h.WriteByte('?')
	h.WriteString(r.Query)
	return h.Sum64()
}
