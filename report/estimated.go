package report

import (
	"strings"

	"github.com/aftermath-forensics/aftermath/detect"
)

// estimateWhy says, per language, why a finding's figures are estimated
// (detect.Estimate.Reason): a pushed-down fetch read some minutes only as
// counts.
var estimateWhy = map[string]map[string]string{
	LangEN: {
		detect.EstimateNotRead:        "lower bounds: its lines were read only in the minutes that stood out",
		detect.EstimateBaselineSample: "from the baseline's sampled minutes",
	},
	LangKO: {
		detect.EstimateNotRead:        "하한값: 두드러진 분의 줄만 읽음",
		detect.EstimateBaselineSample: "기준 기간 중 표본으로 읽은 분에서 추정",
	},
}

// estimatedMark is what follows a finding's text when some of its figures
// are estimated: " [estimated: start, distinct_ips (why)]", "" when none is.
func estimatedMark(lang string, f *detect.Finding) string {
	if f == nil || len(f.Estimated) == 0 {
		return ""
	}
	word := map[string]string{LangEN: "estimated", LangKO: "추정치"}[lang]
	parts := make([]string, len(f.Estimated))
	for i, e := range f.Estimated {
		parts[i] = strings.Join(e.Figures, ", ") + " (" + estimateWhy[lang][e.Reason] + ")"
	}
	return " [" + word + ": " + strings.Join(parts, "; ") + "]"
}

// finding is the finding with id (nil if none).
func (r *Report) finding(id string) *detect.Finding {
	for i := range r.Findings {
		if r.Findings[i].ID == id {
			return &r.Findings[i]
		}
	}
	return nil
}
