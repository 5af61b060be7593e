package accesslog

import (
	"bufio"
	"bytes"
	"compress/flate"
	stdgzip "compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/aftermath-forensics/aftermath/sources"
)

// chunk is one block of whole lines on its way through the pipeline. The
// chunker fills buf and data, a worker fills lines, reqs and skips, and the
// consumer hands reqs to the sink and recycles the chunk.
type chunk struct {
	seq  int64
	buf  []byte // len == block size
	data []byte // whole lines, except that the stream's last line may lack '\n'
	// tooLong counts discarded over-long lines that come before data: the
	// chunker only notices one when a whole block holds no newline, which is
	// always right after the previous chunk's last newline.
	tooLong int

	lines int // lines in data
	reqs  []sources.Request
	fps   []uint64 // fingerprints of reqs, when the read checks for overlaps
	skips []tally
}

// tally counts one skip reason within a chunk, keeping only the first few line
// numbers: the report shows no more, and a block of a million bad lines must not
// cost a million entries.
type tally struct {
	reason string
	n      int
	lines  [maxExamples]int // 1-based, within data
}

// maxExamples matches the locations sources.Skips keeps per reason.
const maxExamples = 3

func (c *chunk) skip(reason string, line int) {
	for i := range c.skips {
		if t := &c.skips[i]; t.reason == reason {
			if t.n < maxExamples {
				t.lines[t.n] = line
			}
			t.n++
			return
		}
	}
	c.skips = append(c.skips, tally{reason: reason, n: 1, lines: [maxExamples]int{line}})
}

// chunkPool recycles default-size chunks across calls, so reading many small
// files (or Loki pages) does not allocate a megabyte each time.
var chunkPool = sync.Pool{New: func() any { return &chunk{buf: make([]byte, defaultBlock)} }}

// parserPool recycles fastjson parsers and their intern tables across calls.
var parserPool sync.Pool

// reader carries the state of one Read across its files: options, the
// caller's skips and sink, and the running maximum time for OutOfOrder.
type reader struct {
	opts  Options
	skips *sources.Skips
	sink  func([]sources.Request) error
	block int

	maxTime  int64 // unix nanoseconds; 0 before the first request
	examples map[string]int
	extra    map[string]int

	durUnit float64                // from Options.DurationFormat; 0 detects per input
	cookie  *sources.CookiePattern // Options.LoggedInCookie, compiled once
	overlap *overlap               // nil with one input
	names   []string               // the inputs read so far
}

func newReader(opts Options, skips *sources.Skips, sink func([]sources.Request) error, block int) *reader {
	if skips == nil {
		skips = &sources.Skips{}
	}
	// Another logger's lines (Caddy's own log in a journal shared with the
	// access log, journalctl -o cat) are not requests: nothing is lost.
	skips.Expect(ReasonNotAccessLog, "lines of another of Caddy's loggers (its own log, mixed in), not requests: nothing the analysis needs is in them")
	if sink == nil {
		sink = func([]sources.Request) error { return nil }
	}
	return &reader{opts: opts, skips: skips, sink: sink, block: block,
		examples: map[string]int{}, extra: map[string]int{},
		durUnit: durationUnits[opts.DurationFormat], // Read and ReadReader refuse an unknown format
		cookie:  sources.CompileCookiePattern(opts.LoggedInCookie)}
}

func (rd *reader) newChunk() *chunk {
	if rd.block == defaultBlock {
		return chunkPool.Get().(*chunk)
	}
	return &chunk{buf: make([]byte, rd.block)}
}

func (rd *reader) recycle(c *chunk) {
	if rd.block != defaultBlock {
		return
	}
	// Drop the strings so a pooled chunk does not pin the last batch's memory.
	clear(c.reqs[:cap(c.reqs)])
	c.reqs, c.skips, c.data = c.reqs[:0], c.skips[:0], nil
	chunkPool.Put(c)
}

func (rd *reader) getParser() *lineParser {
	lp, _ := parserPool.Get().(*lineParser)
	if lp == nil {
		lp = newLineParser()
	}
	lp.cookie = rd.cookie
	lp.prefilter = rd.opts.Prefilter
	lp.zone = rd.opts.Zone
	lp.wantFP = rd.overlap != nil
	lp.borrow = rd.opts.BorrowTargets && !ownTargets
	return lp
}

// pipeline is one stream being read.
type pipeline struct {
	rd   *reader
	ctx  context.Context
	name string

	work chan *chunk // chunker -> workers
	done chan *chunk // workers -> consumer, in any order
	free chan *chunk // consumer -> chunker
	stop chan struct{}

	// Owned by the chunker; read by the consumer only after done is closed.
	allocated, maxChunks int
	bytes                int64
	endErr               error

	// Owned by the consumer.
	stats     Stats
	fileLines int64
	input     Input
	// span is the earliest and latest request of the input, those an
	// earlier input already held included: the file's own span.
	spanFirst, spanLast time.Time

	durUnit float64 // for whole-number durations, decided before the workers start
	// fracUnit divides fractional durations (lineParser.fracUnit).
	fracUnit float64
	mu       sync.Mutex
	counts   shapeCounts // the workers', added as they finish
}

// readStream reads one stream through the pipeline.
func (rd *reader) readStream(ctx context.Context, name string, r io.Reader) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, fmt.Errorf("access log %s: %w", name, err)
	}
	stats := Stats{Files: 1}
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(2)
	if err != nil && err != io.EOF {
		return stats, fmt.Errorf("read access log %s: %w", name, err)
	}
	var src io.Reader = br
	gzipped := len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b
	if gzipped {
		zr, err := gzip.NewReader(br)
		if err != nil {
			if reason := gzipReason(err); reason != "" {
				rd.skips.Add(reason, name)
				rd.names = append(rd.names, name)
				stats.Inputs = []Input{{Name: name, Cut: reason}}
				return stats, nil
			}
			return stats, fmt.Errorf("read access log %s: %w", name, err)
		}
		defer zr.Close()
		src = zr
	}

	// Look at the first lines once, to decide how this input is read.
	sr := sniffPool.Get().(*bufio.Reader)
	sr.Reset(src)
	defer func() { sr.Reset(nil); sniffPool.Put(sr) }()
	head, perr := sr.Peek(sniffSize)
	in := Input{Name: name, sniff: sniff(head, perr != nil, rd.opts)}
	durUnit, detected := rd.durUnit, false
	if durUnit == 0 {
		durUnit, detected = in.sniff.durationUnit()
	}
	in.DurationUnit, in.DurationDetected = unitName(durUnit), detected
	fracUnit := 1.0
	switch {
	case rd.durUnit > 1:
		// Given as ms or ns: the log's numbers are in that unit, fractions too.
		fracUnit = rd.durUnit
	case rd.durUnit == 0:
		fracUnit = in.sniff.fractionUnit()
		in.FractionUnit = unitName(fracUnit)
		if fracUnit > 1 && durUnit == 1 {
			// The whole numbers among fractional milliseconds (12.0
			// written as 12) are milliseconds too.
			durUnit = fracUnit
			in.DurationUnit = unitName(durUnit)
		}
	}

	n := workers(rd.opts.Workers)
	p := &pipeline{
		rd: rd, ctx: ctx, name: name,
		work:      make(chan *chunk, n),
		done:      make(chan *chunk, n),
		maxChunks: 2*n + 2,
		stop:      make(chan struct{}),
		stats:     stats,
		input:     in,
		durUnit:   durUnit,
		fracUnit:  fracUnit,
	}
	p.free = make(chan *chunk, p.maxChunks)
	go p.chunker(sr)
	var wg sync.WaitGroup
	for range n {
		wg.Go(p.worker)
	}
	go func() {
		wg.Wait()
		close(p.done)
	}()
	err = p.consume()
	p.stats.Bytes = p.bytes
	p.finish()
	if err == nil && isContextErr(p.endErr) {
		// The chunker saw the cancellation first and the consumer finished
		// without it: the stream was not read to its end.
		err = p.endErr
	}
	if isContextErr(err) {
		return p.stats, fmt.Errorf("access log %s: stopped at line %d: %w", name, p.fileLines, err)
	}
	if err != nil {
		return p.stats, err
	}
	if p.endErr != nil {
		if reason := gzipReason(p.endErr); gzipped && reason != "" {
			rd.skips.Add(reason, p.location(p.fileLines))
			p.stats.Inputs[0].Cut = reason
			return p.stats, nil
		}
		return p.stats, fmt.Errorf("read access log %s at line %d: %w", name, p.fileLines, p.endErr)
	}
	return p.stats, nil
}

// sniffPool recycles the readers that hold an input's first lines.
var sniffPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, sniffSize) }}

// finish completes the input's description and its notes, whatever ended the
// read (the lines delivered until then are described).
func (p *pipeline) finish() {
	rd, in := p.rd, &p.input
	in.Lines, in.Requests = p.stats.Lines, p.stats.Requests
	in.First, in.Last = p.stats.First, p.stats.Last
	in.SpanFirst, in.SpanLast = p.spanFirst, p.spanLast
	in.counts = p.counts
	if rd.overlap != nil {
		for i, n := range rd.overlap.dups {
			if i == rd.overlap.input {
				in.Repeated += n
				continue
			}
			in.Duplicates += n
			in.DuplicateOf = append(in.DuplicateOf, rd.names[i])
		}
		sort.Strings(in.DuplicateOf)
		p.stats.Duplicates = in.Duplicates + in.Repeated
	}
	in.diagnose()
	rd.names = append(rd.names, in.Name)
	p.stats.Notes = in.notes(rd.opts)
	p.stats.Inputs = []Input{*in}
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// gzipReason names a gzip failure that is the data's fault, or returns "" for
// an I/O error that the caller must see.
func gzipReason(err error) string {
	var corrupt flate.CorruptInputError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return ReasonTruncatedGzip
	case errors.Is(err, stdgzip.ErrChecksum), errors.Is(err, stdgzip.ErrHeader), errors.As(err, &corrupt):
		return ReasonCorruptGzip
	}
	return ""
}

func (p *pipeline) location(line int64) string {
	if line <= 0 {
		return p.name
	}
	return p.name + ":" + strconv.FormatInt(line, 10)
}

// get returns a chunk to fill, or nil once the pipeline is stopping. Chunks are
// allocated lazily so that a small file costs one block, not maxChunks.
func (p *pipeline) get() *chunk {
	var c *chunk
	select {
	case c = <-p.free:
	default:
		if p.allocated < p.maxChunks {
			p.allocated++
			c = p.rd.newChunk()
			break
		}
		select {
		case c = <-p.free:
		case <-p.stop:
			return nil
		}
	}
	c.tooLong = 0
	return c
}

func (p *pipeline) send(c *chunk, seq *int64) bool {
	c.seq = *seq
	*seq++
	select {
	case p.work <- c:
		return true
	case <-p.stop:
		return false
	}
}

// chunker reads blocks, cuts them after their last newline and carries the
// partial line over into the next block.
//
// It reads readStep bytes into a block at a time, and more only while the
// block holds no newline, so that a chunk is parsed while the bytes the
// kernel copied into it are still in the core's cache (a block, 1 MiB, is
// what bounds a line: MaxLineBytes). At one core the chunker runs up to three
// chunks ahead of the worker.
func (p *pipeline) chunker(r io.Reader) {
	defer close(p.work)
	var seq int64
	c := p.get()
	if c == nil {
		return
	}
	filled := 0
	for {
		if err := p.ctx.Err(); err != nil {
			p.endErr = err
			return
		}
		n, err := readFull(r, c.buf[filled:min(len(c.buf), filled+readStep)])
		p.bytes += int64(n)
		filled += n
		if err != nil {
			// The rest of the stream, terminated or not, is the last chunk.
			if err != io.EOF {
				p.endErr = err
			}
			if filled > 0 || c.tooLong > 0 {
				c.data = c.buf[:filled]
				p.send(c, &seq)
			} else {
				p.free <- c // never blocks: free holds every chunk there is
			}
			return
		}
		i := bytes.LastIndexByte(c.buf[:filled], '\n')
		if i < 0 && filled < len(c.buf) {
			continue // a line longer than a step: read on into the block
		}
		if i < 0 {
			// A whole block without a newline: the line is too long. Skip to its end
			// through the same buffer, so its size never costs memory.
			c.tooLong++
			rest, err := p.discard(r, c.buf)
			filled = rest
			if err != nil {
				if err != io.EOF {
					p.endErr = err
				}
				c.data = nil
				p.send(c, &seq)
				return
			}
			continue
		}
		next := p.get()
		if next == nil {
			return
		}
		// Copy the carry before sending c: once sent, c may come back through free.
		carry := copy(next.buf, c.buf[i+1:filled])
		c.data = c.buf[:i+1]
		if !p.send(c, &seq) {
			return
		}
		c, filled = next, carry
	}
}

// readStep is how much the chunker reads into a block before cutting it:
// with 1 MiB, a chunk's first bytes had left a 1 MiB L2 by the time they were
// parsed. BenchmarkReadLog at one core, alternated pairs against whole
// blocks: 0.94x the CPU time at 256 KiB, 0.97x at 128 and at 64 KiB.
const readStep = 256 << 10

// discard reads and drops bytes up to and including the next newline, then
// moves what follows it to the start of buf and returns its length.
func (p *pipeline) discard(r io.Reader, buf []byte) (int, error) {
	for {
		if err := p.ctx.Err(); err != nil {
			return 0, err
		}
		n, err := r.Read(buf)
		p.bytes += int64(n)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return copy(buf, buf[i+1:n]), nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// readFull is io.ReadFull without its ErrUnexpectedEOF, which would hide
// whether a gzip stream was itself truncated.
func readFull(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (p *pipeline) worker() {
	lp := p.rd.getParser()
	lp.durUnit, lp.fracUnit = p.durUnit, p.fracUnit
	defer func() {
		p.mu.Lock()
		p.counts.add(lp.counts)
		p.mu.Unlock()
		lp.counts = shapeCounts{}
		lp.prefilter = nil // a pooled parser must not keep the caller's state alive
		lp.zone = nil
		parserPool.Put(lp)
	}()
	for c := range p.work {
		select {
		case <-p.stop:
			continue // drain so the chunker can finish
		default:
		}
		lp.parseChunk(c)
		select {
		case p.done <- c:
		case <-p.stop:
		}
	}
}

// consume puts chunks back in order and delivers them. It returns once every
// goroutine of the pipeline has exited, so nothing touches r or the sink after.
func (p *pipeline) consume() error {
	pending := map[int64]*chunk{}
	var next int64
	var err error
	ctxDone := p.ctx.Done()
	fail := func(e error) {
		if err == nil {
			err = e
			close(p.stop)
		}
	}
	for {
		select {
		case c, ok := <-p.done:
			if !ok {
				for range len(p.free) {
					p.rd.recycle(<-p.free)
				}
				return err
			}
			pending[c.seq] = c
			for {
				c, ok := pending[next]
				if !ok {
					break
				}
				delete(pending, next)
				next++
				if err == nil {
					if e := p.deliver(c); e != nil {
						fail(e)
					}
				}
				if poisonDelivered {
					poison(c.buf)
				}
				p.free <- c
			}
		case <-ctxDone:
			ctxDone = nil
			fail(p.ctx.Err())
		}
	}
}

func (p *pipeline) deliver(c *chunk) error {
	rd := p.rd
	base := p.fileLines
	for k := range c.tooLong {
		rd.skip(ReasonLineTooLong, p, base+int64(k)+1)
	}
	base += int64(c.tooLong)
	if c.tooLong > 0 {
		p.skipped(int64(c.tooLong), p.fileLines+1, ReasonLineTooLong)
	}
	for _, t := range c.skips {
		for _, line := range t.lines[:min(t.n, maxExamples)] {
			rd.skip(t.reason, p, base+int64(line))
		}
		rd.extra[t.reason] += t.n - min(t.n, maxExamples)
		p.skipped(int64(t.n), base+int64(t.lines[0]), t.reason)
	}
	for reason, n := range rd.extra {
		rd.skips.AddN(reason, "", n)
	}
	clear(rd.extra)
	p.fileLines = base + int64(c.lines)
	p.stats.Lines += int64(c.tooLong + c.lines)
	if len(c.reqs) == 0 {
		return nil
	}
	// Stats count what the sink was given, so a cancelled batch is not counted.
	if err := p.ctx.Err(); err != nil {
		return err
	}
	for i := range c.reqs {
		t := c.reqs[i].Time
		if p.spanFirst.IsZero() || t.Before(p.spanFirst) {
			p.spanFirst = t
		}
		if t.After(p.spanLast) {
			p.spanLast = t
		}
	}
	if rd.overlap != nil {
		if err := rd.overlap.filter(c); err != nil {
			return fmt.Errorf("access log %s: %w", p.name, err)
		}
		if len(c.reqs) == 0 {
			return nil
		}
	}
	st := &p.stats
	for i := range c.reqs {
		t := c.reqs[i].Time
		ns := t.UnixNano()
		if ns < rd.maxTime {
			st.OutOfOrder++
		} else {
			rd.maxTime = ns
		}
		if st.First.IsZero() || t.Before(st.First) {
			st.First = t
		}
		if t.After(st.Last) {
			st.Last = t
		}
	}
	st.Requests += int64(len(c.reqs))
	if err := rd.sink(c.reqs); err != nil {
		return fmt.Errorf("access log %s: sink: %w", p.name, err)
	}
	return nil
}

// skipped counts n skipped lines of the input, the first at line.
func (p *pipeline) skipped(n, line int64, reason string) {
	if p.input.Skipped == 0 || line < p.input.FirstSkipped {
		p.input.FirstSkipped, p.input.firstReason = line, reason
	}
	p.input.Skipped += n
}

// skip records one skipped line. Only the first few of each reason need a
// location, so the rest are added per chunk instead of formatted one by one.
func (rd *reader) skip(reason string, p *pipeline, line int64) {
	if rd.examples[reason] < maxExamples {
		rd.examples[reason]++
		rd.skips.Add(reason, p.location(line))
		return
	}
	rd.extra[reason]++
}

// Test hooks for the lifetime rule of borrowed targets (Options.BorrowTargets,
// Spill.ReadTaggedBorrowed), set only by tests (export_test.go) before a
// read: ownTargets ignores the borrowing, so that a read with it can be
// compared with one without it through the same caller; poisonDelivered
// overwrites a chunk's bytes (the spill decoder's buffer) once its batch is
// delivered, so that a string kept past the sink's return reads garbage at
// once rather than when the buffer happens to be refilled.
var ownTargets, poisonDelivered bool

// poison overwrites buf with bytes no log line holds in a request target.
func poison(buf []byte) {
	for i := range buf {
		buf[i] = 0xff
	}
}
