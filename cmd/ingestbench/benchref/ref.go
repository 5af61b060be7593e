// Package benchref is the benchmarks' yardstick: the bare reference loop that
// aftermath's ingest and whole analysis are measured against (issues 9 and
// 26), and how a measured run reports itself (Result). It imports no layer of
// aftermath, nor the simulator: its program, cmd/bareloop, must start as a
// bare parser does. The logs it reads come from benchlog.
package benchref

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/buger/jsonparser"
	"github.com/valyala/fastjson"
)

// Counts is what the reference loop computes: requests by status, by client
// address and by minute. Nothing else: it is the floor that any reader of the
// same lines must pay (split lines, parse JSON, pick three fields, count).
type Counts struct {
	Lines    int64
	Requests int64
	Bad      int64 // lines without the three fields
	ByStatus map[int]int64
	ByIP     map[string]int64
	ByMinute map[int64]int64
}

func newCounts() *Counts {
	return &Counts{ByStatus: map[int]int64{}, ByIP: map[string]int64{}, ByMinute: map[int64]int64{}}
}

func (c *Counts) merge(o *Counts) {
	c.Lines += o.Lines
	c.Requests += o.Requests
	c.Bad += o.Bad
	for k, v := range o.ByStatus {
		c.ByStatus[k] += v
	}
	for k, v := range o.ByIP {
		c.ByIP[k] += v
	}
	for k, v := range o.ByMinute {
		c.ByMinute[k] += v
	}
}

// block is the read size of the reference loop, as aftermath's reader uses.
const block = 1 << 20

// Extractor names a field extractor for the reference loop.
type Extractor string

// The reference loop's extractors: buger/jsonparser's EachKey scans a line
// once for the three paths without building anything (the faster of the two on
// Caddy's lines, so the default yardstick); valyala/fastjson parses the whole
// line into a tree first, as aftermath's reader did before issue 9.
const (
	JSONParser Extractor = "jsonparser"
	FastJSON   Extractor = "fastjson"
)

// Count is the bare reference loop: it reads r in 1 MiB blocks cut at
// newlines, extracts ts, status and request.client_ip from each line with ex
// and counts the line by status, address and minute. With workers > 1, one
// goroutine reads and workers goroutines parse into their own counts, merged at
// the end. r must be plain (the reference for gzip is zcat itself).
func Count(r io.Reader, workers int, ex Extractor) (*Counts, error) {
	count := countJSONParser
	if ex == FastJSON {
		count = countFastJSON
	}
	if workers <= 1 {
		total := newCounts()
		var p fastjson.Parser
		err := blocks(r, func(b []byte) error {
			count(&p, total, b)
			return nil
		}, nil)
		return total, err
	}
	work := make(chan []byte, workers)
	free := make(chan []byte, 2*workers+1)
	for range 2*workers + 1 {
		free <- make([]byte, block)
	}
	parts := make([]*Counts, workers)
	var wg sync.WaitGroup
	for i := range workers {
		parts[i] = newCounts()
		wg.Go(func() {
			var p fastjson.Parser
			for b := range work {
				count(&p, parts[i], b)
				free <- b[:cap(b)]
			}
		})
	}
	err := blocks(r, func(b []byte) error {
		work <- b
		return nil
	}, free)
	close(work)
	wg.Wait()
	total := parts[0]
	for _, p := range parts[1:] {
		total.merge(p)
	}
	return total, err
}

// blocks reads r into blocks of whole lines and hands each to fn. With free,
// blocks come from and go back through it (fn takes ownership); without, one
// buffer is reused.
func blocks(r io.Reader, fn func([]byte) error, free chan []byte) error {
	get := func() []byte {
		if free == nil {
			return make([]byte, block)
		}
		return <-free
	}
	buf := get()
	var next []byte
	if free == nil {
		next = make([]byte, block)
	}
	filled := 0
	for {
		n, err := io.ReadFull(r, buf[filled:])
		filled += n
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				if filled > 0 {
					return fn(buf[:filled])
				}
				return nil
			}
			return err
		}
		i := bytes.LastIndexByte(buf[:filled], '\n')
		if i < 0 {
			return errors.New("benchref: a line longer than 1 MiB")
		}
		if free != nil {
			next = get()
		}
		carry := copy(next, buf[i+1:filled])
		if err := fn(buf[:i+1]); err != nil {
			return err
		}
		buf, next, filled = next, buf, carry
	}
}

func countFastJSON(p *fastjson.Parser, c *Counts, b []byte) {
	for line := range bytes.Lines(b) {
		if line = bytes.TrimSuffix(line, newline); len(line) == 0 {
			continue
		}
		c.Lines++
		v, err := p.ParseBytes(line)
		if err != nil {
			c.Bad++
			continue
		}
		c.add(v.GetFloat64("ts"), v.GetInt("status"), v.GetStringBytes("request", "client_ip"))
	}
}

var newline = []byte{'\n'}

var paths = [][]string{{"ts"}, {"status"}, {"request", "client_ip"}}

func countJSONParser(_ *fastjson.Parser, c *Counts, b []byte) {
	for line := range bytes.Lines(b) {
		if line = bytes.TrimSuffix(line, newline); len(line) == 0 {
			continue
		}
		c.Lines++
		var ts float64
		var status int64
		var ip []byte
		jsonparser.EachKey(line, func(idx int, v []byte, _ jsonparser.ValueType, err error) {
			if err != nil {
				return
			}
			switch idx {
			case 0:
				ts, _ = jsonparser.ParseFloat(v)
			case 1:
				status, _ = jsonparser.ParseInt(v)
			case 2:
				ip = v
			}
		}, paths...)
		c.add(ts, int(status), ip)
	}
}

func (c *Counts) add(ts float64, status int, ip []byte) {
	if ts <= 0 || status == 0 || len(ip) == 0 {
		c.Bad++
		return
	}
	c.Requests++
	c.ByStatus[status]++
	c.ByMinute[int64(ts)/60]++
	if n, ok := c.ByIP[string(ip)]; ok {
		c.ByIP[string(ip)] = n + 1
	} else {
		c.ByIP[string(ip)] = 1
	}
}
