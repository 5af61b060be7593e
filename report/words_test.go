package report

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// The word tables of the catalog ("labels", "chart.words", "terminal.words")
// hold the same keys in every language, each with a word: a key missing from
// one language would leave an empty heading or legend there, not an error.
func TestWordTablesAgree(t *testing.T) {
	for _, table := range []string{"labels", "chart.words", "terminal.words", "scan.words"} {
		var first []string
		for _, lang := range Langs {
			p := newPrinter(lang, time.UTC, time.Time{})
			words := wordTable(p, p.say(table, nil))
			if err := p.err(); err != nil {
				t.Fatalf("%s %s: %v", lang, table, err)
			}
			if len(words) < 10 {
				t.Fatalf("%s %s: %d words, want the table", lang, table, len(words))
			}
			for k, w := range words {
				if strings.TrimSpace(w) == "" || w != strings.TrimSpace(w) {
					t.Errorf("%s %s: %q has the word %q", lang, table, k, w)
				}
			}
			keys := slices.Sorted(maps.Keys(words))
			if first == nil {
				first = keys
			} else if !slices.Equal(keys, first) {
				t.Errorf("%s %s: keys %v, want those of %s: %v", lang, table, keys, Langs[0], first)
			}
		}
	}
	// The words the code looks up by computed keys are in the table.
	p := newPrinter(LangKO, time.UTC, time.Time{})
	l := wordTable(p, p.say("labels", nil))
	for _, k := range []string{"role_trigger", "role_enabler", "role_mechanism", "role_candidate", "role_symptom", "found", "not_interesting", "could_not_run"} {
		if l[k] == "" {
			t.Errorf("labels lack %q", k)
		}
	}
}

// A table line without " = " is an error of the printer, not a silent gap.
func TestWordTableRejectsABadLine(t *testing.T) {
	p := newPrinter(LangEN, time.UTC, time.Time{})
	words := wordTable(p, "\nsummary = Summary\nimpact Impact\n\nwhy = because = so\n")
	if p.err() == nil || !strings.Contains(p.err().Error(), `"impact Impact"`) {
		t.Errorf("error %v, want one naming the line", p.err())
	}
	if words["summary"] != "Summary" || words["why"] != "because = so" || len(words) != 2 {
		t.Errorf("words %q", words)
	}
}
