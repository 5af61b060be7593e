package report

import (
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
)

// With no baseline, a window without a failing stretch is not "no more
// failed than usual": nothing usual was measured, and the summary says so.
func TestSummaryWithoutBaselineClaimsNoUsual(t *testing.T) {
	r := quietReport(t)
	r.incidents = &detect.Incidents{Worst: -1, Baseline: detect.Baseline{Source: detect.BaselineNone}}
	if err := r.Assemble(); err != nil {
		t.Fatal(err)
	}
	for _, lang := range Langs {
		s := summary(newPrinter(lang, mustZone("Asia/Seoul"), r.Window.From), r)
		if strings.Contains(s, "than usual") || strings.Contains(s, "평소보다") {
			t.Errorf("%s: %q compares with a usual rate that was never measured", lang, s)
		}
	}
	if en := summary(newPrinter(LangEN, mustZone("Asia/Seoul"), r.Window.From), r); !strings.Contains(en, "no baseline was available") {
		t.Errorf("summary %q does not say no baseline was available", en)
	}
	// With a baseline, the usual wording stands.
	r.incidents.Baseline = detect.Baseline{From: at("01:00"), To: at("02:00"), Source: detect.BaselineBeforeWindow}
	if err := r.Assemble(); err != nil {
		t.Fatal(err)
	}
	if s := summary(newPrinter(LangEN, mustZone("Asia/Seoul"), r.Window.From), r); !strings.Contains(s, "no more requests failed than usual") {
		t.Errorf("summary %q", s)
	}
}

// Separate stretches stay separate: the report leads with the worst (its
// stretch is the impact's) and names the others; report.json lists them.
func TestSummaryListsOtherStretches(t *testing.T) {
	r := referenceReport(t)
	errs := detect.First(r.Findings, detect.KindUpstreamErrors)
	blip := detect.Incident{Onset: at("00:05"), Start: at("00:05"), End: at("00:06"), Requests: 310, Failed: 9, Refused: 9}
	worst := detect.Incident{Onset: errs.Start.Add(-3 * time.Minute), Start: errs.Start, End: errs.End, Failed: 9000}
	r.incidents = &detect.Incidents{List: []detect.Incident{blip, worst}, Worst: 1,
		Baseline: detect.Baseline{From: at("00:10"), To: worst.Onset, Source: detect.BaselineBeforeOnset}}
	if err := r.Assemble(); err != nil {
		t.Fatal(err)
	}
	if !r.Impact.Start.Equal(errs.Start) || !r.Impact.Onset.Equal(worst.Onset) || len(r.Impact.OtherStretches) != 1 {
		t.Fatalf("impact %v-%v onset %v others %d: want the worst stretch first and the blip listed", r.Impact.Start, r.Impact.End, r.Impact.Onset, len(r.Impact.OtherStretches))
	}
	s := summary(newPrinter(LangEN, mustZone("Asia/Seoul"), r.Impact.Start), r)
	if !strings.Contains(s, "Separate stretches of failures: 00:05 to 00:06 (9 of 310 failed)") {
		t.Errorf("summary does not name the blip: %q", s)
	}
}
