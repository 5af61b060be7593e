package promstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/storage"

	"github.com/aftermath-forensics/aftermath/sources"
)

// Skip reasons recorded in sources.Skips by LoadFile and LoadReader. The unit
// is a line of the (decompressed) text, except where noted.
const (
	// ReasonNoTimestamp: a sample without a timestamp. A bundle must be
	// time-stamped: there is no scrape time to give it.
	ReasonNoTimestamp = "sample without timestamp"
	// ReasonMalformed: a line the Prometheus parser rejected. The first few
	// parser messages are in LoadStats.Errors.
	ReasonMalformed = "malformed line"
	// ReasonDuplicate: a sample with the timestamp and value of its series'
	// newest sample (nothing is lost).
	ReasonDuplicate = "duplicate sample"
	// ReasonConflict: a sample with the timestamp of its series' newest
	// sample but another value; the first value is kept.
	ReasonConflict = "duplicate timestamp with a different value (first kept)"
	// ReasonTooOld: a sample more than 100 years older than the newest sample
	// of the store.
	ReasonTooOld = "sample too far from the others in time"
	// ReasonRejected: any other sample the TSDB refused (e.g. a label name
	// given twice); the message is in LoadStats.Errors.
	ReasonRejected = "sample rejected by storage"
	// ReasonAfterEOF: a non-empty line after OpenMetrics' "# EOF".
	ReasonAfterEOF = "data after # EOF"
	// ReasonNoEOF: OpenMetrics input whose last line is not "# EOF" (counted
	// once per file): the file may have been cut at a line boundary.
	ReasonNoEOF = "OpenMetrics input without # EOF (may be truncated)"
	// ReasonTruncated: the stream ended early or could not be decompressed
	// (e.g. a truncated gzip file), counted once per file; what was read
	// before, except a partial last line, is loaded.
	ReasonTruncated = "input truncated or corrupt (rest unreadable)"
	// ReasonGaveUp: lines not parsed because the file had more than
	// MaxMalformed malformed lines (it is probably not exposition text).
	ReasonGaveUp = "not parsed after too many malformed lines"
)

// Limits of the loader.
const (
	// MaxMalformed is how many malformed lines one file may have before the
	// loader stops parsing it.
	MaxMalformed = 1000
	// MaxLine is the longest line read, in bytes; a longer one is counted as
	// malformed.
	MaxLine = 1 << 20
	// maxErrors is how many parser messages LoadStats.Errors keeps.
	maxErrors = 10
)

// segmentSize is how much text the parser gets at once: the Prometheus
// parsers work on a byte slice, so the input is cut into segments at line
// boundaries and memory stays bounded whatever the file's size. A variable so
// tests can cut tiny segments.
var segmentSize = 1 << 20

// Formats reported in LoadStats.Format.
const (
	FormatOpenMetrics = "openmetrics"
	FormatPrometheus  = "prometheus"
)

// LoadStats describes one load.
type LoadStats struct {
	// Samples stored and distinct series they belong to.
	Samples, Series int64
	// OutOfOrder counts stored samples older than their series' newest
	// sample (e.g. two files covering the same series): they are stored in
	// time order all the same.
	OutOfOrder int64
	// Min and Max are the times of the oldest and newest stored sample (zero
	// if none).
	Min, Max time.Time
	// Format is FormatOpenMetrics or FormatPrometheus (empty if the input had
	// no line).
	Format string
	// Errors holds the first parser and storage messages, as "file:line: ...".
	Errors []string
}

// LoadFile loads an OpenMetrics or Prometheus text file (gzip-compressed or
// not, told by its first bytes). Locations in skips are "path:line", with the
// path as given. See LoadReader.
func (s *Store) LoadFile(path string, skips *sources.Skips) (LoadStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return LoadStats{}, fmt.Errorf("metrics: %w", err)
	}
	defer f.Close()
	return s.LoadReader(path, f, skips)
}

// LoadReader loads exposition text from r, streaming: memory does not grow
// with the input's size beyond what the TSDB keeps. name is used in skip
// locations and errors ("name:line", lines of the decompressed text).
//
// Gzip input is recognised by its magic bytes. The format is told from the
// content: OpenMetrics (timestamps in seconds, "# EOF" last) if the text has a
// "# EOF" line, a "# UNIT" line, a type only OpenMetrics has (unknown, info,
// stateset, gaugehistogram) in its first segment (1 MiB), or else if the first
// sample's timestamp has a fraction or is below 1e11 (seconds); otherwise the
// classic Prometheus text format (timestamps in milliseconds).
//
// Bad input is counted in skips (nil is allowed) by reason (the Reason*
// constants) and loading goes on: the Prometheus parsers stop at the first
// error, so after a malformed line the loader starts a new parser on the next
// line, with the metric family's "# TYPE" line in front so the family's type
// still applies. After MaxMalformed malformed lines the rest of the file is
// only counted. A truncated or corrupt stream keeps what was read before it.
//
// The returned error is for failures of the store itself (or an unreadable
// gzip header); the stats are valid in every case.
func (s *Store) LoadReader(name string, r io.Reader, skips *sources.Skips) (LoadStats, error) {
	if skips == nil {
		skips = &sources.Skips{}
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return LoadStats{}, fmt.Errorf("metrics: load %s: %w", name, errClosed)
	}

	br := bufio.NewReaderSize(r, 256<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return LoadStats{}, fmt.Errorf("metrics: %s: gzip: %w", name, err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 256<<10)
	}

	s.gen++
	l := &loader{
		store:   s,
		name:    name,
		skips:   skips,
		gen:     s.gen,
		minT:    math.MaxInt64,
		maxT:    math.MinInt64,
		curType: -1,
	}
	err := l.run(br)
	if l.stats.Samples > 0 {
		l.stats.Min, l.stats.Max = msTime(l.minT), msTime(l.maxT)
		s.extend(l.minT, l.maxT)
	}
	if l.format != formatUnknown {
		l.stats.Format = l.format.String()
	}
	if err != nil {
		return l.stats, fmt.Errorf("metrics: load %s: %w", name, err)
	}
	return l.stats, nil
}

type format int

const (
	formatUnknown format = iota
	formatOpenMetrics
	formatPrometheus
)

func (f format) String() string {
	switch f {
	case formatOpenMetrics:
		return FormatOpenMetrics
	case formatPrometheus:
		return FormatPrometheus
	}
	return ""
}

// lineRef locates one input line inside the current segment.
type lineRef struct {
	off, end int   // the line is seg[off:end], without its newline
	no       int64 // 1-based line number in the input
	typ      int   // index in lines of the "# TYPE" line in force before this line; -1 none
	blank    bool  // only spaces and tabs
}

// loader is the state of one LoadReader call.
type loader struct {
	store *Store
	name  string
	skips *sources.Skips
	gen   uint64

	format format
	// millis is set when OpenMetrics-only syntax ("# UNIT", an info type)
	// comes with integer timestamps of 1e11 or more: milliseconds, as
	// Prometheus text has them (in seconds they would be the year 5138).
	millis bool
	seg    []byte    // current segment: carried TYPE line, then whole lines
	lines  []lineRef // the lines of seg
	// carried is the "# TYPE" line in force at the end of the previous
	// segment; it starts the next segment so the parser knows the family.
	carried []byte
	curType int // index in lines of the TYPE line in force; -1 none

	lineNo    int64 // lines read
	sawEOF    bool  // OpenMetrics "# EOF" read
	truncated bool  // the stream ended with a read error
	malformed int
	gaveUp    bool
	gaveUpAt  int64 // first line not parsed

	app        storage.Appender
	lset       labels.Labels
	minT, maxT int64
	stats      LoadStats
}

// run reads the input line by line into segments and loads each segment.
func (l *loader) run(br *bufio.Reader) error {
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				if len(long) < MaxLine {
					long = append(long, line...)
				}
			}
			line = long
			if len(line) >= MaxLine {
				// Not exposition text (or not a line we could use): count
				// it and go on after it.
				l.lineNo++
				if !l.gaveUp && !l.sawEOF {
					l.skips.Add(ReasonMalformed, l.loc(l.lineNo))
					l.addError(l.lineNo, fmt.Sprintf("line longer than %d bytes", MaxLine))
					l.malformed++
					if l.malformed >= MaxMalformed {
						l.gaveUp, l.gaveUpAt = true, l.lineNo+1
					}
				}
				line = nil
			}
		}
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				if err != nil && !errors.Is(err, io.EOF) {
					// A partial line before a read error is not trusted:
					// "x 12 17959" may be "x 123 1795966445.054" cut short.
					line = nil
				} else {
					line = append(line, '\n') // last line without newline
				}
			}
			if line != nil {
				if ferr := l.addLine(line); ferr != nil {
					return ferr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			l.truncated = true
			l.skips.Add(ReasonTruncated, l.loc(l.lineNo+1))
			l.addError(l.lineNo+1, err.Error())
			break
		}
	}
	if err := l.flush(true); err != nil {
		return err
	}
	if l.gaveUp && l.lineNo >= l.gaveUpAt {
		l.skips.AddN(ReasonGaveUp, l.loc(l.gaveUpAt), int(l.lineNo-l.gaveUpAt+1))
	}
	if l.format == formatOpenMetrics && !l.sawEOF && !l.gaveUp && !l.truncated {
		l.skips.Add(ReasonNoEOF, l.loc(l.lineNo))
	}
	return nil
}

func (l *loader) loc(line int64) string {
	return l.name + ":" + strconv.FormatInt(line, 10)
}

func (l *loader) addError(line int64, msg string) {
	if len(l.stats.Errors) >= maxErrors {
		return
	}
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	l.stats.Errors = append(l.stats.Errors, l.loc(line)+": "+msg)
}

// addLine appends one line (ending in '\n') to the current segment, loading
// the segment first if it is full.
func (l *loader) addLine(line []byte) error {
	l.lineNo++
	if l.gaveUp {
		return nil
	}
	body := line[:len(line)-1]
	body = bytes.TrimSuffix(body, []byte{'\r'})
	if l.sawEOF {
		if len(bytes.TrimSpace(body)) > 0 {
			l.skips.Add(ReasonAfterEOF, l.loc(l.lineNo))
		}
		return nil
	}
	if string(body) == "# EOF" && l.format != formatPrometheus {
		// Only OpenMetrics has "# EOF"; in Prometheus text (decided on an
		// earlier segment) it is a comment. Exporters and hand-made files
		// also end Prometheus text with it: the samples before it decide.
		if l.format == formatUnknown {
			l.format = l.detect()
		}
		if l.format != formatPrometheus {
			l.format = formatOpenMetrics
		}
		l.sawEOF = true
		return nil
	}
	if len(l.seg)+len(body)+1 > segmentSize && len(l.lines) > 0 {
		if err := l.flush(false); err != nil {
			return err
		}
	}
	if len(l.seg) == 0 && len(l.carried) > 0 {
		l.seg = append(l.seg, l.carried...)
	}
	ref := lineRef{off: len(l.seg), no: l.lineNo, typ: l.curType, blank: isBlank(body)}
	l.seg = append(l.seg, body...)
	ref.end = len(l.seg)
	l.seg = append(l.seg, '\n')
	l.lines = append(l.lines, ref)
	if isTypeLine(body) {
		l.curType = len(l.lines) - 1
	}
	return nil
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// isTypeLine reports whether b is a well-formed "# TYPE name type" line, the
// only metadata that changes how the parsers read samples.
func isTypeLine(b []byte) bool {
	if !bytes.HasPrefix(b, []byte("# TYPE ")) {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) != 4 {
		return false
	}
	switch f[3] {
	case "counter", "gauge", "histogram", "summary", "untyped",
		"unknown", "gaugehistogram", "stateset", "info":
		return true
	}
	return false
}

// flush parses and stores the current segment, then starts a new one that
// begins with the TYPE line in force.
func (l *loader) flush(final bool) error {
	if len(l.lines) == 0 {
		l.seg = l.seg[:0]
		return nil
	}
	if l.format == formatUnknown {
		l.format = l.detect()
		if l.format == formatUnknown {
			if !final {
				return nil // only comments so far: read on, decide later
			}
			l.format = formatPrometheus
		}
	}
	if l.format == formatOpenMetrics {
		// Each segment is a document of its own; the real "# EOF" is
		// checked by run.
		l.seg = append(l.seg, "# EOF\n"...)
	}
	l.app = l.store.db.Appender(context.Background())
	l.parseSegment()
	if err := l.app.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	l.app = nil
	if l.curType >= 0 {
		t := l.lines[l.curType]
		l.carried = append(l.carried[:0], l.seg[t.off:t.end]...)
		l.carried = append(l.carried, '\n')
	}
	l.curType = -1
	l.seg = l.seg[:0]
	l.lines = l.lines[:0]
	return nil
}

// detect tells the format from the first segment with a sample line (see
// LoadReader), or returns formatUnknown if there is none yet.
func (l *loader) detect() format {
	var firstTS []byte
	sawSample := false
	marker := formatUnknown // what OpenMetrics- or Prometheus-only syntax says
	for _, ln := range l.lines {
		b := l.seg[ln.off:ln.end]
		if marker == formatUnknown && bytes.HasPrefix(b, []byte("# UNIT ")) {
			marker = formatOpenMetrics
		}
		if marker == formatUnknown && isTypeLine(b) {
			switch string(bytes.Fields(b)[3]) {
			case "unknown", "gaugehistogram", "stateset", "info":
				marker = formatOpenMetrics
			case "untyped":
				marker = formatPrometheus
			}
		}
		if firstTS == nil && !ln.blank && b[0] != '#' {
			sawSample = true
			if ts := timestampField(b); len(ts) > 0 {
				firstTS = ts
			}
		}
	}
	if marker == formatOpenMetrics {
		if v, err := strconv.ParseInt(string(firstTS), 10, 64); err == nil && (v >= 1e11 || v <= -1e11) {
			l.millis = true
		}
		return formatOpenMetrics
	}
	if marker == formatPrometheus {
		return formatPrometheus
	}
	if firstTS == nil {
		if sawSample {
			return formatPrometheus // samples without timestamps
		}
		return formatUnknown // only comments so far
	}
	if bytes.ContainsAny(firstTS, ".eE") {
		return formatOpenMetrics
	}
	v, err := strconv.ParseInt(string(firstTS), 10, 64)
	if err == nil && (v >= 1e11 || v <= -1e11) {
		return formatPrometheus
	}
	return formatOpenMetrics
}

// timestampField returns the timestamp of a sample line (the third field,
// counting the series with its braces as one), or nil.
func timestampField(b []byte) []byte {
	i := seriesEnd(b)
	if i < 0 {
		return nil
	}
	f := bytes.Fields(b[i:])
	if len(f) < 2 || f[1][0] == '#' {
		return nil
	}
	return f[1]
}

// seriesEnd returns the offset just past the series (name and labels) of a
// sample line, or -1.
func seriesEnd(b []byte) int {
	inQuote, escaped, inBraces := false, false, false
	for i, c := range b {
		switch {
		case escaped:
			escaped = false
		case inQuote:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inQuote = false
			}
		case c == '"':
			inQuote = true
		case c == '{':
			inBraces = true
		case c == '}':
			return i + 1
		case (c == ' ' || c == '\t') && !inBraces:
			return i
		}
	}
	return -1
}

// parseSegment runs the parser over the segment, restarting it after each
// malformed line.
func (l *loader) parseSegment() {
	start := 0 // next line to parse
	var prefix []byte
	if len(l.lines) > 0 && l.lines[0].off > 0 {
		prefix = l.seg[:l.lines[0].off] // the carried TYPE line
	}
	var tmp []byte
	for start < len(l.lines) && !l.gaveUp {
		// Put the prefix (a TYPE line) just before line start: everything
		// before it has been consumed, so its bytes may be overwritten.
		pos := l.lines[start].off
		if prefix != nil {
			tmp = append(tmp[:0], prefix...)
			pos -= len(tmp)
			copy(l.seg[pos:], tmp)
		}
		next, prefixFailed := l.parseRun(l.seg[pos:], start, prefix != nil)
		if prefixFailed {
			prefix = nil // parse the same lines without it
			continue
		}
		start = next
		if start < len(l.lines) {
			prefix = nil
			if t := l.lines[start].typ; t >= 0 {
				ln := &l.lines[t]
				prefix = append([]byte(nil), l.seg[ln.off:ln.end+1]...)
				// The TYPE line moves to just before line start; later
				// restarts of the same family take it from there.
				ln.off = l.lines[start].off - len(prefix)
				ln.end = ln.off + len(prefix) - 1
			} else if len(l.carried) > 0 {
				prefix = l.carried
			}
		}
	}
}

// parseRun parses buf, whose first entry is a prefix TYPE line if hasPrefix
// and whose next entries are lines[start:]. It stops at the end or after a
// malformed line, and returns the index of the next line to parse.
func (l *loader) parseRun(buf []byte, start int, hasPrefix bool) (next int, prefixFailed bool) {
	var p textparse.Parser
	if l.format == formatOpenMetrics {
		p = textparse.NewOpenMetricsParser(buf, nil)
	} else {
		p = textparse.NewPromParser(buf, nil, false)
	}
	cur := start
	for {
		et, err := p.Next()
		if hasPrefix {
			hasPrefix = false
			if err != nil {
				return start, true
			}
			continue
		}
		if l.format == formatPrometheus {
			for cur < len(l.lines) && l.lines[cur].blank {
				cur++ // the Prometheus parser skips blank lines
			}
		}
		if errors.Is(err, io.EOF) {
			if cur < len(l.lines) {
				// The parser ended before the last line (a NUL byte ends
				// Prometheus text): count the line and go on after it.
				l.malformedLine(cur, errors.New("parser stopped here"))
				return cur + 1, false
			}
			return cur, false
		}
		if cur >= len(l.lines) {
			// More entries than lines: cannot happen with the current
			// parsers; stop rather than misattribute.
			return cur, false
		}
		if err != nil {
			l.malformedLine(cur, err)
			return cur + 1, false
		}
		if et == textparse.EntrySeries {
			l.sample(p, cur)
		}
		cur++
	}
}

func (l *loader) malformedLine(i int, err error) {
	ln := l.lines[i]
	l.skips.Add(ReasonMalformed, l.loc(ln.no))
	l.addError(ln.no, err.Error())
	l.malformed++
	if l.malformed >= MaxMalformed {
		l.gaveUp = true
		if i+1 < len(l.lines) {
			l.gaveUpAt = l.lines[i+1].no
		} else {
			l.gaveUpAt = ln.no + 1
		}
	}
}

// sample stores the sample the parser is on, which is on lines[i].
func (l *loader) sample(p textparse.Parser, i int) {
	ln := &l.lines[i]
	series, tsp, v := p.Series()
	if tsp == nil {
		l.skips.Add(ReasonNoTimestamp, l.loc(ln.no))
		return
	}
	t := *tsp
	if l.format == formatOpenMetrics && l.millis {
		// OpenMetrics shapes with Prometheus' millisecond timestamps.
		if ms, err := strconv.ParseInt(string(timestampField(l.seg[ln.off:ln.end])), 10, 64); err == nil {
			t = ms
		}
	} else if l.format == formatOpenMetrics {
		// The OpenMetrics parser truncates seconds*1000 to an integer, which
		// makes some ".xxx" timestamps one millisecond early (none in
		// 2023-2030, but e.g. 1090543503.830, and about 1 in 150 after
		// 2038): read the text again exactly.
		if ms, ok := omMillis(l.seg[ln.off:ln.end], series); ok {
			t = ms
		}
	}
	s := l.store
	st := s.byText[string(series)]
	if st == nil {
		p.Labels(&l.lset)
		key := l.lset.String()
		st = s.byLabels[key]
		if st == nil {
			st = &seriesState{lset: l.lset, name: l.lset.Get(labels.MetricName)}
			s.byLabels[key] = st
		}
		s.byText[string(series)] = st
	}
	if st.has {
		switch {
		case t == st.lastT && math.Float64bits(v) == math.Float64bits(st.lastV):
			l.skips.Add(ReasonDuplicate, l.loc(ln.no))
			return
		case t == st.lastT:
			l.skips.Add(ReasonConflict, l.loc(ln.no))
			return
		}
	}
	ref, err := l.app.Append(storage.SeriesRef(st.ref), st.lset, t, v)
	if err != nil {
		switch {
		case errors.Is(err, storage.ErrDuplicateSampleForTimestamp):
			l.skips.Add(ReasonConflict, l.loc(ln.no))
		case errors.Is(err, storage.ErrOutOfBounds), errors.Is(err, storage.ErrTooOldSample),
			errors.Is(err, storage.ErrOutOfOrderSample):
			l.skips.Add(ReasonTooOld, l.loc(ln.no))
		default:
			l.skips.Add(ReasonRejected, l.loc(ln.no))
			l.addError(ln.no, err.Error())
		}
		return
	}
	st.ref = uint64(ref)
	l.store.observeFamily(st.name, t, st.lastT, st.has)
	if st.has && t < st.lastT {
		l.stats.OutOfOrder++
	} else {
		st.lastT, st.lastV, st.has = t, v, true
	}
	if st.gen != l.gen {
		st.gen = l.gen
		l.stats.Series++
	}
	l.stats.Samples++
	l.minT = min(l.minT, t)
	l.maxT = max(l.maxT, t)
}

// omMillis reads the timestamp of an OpenMetrics sample line (seconds) as
// milliseconds, exactly. line starts with series.
func omMillis(line, series []byte) (int64, bool) {
	if !bytes.HasPrefix(line, series) {
		return 0, false
	}
	rest := bytes.TrimLeft(line[len(series):], " ")
	i := bytes.IndexByte(rest, ' ') // end of the value
	if i < 0 {
		return 0, false
	}
	rest = rest[i+1:]
	if j := bytes.IndexByte(rest, ' '); j >= 0 {
		rest = rest[:j] // an exemplar follows
	}
	return parseMillis(rest)
}

// parseMillis converts decimal seconds to milliseconds, exactly for up to
// three decimals, rounded to the nearest millisecond otherwise.
func parseMillis(b []byte) (int64, bool) {
	s := b
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	var sec, frac int64
	digits, fracDigits := 0, 0
	i := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if digits >= 15 {
			return parseMillisFloat(b)
		}
		sec = sec*10 + int64(s[i]-'0')
		digits++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if fracDigits == 3 {
				return parseMillisFloat(b)
			}
			frac = frac*10 + int64(s[i]-'0')
			fracDigits++
		}
	}
	if i != len(s) || digits == 0 {
		return parseMillisFloat(b)
	}
	for ; fracDigits < 3; fracDigits++ {
		frac *= 10
	}
	ms := sec*1000 + frac
	if neg {
		ms = -ms
	}
	return ms, true
}

func parseMillisFloat(b []byte) (int64, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 9e15 {
		return 0, false
	}
	return int64(math.Round(f * 1000)), true
}
