package accesslog

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"time"
)

// overlap drops the requests that an earlier input of the same Read, or the
// same input earlier, already delivered: rotated files that overlap, the same
// log plain and gzipped, a bundle's log given again with --access, a log
// shipper that wrote lines twice, rotations concatenated into one file. A
// request is the same when its fingerprint (time to the microsecond, client
// address and port, URI, status, duration) is. Within one input a request
// whose time has no fraction of a second is never taken for a repeat: with
// whole-second times (time_format wall, common_log) two real requests on one
// connection can share every field.
//
// Memory stays bounded by the traffic of a few minutes, not by the inputs'
// size: every input writes (time, fingerprint) records to a temporary file,
// in file order; while a later stretch is read, each earlier stretch of
// records overlapping the time of the current chunk is streamed from that
// file into a small window, records leave the window once the reading is past
// them by more than overlapSlack. Caddy stamps a line when it writes it, so a
// file is in time order but for a few lines; a file whose time goes back
// further (two rotations concatenated) is cut into runs, each streamed on its
// own. The run being read is matched against a window of its own recent
// records (recent), held in memory.
type overlap struct {
	f     *os.File
	w     *bufio.Writer
	size  int64
	runs  []*fpRun // earlier inputs' runs
	cur   *fpRun   // the run the current input is writing
	input int      // the input being read
	err   error

	// recent holds the records of the current run from overlapSlack before
	// the chunk being filtered on (queue, head and set only).
	recent fpRun
	active []*fpRun
	// dups counts the current input's duplicates, by the input that held
	// them first (the current one for a repeat within it).
	dups map[int]int64
}

// overlapSlack is how far back in time a line may come after a later one and
// still be matched: far more than Caddy's disorder (the lab recording's two
// out-of-order lines are milliseconds apart).
const overlapSlack = int64(time.Minute / time.Microsecond)

// fpRecordSize is one record on disk: time in microseconds, fingerprint.
const fpRecordSize = 16

type fpRec struct {
	us int64
	fp uint64
}

// fpRun is a stretch of an input's records whose times never go back by more
// than overlapSlack, and its reading state.
type fpRun struct {
	input    int
	off, n   int64 // first record's byte offset, records
	min, max int64 // µs

	rd      *bufio.Reader
	read    int64
	next    fpRec
	hasNext bool
	queue   []fpRec
	head    int
	set     fpSet // the fingerprints of queue[head:]
}

func newOverlap() (*overlap, error) {
	f, err := os.CreateTemp("", "aftermath-overlap-*")
	if err != nil {
		return nil, fmt.Errorf("overlap check: %w", err)
	}
	return &overlap{f: f, w: bufio.NewWriterSize(f, 64<<10), dups: map[int]int64{}}, nil
}

func (o *overlap) close() {
	o.f.Close()
	os.Remove(o.f.Name())
}

// startInput begins input i.
func (o *overlap) startInput(i int) {
	o.input, o.cur = i, nil
	clear(o.dups)
}

// endInput makes the records input i wrote readable by the inputs after it.
func (o *overlap) endInput() error {
	o.closeRun()
	return o.err
}

// closeRun ends the current run: its records, on disk, are matched like an
// earlier input's from now on.
func (o *overlap) closeRun() {
	if o.cur != nil {
		o.runs = append(o.runs, o.cur)
		o.cur = nil
	}
	if err := o.w.Flush(); err != nil && o.err == nil {
		o.err = fmt.Errorf("overlap check: %w", err)
	}
	o.recent.set.clear()
	o.recent.queue, o.recent.head = o.recent.queue[:0], 0
}

// filter drops the requests of c that an earlier input, or this one before,
// holds, counting them in o.dups, and records the others. c is filtered in
// stretches that do not go back in time by more than overlapSlack: where
// the input goes back further, a new run begins.
func (o *overlap) filter(c *chunk) error {
	if len(c.reqs) == 0 || o.err != nil {
		return o.err
	}
	keep := 0
	for i := 0; i < len(c.reqs); {
		first := c.reqs[i].Time.UnixMicro()
		if o.cur != nil && first < o.cur.max-overlapSlack {
			o.closeRun()
		}
		runMax, tmin, tmax := first, first, first
		if o.cur != nil {
			runMax = max(runMax, o.cur.max)
		}
		j := i + 1
		for ; j < len(c.reqs); j++ {
			us := c.reqs[j].Time.UnixMicro()
			if us < runMax-overlapSlack {
				break
			}
			runMax, tmin, tmax = max(runMax, us), min(tmin, us), max(tmax, us)
		}
		if err := o.activate(tmin-overlapSlack, tmax+overlapSlack); err != nil {
			return err
		}
		o.recent.evict(tmin - overlapSlack)
		for k := i; k < j; k++ {
			fp, us := c.fps[k], c.reqs[k].Time.UnixMicro()
			dup := -1
			for _, run := range o.active {
				if run.set.has(fp) && (run.input != o.input || us%1e6 != 0) {
					dup = run.input
					break
				}
			}
			if dup < 0 && us%1e6 != 0 && o.recent.set.has(fp) {
				dup = o.input
			}
			if dup >= 0 {
				o.dups[dup]++
				continue
			}
			o.write(us, fp)
			o.recent.queue = append(o.recent.queue, fpRec{us: us, fp: fp})
			o.recent.set.add(fp)
			c.reqs[keep], c.fps[keep] = c.reqs[k], fp
			keep++
		}
		i = j
	}
	clear(c.reqs[keep:])
	c.reqs, c.fps = c.reqs[:keep], c.fps[:keep]
	return o.err
}

// activate loads the window [lo, hi] of every earlier run that reaches into
// it into o.active, and releases the runs the reading has passed.
func (o *overlap) activate(lo, hi int64) error {
	o.active = o.active[:0]
	for _, run := range o.runs {
		if run.max < lo || run.min > hi {
			if run.max < lo {
				run.release()
			}
			continue
		}
		if err := run.advance(o.f, hi); err != nil {
			o.err = fmt.Errorf("overlap check: %w", err)
			return o.err
		}
		run.evict(lo)
		o.active = append(o.active, run)
	}
	return nil
}

func (o *overlap) write(us int64, fp uint64) {
	if o.cur == nil {
		o.cur = &fpRun{input: o.input, off: o.size, min: us, max: us}
	}
	// Appended to the writer's own buffer: a record of a local array would
	// escape through Write and cost an allocation per line.
	b := binary.LittleEndian.AppendUint64(o.w.AvailableBuffer(), uint64(us))
	b = binary.LittleEndian.AppendUint64(b, fp)
	if _, err := o.w.Write(b); err != nil && o.err == nil {
		o.err = fmt.Errorf("overlap check: %w", err)
	}
	o.size += fpRecordSize
	o.cur.n++
	o.cur.min, o.cur.max = min(o.cur.min, us), max(o.cur.max, us)
}

// advance loads the run's records up to time hi. A run's later records are
// after hi - overlapSlack >= every time of the chunk, so none it needs is left.
func (r *fpRun) advance(f *os.File, hi int64) error {
	if r.rd == nil {
		if r.read == r.n {
			return nil
		}
		r.rd = bufio.NewReaderSize(io.NewSectionReader(f, r.off, r.n*fpRecordSize), 16<<10)
	}
	var b [fpRecordSize]byte
	for {
		if !r.hasNext {
			if r.read == r.n {
				return nil
			}
			if _, err := io.ReadFull(r.rd, b[:]); err != nil {
				return err
			}
			r.read++
			r.next = fpRec{us: int64(binary.LittleEndian.Uint64(b[:])), fp: binary.LittleEndian.Uint64(b[8:])}
			r.hasNext = true
		}
		if r.next.us > hi {
			return nil
		}
		r.queue = append(r.queue, r.next)
		r.set.add(r.next.fp)
		r.hasNext = false
	}
}

// evict drops the records before lo from the window.
func (r *fpRun) evict(lo int64) {
	for r.head < len(r.queue) && r.queue[r.head].us < lo {
		r.set.remove(r.queue[r.head].fp)
		r.head++
	}
	if r.head > 4096 && r.head > len(r.queue)/2 {
		n := copy(r.queue, r.queue[r.head:])
		r.queue, r.head = r.queue[:n], 0
	}
}

// release frees a run that the reading has passed; it is loaded again from
// the file should an input go back to its time.
func (r *fpRun) release() {
	r.rd, r.set, r.queue, r.head, r.read, r.hasNext = nil, fpSet{}, nil, 0, 0, false
}
