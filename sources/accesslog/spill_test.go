package accesslog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchlog"
	"github.com/aftermath-forensics/aftermath/sources"
)

// TestSpillGivesBackEveryRequest: what a spill hands back is what was read,
// every field, in order; on real lab lines, generated ones and odd values.
func TestSpillGivesBackEveryRequest(t *testing.T) {
	var gen bytes.Buffer
	if _, err := benchlog.Generate(&gen, benchlog.GenOptions{Size: 2 << 20, Clients: 500}); err != nil {
		t.Fatal(err)
	}
	odd := []sources.Request{
		{Time: time.Unix(0, 5).UTC(), Path: "/w/\x00\xff", Query: strings.Repeat("q", 70000), Status: 999, Duration: -0.5, Size: -1,
			UserAgent: "", Lang: "zh-cn", LoggedIn: sources.LoggedInYes, HasCookie: true, SecChUa: true, TLS: true, Origin: sources.OriginStatic, SiteReferer: true,
			Authorization: true, Cache: sources.CacheMiss},
		{Time: time.Unix(0, 3).UTC(), ClientIP: netip.MustParseAddr("fe80::1%eth0"), Method: "PROPFIND", Host: "a\nb"}, // time going back
		{Time: time.Unix(1<<33, 0).UTC(), ClientIP: netip.MustParseAddr("192.0.2.1"), Origin: sources.OriginProxy},
		// Longer than the decoder's buffer: it grows.
		{Time: time.Unix(1<<33, 1).UTC(), Path: "/" + strings.Repeat("p", 3<<20), Query: "a=1", UserAgent: "after the long one"},
		{Time: time.Unix(1<<33, 2).UTC(), Path: "/", Query: "b=2", UserAgent: "after the long one"},
	}
	for name, want := range map[string][]sources.Request{
		"lab sample": readWith("s", bytes.NewReader(readFile(t, sampleLog)), Options{LoggedInCookie: "wikiUserID="}, defaultBlock).reqs,
		"benchlog":   readWith("g", bytes.NewReader(gen.Bytes()), Options{LoggedInCookie: "wikiUserID="}, defaultBlock).reqs,
		"odd values": odd,
	} {
		t.Run(name, func(t *testing.T) {
			s, err := NewSpill(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i := 0; i < len(want); i += 700 {
				if err := s.Write(want[i:min(i+700, len(want))]); err != nil {
					t.Fatal(err)
				}
			}
			var got []sources.Request
			for range 2 { // a spill is read as often as needed
				got = got[:0]
				if err := s.Read(context.Background(), func(b []sources.Request) error { got = append(got, b...); return nil }); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					for i := range min(len(got), len(want)) {
						if !reflect.DeepEqual(got[i], want[i]) {
							t.Fatalf("request %d of %d:\n got %+v\nwant %+v", i, len(want), got[i], want[i])
						}
					}
					t.Fatalf("%d requests back, want %d", len(got), len(want))
				}
			}
			if s.Requests() != int64(len(want)) {
				t.Errorf("Requests %d, want %d", s.Requests(), len(want))
			}
			// ReadFiltered hands back exactly the requests the filter keeps,
			// whole, until it says stop: the records it skips (passed over by
			// their length) take nothing from those after them, the
			// dictionaries' values and the times counted from the one before
			// included. The filter sees each record's time, duration, path and
			// query as written.
			stopAt := len(want) * 2 / 3
			var kept []sources.Request
			for _, r := range want[:stopAt] {
				if (len(r.Path)+len(r.Query))%3 == 0 {
					kept = append(kept, r)
				}
			}
			seen := 0
			filter := func(h *SpillHead) SpillVerdict {
				w := &want[seen]
				if h.Time != w.Time.UnixNano() || h.Duration != w.Duration || string(h.Path) != w.Path || string(h.Query) != w.Query {
					t.Fatalf("record %d: the filter saw %d %v %q %q, want %+v", seen+1, h.Time, h.Duration, h.Path, h.Query, *w)
				}
				seen++
				switch {
				case seen-1 == stopAt:
					return SpillStop
				case (len(h.Path)+len(h.Query))%3 == 0:
					return SpillKeep
				}
				return SpillSkip
			}
			got = nil
			if err := s.ReadFiltered(context.Background(), SpillFilter{Head: filter}, func(b []sources.Request) error { got = append(got, b...); return nil }); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, kept) {
				t.Errorf("ReadFiltered: %d requests back, want %d of %d", len(got), len(kept), len(want))
			}
			if seen != stopAt+1 {
				t.Errorf("ReadFiltered read %d records past a stop at %d", seen, stopAt+1)
			}
		})
	}
}

// TestSpillFilterFromPassesOverEarlierArrivals: a read from a time starts
// at the last mark before which every record arrived before it, and hands
// back what reading every record would: not at the mark whose record before
// it was logged before that time, when a line logged out of order, or one
// with a negative duration, arrived after it among the records before.
func TestSpillFilterFromPassesOverEarlierArrivals(t *testing.T) {
	const m = spillMarkEvery
	base := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	for _, c := range []struct {
		name string
		odd  func(r *sources.Request) // record m+5, which arrives as record 2m+50 would have
	}{
		{"a line logged out of order", func(r *sources.Request) { r.Time = at(2*m + 50) }},
		{"a negative duration", func(r *sources.Request) { r.Duration = -float64(m + 45) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			reqs := make([]sources.Request, 3*m+100)
			for i := range reqs {
				reqs[i] = sources.Request{Time: at(i), Duration: 0.5, Path: fmt.Sprintf("/w/%d", i), Status: 200}
			}
			c.odd(&reqs[m+5])
			s, err := NewSpill(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i := 0; i < len(reqs); i += 1000 { // marks fall inside batches
				if err := s.Write(reqs[i:min(i+1000, len(reqs))]); err != nil {
					t.Fatal(err)
				}
			}
			for _, from := range []struct {
				at     time.Time
				passes int // records passed over unread
			}{
				{time.Time{}, 0},
				{at(m + 10), m},
				{at(2*m + 10), m}, // the odd record arrived after it: not from 2m
				{at(2*m + 100), 2 * m},
				{at(5 * m), 3 * m},
			} {
				var want []sources.Request
				for _, r := range reqs {
					if !r.Start().Before(from.at) {
						want = append(want, r)
					}
				}
				asked := 0
				head := func(h *SpillHead) SpillVerdict {
					asked++
					if h.Arrival() < from.at.UnixNano() {
						return SpillSkip
					}
					return SpillKeep
				}
				var got []sources.Request
				if err := s.ReadFiltered(context.Background(), SpillFilter{From: from.at, Head: head}, func(b []sources.Request) error { got = append(got, b...); return nil }); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("from %v: %d requests back, want %d", from.at, len(got), len(want))
				}
				if asked != len(reqs)-from.passes {
					t.Errorf("from %v: the filter was asked about %d records, want %d (%d passed over)", from.at, asked, len(reqs)-from.passes, from.passes)
				}
			}
		})
	}
}

// TestSpillArrivalIsRequestStart: a record's arrival, taken by integer
// arithmetic, is what Request.Start says of it, at the ends of the range of
// times and for durations no log should hold (NaN, infinite, centuries).
func TestSpillArrivalIsRequestStart(t *testing.T) {
	times := []int64{0, 1, -1, 1790953200185635375, 1<<62 - 1, 1 << 62, -1<<62 + 1, -1 << 62, math.MaxInt64, math.MinInt64}
	durations := []float64{0, 0.185635375, -2.5, 1e-9, 1<<30 - 1, 1 << 30, -1<<30 + 1, -1 << 30, 1e12, -1e12, math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN()}
	for _, lt := range times {
		for _, d := range durations {
			r := sources.Request{Time: time.Unix(0, lt), Duration: d}
			h := SpillHead{Time: lt, Duration: d}
			if got, want := h.Arrival(), r.Start().UnixNano(); got != want {
				t.Errorf("logged %d, duration %v: arrival %d, Request.Start %d", lt, d, got, want)
			}
		}
	}
}

// TestSpillCutShortIsAnError: a spill that ends inside a record (a full
// disk) says which record, whichever field it ends in.
func TestSpillCutShortIsAnError(t *testing.T) {
	reqs := []sources.Request{{Time: time.Unix(1, 0).UTC(), ClientIP: netip.MustParseAddr("192.0.2.1"), Method: "GET", Path: "/a", Query: "q=1", UserAgent: "ua", Status: 200},
		{Time: time.Unix(2, 0).UTC(), ClientIP: netip.MustParseAddr("192.0.2.2"), Method: "GET", Path: "/b", UserAgent: "ua", Status: 200, Duration: 1.5}}
	s, err := NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(reqs); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	end, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil {
		t.Fatal(err)
	}
	whole := make([]byte, end)
	if _, err := s.f.ReadAt(whole, 0); err != nil {
		t.Fatal(err)
	}
	for cut := len(whole) - 1; cut > 0; cut-- {
		if err := s.f.Truncate(int64(cut)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.f.Seek(int64(cut), io.SeekStart); err != nil {
			t.Fatal(err)
		}
		n := 0
		err := s.Read(context.Background(), func(b []sources.Request) error { n += len(b); return nil })
		if err == nil || !strings.Contains(err.Error(), "record 2") && !strings.Contains(err.Error(), "record 1") {
			t.Fatalf("cut at byte %d of %d: %v (%d requests), want an error naming the record", cut, len(whole), err, n)
		}
	}
}

// TestSpillBoundsItsDictionaries: agents past the dictionary's bound are
// written literally and still come back.
func TestSpillBoundsItsDictionaries(t *testing.T) {
	s, err := NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The file is gone from its directory from the start, so that a run
	// killed before Close leaves nothing behind; the spill still reads back.
	path := s.path
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the spill %s is still in its directory after NewSpill: %v", path, err)
	}
	reqs := make([]sources.Request, maxSpillDict+100)
	for i := range reqs {
		reqs[i] = sources.Request{Time: time.Unix(int64(i), 0).UTC(), UserAgent: "agent/" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + time.Duration(i).String()}
	}
	reqs = append(reqs, reqs[:10]...)
	if err := s.Write(reqs); err != nil {
		t.Fatal(err)
	}
	if n := len(s.dict[spillAgent]); n != maxSpillDict {
		t.Errorf("agent dictionary holds %d, want the bound %d", n, maxSpillDict)
	}
	n := 0
	err = s.Read(context.Background(), func(b []sources.Request) error {
		for i := range b {
			if b[i].UserAgent != reqs[n].UserAgent {
				return errors.New("agent " + b[i].UserAgent + " != " + reqs[n].UserAgent)
			}
			n++
		}
		return nil
	})
	if err != nil || n != len(reqs) {
		t.Fatalf("read %d of %d: %v", n, len(reqs), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Close left %s: %v", path, err)
	}
}

// BenchmarkSpillRead: decoding a spill of generated traffic, what each of
// the rules' passes costs before its own work (MB/s of the log's lines).
func BenchmarkSpillRead(b *testing.B) {
	var gen bytes.Buffer
	if _, err := benchlog.Generate(&gen, benchlog.GenOptions{Size: 8 << 20, Clients: 2000}); err != nil {
		b.Fatal(err)
	}
	reqs := readWith("g", bytes.NewReader(gen.Bytes()), Options{LoggedInCookie: "wikiUserID="}, defaultBlock).reqs
	s, err := NewSpill(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(reqs); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(gen.Len()))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if err := s.Read(context.Background(), func(batch []sources.Request) error { n += len(batch); return nil }); err != nil || n != len(reqs) {
			b.Fatalf("read %d of %d: %v", n, len(reqs), err)
		}
	}
}

// TestSpillKeepsTags: each request's tag comes back beside it, whatever its
// other flags (a cache verdict, a site Referer share the same varint), with
// the scope it was written under; untagged writes read back as 0; a tag
// past the bound is refused rather than cut.
func TestSpillKeepsTags(t *testing.T) {
	s, err := NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.TagScope(); ok {
		t.Error("a new spill has a tag scope")
	}
	s.SetTagScope("/healthz.php")
	var reqs []sources.Request
	var tags []uint8
	for i := range 3000 {
		reqs = append(reqs, sources.Request{Time: time.Unix(int64(i), 0).UTC(), Path: "/p", Cache: sources.Cache(i % 3),
			SiteReferer: i%2 == 0, Origin: sources.Origin(i % 4), LoggedIn: sources.LoggedIn(i % 3)})
		tags = append(tags, uint8(i%(maxSpillTag+1)))
	}
	if err := s.WriteTagged(reqs[:2000], tags[:2000]); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(reqs[2000:]); err != nil { // untagged: 0
		t.Fatal(err)
	}
	if err := s.WriteTagged(reqs[:1], []uint8{maxSpillTag + 1}); err == nil {
		t.Error("a tag past the bound was written")
	}
	n := 0
	err = s.ReadTagged(context.Background(), func(b []sources.Request, got []uint8) error {
		for i := range b {
			want := uint8(0)
			if n < 2000 {
				want = tags[n]
			}
			if !reflect.DeepEqual(b[i], reqs[n]) || got[i] != want {
				return fmt.Errorf("record %d: %+v tag %d, want %+v tag %d", n, b[i], got[i], reqs[n], want)
			}
			n++
		}
		return nil
	})
	if err != nil || n != len(reqs) {
		t.Fatalf("read %d of %d: %v", n, len(reqs), err)
	}
	if scope, ok := s.TagScope(); !ok || scope != "/healthz.php" {
		t.Errorf("tag scope %q %v", scope, ok)
	}
}

// TestSpillCorruptLengthCostsWhatTheFileHolds: a record whose length says
// a gigabyte, in a spill of a few bytes, is a record cut short, found
// without making a buffer of the size it says (the reader grows its buffer
// as bytes arrive).
func TestSpillCorruptLengthCostsWhatTheFileHolds(t *testing.T) {
	s, err := NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := sources.Request{Time: time.Unix(1, 0).UTC(), ClientIP: netip.MustParseAddr("192.0.2.1"), Method: "GET", Path: "/a", UserAgent: "ua", Status: 200}
	if err := s.Write([]sources.Request{req}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	// The first record's length becomes 1 GiB: a 5-byte uvarint over the
	// record's first bytes.
	if _, err := s.f.WriteAt(binary.AppendUvarint(nil, 1<<30), 0); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err = s.Read(context.Background(), func([]sources.Request) error { return nil })
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "record 1") {
		t.Errorf("a record 1 GiB long in a spill of a few bytes: %v, want an error naming record 1", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("reading it allocated %d MiB", got>>20)
	}
}

// TestSpillUvarintIsBinaryUvarint: a record's varints read as
// binary.Uvarint reads them, value, length and refusal alike: at one, two
// and ten bytes, at 64 bits and one past, cut short by the record's end
// (with more bytes after it in the buffer, which are not the record's),
// and past ten bytes (where a reader that only looks for the last byte
// would go on); and at an index into the record, as decode reads them.
func TestSpillUvarintIsBinaryUvarint(t *testing.T) {
	cases := [][]byte{
		{}, {0}, {0x7f}, {0x80}, {0x80, 0x01}, {0xff, 0x7f}, {0xc8, 0x01, 0x05},
		binary.AppendUvarint(nil, math.MaxUint64),
		binary.AppendUvarint(nil, 1<<63),
		append(bytes.Repeat([]byte{0xff}, 9), 0x02),       // 65 bits
		append(bytes.Repeat([]byte{0x80}, 9), 0x01),       // 1<<63, the last byte's one bit
		append(bytes.Repeat([]byte{0x80}, 10), 0x01),      // eleven bytes
		append(bytes.Repeat([]byte{0xff}, 12), 0x00, 0x7), // twelve, then more
		bytes.Repeat([]byte{0x80}, 5),                     // cut short
	}
	for v := uint64(1); v != 0; v <<= 3 {
		cases = append(cases, binary.AppendUvarint(nil, v-1), binary.AppendUvarint(nil, v))
	}
	for _, c := range cases {
		want, n := binary.Uvarint(c)
		for _, at := range []int{0, 3} {
			// The record: at bytes before the varint, and a buffer that
			// goes on after its end with a byte that would end the varint.
			buf := append(append(bytes.Repeat([]byte{0xff}, at), c...), 0x01)
			rec := buf[:at+len(c)]
			got, i := spillUvarint(rec, at)
			switch {
			case n <= 0 && i <= len(rec):
				t.Errorf("% x at %d: read %d (to %d), want a corrupt record as binary.Uvarint's %d", c, at, got, i, n)
			case n > 0 && (got != want || i != at+n):
				t.Errorf("% x at %d: read %d to %d, want %d to %d", c, at, got, i, want, at+n)
			}
		}
		// Past the end, a read fails again.
		if _, i := spillUvarint(c, len(c)+1); i != len(c)+1 {
			t.Errorf("% x: a read past the end ends at %d, want %d", c, i, len(c)+1)
		}
	}
}

// TestSpillBorrowedTargetsLastTheirBatch: ReadTaggedBorrowed hands back
// what ReadTagged does, though its Paths and Queries view the decoder's
// buffer. The spill is several times the buffer, so that batches meet its
// refills, and one record is longer than the buffer: a batch must end before
// a record the buffer does not hold whole, since reading that record moves
// (or grows) the bytes the batch's earlier requests view. Each batch's bytes are overwritten once its sink returns
// (poisonDelivered), so a view kept past it would read garbage.
func TestSpillBorrowedTargetsLastTheirBatch(t *testing.T) {
	defer SetBorrowHooks(false, true)()
	s, err := NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var reqs []sources.Request
	var tags []uint8
	for i := range 40000 {
		r := sources.Request{Time: time.Unix(int64(i), 0).UTC(), Method: "GET",
			Path: fmt.Sprintf("/w/index.php/%d/%s", i, strings.Repeat("x", i%97))}
		if i == 20000 {
			// Longer than the decoder's first buffer: it grows between batches.
			r.Path += strings.Repeat("y", 2*spillBuffer)
		}
		if i%3 != 0 {
			r.Query = fmt.Sprintf("title=T%d&oldid=%d", i, i*7)
		}
		reqs = append(reqs, r)
		tags = append(tags, uint8(i%(maxSpillTag+1)))
	}
	if err := s.WriteTagged(reqs, tags); err != nil {
		t.Fatal(err)
	}
	if size := s.written; size < 3<<20 {
		t.Fatalf("the spill is %d bytes: too small to meet the buffer's refills", size)
	}
	n, batches := 0, 0
	var kept []string
	err = s.ReadTaggedBorrowed(context.Background(), func(b []sources.Request, got []uint8) error {
		batches++
		for i := range b {
			if !reflect.DeepEqual(b[i], reqs[n]) || got[i] != tags[n] {
				return fmt.Errorf("record %d: %+v tag %d, want %+v tag %d", n, b[i], got[i], reqs[n], tags[n])
			}
			n++
		}
		kept = append(kept, b[0].Path) // a view kept past the sink, against the rule
		return nil
	})
	if err != nil || n != len(reqs) {
		t.Fatalf("read %d of %d: %v", n, len(reqs), err)
	}
	if batches <= len(reqs)/1024+1 {
		t.Errorf("%d batches: none ended early at a refill", batches)
	}
	if kept[0] == reqs[0].Path {
		t.Errorf("a path kept past its batch still reads %q: the bytes were not borrowed, or not poisoned", kept[0])
	}
}

// TestSpillDictRefsKnowAStringByItsBytes: the writer finds a request's
// dictionary references by the identity of its strings (dictRefsOf), which
// must be their address and their length: an agent that is a prefix of
// another, sharing its bytes, is a value of its own, and so is an equal
// agent in bytes of its own. Every request reads back as written.
func TestSpillDictRefsKnowAStringByItsBytes(t *testing.T) {
	s, err := NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	agent := "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0"
	copied := strings.Clone(agent)
	lang := "ko-kr"
	var reqs []sources.Request
	for i := range 3000 {
		r := sources.Request{Time: time.Unix(int64(i), 0).UTC(), Method: "GET", Host: "wiki.example.org", Path: "/p",
			UserAgent: agent[:len(agent)-i%5], Lang: lang[:2+i%2]}
		if i%7 == 0 {
			r.UserAgent = copied
		}
		reqs = append(reqs, r)
	}
	if err := s.Write(reqs); err != nil {
		t.Fatal(err)
	}
	n := 0
	err = s.Read(context.Background(), func(b []sources.Request) error {
		for i := range b {
			if !reflect.DeepEqual(b[i], reqs[n]) {
				return fmt.Errorf("record %d: %+v, want %+v", n, b[i], reqs[n])
			}
			n++
		}
		return nil
	})
	if err != nil || n != len(reqs) {
		t.Fatalf("read %d of %d: %v", n, len(reqs), err)
	}
	if got := len(s.values[spillAgent]); got != 5 {
		t.Errorf("%d agents in the dictionary, want 5 (an equal copy is the same value)", got)
	}
}

// TestSpillCorruptRecordIsAnError: a record whose values do not fit it is
// an error naming the record, not a request read from whatever follows it
// in the buffer or from past a dictionary's end: a record whose length says
// less than its values take (however much less: a value then runs past its
// end), a dictionary reference past the dictionary, a literal longer than
// the record. A literal (refLiteral) that fits is a value like any other.
func TestSpillCorruptRecordIsAnError(t *testing.T) {
	first := sources.Request{Time: time.Unix(1, 0).UTC(), ClientIP: netip.MustParseAddr("192.0.2.1"), Method: "GET", Host: "example.org",
		Path: "/a", UserAgent: "ua", Lang: "en", Status: 200, Size: 512}
	// record is a hand-made record of a request like first, a second
	// later, with the method's and the agent's references as given.
	record := func(method, agent []byte) []byte {
		b := binary.AppendVarint(nil, int64(time.Second))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(0.25))
		b = appendBytes(b, []byte("/b"))
		b = appendBytes(b, nil)
		b = appendBytes(b, []byte{192, 0, 2, 2})
		b = append(b, method...)
		b = binary.AppendUvarint(b, refOffset) // the host's: example.org
		b = binary.AppendUvarint(b, 404)
		b = binary.AppendVarint(b, 1000)
		b = append(b, agent...)
		b = binary.AppendUvarint(b, refOffset)       // the language's: en
		return binary.AppendUvarint(b, 1<<8|1<<10|1) // a cache verdict, Authorization, logged in
	}
	// read reads first, then body under the length given.
	read := func(length int, body []byte) ([]sources.Request, error) {
		s, err := NewSpill(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Write([]sources.Request{first}); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.f.Write(append(binary.AppendUvarint(nil, uint64(length)), body...)); err != nil {
			t.Fatal(err)
		}
		s.n++
		var got []sources.Request
		err = s.Read(context.Background(), func(b []sources.Request) error { got = append(got, b...); return nil })
		return got, err
	}
	get := binary.AppendUvarint(nil, refOffset)
	literal := func(v string) []byte { return appendBytes(binary.AppendUvarint(nil, refLiteral), []byte(v)) }
	want := sources.Request{Time: time.Unix(2, 0).UTC(), ClientIP: netip.MustParseAddr("192.0.2.2"), Method: "GET", Host: "example.org",
		Path: "/b", UserAgent: "a literal agent", Lang: "en", Status: 404, Size: 1000, Duration: 0.25,
		Cache: sources.Cache(1), Authorization: true, LoggedIn: sources.LoggedIn(1)}
	good := record(get, literal(want.UserAgent))
	got, err := read(len(good), good)
	if err != nil || len(got) != 2 || !reflect.DeepEqual(got[1], want) {
		t.Fatalf("a good record: %v, %+v, want %+v", err, got, want)
	}
	corrupt := map[string]struct {
		length int
		body   []byte
	}{
		"a method past the dictionary": {len(good), record(binary.AppendUvarint(nil, refOffset+1), literal(want.UserAgent))},
		"a literal past the record":    {0, record(get, append(binary.AppendUvarint(nil, refLiteral), 200, 1, 'x'))},
	}
	for cut := 1; cut < len(good); cut++ {
		// The bytes the length leaves out stay in the buffer after it.
		corrupt[fmt.Sprintf("a length %d short", cut)] = struct {
			length int
			body   []byte
		}{len(good) - cut, good}
	}
	for name, c := range corrupt {
		if c.length == 0 {
			c.length = len(c.body)
		}
		got, err := read(c.length, c.body)
		if err == nil || !strings.Contains(err.Error(), "record 2") {
			t.Errorf("%s: %v (%d requests, the last %+v), want an error naming record 2", name, err, len(got), got[len(got)-1])
		}
	}
}
