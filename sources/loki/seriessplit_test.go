package loki

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// A sum by a stream label that Loki refuses for its series is split by the
// label's values as Loki's index lists them (/series, no line read), in
// sets of as many values as one answer may hold, and one part for every
// other value: the answer is the unlimited one, in a handful of requests.
// Before, the values were halved blindly (ranges of runes after a growing
// prefix), refusal after refusal: 40 pods under max_query_series 8 took
// 65 requests, 32 of them refused (each a pass over the range in a real
// Loki); now 8, 1 refused.
func TestSeriesLimitSplitsByListedValues(t *testing.T) {
	f := lokitest.New(t)
	var n int
	for p := range 40 {
		for m := 0; m < 30; m += 3 {
			f.Push(map[string]string{"job": "caddy", "pod": fmt.Sprint("p", p)}, t0.Add(time.Duration(m)*time.Minute+time.Duration(p)*time.Second), "GET /")
			n++
		}
	}
	// A stream without the label is in the last part.
	f.Push(map[string]string{"job": "caddy"}, t0.Add(time.Minute), "GET /")
	n++
	q := `sum by (pod) (count_over_time({job="caddy"} ` + MinuteRange + `))`
	free, _ := newTestClient(t, f.URL(), nil)
	want, err := free.MinuteValues(context.Background(), q, t0, t0.Add(30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	f.SetMaxQuerySeries(8)
	f.ResetStats()
	c, _ := newTestClient(t, f.URL(), nil)
	got, err := c.MinuteValues(context.Background(), q, t0, t0.Add(30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	sameSeriesUnderTheLimit(t, got, want, 41, n)
	// The refusal, the list of streams, 5 sets of 8 pods and the rest.
	calls, _ := f.Stats()
	if got.Requests > 8 || calls["error"] != 1 {
		t.Errorf("%d requests, %d refused (%v): want at most 8, 1 refused", got.Requests, calls["error"], calls)
	}
	if l := strings.Join(c.LimitsLearned(), "\n"); !strings.Contains(l, "values of label pod, as Loki's index lists them") {
		t.Errorf("limits learned: %q", l)
	}
}

// sameSeriesUnderTheLimit fails t unless got, answered under a series limit,
// holds the groups series of want (answered without it), with the same
// labels and minutes, and their values add up to the pushed lines.
func sameSeriesUnderTheLimit(t *testing.T, got, want MinuteValues, groups, pushed int) {
	t.Helper()
	if len(want.Series) != groups || len(got.Series) != len(want.Series) {
		t.Fatalf("%d series under the limit, %d without, want %d", len(got.Series), len(want.Series), groups)
	}
	var sum float64
	for i := range want.Series {
		if got.Series[i].Labels != want.Series[i].Labels || !slices.Equal(got.Series[i].Values, want.Series[i].Values) {
			t.Errorf("series %s under the limit, %s without, or their minutes differ", got.Series[i].Labels, want.Series[i].Labels)
		}
		for _, v := range got.Series[i].Values {
			sum += v
		}
	}
	if int(sum) != pushed {
		t.Errorf("%v lines counted, %d pushed", sum, pushed)
	}
}
