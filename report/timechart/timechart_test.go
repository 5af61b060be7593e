package timechart

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func labels() Labels {
	return Labels{Number: func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) },
		Date: func(t time.Time) string { return t.Format("2 January") }, Loc: time.UTC}
}

var xlab = regexp.MustCompile(`class="xlab"[^>]*>([^<]*)<`)

// drawings splits Finish's output into the wide and the narrow drawing.
func drawings(t *testing.T, c *Chart) (wide, narrow string) {
	t.Helper()
	wide, narrow, ok := strings.Cut(string(c.Finish()), "\n")
	if !ok || !strings.HasPrefix(wide, `<svg class="chart" viewBox="0 0 960.0 `) || !strings.HasPrefix(narrow, `<svg class="chart narrow" viewBox="0 0 360.0 `) {
		t.Fatalf("not a wide and a narrow drawing:\n%s\n%s", wide, narrow)
	}
	return wide, narrow
}

func timeLabels(t *testing.T, c *Chart) []string {
	t.Helper()
	c.Axes()
	wide, _ := drawings(t, c)
	var out []string
	for _, m := range xlab.FindAllStringSubmatch(wide, -1) {
		out = append(out, m[1])
	}
	return out
}

// The phone's drawing of a 90-minute chart: at most about four time labels
// (the wide one has ten), a legend that wraps into rows inside the width, the
// plot moved down under it, and the failing stretch where the wide one has
// it, in proportion.
func TestNarrowDrawing(t *testing.T) {
	from := time.Date(2026, 10, 2, 17, 0, 0, 0, time.UTC)
	c := New(labels(), from, from.Add(90*time.Minute), time.Minute, 100, "t")
	c.Shade(from.Add(45*time.Minute), from.Add(75*time.Minute), "failing")
	c.Axes()
	for _, k := range []string{"answered", "503 Service Unavailable", "502 Bad Gateway", "late answers", "429"} {
		c.Key(ColourOK, k)
	}
	wide, narrow := drawings(t, c)
	count := func(svg string) int { return len(xlab.FindAllString(svg, -1)) }
	if w, n := count(wide), count(narrow); w < 8 || n > 5 || n < 3 {
		t.Errorf("time labels: %d wide, %d narrow; want about ten and at most five", w, n)
	}
	lg := regexp.MustCompile(`<text class="lg" x="([0-9.]+)" y="([0-9.]+)">([^<]*)<`)
	rows := map[string]bool{}
	for _, m := range lg.FindAllStringSubmatch(narrow, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		rows[m[2]] = true
		if x+textWidth(m[3]) > narrowWidth {
			t.Errorf("legend %q runs past the narrow chart's edge (%.0f of %.0f)", m[3], x+textWidth(m[3]), narrowWidth)
		}
	}
	if len(rows) < 2 {
		t.Errorf("the narrow legend did not wrap: rows %v", rows)
	}
	window := regexp.MustCompile(`<rect class="window" x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)"`)
	m := window.FindStringSubmatch(narrow)
	if m == nil {
		t.Fatalf("no failing stretch in the narrow drawing")
	}
	x, _ := strconv.ParseFloat(m[1], 64)
	y, _ := strconv.ParseFloat(m[2], 64)
	w, _ := strconv.ParseFloat(m[3], 64)
	plot := narrowWidth - padL - padR
	if want := padL + plot/2; x < want-1 || x > want+1 || w < plot/3-1 || w > plot/3+1 {
		t.Errorf("failing stretch at x=%.1f width %.1f, want x=%.1f width %.1f", x, w, want, plot/3)
	}
	if y < padTop+legendRow {
		t.Errorf("the plot starts at y=%.1f, under %d legend rows", y, len(rows))
	}
}

// A two-minute replay drawn in ten-second buckets is labelled in seconds; the
// same span in minute buckets (the postmortem's) keeps its minute labels, as
// a label finer than a bucket would sit between two samples.
func TestTimeLabelsFollowTheBucket(t *testing.T) {
	from := time.Date(2026, 10, 2, 17, 20, 3, 0, time.UTC)
	to := from.Add(2 * time.Minute)
	got := timeLabels(t, New(labels(), from, to, 10*time.Second, 10, "t"))
	want := []string{"17:20:15", "17:20:30", "17:20:45", "17:21:00", "17:21:15", "17:21:30", "17:21:45", "17:22:00"}
	if len(got) != len(want) {
		t.Fatalf("labels %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("labels %q, want %q", got, want)
		}
	}
	got = timeLabels(t, New(labels(), from, to, time.Minute, 10, "t"))
	if len(got) != 2 || got[0] != "17:21" || got[1] != "17:22" {
		t.Errorf("minute buckets: labels %q, want [17:21 17:22]", got)
	}
}

// Stacked layers cover one bucket each: with ten-second buckets the first
// column ends a twelfth of the way across a two-minute chart.
func TestStackColumnsAreOneBucketWide(t *testing.T) {
	from := time.Date(2026, 10, 2, 17, 20, 0, 0, time.UTC)
	c := New(labels(), from, from.Add(2*time.Minute), 10*time.Second, 4, "t")
	c.Stack([]time.Time{from}, [][]float64{{4}}, []string{ColourOK})
	svg, _ := drawings(t, c)
	right := padL + (wideWidth-padL-padR)/12
	if want := "M64.0,40.0 L" + strconv.FormatFloat(right, 'f', 1, 64) + ",40.0"; !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(svg) {
		t.Errorf("the column should run from x=64 to x=%.1f at the top (4 of 4):\n%s", right, svg)
	}
}
