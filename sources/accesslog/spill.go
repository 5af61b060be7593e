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
// a site Referer in its first byte; the cache's verdict above them).
type Spill struct {
	path string
	f    *os.File
	w    *bufio.Writer
	buf  []byte
	last int64
	dict [spillFields]map[string]uint64
	n    int64
	err  error
}

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
	for i := range s.dict {
		s.dict[i] = map[string]uint64{}
	}
	return s, nil
}

// Write appends a batch of requests. It is not safe for concurrent use.
func (s *Spill) Write(batch []sources.Request) error {
	if s.err != nil {
		return s.err
	}
	for i := range batch {
		s.buf = s.encode(s.buf[:0], &batch[i])
		if _, err := s.w.Write(s.buf); err != nil {
			s.err = fmt.Errorf("request spill %s: %w", s.path, err)
			return s.err
		}
	}
	s.n += int64(len(batch))
	return nil
}

func (s *Spill) encode(b []byte, r *sources.Request) []byte {
	t := r.Time.UnixNano()
	b = binary.AppendVarint(b, t-s.last)
	s.last = t
	ip, _ := r.ClientIP.MarshalBinary()
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
	// The cache's verdict takes the bits above the first byte: a uvarint
	// keeps a request without one (and without a site Referer) at one byte.
	return binary.AppendUvarint(b, uint64(flags)|uint64(r.Cache)<<8)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func (s *Spill) appendDict(b []byte, field int, v string) []byte {
	d := s.dict[field]
	if i, ok := d[v]; ok {
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
	if err := s.Flush(); err != nil {
		return err
	}
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("request spill: %w", err)
	}
	defer f.Close()
	d := spillDecoder{r: bufio.NewReaderSize(f, 1<<20)}
	batch := make([]sources.Request, 0, 1024)
	for k := int64(0); k < s.n; k++ {
		if len(batch) == cap(batch) {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := sink(batch); err != nil {
				return err
			}
			// The sink may keep the last batch's strings, not its slice (as
			// Read's sinks: TestKeptStringsSurvive), so the slice is reused.
			batch = batch[:0]
		}
		batch = batch[:len(batch)+1]
		if err := d.decode(&batch[len(batch)-1]); err != nil {
			return fmt.Errorf("request spill %s: record %d: %w", s.path, k+1, err)
		}
	}
	if len(batch) > 0 {
		return sink(batch)
	}
	return nil
}

// Close removes the spill file.
func (s *Spill) Close() error {
	s.f.Close()
	return os.Remove(s.path)
}

type spillDecoder struct {
	r    *bufio.Reader
	last int64
	dict [spillFields][]string
	buf  []byte
}

var errSpillCorrupt = errors.New("corrupt record")

func (d *spillDecoder) bytes() ([]byte, error) {
	n, err := binary.ReadUvarint(d.r)
	if err != nil {
		return nil, err
	}
	if n > 1<<30 {
		return nil, errSpillCorrupt
	}
	if uint64(cap(d.buf)) < n {
		d.buf = make([]byte, n)
	}
	d.buf = d.buf[:n]
	_, err = io.ReadFull(d.r, d.buf)
	return d.buf, err
}

func (d *spillDecoder) str() (string, error) {
	b, err := d.bytes()
	return string(b), err
}

func (d *spillDecoder) dictStr(field int) (string, error) {
	code, err := binary.ReadUvarint(d.r)
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

func (d *spillDecoder) decode(r *sources.Request) error {
	dt, err := binary.ReadVarint(d.r)
	if err != nil {
		return err
	}
	d.last += dt
	*r = sources.Request{Time: time.Unix(0, d.last).UTC()}
	ip, err := d.bytes()
	if err != nil {
		return err
	}
	if err := r.ClientIP.UnmarshalBinary(ip); err != nil {
		return err
	}
	if r.Method, err = d.dictStr(spillMethod); err != nil {
		return err
	}
	if r.Host, err = d.dictStr(spillHost); err != nil {
		return err
	}
	if r.Path, err = d.str(); err != nil {
		return err
	}
	if r.Query, err = d.str(); err != nil {
		return err
	}
	status, err := binary.ReadUvarint(d.r)
	if err != nil {
		return err
	}
	r.Status = int(status)
	var dur [8]byte
	if _, err := io.ReadFull(d.r, dur[:]); err != nil {
		return err
	}
	r.Duration = math.Float64frombits(binary.LittleEndian.Uint64(dur[:]))
	if r.Size, err = binary.ReadVarint(d.r); err != nil {
		return err
	}
	if r.UserAgent, err = d.dictStr(spillAgent); err != nil {
		return err
	}
	if r.Lang, err = d.dictStr(spillLang); err != nil {
		return err
	}
	flags, err := binary.ReadUvarint(d.r)
	if err != nil {
		return err
	}
	r.Cache = sources.Cache(flags >> 8 & 3)
	r.LoggedIn = sources.LoggedIn(flags & 3)
	r.Origin = sources.Origin(flags >> 2 & 3)
	r.HasCookie = flags&(1<<4) != 0
	r.SecChUa = flags&(1<<5) != 0
	r.TLS = flags&(1<<6) != 0
	r.SiteReferer = flags&(1<<7) != 0
	return nil
}
