package report

import "github.com/aftermath-forensics/aftermath/detect"

// estimatedMark is what follows a finding's text when some of its figures
// are estimated (a pushed-down fetch read some minutes only as counts):
// " [estimated: start, distinct_ips (why)]", "" when none is.
func estimatedMark(p printer, f *detect.Finding) string {
	if f == nil || len(f.Estimated) == 0 {
		return ""
	}
	return p.say("estimated.mark", f.Estimated)
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
