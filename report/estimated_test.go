package report

import (
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
)

// A pushed-down fetch leaves some figures estimated; the mark beside the
// finding names each figure and why, in both languages, and says nothing
// when every figure was measured.
func TestEstimatedMark(t *testing.T) {
	f := &detect.Finding{Estimated: []detect.Estimate{
		{Figures: []string{"start", "distinct_ips"}, Reason: detect.EstimateNotRead},
		{Figures: []string{"baseline_per_10m"}, Reason: detect.EstimateBaselineSample},
		{Figures: []string{"routes", "uncacheable_share"}, Reason: detect.EstimateReadMinutes},
	}}
	day := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	for lang, want := range map[string]string{
		LangEN: " [estimated: start, distinct_ips (lower bounds: its lines were read only in the minutes that stood out); baseline_per_10m (from the baseline's sampled minutes); routes, uncacheable_share (from the minutes whose lines were read only)]",
		LangKO: " [추정치: start, distinct_ips (하한값: 두드러진 분의 줄만 읽음); baseline_per_10m (기준 기간 중 표본으로 읽은 분에서 추정); routes, uncacheable_share (줄을 읽은 분에서만 계산)]",
	} {
		p := newPrinter(lang, time.UTC, day)
		if got := estimatedMark(p, f); got != want {
			t.Errorf("%s: mark = %q, want %q", lang, got, want)
		}
		if got := estimatedMark(p, &detect.Finding{}); got != "" {
			t.Errorf("%s: a finding with nothing estimated is marked %q", lang, got)
		}
		if err := p.err(); err != nil {
			t.Errorf("%s: %v", lang, err)
		}
	}
}
