package accesslog

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"time"
	"unsafe"

	"github.com/aftermath-forensics/aftermath/sources"
)

// A Spill keeps the Requests of one Read in a compact binary file so that a
// later stage (the rules' passes) can read them again without parsing the
// JSON: decoding a record costs a fraction of parsing its line. It lives on
// disk, not in memory (about 100 bytes a request: the path and query
// verbatim, agents, hosts, methods and languages by dictionary), and is
// removed by Close.
//
// Record: its length (uvarint, the bytes after it), then time (zigzag
// varint, nanoseconds since the previous record's), duration (float64 bits),
// path and query (length-prefixed): what a reader's filter decides on
// (ReadFiltered), first, so that a record it skips is passed over by its
// length without decoding the rest. Then the client address
// (length-prefixed binary), method and host (dictionary references), status
// (varint), size (zigzag varint), user agent and language (dictionary
// references) and the flags as a uvarint (logged-in state, cookie, client
// hints, TLS, origin and a site Referer in its first byte; the cache's
// verdict, an Authorization header and the request's tag above them).
//
// The dictionaries stay in memory beside the file (their values, bounded by
// maxSpillDict, are the writer's anyway): a record refers to a value by its
// index, whatever records a reader skipped before it.
//
// Every spillMarkEvery records the writer notes where the record starts, and
// the latest arrival of those before it (a spillMark), so that a reader that
// wants no record that arrived before some time (SpillFilter.From) starts at
// the last mark before which there is none, instead of decoding every record
// before it only to skip it.
//
// A tag is a small code the writer derived from the request (WriteTagged:
// detect's path class), kept so that a later pass need not derive it again
// from the path; 0 is none. The spill does not know what the codes mean:
// TagScope says what they were derived under, for the reader to check.
type Spill struct {
	path     string // for messages: the file is unlinked once created
	unlinked bool
	f        *os.File
	w        *bufio.Writer
	buf      []byte // a record
	last     int64
	dict     [spillFields]map[string]uint64
	// values are each dictionary's values by index, for the readers.
	values [spillFields][]string
	// lastDict is each dictionary's last value found with its code: most
	// requests have the method and host of the one before, and a comparison
	// costs less than a lookup.
	lastDict [spillFields]dictEntry
	// refs holds the references of the method, host, agent and language
	// of requests written lately (dictRefsOf).
	refs []dictRefs
	n    int64
	err  error
	// written is the bytes written (records' lengths included), latest the
	// latest arrival (SpillHead.Arrival) of the records written
	// (math.MinInt64 before any), and marks one record in every
	// spillMarkEvery.
	written int64
	latest  int64
	marks   []spillMark
	// tagScope is what the tags depend on besides the request (SetTagScope);
	// tagged says it was set.
	tagScope string
	tagged   bool
}

// spillMark is where one record starts (the i-th mark's record is the
// i*spillMarkEvery-th), and what a reader starting there needs: the time it
// is counted from (the record before's); before is the latest arrival among
// the records before it (math.MinInt64 for none), which need not be the last
// one's: a log is in the order the responses ended, and its times need not
// even be in order.
type spillMark struct {
	offset, last, before int64
}

// spillMarkEvery is how many records apart the marks are: a reader starting
// at a mark decodes at most that many records it did not need, and the marks
// take 24 bytes per spillMarkEvery records (229 KiB for 40 million).
const spillMarkEvery = 4096

// maxSpillTag is the largest tag a record keeps: the three bits above the
// cache's verdict and the Authorization bit, so that a tagged record's flags
// stay two bytes (a uvarint's two bytes hold 14 bits).
const maxSpillTag = 7

// spillBuffer is the size of the spill's write buffer and of a decoder's
// first read buffer (it grows for a longer record). Each is memory touched
// for the first time, and on a virtual machine a first touch of a page costs
// microseconds: 256 KiB where it was 1 MiB took about 470 fewer page faults
// from an analysis of the 256 MB bench log, at four times the read and write
// calls, which cost nothing measurable beside them.
const spillBuffer = 256 << 10

// Dictionary-coded fields.
const (
	spillMethod = iota
	spillHost
	spillAgent
	spillLang
	spillFields
)

// maxSpillDict bounds each dictionary: past it, new values are written
// literally (attacker-varied agents must not grow memory without limit).
const maxSpillDict = 1 << 16

// Dictionary reference codes: a value written literally (past the
// dictionary's bound), or (refOffset+i) the dictionary's i-th value.
const (
	refLiteral = 0
	refOffset  = 1
)

// NewSpill creates an empty spill file in dir ("" for the system's temporary
// directory).
func NewSpill(dir string) (*Spill, error) {
	f, err := os.CreateTemp(dir, "aftermath-requests-*.spill")
	if err != nil {
		return nil, fmt.Errorf("request spill: %w", err)
	}
	s := &Spill{path: f.Name(), f: f, w: bufio.NewWriterSize(f, spillBuffer), latest: math.MinInt64}
	// The file is unlinked at once and read back through the open
	// descriptor: a run killed or stopped on an error (Ctrl-C, a bad log
	// file, an OOM kill) leaves no spill of up to the whole log's size in
	// the temporary directory. Where an open file cannot be removed (not on
	// Unix), Close removes it.
	s.unlinked = os.Remove(s.path) == nil
	for i := range s.dict {
		s.dict[i] = map[string]uint64{}
	}
	return s, nil
}

// Write appends a batch of requests. It is not safe for concurrent use.
func (s *Spill) Write(batch []sources.Request) error {
	return s.WriteTagged(batch, nil)
}

// WriteTagged appends a batch of requests with their tags (tags[i] is
// batch[i]'s; nil for none). A tag above maxSpillTag is an error.
func (s *Spill) WriteTagged(batch []sources.Request, tags []uint8) error {
	if s.err != nil {
		return s.err
	}
	if tags != nil && len(tags) != len(batch) {
		return fmt.Errorf("request spill %s: %d tags for %d requests", s.path, len(tags), len(batch))
	}
	for i, tag := range tags { // before writing any: a batch is written whole or not at all
		if tag > maxSpillTag {
			return fmt.Errorf("request spill %s: request %d's tag %d is over %d", s.path, i+1, tag, maxSpillTag)
		}
	}
	for i := range batch {
		var tag uint8
		if tags != nil {
			tag = tags[i]
		}
		if k := s.n + int64(i); k%spillMarkEvery == 0 {
			s.marks = append(s.marks, spillMark{offset: s.written, last: s.last, before: s.latest})
		}
		// The body is encoded after room for its length, which then goes
		// just before it: one write a record.
		s.buf = s.encode(append(s.buf[:0], make([]byte, binary.MaxVarintLen64)...), &batch[i], tag)
		var length [binary.MaxVarintLen64]byte
		n := binary.PutUvarint(length[:], uint64(len(s.buf)-binary.MaxVarintLen64))
		start := binary.MaxVarintLen64 - n
		copy(s.buf[start:], length[:n])
		if _, err := s.w.Write(s.buf[start:]); err != nil {
			s.err = fmt.Errorf("request spill %s: %w", s.path, err)
			return s.err
		}
		s.written += int64(len(s.buf) - start)
		s.latest = max(s.latest, arrival(s.last, batch[i].Duration)) // encode set last to the record's time
	}
	s.n += int64(len(batch))
	return nil
}

// SetTagScope records what the tags written depend on besides the request
// itself (for detect's path class: the site's health URI).
func (s *Spill) SetTagScope(scope string) { s.tagScope, s.tagged = scope, true }

// TagScope is what SetTagScope recorded; ok is false when it was never
// called (the tags, if any, mean nothing the reader can check).
func (s *Spill) TagScope() (scope string, ok bool) { return s.tagScope, s.tagged }

func (s *Spill) encode(b []byte, r *sources.Request, tag uint8) []byte {
	t := r.Time.UnixNano()
	b = binary.AppendVarint(b, t-s.last)
	s.last = t
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.Duration))
	b = appendBytes(b, []byte(r.Path))
	b = appendBytes(b, []byte(r.Query))
	var ipBuf [16]byte // an address with a zone grows it
	ip, _ := r.ClientIP.AppendBinary(ipBuf[:0])
	b = appendBytes(b, ip)
	refs := s.dictRefsOf(r)
	b = append(b, refs.enc[:refs.agentAt]...) // the method's and the host's
	b = binary.AppendUvarint(b, uint64(r.Status))
	b = binary.AppendVarint(b, r.Size)
	b = append(b, refs.enc[refs.agentAt:]...) // the agent's and the language's
	flags := byte(r.LoggedIn) | byte(r.Origin)<<2
	if r.HasCookie {
		flags |= 1 << 4
	}
	if r.SecChUa {
		flags |= 1 << 5
	}
	if r.TLS {
		flags |= 1 << 6
	}
	if r.SiteReferer {
		flags |= 1 << 7
	}
	// The cache's verdict, an Authorization header and the tag take the bits
	// above the first byte: a uvarint keeps a request without them (and
	// without a site Referer) at one byte, and with them at two.
	more := uint64(r.Cache)<<8 | uint64(tag)<<11
	if r.Authorization {
		more |= 1 << 10
	}
	return binary.AppendUvarint(b, uint64(flags)|more)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// dictEntry is a value of a dictionary and its index there.
type dictEntry struct {
	v     string
	i     uint64
	valid bool
}

func (s *Spill) appendDict(b []byte, field int, v string) []byte {
	if last := &s.lastDict[field]; last.valid && last.v == v {
		return binary.AppendUvarint(b, refOffset+last.i)
	}
	d := s.dict[field]
	i, ok := d[v]
	if !ok {
		if len(d) >= maxSpillDict {
			b = binary.AppendUvarint(b, refLiteral)
			return appendBytes(b, []byte(v))
		}
		i = uint64(len(d))
		d[v] = i
		s.values[field] = append(s.values[field], v)
	}
	s.lastDict[field] = dictEntry{v, i, true}
	return binary.AppendUvarint(b, refOffset+i)
}

// dictRefs is what a request's method, host, agent and language are written
// as: their dictionary references (or literals), one after the other in enc,
// the agent's from agentAt.
type dictRefs struct {
	method, host, agent, lang string
	enc                       []byte
	agentAt                   int
	// held says the four are all dictionary references, which stand for
	// the same values as long as the spill lives: enc can be written again
	// for them.
	held bool
}

// spillRefBits is the log2 of how many dictRefs a spill keeps.
const spillRefBits = 10

// dictRefsOf returns r's dictRefs. Most requests repeat a combination of
// method, host, agent and language a request before them had, in strings
// the parser interned (the same bytes: the same pointer), so the four are
// looked up, by the identity of their strings, in a table of those written
// lately rather than each in its dictionary. The table holds the strings
// it has seen, which keeps their bytes from being reused for others: a
// string at the same address, of the same length, is the same string (none
// of the four is ever lent from a buffer, as a request's Path and Query may
// be: Options.BorrowTargets).
func (s *Spill) dictRefsOf(r *sources.Request) *dictRefs {
	if s.refs == nil {
		s.refs = make([]dictRefs, 1<<spillRefBits)
	}
	h := addressOf(r.Method)*0x9e3779b97f4a7c15 + addressOf(r.Host)*0xc2b2ae3d27d4eb4f +
		addressOf(r.UserAgent)*0x165667b19e3779f9 + addressOf(r.Lang)*0x27d4eb2f165667c5
	e := &s.refs[h>>(64-spillRefBits)]
	if e.held && sameString(e.method, r.Method) && sameString(e.host, r.Host) &&
		sameString(e.agent, r.UserAgent) && sameString(e.lang, r.Lang) {
		return e
	}
	e.method, e.host, e.agent, e.lang = r.Method, r.Host, r.UserAgent, r.Lang
	b := s.appendDict(e.enc[:0], spillMethod, r.Method)
	held := b[0] != refLiteral
	at := len(b)
	b = s.appendDict(b, spillHost, r.Host)
	held = held && b[at] != refLiteral
	e.agentAt = len(b)
	b = s.appendDict(b, spillAgent, r.UserAgent)
	held = held && b[e.agentAt] != refLiteral
	at = len(b)
	b = s.appendDict(b, spillLang, r.Lang)
	e.enc, e.held = b, held && b[at] != refLiteral
	return e
}

// addressOf is the address of s's bytes.
func addressOf(s string) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.StringData(s)))) }

// sameString reports whether a and b are the same bytes: the same length at
// the same address (which two equal strings need not be).
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// Requests is how many requests were written.
func (s *Spill) Requests() int64 { return s.n }

// Flush writes what is buffered: the spill is then complete on disk.
func (s *Spill) Flush() error {
	if s.err == nil {
		if err := s.w.Flush(); err != nil {
			s.err = fmt.Errorf("request spill %s: %w", s.path, err)
		}
	}
	return s.err
}

// Read hands the requests back in the order written, in batches, exactly as
// they were (every field of sources.Request). Write must be done.
func (s *Spill) Read(ctx context.Context, sink func([]sources.Request) error) error {
	return s.ReadTagged(ctx, func(batch []sources.Request, _ []uint8) error { return sink(batch) })
}

// ReadTagged is Read, with each request's tag (0 where none was written):
// tags[i] is batch[i]'s, valid until sink returns.
func (s *Spill) ReadTagged(ctx context.Context, sink func([]sources.Request, []uint8) error) error {
	return s.read(ctx, math.MinInt64, nil, false, sink)
}

// ReadTaggedBorrowed is ReadTagged with the batch's Paths and Queries
// borrowed, as a read with Options.BorrowTargets lends them: they view the
// decoder's buffer, which the file is read into again after the batch, so
// they are valid only until sink returns, and a sink that keeps one (or a
// part of one) copies it. A pass that keeps none saves a string for every
// request.
func (s *Spill) ReadTaggedBorrowed(ctx context.Context, sink func([]sources.Request, []uint8) error) error {
	return s.read(ctx, math.MinInt64, nil, true, sink)
}

// A SpillHead is what a filter of ReadFiltered sees of a record before the
// rest of it is decoded: its log time (unix nanoseconds), duration (seconds),
// and path and query (the logged URI split at its first '?'), which are
// valid during the call only and must not be changed.
type SpillHead struct {
	Time        int64
	Duration    float64
	Path, Query []byte
}

// Arrival is the record's arrival (unix nanoseconds): its log time less its
// duration, as sources.Request.Start reads them.
func (h *SpillHead) Arrival() int64 { return arrival(h.Time, h.Duration) }

// arrival is Request.Start's, in unix nanoseconds, without building a Time
// and taking it apart (7.5 ns; the writer takes one for every record): Time's
// arithmetic on these is the integers', wrapping as they do where the result
// is out of range (TestSpillArrivalIsRequestStart holds the two together).
func arrival(logTime int64, duration float64) int64 {
	return logTime - int64(time.Duration(duration*float64(time.Second)))
}

// A SpillVerdict is a filter's answer on a record.
type SpillVerdict uint8

const (
	// SpillSkip passes the record over: sink never sees it, and its strings
	// are never made.
	SpillSkip SpillVerdict = iota
	// SpillKeep hands the record to sink.
	SpillKeep
	// SpillStop ends the read before the record: no later one is wanted.
	SpillStop
)

// A SpillFilter is what ReadFiltered reads with.
type SpillFilter struct {
	// Head says what to do with a record from its head.
	Head func(*SpillHead) SpillVerdict
	// From says that Head skips every record that arrived before it
	// (SpillHead.Arrival): the read may pass over them without asking, from
	// the start to the last mark before which every record arrived before
	// From. The zero Time passes over none.
	From time.Time
}

// ReadFiltered is Read for the records filter.Head keeps, as
// Options.Prefilter is for a log, until it says stop.
func (s *Spill) ReadFiltered(ctx context.Context, filter SpillFilter, sink func([]sources.Request) error) error {
	from := int64(math.MinInt64)
	if !filter.From.IsZero() {
		from = filter.From.UnixNano()
	}
	return s.read(ctx, from, filter.Head, false, func(batch []sources.Request, _ []uint8) error { return sink(batch) })
}

// read decodes the records from the last mark before which every record
// arrived before from (unix nanoseconds), handing sink those filter keeps
// (all, for a nil filter), with the targets borrowed (ReadTaggedBorrowed)
// or not.
func (s *Spill) read(ctx context.Context, from int64, filter func(*SpillHead) SpillVerdict, borrow bool, sink func([]sources.Request, []uint8) error) error {
	if err := s.Flush(); err != nil {
		return err
	}
	written, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("request spill %s: %w", s.path, err)
	}
	var start spillMark // and records, how many come before it
	var records int64
	for i, m := range s.marks { // before only grows from mark to mark
		if m.before >= from {
			break
		}
		start, records = m, int64(i)*spillMarkEvery
	}
	d := newSpillDecoder(io.NewSectionReader(s.f, start.offset, written-start.offset), &s.values)
	d.last, d.borrow = start.last, borrow && !ownTargets
	batch := make([]sources.Request, 0, 1024)
	tags := make([]uint8, 0, cap(batch))
	deliver := func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := sink(batch, tags); err != nil {
			return err
		}
		// The sink may keep the last batch's strings, not its slice (as
		// Read's sinks: TestKeptStringsSurvive), so the slice is reused.
		batch, tags = batch[:0], tags[:0]
		d.lent()
		return nil
	}
	for k := records; k < s.n; k++ {
		if len(batch) == cap(batch) {
			if err := deliver(); err != nil {
				return err
			}
		}
		batch = batch[:len(batch)+1]
		tag, verdict, err := d.decode(&batch[len(batch)-1], filter)
		if err == errSpillHeld {
			// The record is not wholly in the buffer, and reading it would
			// move the bytes the batch's borrowed targets view: the batch
			// ends before it.
			batch = batch[:len(batch)-1]
			if err := deliver(); err != nil {
				return err
			}
			k--
			continue
		}
		if err != nil {
			return fmt.Errorf("request spill %s: record %d: %w", s.path, k+1, err)
		}
		if verdict != SpillKeep {
			batch = batch[:len(batch)-1]
			if verdict == SpillStop {
				break
			}
			continue
		}
		tags = append(tags, tag)
		d.hold = d.borrow // the batch views the buffer
	}
	if len(batch) > 0 {
		return deliver()
	}
	return nil
}

// Close releases the spill file (and removes it, where it could not be
// unlinked when it was made).
func (s *Spill) Close() error {
	err := s.f.Close()
	if !s.unlinked {
		err = os.Remove(s.path)
	}
	return err
}

// spillDecoder reads records from a buffer of the file it refills, not
// through an io.ByteReader, and decodes each from its own slice: a record is
// some fifteen varints, and a call through the interface, or a refill check,
// for each of their bytes cost more than the rest of decoding.
type spillDecoder struct {
	f        io.Reader
	in       []byte // in[pos:end] is read and not yet decoded
	pos, end int
	eof      bool
	last     int64
	values   *[spillFields][]string
	head     SpillHead
	scratch  []byte // a request's path and query, to make one string of
	// borrow has decode leave a request's path and query in the buffer,
	// viewed by the request, instead of making a string of them; hold,
	// set while a batch views it, has fill refuse (errSpillHeld) to move
	// or overwrite what is buffered.
	borrow, hold bool
}

// errSpillHeld is fill's refusal while the buffer is held.
var errSpillHeld = errors.New("spill buffer held by a batch")

// lent is called once a batch's sink has returned: the bytes its borrowed
// targets view, which lie before pos, are done with.
func (d *spillDecoder) lent() {
	if poisonDelivered && d.borrow {
		poison(d.in[:d.pos])
	}
	d.hold = false
}

func newSpillDecoder(f io.Reader, values *[spillFields][]string) *spillDecoder {
	return &spillDecoder{f: f, in: make([]byte, spillBuffer), values: values}
}

var errSpillCorrupt = errors.New("corrupt record")

// fill reads until at least n bytes are buffered or the file ends.
func (d *spillDecoder) fill(n int) error {
	if d.end-d.pos >= n || d.eof {
		return nil
	}
	if d.hold {
		return errSpillHeld
	}
	if d.pos > 0 {
		d.end = copy(d.in, d.in[d.pos:d.end])
		d.pos = 0
	}
	for d.end < n {
		if d.end == len(d.in) {
			// Grown by doubling as bytes arrive, not to n at once: a
			// corrupt length costs what the file holds, not what it says.
			grown := make([]byte, min(n, 2*len(d.in)))
			copy(grown, d.in[:d.end])
			d.in = grown
		}
		k, err := d.f.Read(d.in[d.end:])
		d.end += k
		if err == io.EOF {
			d.eof = true
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// maxSpillRecord is the longest record a decoder takes: a longer length is
// a corrupt record, not a reason to fill the buffer without bound.
const maxSpillRecord = 1 << 31

// next returns the next record's bytes, valid until the next call: io.EOF
// with nothing left, io.ErrUnexpectedEOF within a record.
func (d *spillDecoder) next() ([]byte, error) {
	if err := d.fill(binary.MaxVarintLen64); err != nil {
		return nil, err
	}
	n, k := binary.Uvarint(d.in[d.pos:d.end])
	switch {
	case k == 0 && d.pos == d.end:
		return nil, io.EOF
	case k == 0:
		return nil, io.ErrUnexpectedEOF
	case k < 0 || n > maxSpillRecord:
		return nil, errSpillCorrupt
	}
	// The record is filled in with its length, which is passed over only
	// once it is all there: a fill the buffer's holder refused (hold)
	// leaves the record to be read again.
	if err := d.fill(k + int(n)); err != nil {
		return nil, err
	}
	if d.end-d.pos < k+int(n) {
		return nil, io.ErrUnexpectedEOF
	}
	d.pos += k
	rec := d.in[d.pos : d.pos+int(n) : d.pos+int(n)]
	d.pos += int(n)
	return rec, nil
}

// A record's values are read by functions of its bytes and an index into
// them, each returning the index after its value, so that decode keeps both
// in registers: a record holds some fifteen values, and reading them
// through a struct in memory, by calls for all but the varints, cost more
// than the rest of decoding them. A value that runs past the record's end
// (its length said where it ends: a corrupt record) returns the index
// len(rec)+1, past the end, where every later read fails too; decode
// checks for it where the record's values are used.

// spillUvarint reads an unsigned varint at rec[i:], in a loop small enough
// to be inlined: most are one byte, and a call to binary.Uvarint for each
// cost more than the rest of decoding them. It refuses what binary.Uvarint
// refuses: a varint cut short by the record's end, and one past 64 bits
// (TestSpillUvarintIsBinaryUvarint).
func spillUvarint(rec []byte, i int) (uint64, int) {
	var v uint64
	for shift := uint(0); i < len(rec) && shift < 64; shift += 7 {
		c := rec[i]
		i++
		if c < 0x80 {
			if shift == 63 && c > 1 {
				break
			}
			return v | uint64(c)<<shift, i
		}
		v |= uint64(c&0x7f) << shift
	}
	return 0, len(rec) + 1
}

// unzigzag is the signed value of a varint's unsigned one, as
// binary.Varint decodes it.
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// spillTake returns the n bytes at rec[i:].
func spillTake(rec []byte, i int, n uint64) ([]byte, int) {
	if i > len(rec) || n > uint64(len(rec)-i) {
		return nil, len(rec) + 1
	}
	end := i + int(n)
	return rec[i:end:end], end
}

// spillDictRef is the value a dictionary reference (code) stands for,
// values[code-refOffset]; ok is false for a literal (refLiteral) or a
// reference past the dictionary's end, which spillDictLiteral reads.
func spillDictRef(code uint64, values []string) (v string, ok bool) {
	if k := code - refOffset; k < uint64(len(values)) { // refLiteral wraps around
		return values[k], true
	}
	return "", false
}

// spillDictLiteral is the value of a code spillDictRef did not know: the
// literal that follows refLiteral at rec[i:], or (a reference past the
// dictionary's end) a corrupt record.
func spillDictLiteral(rec []byte, i int, code uint64) (string, int) {
	if code != refLiteral {
		return "", len(rec) + 1
	}
	n, i := spillUvarint(rec, i)
	v, i := spillTake(rec, i, n)
	return string(v), i
}

// decode reads one record into r and returns its tag, and what filter (nil:
// keep all) said of it; a record it did not keep is left as it is, undecoded
// past its head.
func (d *spillDecoder) decode(r *sources.Request, filter func(*SpillHead) SpillVerdict) (tag uint8, verdict SpillVerdict, err error) {
	// A record wholly in the buffer, as most are, is taken without next's
	// calls (to fill, which would find it there, and binary.Uvarint).
	var rec []byte
	length, i := spillUvarint(d.in[:d.end], d.pos)
	if i <= d.end && length <= uint64(d.end-i) && length <= maxSpillRecord {
		d.pos = i + int(length)
		rec = d.in[i:d.pos:d.pos]
	} else if rec, err = d.next(); err != nil {
		return 0, 0, err
	}
	delta, i := spillUvarint(rec, 0)
	var duration []byte
	duration, i = spillTake(rec, i, 8)
	var n uint64
	h := &d.head
	n, i = spillUvarint(rec, i)
	h.Path, i = spillTake(rec, i, n)
	n, i = spillUvarint(rec, i)
	h.Query, i = spillTake(rec, i, n)
	if i > len(rec) {
		return 0, 0, errSpillCorrupt
	}
	d.last += unzigzag(delta)
	h.Time = d.last
	h.Duration = math.Float64frombits(binary.LittleEndian.Uint64(duration))
	if filter != nil {
		if verdict = filter(h); verdict != SpillKeep {
			return 0, verdict, nil
		}
	}
	*r = sources.Request{Time: time.Unix(0, h.Time).UTC(), Duration: h.Duration}
	if d.borrow {
		r.Path, r.Query = unsafeString(h.Path), unsafeString(h.Query)
	} else if len(h.Query) == 0 {
		r.Path = string(h.Path)
	} else {
		// The path and the query that follows it share one string (one
		// allocation for both, as the parser's do).
		d.scratch = append(append(d.scratch[:0], h.Path...), h.Query...)
		both := string(d.scratch)
		r.Path, r.Query = both[:len(h.Path)], both[len(h.Path):]
	}
	n, i = spillUvarint(rec, i)
	var ip []byte
	ip, i = spillTake(rec, i, n)
	if len(ip) == 4 { // most are; UnmarshalBinary's first case, without a call
		r.ClientIP = netip.AddrFrom4([4]byte(ip))
	} else if err := r.ClientIP.UnmarshalBinary(ip); err != nil {
		return 0, 0, err
	}
	v := d.values
	var code uint64
	var ok bool
	code, i = spillUvarint(rec, i)
	if r.Method, ok = spillDictRef(code, v[spillMethod]); !ok {
		r.Method, i = spillDictLiteral(rec, i, code)
	}
	code, i = spillUvarint(rec, i)
	if r.Host, ok = spillDictRef(code, v[spillHost]); !ok {
		r.Host, i = spillDictLiteral(rec, i, code)
	}
	var status uint64
	status, i = spillUvarint(rec, i)
	r.Status = int(status)
	var size uint64
	size, i = spillUvarint(rec, i)
	r.Size = unzigzag(size)
	code, i = spillUvarint(rec, i)
	if r.UserAgent, ok = spillDictRef(code, v[spillAgent]); !ok {
		r.UserAgent, i = spillDictLiteral(rec, i, code)
	}
	code, i = spillUvarint(rec, i)
	if r.Lang, ok = spillDictRef(code, v[spillLang]); !ok {
		r.Lang, i = spillDictLiteral(rec, i, code)
	}
	flags, i := spillUvarint(rec, i)
	if i > len(rec) {
		return 0, 0, errSpillCorrupt
	}
	r.Cache = sources.Cache(flags >> 8 & 3)
	r.LoggedIn = sources.LoggedIn(flags & 3)
	r.Origin = sources.Origin(flags >> 2 & 3)
	r.HasCookie = flags&(1<<4) != 0
	r.SecChUa = flags&(1<<5) != 0
	r.TLS = flags&(1<<6) != 0
	r.SiteReferer = flags&(1<<7) != 0
	r.Authorization = flags&(1<<10) != 0
	return uint8(flags >> 11 & maxSpillTag), SpillKeep, nil
}
