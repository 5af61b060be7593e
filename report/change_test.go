package report

import (
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect"
)

// The summary says which way the enabling change moved its setting from the
// values the config_change detector read, not from its own reading of the
// strings: durations grow too ("10s" to "30s"), and a value the detector could
// not read as a number is only "changed", whatever stripping commas makes of it.
func TestSummaryChangeDirectionFromFacts(t *testing.T) {
	tests := []struct {
		name, key, old, new string
		facts               map[string]float64
		en, ko              string
	}{
		{"a count grouped by thousands", "listen.backlog", "511", "4,096",
			map[string]float64{"old_value": 511, "new_value": 4096},
			"listen.backlog had grown from 511 to 4,096", "커진"},
		{"a duration", "php_fastcgi.read_timeout", "10s", "30s",
			map[string]float64{"old_value": 10, "new_value": 30},
			"php_fastcgi.read_timeout had grown from 10s to 30s", "커진"},
		{"a shrinking count", "listen.backlog", "4,096", "64",
			map[string]float64{"old_value": 4096, "new_value": 64},
			"listen.backlog had shrunk from 4,096 to 64", "줄어든"},
		// "1,5" is a list to the detector (no number stated): stripping the
		// comma would read 15 and say it grew.
		{"a list", "listen.backlog", "1,5", "20",
			map[string]float64{},
			"listen.backlog had changed from 1,5 to 20", "바뀐"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := referenceReport(t)
			f := firstKind(r.Findings, detect.KindConfigChange)
			c := *f.Change
			c.Key, c.Old, c.New = tt.key, tt.old, tt.new
			f.Change = &c
			f.Facts = detect.MustParseFacts(detect.KindConfigChange, tt.facts)
			if err := r.Assemble(); err != nil {
				t.Fatal(err)
			}
			en := summary(newPrinter(LangEN, mustZone("Asia/Seoul"), r.Impact.Start), r)
			if !strings.Contains(en, tt.en) {
				t.Errorf("summary lacks %q:\n%s", tt.en, en)
			}
			ko := summary(newPrinter(LangKO, mustZone("Asia/Seoul"), r.Impact.Start), r)
			if !strings.Contains(ko, tt.ko+" 탓에") {
				t.Errorf("Korean summary lacks %q:\n%s", tt.ko, ko)
			}
		})
	}
}
