package timechart

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

func labels() Labels {
	return Labels{Number: func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) },
		Date: func(t time.Time) string { return t.Format("2 January") }, Loc: time.UTC}
}

var xlab = regexp.MustCompile(`class="xlab"[^>]*>([^<]*)<`)

func timeLabels(t *testing.T, c *Chart) []string {
	t.Helper()
	c.Axes()
	var out []string
	for _, m := range xlab.FindAllStringSubmatch(string(c.Finish()), -1) {
		out = append(out, m[1])
	}
	return out
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
	svg := string(c.Finish())
	right := padL + (width-padL-padR)/12
	if want := "M64.0,40.0 L" + strconv.FormatFloat(right, 'f', 1, 64) + ",40.0"; !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(svg) {
		t.Errorf("the column should run from x=64 to x=%.1f at the top (4 of 4):\n%s", right, svg)
	}
}
