package scan

import (
	"slices"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect"
)

// Every registered kind's scan measure names an anomaly kind and a severity
// scan.json accepts: the registry spells them as plain strings, since detect
// cannot import this package.
func TestRegisteredScanMeasures(t *testing.T) {
	kinds := append(detect.Kinds(), Concerns()...)
	for _, s := range detect.Specs() {
		m := findingKind(s.Kind)
		if !slices.Contains(kinds, m.kind) {
			t.Errorf("%s: scan anomaly %q is neither a finding kind nor a concern", s.Kind, m.kind)
		}
		if SeverityRank(m.severity) == SeverityRank("") {
			t.Errorf("%s: scan severity %q is unknown", s.Kind, m.severity)
		}
	}
}
