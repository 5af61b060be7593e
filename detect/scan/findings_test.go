package scan

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
)

// A detector's finding with no baseline fact claims no usual value and no
// score; neither does one judged against a limit (the health check's wait
// against its timeout: a timeout is not a usual value); one with a measured
// baseline fact keeps both.
func TestFindingWithoutBaseline(t *testing.T) {
	now := time.Date(2026, 10, 22, 3, 0, 0, 0, time.UTC)
	findings := []detect.Finding{
		{ID: "client_abandoned_work-1", Kind: detect.KindClientAbandonedWork, Start: now.Add(-30 * time.Minute), End: now,
			Summary: "abandoned", Facts: detect.MustParseFacts(detect.KindClientAbandonedWork, map[string]float64{"requests": 500})},
		{ID: "healthcheck_starved-1", Kind: detect.KindHealthcheckStarved, Start: now.Add(-20 * time.Minute), End: now,
			Summary: "starved", Facts: detect.MustParseFacts(detect.KindHealthcheckStarved, map[string]float64{"est_queue_wait_s": 24, "health_timeout_s": 10})},
		{ID: "self_amplification-1", Kind: detect.KindSelfAmplification, Start: now.Add(-20 * time.Minute), End: now,
			Summary: "self calls", Facts: detect.MustParseFacts(detect.KindSelfAmplification, map[string]float64{"self_calls": 900, "expected": 300})},
	}
	j := &judge{cfg: Config{}.Defaults(), site: sources.Site{ClientTimeoutS: 10}, recent: hourProfile(now, 1000, nil),
		res: &detect.Result{Findings: findings}}
	j.run()
	byKind := map[detect.Kind]*Anomaly{}
	for _, a := range j.anomalies {
		byKind[a.Kind] = a
	}
	a, h, s := byKind[detect.KindClientAbandonedWork], byKind[detect.KindHealthcheckStarved], byKind[detect.KindSelfAmplification]
	if a == nil || h == nil || s == nil {
		t.Fatalf("anomalies %v", j.anomalies)
	}
	if !a.NoBaseline || a.Baseline != 0 || a.Score != 0 || a.Observed != 500 {
		t.Errorf("client_abandoned_work: observed %v, baseline %v (none: %v), score %v; want 500, no baseline, no score",
			a.Observed, a.Baseline, a.NoBaseline, a.Score)
	}
	if !h.NoBaseline || h.Baseline != 0 || h.Score != 0 || h.Observed != 24 {
		t.Errorf("healthcheck_starved: observed %v, baseline %v (none: %v), score %v; want 24 against no usual value (the 10 s timeout is a limit)",
			h.Observed, h.Baseline, h.NoBaseline, h.Score)
	}
	if s.NoBaseline || s.Baseline != 300 || s.Score == 0 {
		t.Errorf("self_amplification: baseline %v (none: %v), score %v; want 300 and a score", s.Baseline, s.NoBaseline, s.Score)
	}
	for _, x := range []struct {
		a    *Anomaly
		want bool
	}{{a, true}, {h, true}, {s, false}} {
		b, err := json.Marshal(x.a)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), `"no_baseline":true`); got != x.want {
			t.Errorf("%s: no_baseline in JSON %v, want %v: %s", x.a.Kind, got, x.want, b)
		}
	}
}
