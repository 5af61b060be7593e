package rules

import (
	"net/netip"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// TestReaders: who, under a crawler's fingerprint, counts as a reader. The
// obvious rule ("fetched assets, so a person") is wrong for a concentrated
// crawler that fetches assets too: its pace gives it away.
func TestReaders(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 15, 37, 0, 0, time.UTC).UnixNano()
	sec := func(s float64) int64 { return t0 + int64(s*float64(time.Second)) }
	type req struct {
		at    float64
		asset bool
	}
	for _, tc := range []struct {
		name string
		reqs []req
		want bool
	}{
		{"one tool request, nothing else (the spread crawler)", []req{{0, false}}, false},
		{"two tool requests a minute apart (the spread crawler at most)", []req{{0, false}, {60, false}}, false},
		{"a page and its assets", []req{{0, false}, {0.3, true}, {0.4, true}}, true},
		{"three pages over three minutes, no assets (cached)", []req{{0, false}, {90, false}, {180, false}}, true},
		{"three pages within a minute, no assets", []req{{0, false}, {20, false}, {40, false}}, false},
		{"a concentrated crawler: 600 pages in ten minutes, with assets", func() []req {
			var rs []req
			for i := range 600 {
				rs = append(rs, req{float64(i), false})
			}
			return append(rs, req{1, true})
		}(), false},
		{"a busy reader: 40 pages and assets over ten minutes", func() []req {
			var rs []req
			for i := range 40 {
				rs = append(rs, req{float64(i * 15), false}, req{float64(i*15) + 0.5, true})
			}
			return rs
		}(), true},
	} {
		rt := readerTracker{}
		ip := netip.MustParseAddr("127.0.0.1")
		counts := newArrivalCounts(nil, 1)
		for _, r := range tc.reqs {
			cls := classOf(0, false, sources.LoggedInNo, !r.asset)
			counts.add(sec(r.at), cls)
			rt.observe(0, ip, sec(r.at), r.asset, false, counts.stretch(sec(r.at)), cls)
		}
		readers := rt.settle(counts)
		if got := readers.has(0, ip); got != tc.want {
			t.Errorf("%s: reader %v, want %v", tc.name, got, tc.want)
		}
		// A reader's arrivals are recounted as ordinary ones from a reader.
		all, _ := counts.in(0, sec(1e6))
		crawler := all[classOf(0, false, sources.LoggedInNo, true)] + all[classOf(0, false, sources.LoggedInNo, false)]
		reader := all[classOf(-1, true, sources.LoggedInNo, true)] + all[classOf(-1, true, sources.LoggedInNo, false)]
		if want := len(tc.reqs); tc.want && (crawler != 0 || reader != want) || !tc.want && (crawler != want || reader != 0) {
			t.Errorf("%s: counted %d as the crawler's and %d as a reader's", tc.name, crawler, reader)
		}
	}
	if c := classOf(-1, true, sources.LoggedInYes, true); c.crawler() != -1 || !c.reader() || c.login() != sources.LoggedInYes || !c.php() {
		t.Errorf("a reader's class does not round-trip")
	}
	if c := classOf(2, false, sources.LoggedInNo, false); c.crawler() != 2 || c.reader() || c.login() != sources.LoggedInNo || c.php() {
		t.Errorf("a crawler's class does not round-trip")
	}
}
