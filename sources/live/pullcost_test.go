package live

import (
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/loki"
)

// TestCostModelPullsWholeWhatMostlyStandsOut: on the small incident a
// pushdown's minutes (the burst with its margins, the baseline's sample)
// hold most of the bytes, and a pushdown makes Loki read the range again for
// every query over it: measured before the cost model, it pulled 77% of the
// full pull's bytes (5.44 of 7.08 MB) and had Loki read 81.7 MB, 11.5x
// those bytes. The cost model pulls it whole instead and says so with both
// estimates; under pushdown.max_share 1 the same window is pushed down with
// the estimate in its section.
func TestCostModelPullsWholeWhatMostlyStandsOut(t *testing.T) {
	m, notes, err := fetchSmall(t, func(cfg *Config, _ lokiFake) { cfg.PushdownAfter = D(0) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Pushdown != nil {
		t.Fatalf("pushed down (%+v): the minutes that stand out hold most of the bytes", m.Pushdown.Estimate)
	}
	var pulled, counted bool
	for _, q := range m.Queries {
		if q.Source != loki.Source {
			continue
		}
		if q.File == MinuteCountsFile {
			counted = true
		}
		if q.File == AccessFile && q.Lines > 0 && !strings.Contains(q.Query, familyLabel) && !strings.Contains(q.Note, "pushdown") {
			pulled = true
		}
	}
	if !pulled || counted {
		t.Errorf("want the access log pulled whole and no minute-counts.csv: pulled %v, counts file %v", pulled, counted)
	}
	// bundle.yaml (and so report.json's evidence.pushdown) states the
	// choice with both estimates, and what the full pull cost.
	if fp := m.FullPull; fp == nil || fp.Estimate == nil || fp.Estimate.Chosen != bundle.ChosenFull || fp.Estimate.PushdownBytes <= 0 ||
		fp.Estimate.FullBytes != fp.FullBytes || fp.PulledBytes != fp.FullBytes || fp.Requests == 0 {
		t.Errorf("full_pull section %+v: want the full pull chosen with both estimates, pulling the bytes Loki measured", fp)
	}
	if !noteWith(notes, loki.Source, sources.SeverityInfo, "pulled whole: cost model: a full pull would pull") ||
		!noteWith(notes, loki.Source, sources.SeverityInfo, "chosen: "+bundle.ChosenFull) {
		t.Errorf("no note states both estimates and the choice: %v", notes)
	}

	share := 1.0
	m, _, err = fetchSmall(t, func(cfg *Config, _ lokiFake) { cfg.PushdownAfter, cfg.Pushdown.MaxShare = D(0), &share }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Pushdown == nil || m.Pushdown.Estimate == nil || m.FullPull != nil {
		t.Fatal("max_share 1: want a pushdown with its estimate, and no full_pull section")
	}
	e := m.Pushdown.Estimate
	if e.Chosen != bundle.ChosenPushdown || e.FullBytes != m.Pushdown.FullBytes || e.PushdownBytes*2 < e.FullBytes || e.PushdownLokiBytes <= e.FullLokiBytes {
		t.Errorf("estimate %+v (full bytes measured %d): want the pushdown chosen, its minutes over half the bytes, and Loki reading more for it", e, m.Pushdown.FullBytes)
	}
}

// pushDownAlways pushes every window down whatever the cost model says
// (pushdown_after 0s, max_share 1): for tests of the pushdown's own
// workings on the small incident, whose flagged minutes hold most bytes.
func pushDownAlways(cfg *Config) {
	one := 1.0
	cfg.PushdownAfter, cfg.Pushdown.MaxShare = D(0), &one
}
