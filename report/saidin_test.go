package report

import (
	"bytes"
	"strings"
	"testing"
)

// reportSaidIn is referenceReport with its texts said in the languages
// Build is given as langs.
func reportSaidIn(t *testing.T, langs ...string) *Report {
	t.Helper()
	r := referenceReport(t)
	said, err := saidIn(langs)
	if err != nil {
		t.Fatal(err)
	}
	r.saidIn = said
	if err := r.Assemble(); err != nil {
		t.Fatal(err)
	}
	return r
}

// A report said in fewer languages renders the same in those: report.json
// and the English postmortem are byte for byte those of a report said in
// every language, and a Korean postmortem of a report said in Korean is
// the one of every language.
func TestTextsSaidInTheLanguagesAsked(t *testing.T) {
	every := reportSaidIn(t)
	for _, c := range []struct {
		langs  []string
		render []string
	}{
		{[]string{LangEN}, []string{LangEN}},
		// Korean alone still says English: report.json keeps it.
		{[]string{LangKO}, []string{LangEN, LangKO}},
		{[]string{LangKO, LangEN, LangKO}, []string{LangEN, LangKO}},
	} {
		r := reportSaidIn(t, c.langs...)
		if got := strings.Join(r.languages(), ","); got != strings.Join(c.render, ",") {
			t.Errorf("langs %v: said in %s, want %v", c.langs, got, c.render)
		}
		want, err := Render(every, FormatJSON, LangEN)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := Render(r, FormatJSON, LangEN); err != nil || !bytes.Equal(got, want) {
			t.Errorf("langs %v: report.json differs from the one said in every language (%v)", c.langs, err)
		}
		for _, lang := range c.render {
			for _, format := range []string{FormatMarkdown, FormatHTML} {
				want, err := Render(every, format, lang)
				if err != nil {
					t.Fatal(err)
				}
				if got, err := Render(r, format, lang); err != nil || !bytes.Equal(got, want) {
					t.Errorf("langs %v: %s in %s differs from the one said in every language (%v)", c.langs, format, lang, err)
				}
			}
		}
	}
}

// A postmortem in a language the report was not said in is an error: its
// timeline and causes would otherwise read in English under Korean headings.
func TestTextsNotSaidInALanguageAreAnError(t *testing.T) {
	r := reportSaidIn(t, LangEN)
	if r.Timeline[0].texts[LangKO] != "" {
		t.Fatalf("the timeline was said in Korean: %q", r.Timeline[0].texts[LangKO])
	}
	for _, format := range []string{FormatMarkdown, FormatHTML} {
		if _, err := Render(r, format, LangKO); err == nil || !strings.Contains(err.Error(), "said in en only") {
			t.Errorf("%s in Korean of a report said in English: err %v, want one saying so", format, err)
		}
	}
	if _, err := saidIn([]string{"fr"}); err == nil {
		t.Errorf("saidIn(fr) succeeded")
	}
}
