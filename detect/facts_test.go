package detect

import (
	"encoding/json"
	"strings"
	"testing"
)

// A finding's facts are written as report.json always wrote them: one object
// of numbers sorted by name, a bool as 1 or 0, a fact stated as 0 present and
// a fact not measured absent; and read back into the kind's struct.
func TestFactsJSONRoundTrip(t *testing.T) {
	f := Finding{ID: "upstream_errors-1", Kind: KindUpstreamErrors, Summary: "x",
		Facts: &UpstreamErrorsFacts{FailedTotal: 12, PeakFailedPerMin: 3, LateSuccess: 0,
			GoodputUsualPerMin: Some(0.0), SuccessP50S: Some(0.25),
			Status: map[int]int{503: 10, 200: 7}, Proxy: map[int]int{503: 10}}}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	want := `"facts":{"failed_total":12,"goodput_usual_per_min":0,"late_success":0,"peak_failed_per_min":3,"proxy_503":10,"status_200":7,"status_503":10,"success_p50_s":0.25}`
	if !strings.Contains(string(data), want) {
		t.Errorf("json %s\nwant %s", data, want)
	}
	var back Finding
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	ef, ok := back.Facts.(*UpstreamErrorsFacts)
	if !ok {
		t.Fatalf("facts read back as %T, want *UpstreamErrorsFacts", back.Facts)
	}
	if ef.FailedTotal != 12 || !ef.GoodputUsualPerMin.OK || ef.GoodputUsualPerMin.V != 0 || ef.UsualFailedPerMin.OK ||
		ef.Status[200] != 7 || ef.Proxy[503] != 10 || ef.SuccessP50S.V != 0.25 {
		t.Errorf("read back %+v", ef)
	}
	again, _ := json.Marshal(back)
	if string(again) != string(data) {
		t.Errorf("second write differs:\n%s\n%s", again, data)
	}

	q := Finding{Kind: KindListenQueueOverflow, Facts: &ListenQueueFacts{QueuePeak: 361, ReachedCap: Some(false)}}
	if data, _ := json.Marshal(q); !strings.Contains(string(data), `"queue_usual":0,"reached_cap":0,"workers":0}`) || strings.Contains(string(data), "backlog") {
		t.Errorf("queue facts %s: want reached_cap 0 stated, backlog absent", data)
	}
	if data, _ := json.Marshal(Finding{Kind: KindCrawlerBurst}); !strings.Contains(string(data), `"facts":{}`) {
		t.Errorf("a finding without facts writes %s, want an empty facts object", data)
	}
}

// A typo in report.json's facts is an error when read back, never a silent 0.
func TestFactsUnknownNameIsAnError(t *testing.T) {
	err := json.Unmarshal([]byte(`{"id":"worker_saturation-1","kind":"worker_saturation","facts":{"workerz":16}}`), &Finding{})
	if err == nil || !strings.Contains(err.Error(), `"workerz"`) {
		t.Errorf("err %v: want the unknown fact named", err)
	}
	if err := json.Unmarshal([]byte(`{"id":"x-1","kind":"no_such_kind","facts":{}}`), &Finding{}); err == nil {
		t.Error("a finding of an unregistered kind read back without error")
	}
}

// Every registered kind declares its own facts type.
func TestEveryKindDeclaresFacts(t *testing.T) {
	for _, s := range Specs() {
		if got := s.NewFacts().FindingKind(); got != s.Kind {
			t.Errorf("kind %s declares the facts of %s", s.Kind, got)
		}
	}
	// Facts of another kind read as nothing measured.
	f := &Finding{Kind: KindCrawlerBurst, Facts: &WorkerSaturationFacts{Workers: 16}}
	if got := FactsOf[CrawlerBurstFacts](f); got.DistinctIPs != 0 || got.BaselinePer10m.OK {
		t.Errorf("mismatched facts read %+v", got)
	}
	if got := FactsOf[WorkerSaturationFacts](nil); got.Workers != 0 {
		t.Errorf("no finding read %+v", got)
	}
}
