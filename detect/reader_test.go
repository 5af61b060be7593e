package detect

import (
	"testing"
	"time"
)

// TestReader: who, under a fingerprint, reads like a person. Two obvious rules
// are wrong: "fetched assets, so a person" (a concentrated crawler fetching
// assets gives itself away by its pace) and "came from the site's own page, so
// a person" (a crawler forges the Referer on the one request it sends from an
// address: only a click that follows a request of the same address counts).
func TestReader(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 15, 37, 0, 0, time.UTC).UnixNano()
	type req struct {
		at         float64 // seconds after t0
		asset, ref bool
	}
	many := func(n int, every float64, asset, ref bool) []req {
		var rs []req
		for i := range n {
			rs = append(rs, req{float64(i) * every, false, ref})
			if asset {
				rs = append(rs, req{float64(i)*every + 0.5, true, ref})
			}
		}
		return rs
	}
	for _, tc := range []struct {
		name string
		reqs []req
		want bool
	}{
		{"one tool request, nothing else (the spread crawler)", []req{{0, false, false}}, false},
		{"one tool request with a forged site Referer", []req{{0, false, true}}, false},
		{"two tool requests a minute apart (the spread crawler at most)", []req{{0, false, false}, {60, false, false}}, false},
		{"a page, then a tool clicked from it (assets cached)", []req{{0, false, false}, {40, false, true}}, true},
		{"a page and its assets", []req{{0, false, false}, {0.3, true, true}, {0.4, true, true}}, true},
		{"three pages over three minutes, no assets (cached)", []req{{0, false, false}, {90, false, false}, {180, false, false}}, true},
		{"three pages within a minute, no assets, no referer", []req{{0, false, false}, {20, false, false}, {40, false, false}}, false},
		{"a concentrated crawler: 600 pages in ten minutes, with assets and site referers", many(600, 1, true, true), false},
		{"a busy reader: 40 pages and assets over ten minutes", many(40, 15, true, true), true},
	} {
		var b AddressBehaviour
		for _, r := range tc.reqs {
			b.Observe(t0+int64(r.at*float64(time.Second)), r.asset, r.ref)
		}
		if got := b.Reader(); got != tc.want {
			t.Errorf("%s: reader %v, want %v (%+v)", tc.name, got, tc.want, b)
		}
		if b.Requests != len(tc.reqs) {
			t.Errorf("%s: %d requests counted, want %d", tc.name, b.Requests, len(tc.reqs))
		}
	}
}
