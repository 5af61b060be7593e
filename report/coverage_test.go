package report

import (
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// A quiet window whose access log stops early is not a quiet site: the
// report says first what is unknown, in every language and format.
func TestCoverageComesFirst(t *testing.T) {
	r := quietReport(t)
	for _, lang := range []string{LangEN, LangKO} {
		// The same report with its evidence complete says it was quiet:
		// the checks below can fail.
		data, err := Render(r, FormatMarkdown, lang)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), map[string]string{LangEN: "no more requests failed than usual", LangKO: "실패가 평소보다 많지 않았습니다"}[lang]) {
			t.Fatalf("the quiet report (%s) no longer says it was quiet: the test checks nothing", lang)
		}
	}
	last := r.Window.From.Add(20 * time.Minute)
	first := r.Window.From
	r.Coverage = []sources.Coverage{{Source: "access", State: sources.CoverageIncomplete, First: &first, Last: &last,
		Uncovered: []sources.Stretch{{From: last, To: r.Window.To, Kind: sources.StretchTail}}}}
	tests := []struct {
		format, lang string
		first, quiet string
	}{
		{FormatMarkdown, LangEN, "> Evidence incomplete.", "no more requests failed than usual"},
		{FormatMarkdown, LangKO, "> 근거가 불완전합니다.", "실패가 평소보다 많지 않았습니다"},
		{FormatHTML, LangEN, `<section id="coverage"`, "no more requests failed than usual"},
	}
	for _, tt := range tests {
		t.Run(tt.format+"/"+tt.lang, func(t *testing.T) {
			data, err := Render(r, tt.format, tt.lang)
			if err != nil {
				t.Fatal(err)
			}
			doc := string(data)
			i := strings.Index(doc, tt.first)
			if i < 0 {
				t.Fatalf("no %q in the report", tt.first)
			}
			if tt.format == FormatMarkdown {
				if lines := strings.SplitN(doc, "\n", 4); !strings.HasPrefix(lines[2], tt.first) {
					t.Errorf("the coverage is not the first thing after the title:\n%s", strings.Join(lines[:3], "\n"))
				}
			} else if j := strings.Index(doc, `id="summary"`); j < i {
				t.Error("the coverage comes after the summary")
			}
			if strings.Contains(doc, tt.quiet) {
				t.Errorf("a log that stops reads as a quiet site (%q)", tt.quiet)
			}
		})
	}
}
