package live

import (
	"reflect"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki"
)

// A second pass pulls the counted minutes next to an edge: before a start
// (and the start's own minute when it was counted), after an end, up to
// secondPassReach, never a minute already pulled, and no more than the limit.
func TestTouchedMinutes(t *testing.T) {
	t0 := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	var minutes []Minute
	for i := range 180 {
		minutes = append(minutes, Minute{T: at(i), Pulled: i >= 100 && i < 120})
	}
	span := func(from, to int) []time.Time {
		var out []time.Time
		for i := from; i < to; i++ {
			out = append(out, at(i))
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		edges Edges
		limit int
		want  []time.Time
	}{
		{"a start at the first pulled minute", Edges{Starts: []time.Time{at(100)}}, 120, span(70, 100)},
		{"a start inside a counted stretch", Edges{Starts: []time.Time{at(50).Add(20 * time.Second)}}, 120, span(21, 51)},
		{"an end at the last pulled minute", Edges{Ends: []time.Time{at(120)}}, 120, span(120, 150)},
		{"a start after pulled minutes", Edges{Starts: []time.Time{at(119)}}, 120, nil},
		{"both, bounded", Edges{Starts: []time.Time{at(100)}, Ends: []time.Time{at(120)}}, 40, append(span(70, 100), span(120, 130)...)},
		{"near the range's start", Edges{Starts: []time.Time{at(5)}}, 120, span(0, 6)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := touchedMinutes(minutes, tt.edges, tt.limit)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v\nwant %v", got, tt.want)
			}
		})
	}
}

// The family pull is cut where its lines (as Loki counted them) would
// overflow a page, so a sparse family costs a few requests, not two per
// hour; the spans cover the range without gaps.
func TestFamilySpans(t *testing.T) {
	t0 := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	per := make([]float64, 24*60)
	for i := range per {
		per[i] = 2 // a quiet family
	}
	for i := 600; i < 620; i++ {
		per[i] = 400 // its burst
	}
	got := familySpans(t0, per, nil, 5000)
	// 600 quiet minutes and 9 of the burst hold 4,800 lines; the next span
	// takes the burst's other 11 minutes and 300 quiet ones (5,000).
	want := []loki.Span{
		{From: t0, To: t0.Add(609 * time.Minute)},
		{From: t0.Add(609 * time.Minute), To: t0.Add(920 * time.Minute)},
		{From: t0.Add(920 * time.Minute), To: t0.Add(24 * time.Hour)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spans %v\nwant %v", got, want)
	}
}
