package scan

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
)

// An anomaly's facts in scan.json are its own struct's, a fact measured only
// sometimes (the backlog, CPU) left out when it was not, then the names a
// joining finding adds: a name both state keeps the anomaly's number (the
// seasonal measure stands). Read back, the same object comes out again.
func TestAnomalyFactsJSON(t *testing.T) {
	sat := &SaturationFacts{Workers: 16, SaturatedMinutes: 41, SaturatedMinutesUsual: 0, QueuePeak: 900, QueuePeakUsual: 2, BaselineSlots: 6}
	joined := detect.MustParseFacts(detect.KindWorkerSaturation, map[string]float64{"workers": 12, "saturated_seconds": 2460})
	a := Anomaly{Kind: KindSaturation, Severity: SeverityCritical, Start: time.Date(2026, 10, 22, 2, 15, 0, 0, time.UTC),
		Summary: "busy", Facts: sat, Joined: []detect.Facts{joined}}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Facts map[string]float64 `json:"facts"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Facts["workers"] != 16 || got.Facts["saturated_seconds"] != 2460 || got.Facts["queue_peak"] != 900 {
		t.Errorf("facts %v: want the anomaly's 16 workers, the finding's 2460 busy seconds, a queue peak of 900", got.Facts)
	}
	for _, absent := range []string{"backlog", "cpu_mean_pct", "cpu_mean_usual_pct"} {
		if _, ok := got.Facts[absent]; ok {
			t.Errorf("facts state %s, which was not measured: %v", absent, got.Facts)
		}
	}
	var back Anomaly
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b, again) {
		t.Errorf("read back and written again:\n%s\nwant\n%s", again, b)
	}
}

// An anomaly without facts (a finding that states none) writes no facts
// object, as an empty map never did.
func TestAnomalyWithoutFacts(t *testing.T) {
	b, err := json.Marshal(Anomaly{Kind: detect.KindConfigChange, Severity: SeverityInfo, Summary: "a change"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["facts"]; ok {
		t.Errorf("facts written for an anomaly with none: %s", b)
	}
}

// Every concern declares facts of its own kind, and those of the scan's own
// crawler measure and of the crawler detector both reach scan.json's schema
// names for crawler_burst: the two join into one anomaly.
func TestConcernFactNames(t *testing.T) {
	for _, c := range ConcernSpecs() {
		if k := c.NewFacts().FindingKind(); k != c.Kind {
			t.Errorf("concern %s declares facts of %s", c.Kind, k)
		}
	}
	names, _ := FactNames(detect.KindCrawlerBurst)
	for _, want := range []string{"usual_per_10m", "distinct_ips_usual", "requests_per_ip_median"} {
		if !slices.Contains(names, want) {
			t.Errorf("crawler_burst facts %v lack %s", names, want)
		}
	}
	names, prefixes := FactNames(KindErrorRate)
	if !slices.Contains(names, "proxy_503_usual") || !slices.Contains(prefixes, "status_") {
		t.Errorf("error_rate facts %v (numbered %v): want its own proxy_503_usual and upstream_errors' status_<code>", names, prefixes)
	}
}
