package live

import (
	"context"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// Under Loki's max_query_series (8), the simulated incident's count per
// client family (its families are there all day: no split in time narrows
// them) is split by the families the answers named, stretch by stretch,
// not by ranges of the value space halved refusal after refusal: Loki
// reads the 4.5 hours at most ceil(families/8)+1 times over (its
// statistics, summed), and the counts are the unlimited ones. Before, the
// halvings read them 7.0 times over for its 22 families, in 16 requests,
// 8 of them refused; now 2.9 times, in 15 requests.
func TestFamilyCountsUnderSeriesLimitReadTheRangeFewTimes(t *testing.T) {
	t.Parallel()
	_, b, shared := sharedIncident(t)
	from, to := b.Manifest.Baseline.From, b.Manifest.Window.To
	lk := lokitest.New(t)
	shared.Each(`{job="caddy"}`, from, to, func(_ string, e lokitest.Entry) {
		lk.Push(accessStream, time.Unix(0, e.TS), e.Line)
	})
	count := func() (map[string][]float64, loki.MinuteCounts) {
		c, err := loki.New(loki.Config{Addr: lk.URL(), Retries: -1, Timeout: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		mc, counts, _, _, err := familyMinutes(context.Background(), c, `{job="caddy"}`, 0, from, to)
		if err != nil {
			t.Fatal(err)
		}
		return counts, mc
	}
	want, _ := count()
	lk.SetMaxQuerySeries(8)
	lk.ResetStats()
	got, mc := count()
	_, rangeBytes := lk.Bytes(`{job="caddy"}`, from, to)
	passes := float64(lk.BytesProcessed()) / float64(rangeBytes)
	calls, _ := lk.Stats()
	t.Logf("under max_query_series 8: %d families counted in %d requests (%v), Loki reading the range %.2f times over", len(got), mc.Requests, calls, passes)
	if len(want) <= 8 || !maps.EqualFunc(got, want, func(a, b []float64) bool { return slices.Equal(a, b) }) {
		t.Errorf("%d families under the limit, %d without (want more than 8), or their counts differ", len(got), len(want))
	}
	if bound := math.Ceil(float64(len(want))/8) + 1; passes > bound {
		t.Errorf("Loki read the range %.1f times over for %d families in %d requests (%v), want at most %.0f", passes, len(want), mc.Requests, calls, bound)
	}
}
