package accesslog

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/aftermath-forensics/aftermath/sources"
)

// Input describes one stream of a Read: what it held, how it was read and, when
// nothing or almost nothing in it was usable, what it looks like.
type Input struct {
	Name     string
	Lines    int64 // lines seen, blank and skipped ones included
	Requests int64 // requests delivered (duplicates of earlier inputs left out)
	Skipped  int64 // lines counted in the skips
	// FirstSkipped is the line number of the first skipped line (0: none).
	FirstSkipped int64
	First, Last  time.Time // earliest and latest request delivered
	// SpanFirst and SpanLast are the earliest and latest request in the
	// input, those left out as duplicates of an earlier input included:
	// the stretch of time the file itself holds.
	SpanFirst, SpanLast time.Time
	// Cut names why the input ends before its writer stopped (ReasonTruncatedGzip,
	// ReasonCorruptGzip), "" when it was read to its end.
	Cut string
	// DurationUnit is what a whole-number duration was read in: "s", "ms" or
	// "ns" (Caddy's duration_format); DurationDetected says it was inferred
	// from the values rather than given.
	DurationUnit     string
	DurationDetected bool
	// FractionUnit is what a fractional duration was read in when it was
	// detected: "s" (Caddy's own), or "ms" (a log shipper's transform
	// wrote milliseconds with a fraction); "" when the format was given.
	FractionUnit string
	// Duplicates counts requests left out because an earlier input held them;
	// DuplicateOf names those inputs.
	Duplicates  int64
	DuplicateOf []string
	// Repeated counts requests left out because the same input held them
	// already (a line written twice, files concatenated).
	Repeated int64
	// Diagnosis says what the input looks like when nothing (or under one
	// line in twenty) could be read from it: "looks like nginx combined log
	// format; aftermath reads Caddy's JSON access log (log { format json })".
	Diagnosis string

	counts      shapeCounts
	sniff       sniffResult
	firstReason string // the skip reason of line FirstSkipped
}

// UnusableError is what Read and ReadReader return when their inputs held
// lines but not one usable request (and no Prefilter was set): the CLI exits 2
// with its message, which names each input, its first unusable line and what
// it looks like. The Stats returned with it are complete.
type UnusableError struct {
	Inputs []Input // the inputs with a Diagnosis
}

func (e *UnusableError) Error() string {
	msgs := make([]string, len(e.Inputs))
	for i, in := range e.Inputs {
		msgs[i] = in.Diagnosis
	}
	return "no usable access-log line: " + strings.Join(msgs, "; ")
}

// Duration units of Caddy's duration_format, by every name Caddy accepts;
// "string" (Go duration strings) refuses numbers: Caddy set so never writes
// one. "auto" is the same as none: detected per input.
var durationUnits = map[string]float64{
	"s": 1, "second": 1, "seconds": 1,
	"ms": 1e3, "milli": 1e3, "millis": 1e3,
	"ns": 1e9, "nano": 1e9, "nanos": 1e9,
	"string": durationStringOnly, "auto": 0,
}

// durationStringOnly is the unit of duration_format string: a number is not
// a duration then, and its line is skipped as ReasonBadDuration.
const durationStringOnly = -1

// CheckDurationFormat checks a duration format given by the user (Options.
// DurationFormat, the --duration-format flag).
func CheckDurationFormat(f string) error {
	if _, ok := durationUnits[f]; !ok && f != "" {
		return fmt.Errorf("duration format %q: want s, ms, ns or string (Caddy's duration_format), or auto to detect it from the values", f)
	}
	return nil
}

func unitName(div float64) string {
	switch div {
	case 1e3:
		return "ms"
	case 1e9:
		return "ns"
	case durationStringOnly:
		return "string"
	}
	return "s"
}

// sniffSize is how much of an input is looked at before it is read: enough
// for a couple of hundred of Caddy's lines.
const (
	sniffSize  = 256 << 10
	sniffLines = 256
)

// sniffResult is what the first lines of an input showed.
type sniffResult struct {
	lines, requests int
	first           time.Time // the earliest request time seen
	// whole-number and fractional durations among the requests
	ints           []int64
	fracs, strings int
	// fractional durations of the answers Caddy served itself from disk
	// or cache (OriginStatic), and of all requests, as written
	staticFracs, allFracs []float64
	// the first unusable line: its number, skip reason and a copy
	badLine   int
	badReason string
	bad       []byte
}

// sniff parses the first complete lines of head (all of it when eof) with a
// parser of their own, to choose how the input is read and to say what it
// looks like should nothing in it be usable.
func sniff(head []byte, eof bool, opts Options) sniffResult {
	var s sniffResult
	lp := newLineParser()
	lp.zone = opts.Zone
	n := 0
	for len(head) > 0 && s.lines < sniffLines {
		i := bytes.IndexByte(head, '\n')
		var line []byte
		switch {
		case i >= 0:
			line, head = head[:i], head[i+1:]
		case eof:
			line, head = head, nil
		default:
			head = nil
			continue
		}
		n++
		if isBlank(line) {
			continue
		}
		s.lines++
		var r sources.Request
		reason := lp.parse(line, &r)
		if reason != "" {
			if s.badLine == 0 {
				s.badLine, s.badReason = n, reason
				s.bad = bytes.Clone(line[:min(len(line), 4096)])
			}
			continue
		}
		s.requests++
		if s.first.IsZero() || r.Time.Before(s.first) {
			s.first = r.Time
		}
		switch lp.durKind {
		case 'i':
			s.ints = append(s.ints, lp.durInt)
		case 'f':
			s.fracs++
			s.allFracs = append(s.allFracs, r.Duration)
			if r.Origin == sources.OriginStatic {
				s.staticFracs = append(s.staticFracs, r.Duration)
			}
		case 's':
			s.strings++
		}
	}
	return s
}

// durationUnit decides how whole-number durations of an input are read.
// Caddy writes seconds as a fraction (zap's float; a whole second to the
// nanosecond never happens), milliseconds and nanoseconds as integers, so a
// fraction means seconds; integers are milliseconds when some are below 1,000
// (a static file or a refusal takes under a millisecond: 0 or 1 in ms, never
// under a microsecond in ns) and nanoseconds otherwise.
func (s sniffResult) durationUnit() (div float64, detected bool) {
	if s.fracs > 0 || len(s.ints) == 0 {
		return 1, false
	}
	lo := s.ints[0]
	for _, v := range s.ints {
		lo = min(lo, v)
	}
	if lo >= 1000 {
		return 1e9, true
	}
	return 1e3, true
}

// minStaticSample is how many static answers among the first lines make
// their durations evidence of the unit.
const minStaticSample = 5

// fastStatic is the duration, in seconds, that the quickest tenth of the
// answers Caddy serves itself from disk or cache stays under: a file or a
// cached page written to the socket takes 0.1 to 10 ms (1e-4 to 1e-2 s).
// Written as fractional milliseconds the same answers read 0.1 to 10, which
// as seconds no file server ever takes for a tenth of its answers. The bar
// sits at the bottom of that range, not below it: a slow disk or a busy
// host can push a tenth of real second-valued static answers to tens of
// milliseconds, and misreading seconds as milliseconds would erase every
// duration of the log.
const fastStatic = 0.1

// fractionUnit decides how fractional durations of an input are read:
// seconds, Caddy's own, unless the quickest tenth of the static answers
// among the first lines all took fastStatic or longer, which only
// milliseconds explain (a log shipper's transform that wrote duration*1000).
func (s sniffResult) fractionUnit() float64 {
	if len(s.staticFracs) < minStaticSample {
		return 1
	}
	if percentile(s.staticFracs, 0.1) >= fastStatic {
		return 1e3
	}
	return 1
}

// percentile returns the p-quantile (nearest rank) of vs, which it sorts.
func percentile(vs []float64, p float64) float64 {
	sort.Float64s(vs)
	i := int(p * float64(len(vs)))
	return vs[min(i, len(vs)-1)]
}

// notes are the data-quality notes about one input, in the order a reader
// needs them.
func (in *Input) notes(opts Options) []sources.QualityNote {
	var out []sources.QualityNote
	add := func(sev sources.Severity, format string, args ...any) {
		out = append(out, sources.QualityNote{Source: "access", Severity: sev, Message: in.Name + ": " + fmt.Sprintf(format, args...)})
	}
	if in.Diagnosis != "" {
		add(sources.SeverityError, "%s", strings.TrimPrefix(in.Diagnosis, in.Name+": "))
	}
	c := in.counts
	if c.docker > 0 {
		add(sources.SeverityInfo, "%d Docker json-file lines: unwrapped and read as Caddy's lines", c.docker)
	}
	if c.journald > 0 {
		add(sources.SeverityInfo, "%d journald export entries (journalctl -o json): the line in MESSAGE was read", c.journald)
	}
	if c.console > 0 {
		add(sources.SeverityInfo, "%d lines of Caddy's console encoder: read from the JSON fields after the message (log { format json } writes them whole)", c.console)
	}
	if c.zoneless > 0 {
		zone := "UTC, what Caddy writes unless the log sets time_local"
		if opts.Zone != nil {
			zone = opts.Zone.String() + " (the zone given for times without one)"
			if opts.ZoneWhy != "" {
				zone = opts.Zone.String() + " (" + opts.ZoneWhy + ")"
			}
		}
		add(sources.SeverityInfo, "%d times have no zone (Caddy's time_format wall, wall_milli or wall_nano): read as %s", c.zoneless, zone)
	}
	if c.zoneOff > 0 {
		add(sources.SeverityWarning, "%d of those times are %s off the times Docker or journald recorded for the same lines: Caddy wrote them in another zone (time_local), and the times here are off by that much; give the zone Caddy's host uses",
			c.zoneOff, signed(c.offBy))
	}
	if c.remoteAddr > 0 {
		add(sources.SeverityInfo, "%d lines name the client only by remote_addr (ip:port, older Caddy): that address is the client", c.remoteAddr)
	}
	if in.DurationDetected {
		s := in.sniff
		lo, hi := s.ints[0], s.ints[0]
		for _, v := range s.ints {
			lo, hi = min(lo, v), max(hi, v)
		}
		sev, guess := sources.SeverityInfo, ""
		if len(s.ints) < 10 {
			sev, guess = sources.SeverityWarning, fmt.Sprintf(", a guess from only %d lines", len(s.ints))
		}
		why := "some are under 1,000, which a response takes in milliseconds, never in nanoseconds"
		if in.DurationUnit == "ns" {
			why = "none is under 1,000, so none took under a second if these were milliseconds"
		}
		add(sev, "durations are whole numbers (%d to %d in the first %d requests): read as %s, Caddy's duration_format %s, because %s%s; give the duration format if that is wrong",
			lo, hi, len(s.ints), unitWords[in.DurationUnit], in.DurationUnit, why, guess)
	}
	if s := in.sniff; in.FractionUnit == "ms" {
		add(sources.SeverityWarning, "durations are fractions whose quickest static answers (%d served from disk or cache among the first %d requests, the quickest tenth at %.3g or more) would take %.3g s or more as seconds, which a file server never does: read as milliseconds (a log shipper's transform of Caddy's seconds); give --duration-format s if that is wrong",
			len(s.staticFracs), s.requests, percentile(s.staticFracs, 0.1), percentile(s.staticFracs, 0.1))
	}
	if in.DurationUnit == "s" && opts.DurationFormat == "" && c.wholeSeconds > 0 && in.sniff.fracs > 0 {
		// Caddy writes seconds as fractions: whole numbers after fractions
		// mean the log's duration_format changed to ms or ns on the way.
		add(sources.SeverityWarning, "%d durations are whole numbers though the first lines' are fractions of a second: read as seconds, they are 1,000 (ms) or 10^9 (ns) times too long if Caddy's duration_format changed in this file; give the duration format or split the file",
			c.wholeSeconds)
	}
	if given := opts.DurationFormat; given != "" && given != "auto" {
		// Given, not detected: the reader says what it was told, so that a
		// wrong flag can be seen in the report.
		switch {
		case in.DurationUnit == "string" && c.numericDurations > 0:
			add(sources.SeverityError, "%d durations are numbers though the duration format given is string (Go duration strings): those lines were skipped; give the duration format the log was written with (s, ms or ns), or auto", c.numericDurations)
		case in.DurationUnit != "string" && len(in.sniff.ints) > 0:
			add(sources.SeverityInfo, "whole-number durations read as %s, the duration format given (%s), not detected", unitWords[in.DurationUnit], given)
		}
	}
	if in.sniff.strings > 0 {
		add(sources.SeverityInfo, "durations are Go duration strings (Caddy's duration_format string), read as such")
	}
	if in.Repeated > 0 {
		add(sources.SeverityInfo, "%d of its requests were repeated within it (same time to the microsecond, client address and port, URI, status and duration: lines written twice, or logs concatenated): counted once",
			in.Repeated)
	}
	if in.Duplicates > 0 {
		what := fmt.Sprintf("%d of its requests", in.Duplicates)
		if in.Requests == 0 {
			what = fmt.Sprintf("all %d of its requests", in.Duplicates)
		}
		add(sources.SeverityInfo, "%s were also in %s (same time, client address and port, URI, status and duration): counted once",
			what, strings.Join(in.DuplicateOf, ", "))
	}
	return out
}

// signed writes an offset as "+9h0m0s" or "-2h30m0s".
func signed(d time.Duration) string {
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

var unitWords = map[string]string{"s": "seconds", "ms": "milliseconds", "ns": "nanoseconds"}

// usable reports whether enough of an input could be read: at least one line
// in twenty of those not blank.
func (in *Input) usable() bool {
	read := in.Requests + in.Duplicates + in.Repeated
	return in.Skipped == 0 || read*20 >= read+in.Skipped
}

// diagnose sets in.Diagnosis from the first unusable line seen.
func (in *Input) diagnose() {
	if in.usable() {
		return
	}
	line := in.FirstSkipped
	looks := "skipped as " + in.firstReason
	if in.firstReason == ReasonBadDuration && in.counts.numericDurations > 0 {
		looks = "durations are numbers, though the duration format given is string: give the one the log was written with (s, ms or ns), or auto"
	}
	if s := in.sniff; s.badLine > 0 && int64(s.badLine) <= line {
		line = int64(s.badLine)
		looks = describe(s.bad, s.badReason)
	}
	some := "no line could be read"
	if read := in.Requests + in.Duplicates + in.Repeated; read > 0 {
		some = fmt.Sprintf("only %d of %d lines could be read", read, read+in.Skipped)
	}
	in.Diagnosis = fmt.Sprintf("%s: %s (first unusable line %d): %s", in.Name, some, line, looks)
}

var (
	// combined: host ident user [time] "request" status size "referer" "agent"
	clfRE      = regexp.MustCompile(`^\S+ \S+ \S+ \[[^\]]+\] "[^"]*" \d{3} (\d+|-)`)
	combinedRE = regexp.MustCompile(`^\S+ \S+ \S+ \[[^\]]+\] "[^"]*" \d{3} (\d+|-) "[^"]*" "[^"]*"`)
)

const caddyJSONAdvice = "aftermath reads Caddy's JSON access log (log { format json } in the site block)"

// describe says what a line that could not be read looks like, and what to do.
func describe(line []byte, reason string) string {
	line = bytes.TrimSpace(bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")))
	switch {
	case combinedRE.Match(line):
		return "looks like nginx/Apache combined log format; " + caddyJSONAdvice
	case clfRE.Match(line):
		return "looks like Common Log Format (nginx, Apache, Caddy 1); " + caddyJSONAdvice
	}
	if c, ok := splitConsole(line); ok {
		var lp lineParser
		if _, ok := lp.consoleTime(c.time); ok {
			if reason == ReasonConsoleNoFields {
				return "Caddy console encoder lines without their JSON fields; " + caddyJSONAdvice
			}
			if !isAccessLogger(c.logger) {
				return fmt.Sprintf("Caddy console encoder lines of logger %q, not the access log; %s", clip(c.logger), caddyJSONAdvice)
			}
			return "Caddy console encoder lines (" + reason + "); " + caddyJSONAdvice
		}
	}
	var p fastjson.Parser
	v, err := p.ParseBytes(line)
	if err != nil {
		if reason == ReasonInvalidUTF8 {
			return "not text (invalid UTF-8): a binary or corrupted file; " + caddyJSONAdvice
		}
		return "not JSON; " + caddyJSONAdvice
	}
	o, err := v.Object()
	if err != nil {
		return "JSON, but not one object per line; " + caddyJSONAdvice
	}
	switch {
	case o.Get("log") != nil && o.Get("stream") != nil:
		return "Docker json-file lines whose lines inside are not usable (" + reason + ")"
	case o.Get("MESSAGE") != nil:
		return "a journald export whose messages are not Caddy access-log lines (" + reason + ")"
	case o.Get("logger") != nil && !isAccessLogger(stringOf(o.Get("logger"))):
		return fmt.Sprintf("lines of Caddy's own log (logger %q), not its access log; the access log is the file the site's log directive writes", clip(stringOf(o.Get("logger"))))
	case o.Get("request") != nil || o.Get("logger") != nil:
		return "Caddy access-log lines that cannot be used (" + reason + ")"
	}
	keys := []string{}
	o.Visit(func(k []byte, _ *fastjson.Value) {
		if len(keys) < 5 {
			keys = append(keys, strconv.Quote(clip(k)))
		}
	})
	sort.Strings(keys)
	return fmt.Sprintf("JSON without Caddy's request object (keys %s); %s", strings.Join(keys, ", "), caddyJSONAdvice)
}

// clip shortens a name taken from a line for a message (it is still
// attacker-controlled: callers print it quoted).
func clip(b []byte) string {
	s := string(b)
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
