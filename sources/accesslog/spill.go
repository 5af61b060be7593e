package accesslog

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// A Spill keeps the Requests of one Read in a compact binary file so that a
// later stage (the rules' passes) can read them again without parsing the
// JSON: decoding a record costs a fraction of parsing its line. It lives on
// disk, not in memory (about 100 bytes a request: the path and query
// verbatim, agents, hosts, methods and languages by dictionary), and is
// removed by Close.
//
// Record: time (zigzag varint, nanoseconds since the previous record's),
// client address (length-prefixed binary), method, host, user agent and
// language (dictionary references), path and query (length-prefixed),
// status (varint), duration (float64 bits), size (zigzag varint) and the
// flags as a uvarint (logged-in state, cookie, client hints, TLS, origin and
// a site Referer in its first byte; the cache's verdict, an Authorization
// header and the request's tag above them).
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
	buf      []byte
	last     int64
	dict     [spillFields]map[string]uint64
	// lastDict is each dictionary's last value found with its code: most
	// requests have the method and host of the one before, and a comparison
	// costs less than a lookup.
	lastDict [spillFields]dictEntry
	n        int64
	err      error
	// tagScope is what the tags depend on besides the request (SetTagScope);
	// tagged says it was set.
	tagScope string
	tagged   bool
}

// maxSpillTag is the largest tag a record keeps: the three bits above the
// cache's verdict and the Authorization bit, so that a tagged record's flags
// stay two bytes (a uvarint's two bytes hold 14 bits).
const maxSpillTag = 7

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

// Dictionary reference codes: a new value that joins the dictionary, a value
// written literally, or (refOffset+i) the dictionary's i-th value.
const (
	refNew     = 0
	refLiteral = 1
	refOffset  = 2
)

// NewSpill creates an empty spill file in dir ("" for the system's temporary
// directory).
func NewSpill(dir string) (*Spill, error) {
	f, err := os.CreateTemp(dir, "aftermath-requests-*.spill")
	if err != nil {
		return nil, fmt.Errorf("request spill: %w", err)
	}
	s := &Spill{path: f.Name(), f: f, w: bufio.NewWriterSize(f, 1<<20)}
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
		s.buf = s.encode(s.buf[:0], &batch[i], tag)
		if _, err := s.w.Write(s.buf); err != nil {
			s.err = fmt.Errorf("request spill %s: %w", s.path, err)
			return s.err
		}
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
	var ipBuf [16]byte // an address with a zone grows it
	ip, _ := r.ClientIP.AppendBinary(ipBuf[:0])
	b = appendBytes(b, ip)
	b = s.appendDict(b, spillMethod, r.Method)
	b = s.appendDict(b, spillHost, r.Host)
	b = appendBytes(b, []byte(r.Path))
	b = appendBytes(b, []byte(r.Query))
	b = binary.AppendUvarint(b, uint64(r.Status))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.Duration))
	b = binary.AppendVarint(b, r.Size)
	b = s.appendDict(b, spillAgent, r.UserAgent)
	b = s.appendDict(b, spillLang, r.Lang)
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
	if i, ok := d[v]; ok {
		s.lastDict[field] = dictEntry{v, i, true}
		return binary.AppendUvarint(b, refOffset+i)
	}
	code := uint64(refLiteral)
	if len(d) < maxSpillDict {
		code = refNew
		d[v] = uint64(len(d))
	}
	b = binary.AppendUvarint(b, code)
	return appendBytes(b, []byte(v))
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
	return s.read(ctx, nil, sink)
}

// ReadMatching is Read for the requests whose path and query (the logged URI
// split at its first '?') keep accepts, as Options.Prefilter is for a log:
// the others are never handed to sink, and their strings never made. keep
// must not change or keep its arguments, which are valid during the call.
func (s *Spill) ReadMatching(ctx context.Context, keep func(path, query []byte) bool, sink func([]sources.Request) error) error {
	return s.read(ctx, keep, func(batch []sources.Request, _ []uint8) error { return sink(batch) })
}

// read decodes every record, handing sink those keep accepts (all, for a
// nil keep).
func (s *Spill) read(ctx context.Context, keep func(path, query []byte) bool, sink func([]sources.Request, []uint8) error) error {
	if err := s.Flush(); err != nil {
		return err
	}
	written, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("request spill %s: %w", s.path, err)
	}
	d := newSpillDecoder(io.NewSectionReader(s.f, 0, written))
	batch := make([]sources.Request, 0, 1024)
	tags := make([]uint8, 0, cap(batch))
	for k := int64(0); k < s.n; k++ {
		if len(batch) == cap(batch) {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := sink(batch, tags); err != nil {
				return err
			}
			// The sink may keep the last batch's strings, not its slice (as
			// Read's sinks: TestKeptStringsSurvive), so the slice is reused.
			batch, tags = batch[:0], tags[:0]
		}
		batch = batch[:len(batch)+1]
		tag, kept, err := d.decode(&batch[len(batch)-1], keep)
		if err != nil {
			return fmt.Errorf("request spill %s: record %d: %w", s.path, k+1, err)
		}
		if !kept {
			batch = batch[:len(batch)-1]
			continue
		}
		tags = append(tags, tag)
	}
	if len(batch) > 0 {
		return sink(batch, tags)
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
// through an io.ByteReader: a record is some fifteen varints, and a call
// through the interface for each of their bytes cost more than the rest of
// decoding.
type spillDecoder struct {
	f        io.Reader
	in       []byte // in[pos:end] is read and not yet decoded
	pos, end int
	eof      bool
	last     int64
	dict     [spillFields][]string
	scratch  []byte // pathQuery's path
}

func newSpillDecoder(f io.Reader) *spillDecoder {
	return &spillDecoder{f: f, in: make([]byte, 1<<20)}
}

var errSpillCorrupt = errors.New("corrupt record")

// fill reads until at least n bytes are buffered or the file ends.
func (d *spillDecoder) fill(n int) error {
	if d.end-d.pos >= n || d.eof {
		return nil
	}
	if n > len(d.in) {
		grown := make([]byte, max(n, 2*len(d.in)))
		d.end = copy(grown, d.in[d.pos:d.end])
		d.in, d.pos = grown, 0
	} else if d.pos > 0 {
		d.end = copy(d.in, d.in[d.pos:d.end])
		d.pos = 0
	}
	for d.end < n {
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

// varintEnd is io.EOF with nothing left, io.ErrUnexpectedEOF within a
// value, as binary.ReadUvarint says them.
func (d *spillDecoder) varintEnd() error {
	if d.pos == d.end {
		return io.EOF
	}
	return io.ErrUnexpectedEOF
}

func (d *spillDecoder) uvarint() (uint64, error) {
	if err := d.fill(binary.MaxVarintLen64); err != nil {
		return 0, err
	}
	v, n := binary.Uvarint(d.in[d.pos:d.end])
	switch {
	case n == 0:
		return 0, d.varintEnd()
	case n < 0:
		return 0, errSpillCorrupt
	}
	d.pos += n
	return v, nil
}

// varint reads a signed varint: the zig-zag of an unsigned one, as
// binary.Varint decodes it.
func (d *spillDecoder) varint() (int64, error) {
	u, err := d.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x, err
}

// take returns the next n bytes, valid until the next call.
func (d *spillDecoder) take(n int) ([]byte, error) {
	if err := d.fill(n); err != nil {
		return nil, err
	}
	if d.end-d.pos < n {
		return nil, io.ErrUnexpectedEOF
	}
	b := d.in[d.pos : d.pos+n : d.pos+n]
	d.pos += n
	return b, nil
}

// bytes returns a length-prefixed value, valid until the next call.
func (d *spillDecoder) bytes() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > 1<<30 {
		return nil, errSpillCorrupt
	}
	return d.take(int(n))
}

func (d *spillDecoder) str() (string, error) {
	b, err := d.bytes()
	return string(b), err
}

func (d *spillDecoder) dictStr(field int) (string, error) {
	code, err := d.uvarint()
	if err != nil {
		return "", err
	}
	switch {
	case code == refNew:
		v, err := d.str()
		d.dict[field] = append(d.dict[field], v)
		return v, err
	case code == refLiteral:
		return d.str()
	case code-refOffset < uint64(len(d.dict[field])):
		return d.dict[field][code-refOffset], nil
	}
	return "", errSpillCorrupt
}

// pathQuery returns the path and the query that follows it, in one string
// of their own (one allocation for both, as the parser's are), and whether
// keep (nil: any) accepts them; when it does not, both strings are empty.
func (d *spillDecoder) pathQuery(keep func(path, query []byte) bool) (path, query string, kept bool, err error) {
	p, err := d.bytes()
	if err != nil {
		return "", "", false, err
	}
	d.scratch = append(d.scratch[:0], p...) // reading the query may move p
	q, err := d.bytes()
	if err != nil {
		return "", "", false, err
	}
	if keep != nil && !keep(d.scratch, q) {
		return "", "", false, nil
	}
	if len(q) == 0 {
		return string(d.scratch), "", true, nil
	}
	both := string(append(d.scratch, q...))
	return both[:len(p)], both[len(p):], true, nil
}

// decode reads one record into r and returns its tag, and whether keep (nil:
// any) accepted its path and query; a record it did not is read to its end
// (the dictionaries grow from every record) without its path and query.
func (d *spillDecoder) decode(r *sources.Request, keep func(path, query []byte) bool) (tag uint8, kept bool, err error) {
	dt, err := d.varint()
	if err != nil {
		return 0, false, err
	}
	d.last += dt
	*r = sources.Request{Time: time.Unix(0, d.last).UTC()}
	ip, err := d.bytes()
	if err != nil {
		return 0, false, err
	}
	if err := r.ClientIP.UnmarshalBinary(ip); err != nil {
		return 0, false, err
	}
	if r.Method, err = d.dictStr(spillMethod); err != nil {
		return 0, false, err
	}
	if r.Host, err = d.dictStr(spillHost); err != nil {
		return 0, false, err
	}
	if r.Path, r.Query, kept, err = d.pathQuery(keep); err != nil {
		return 0, false, err
	}
	status, err := d.uvarint()
	if err != nil {
		return 0, false, err
	}
	r.Status = int(status)
	dur, err := d.take(8)
	if err != nil {
		return 0, false, err
	}
	r.Duration = math.Float64frombits(binary.LittleEndian.Uint64(dur))
	if r.Size, err = d.varint(); err != nil {
		return 0, false, err
	}
	if r.UserAgent, err = d.dictStr(spillAgent); err != nil {
		return 0, false, err
	}
	if r.Lang, err = d.dictStr(spillLang); err != nil {
		return 0, false, err
	}
	flags, err := d.uvarint()
	if err != nil {
		return 0, false, err
	}
	r.Cache = sources.Cache(flags >> 8 & 3)
	r.LoggedIn = sources.LoggedIn(flags & 3)
	r.Origin = sources.Origin(flags >> 2 & 3)
	r.HasCookie = flags&(1<<4) != 0
	r.SecChUa = flags&(1<<5) != 0
	r.TLS = flags&(1<<6) != 0
	r.SiteReferer = flags&(1<<7) != 0
	r.Authorization = flags&(1<<10) != 0
	return uint8(flags >> 11 & maxSpillTag), kept, nil
}
