package configchange

import (
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
)

// TestRuntimeChangeNeedsSlowerPHP: a PHP upgrade made the evening before a
// crawl fits the findings by mechanism (a runtime changes every request's
// time) and by time, the obvious candidate. It enabled the incident only if
// PHP got slower across it; the access log says whether it did. Unchanged,
// the same crawl would have failed the same way on the old runtime: ruled
// out, with the numbers. Slower, it stays a candidate with them. With no
// PHP answers before the change (the data starts after it) or no access
// log at all, nobody can say: a candidate that says it could not judge.
func TestRuntimeChangeNeedsSlowerPHP(t *testing.T) {
	bump := sources.Change{Time: ccAt(2, 23, 48), Source: "git", Ref: ccCommit, File: "Dockerfile", Key: "php_version", Old: "8.2", New: "8.3", Note: "Bump PHP to 8.3"}
	image := bump
	image.Key, image.Old, image.New = "base_image", "php:8.2-fpm-bookworm", "php:8.3-fpm-bookworm"
	// PHP's answers: 600 an hour at `before` s until the change, at `after`
	// s from then; none before dataFrom.
	times := func(before, after float64, dataFrom time.Time) func(from, to time.Time) detect.Histogram {
		return func(from, to time.Time) detect.Histogram {
			var h detect.Histogram
			for m := from; m.Before(to); m = m.Add(6 * time.Second) {
				switch {
				case m.Before(dataFrom):
				case m.Before(bump.Time):
					h.Add(before)
				default:
					h.Add(after)
				}
			}
			return h
		}
	}
	dayBefore := ccAt(2, 0, 0)
	tests := []struct {
		name       string
		phpTimes   func(from, to time.Time) detect.Histogram
		role       detect.Role
		summaryHas string
		judged     bool
	}{
		{"PHP as fast after the upgrade", times(0.30, 0.32, dayBefore), detect.RoleRuledOut,
			"PHP did not get slower across it (median 0.3 s per request over 1,800 answers before it, 0.33 s over 1,580 after it", true},
		{"PHP twice as slow after the upgrade", times(0.30, 0.62, dayBefore), detect.RoleCandidate,
			"PHP's median time per request rose from 0.3 s before it to 0.65 s after it", true},
		{"no PHP answers before the upgrade", times(0.30, 0.30, bump.Time.Add(10*time.Minute)), detect.RoleCandidate,
			"could not judge: whether PHP got slower across the change needs PHP's answers on both sides", false},
		{"no access log", nil, detect.RoleCandidate, "could not judge", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := ccFacts(ccRefQueue)
			q.PHPTimes = tt.phpTimes
			fs, check := RankChanges([]sources.Change{bump, image, ccCSS}, ccFindings(ccIncidentKinds...), q)
			if len(fs) != 1 || fs[0].Change.Key != "php_version" && fs[0].Change.Key != "base_image" {
				t.Fatalf("findings %+v; check %s", fs, check.Reason)
			}
			f := fs[0]
			if f.Role != tt.role {
				t.Errorf("role %s, want %s: %s", f.Role, tt.role, f.Summary)
			}
			if !strings.Contains(f.Summary, tt.summaryHas) {
				t.Errorf("summary %q lacks %q", f.Summary, tt.summaryHas)
			}
			cf := detect.FactsOf[ConfigChangeFacts](&f)
			if cf.PHPMedianBeforeS.OK != tt.judged || cf.CouldNotJudge.OK == tt.judged {
				t.Errorf("medians %+v %+v, could_not_judge %+v", cf.PHPMedianBeforeS, cf.PHPMedianAfterS, cf.CouldNotJudge)
			}
			if tt.role == detect.RoleCandidate && !tt.judged && f.Confidence > 0.4 {
				t.Errorf("confidence %.2f for a change nobody could judge", f.Confidence)
			}
			if tt.role == detect.RoleRuledOut && !strings.Contains(check.Reason, "ruled out by the numbers") {
				t.Errorf("check %q", check.Reason)
			}
		})
	}
}
