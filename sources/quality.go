package sources

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/aftermath-forensics/aftermath/prose"
)

// Severity is how much a data-quality note weighs, as written into
// report.json: info notes what was left out by design, warning a caveat on
// the numbers, error input that could not be read. It is not a scan's
// anomaly severity (detect.AnomalySeverity), which ranks alarms.
type Severity string

// The severities of a data-quality note.
const (
	SeverityInfo    Severity = "info"
	SeverityWarning Severity = "warning"
	SeverityError   Severity = "error"
)

// QualityNote is one entry of report.json's data_quality: something the reader
// or a detector could not use, or a caveat on the numbers.
type QualityNote struct {
	Source   string   `json:"source" yaml:"source"`
	Severity Severity `json:"severity" yaml:"severity"`
	Message  string   `json:"message" yaml:"message"`
	// Text is Message as said by a catalog, for the report to say in its
	// language; a note without one (read back from report.json) reads as
	// Message in every language.
	Text prose.Text `json:"-" yaml:"-"`
}

// Note is a data-quality note whose message is the English of t.
func Note(source string, severity Severity, t prose.Text) QualityNote {
	return QualityNote{Source: source, Severity: severity, Message: t.String(), Text: t}
}

// Problems keeps the notes that say something is missing or wrong: every
// severity but info, which notes what was left out by design.
func Problems(notes []QualityNote) []QualityNote {
	var out []QualityNote
	for _, n := range notes {
		if n.Severity != SeverityInfo {
			out = append(out, n)
		}
	}
	return out
}

// maxExamples is how many file:line examples are kept per skip reason.
const maxExamples = 3

// Skips counts input that a reader could not use, by reason, keeping the first
// few locations of each so a human can look. Safe for concurrent use.
type Skips struct {
	mu       sync.Mutex
	counts   map[string]int
	examples map[string][]string
	// expected holds the reasons whose skips are by design, with why: they
	// are noted as info, not as evidence missing.
	expected map[string]string
}

// Expect marks the lines skipped for reason as expected, why saying so
// (Caddy's own log lines in a journal shared with its access log are not
// requests, and nothing the analysis needs is lost with them): Notes writes
// them as info, so that they do not make a run incomplete. They are still
// counted and shown.
func (s *Skips) Expect(reason, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expected == nil {
		s.expected = map[string]string{}
	}
	s.expected[reason] = why
}

// Add records one skipped unit (usually a line) at location (e.g. "access.log:17").
func (s *Skips) Add(reason, location string) {
	s.AddN(reason, location, 1)
}

// AddN records n skipped units for one reason at one location.
func (s *Skips) AddN(reason, location string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts = map[string]int{}
		s.examples = map[string][]string{}
	}
	s.counts[reason] += n
	if len(s.examples[reason]) < maxExamples && location != "" {
		s.examples[reason] = append(s.examples[reason], location)
	}
}

// Merge adds every count and example of other into s.
func (s *Skips) Merge(other *Skips) {
	other.mu.Lock()
	counts, examples := other.counts, other.examples
	expected := make(map[string]string, len(other.expected))
	for r, why := range other.expected {
		expected[r] = why
	}
	other.mu.Unlock()
	for r, why := range expected {
		s.Expect(r, why)
	}
	for reason, n := range counts {
		s.mu.Lock()
		if s.counts == nil {
			s.counts = map[string]int{}
			s.examples = map[string][]string{}
		}
		s.counts[reason] += n
		for _, ex := range examples[reason] {
			if len(s.examples[reason]) < maxExamples {
				s.examples[reason] = append(s.examples[reason], ex)
			}
		}
		s.mu.Unlock()
	}
}

// Count returns how many units were skipped for reason ("" for all reasons).
func (s *Skips) Count(reason string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if reason != "" {
		return s.counts[reason]
	}
	total := 0
	for _, n := range s.counts {
		total += n
	}
	return total
}

// Notes renders one data-quality note per reason, sorted by reason.
func (s *Skips) Notes(source, unit string) []QualityNote {
	s.mu.Lock()
	defer s.mu.Unlock()
	reasons := make([]string, 0, len(s.counts))
	for r := range s.counts {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	notes := make([]QualityNote, 0, len(reasons))
	for _, r := range reasons {
		msg := fmt.Sprintf("%d %s skipped: %s", s.counts[r], unit, r)
		if ex := s.examples[r]; len(ex) > 0 {
			msg += " (first at " + strings.Join(ex, ", ") + ")"
		}
		sev := SeverityWarning
		if why, ok := s.expected[r]; ok {
			sev, msg = SeverityInfo, msg+": "+why
		}
		notes = append(notes, QualityNote{Source: source, Severity: sev, Message: msg})
	}
	return notes
}

// Examples returns the locations kept for reason ("file:line", at most a few).
func (s *Skips) Examples(reason string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.examples[reason]...)
}
