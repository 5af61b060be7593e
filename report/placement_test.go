package report

import (
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/prose"
)

// Why the zones were not placed is said in the postmortem's language when a
// catalog said it; a Caddyfile's own error (Plainly) is not quoted in Korean
// prose, which points to report.json instead.
func TestNotPlacedInTheReportsLanguage(t *testing.T) {
	said := messages.Say("rules.not_placed", struct {
		*RulesPlacement
		Reason string
	}{&RulesPlacement{Caddyfile: "config/Caddyfile", NotPlaced: "x"}, ""})
	for _, tt := range []struct {
		name   string
		why    prose.Text
		wantKO string
	}{
		{"said", said, "영역을 넣을 곳: config/Caddyfile에 넣지 못했습니다: "},
		{"plain", prose.Plainly("place: Caddyfile:3: unrecognized directive"), "(이유는 report.json의"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := referenceReport(t)
			r.RulesPlacement = &RulesPlacement{Caddyfile: "config/Caddyfile", NotPlaced: tt.why.String(), NotPlacedText: tt.why}
			en, err := Render(r, FormatMarkdown, LangEN)
			if err != nil {
				t.Fatal(err)
			}
			if want := "not placed in config/Caddyfile: " + tt.why.String(); !strings.Contains(string(en), want) {
				t.Errorf("English postmortem lacks %q", want)
			}
			ko, err := Render(r, FormatMarkdown, LangKO)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(ko), tt.wantKO) {
				t.Errorf("Korean postmortem lacks %q", tt.wantKO)
			}
		})
	}
}
