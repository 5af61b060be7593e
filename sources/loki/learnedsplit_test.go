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

// A sum by labels a parser sets (40 clients, two of them with four statuses,
// across two hours; a few clients only in the first minutes) under
// max_query_series 8 is answered from parts cut by the values the answers
// named, not halved blindly: Loki reads the range at most
// ceil(groups/limit)+1 times over (its statistics, summed), and the answer
// is the unlimited one. Before, the halvings read it 22 times over.
func TestSeriesLimitSplitsByNamedValues(t *testing.T) {
	f := lokitest.New(t)
	var n, groups int
	for c := range 40 {
		statuses := []string{"200"}
		if c%20 == 7 {
			statuses = []string{"200", "404", "500", "502"}
		}
		groups += len(statuses)
		for m := 0; m < 120; m++ {
			// Clients 30 to 39 are there in the first ten minutes only.
			if c >= 30 && m >= 10 || (m+c)%4 != 0 && m >= 10 {
				continue
			}
			for i, st := range statuses {
				line := fmt.Sprintf(`{"client":"c%d","status":%s}`, c, st)
				f.Push(map[string]string{"job": "caddy"}, t0.Add(time.Duration(m)*time.Minute+time.Duration(c)*time.Second+time.Duration(i)*time.Millisecond), line)
				n++
			}
		}
	}
	q := `sum by (client, status) (count_over_time({job="caddy"} | json client="client", status="status" ` + MinuteRange + `))`
	free, _ := newTestClient(t, f.URL(), nil)
	want, err := free.MinuteValues(context.Background(), q, t0, t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	whole := f.BytesProcessed()
	f.SetMaxQuerySeries(8)
	f.ResetStats()
	c, _ := newTestClient(t, f.URL(), nil)
	got, err := c.MinuteValues(context.Background(), q, t0, t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
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
	if int(sum) != n {
		t.Errorf("%v lines counted, %d pushed", sum, n)
	}
	passes := float64(f.BytesProcessed()) / float64(whole)
	if bound := float64((groups+7)/8 + 1); passes > bound {
		calls, _ := f.Stats()
		t.Errorf("Loki read the range %.1f times over in %d requests (%v), want at most %.0f", passes, got.Requests, calls, bound)
	}
	if l := strings.Join(c.LimitsLearned(), "\n"); !strings.Contains(l, "split by the values of label client, status that their answers named") {
		t.Errorf("limits learned: %q", l)
	}
}
