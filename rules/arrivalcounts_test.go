package rules

import (
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// TestArrivalCounts: a range between cuts, or open past the first or last
// arrival, is counted exactly by class; any other range cannot be.
func TestArrivalCounts(t *testing.T) {
	t0 := time.Date(2026, 10, 2, 0, 0, 0, 0, time.UTC)
	at := func(min int) int64 { return t0.Add(time.Duration(min) * time.Minute).UnixNano() }
	c := newArrivalCounts([]time.Time{t0.Add(60 * time.Minute), t0.Add(120 * time.Minute), {}, t0.Add(60 * time.Minute)}, 2)
	crawler := classOf(1, false, sources.LoggedInNo, true)
	reader := classOf(-1, false, sources.LoggedInYes, false)
	for m := 10; m < 180; m += 10 { // 10, 20, ... 170
		c.add(at(m), reader)
		if m >= 60 {
			c.add(at(m), crawler)
		}
	}
	if crawler.crawler() != 1 || crawler.login() != sources.LoggedInNo || !crawler.php() || reader.crawler() != -1 || reader.login() != sources.LoggedInYes || reader.php() {
		t.Fatalf("classes do not round-trip: %d %d", crawler, reader)
	}
	for _, tc := range []struct {
		name              string
		from, to          int64
		readers, crawlers int
		ok                bool
	}{
		{"before the first cut, open at the start", at(0), at(60), 5, 0, true},
		{"between cuts", at(60), at(120), 6, 6, true},
		{"after the last cut, open at the end", at(120), at(175), 6, 6, true},
		{"everything", at(10), at(171), 17, 12, true},
		{"empty", at(120), at(60), 0, 0, true},
		{"a start that is not a cut", at(30), at(60), 0, 0, false},
		{"an end that is not a cut", at(60), at(170), 0, 0, false},
	} {
		got, ok := c.in(tc.from, tc.to)
		if ok != tc.ok || ok && (got[reader] != tc.readers || got[crawler] != tc.crawlers) {
			t.Errorf("%s: %v %v, want %d readers and %d crawler requests (%v)", tc.name, got, ok, tc.readers, tc.crawlers, tc.ok)
		}
	}
}
