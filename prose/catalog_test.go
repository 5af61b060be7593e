package prose

import (
	"strings"
	"testing"
	"testing/fstest"
)

// plain prints numbers and times plainly, enough to see a message's shape.
type plain struct{ noFormats }

func (plain) I(v int) string                { return "#" + strings.Repeat("I", v) }
func (plain) Josa(pair, word string) string { return word + "(" + pair + ")" }

func catalog(t *testing.T, en, ko string) (*Catalog, error) {
	t.Helper()
	return Parse(fstest.MapFS{
		"m/en.tmpl": {Data: []byte(en)},
		"m/ko.tmpl": {Data: []byte(ko)},
	}, "m", []string{"en", "ko"})
}

func TestParseNeedsEveryMessageInEveryLanguage(t *testing.T) {
	_, err := catalog(t, `{{define "a"}}A{{end}}{{define "b"}}B{{end}}`, `{{define "a"}}가{{end}}`)
	if err == nil || !strings.Contains(err.Error(), `"b"`) || !strings.Contains(err.Error(), "ko.tmpl") {
		t.Fatalf("a message missing in ko: err = %v, want one naming \"b\" and ko.tmpl", err)
	}
	_, err = catalog(t, `{{define "a"}}A{{end}}`, `{{define "a"}}가{{end}}{{define "c"}}다{{end}}`)
	if err == nil || !strings.Contains(err.Error(), `"c"`) || !strings.Contains(err.Error(), "en.tmpl") {
		t.Fatalf("a message missing in en: err = %v, want one naming \"c\" and en.tmpl", err)
	}
	if _, err := catalog(t, `{{define "a"}}{{nosuchfunc 1}}{{end}}`, `{{define "a"}}가{{end}}`); err == nil {
		t.Fatal("a message calling an unknown function parsed")
	}
}

func TestRender(t *testing.T) {
	c, err := catalog(t,
		`{{define "n"}}{{i .N}} failed{{end}}{{define "bad"}}{{i .Missing}}{{end}}`,
		`{{define "n"}}{{print (i .N) "건" | josa "이/가"}} 실패{{end}}{{define "bad"}}{{i .Missing}}{{end}}`)
	if err != nil {
		t.Fatal(err)
	}
	data := struct{ N int }{3}
	for lang, want := range map[string]string{"en": "#III failed", "ko": "#III건(이/가) 실패"} {
		got, err := c.Render(lang, "n", plain{}, data)
		if err != nil || got != want {
			t.Errorf("Render(%s) = %q, %v; want %q", lang, got, err, want)
		}
	}
	// Formats are bound per call: a second printer's numbers, not the first's.
	if got, _ := c.Render("en", "n", noFormats{}, data); got != " failed" {
		t.Errorf("Render with other formats = %q, want %q", got, " failed")
	}
	for _, tc := range []struct{ lang, name string }{{"en", "bad"}, {"en", "nosuch"}, {"de", "n"}} {
		if got, err := c.Render(tc.lang, tc.name, plain{}, data); err == nil {
			t.Errorf("Render(%s, %s) = %q, nil; want an error, not an empty sentence", tc.lang, tc.name, got)
		}
	}
	// A map without the key is an error too, not "<no value>".
	if got, err := c.Render("en", "bad", plain{}, map[string]any{"N": 1}); err == nil {
		t.Errorf("Render with a missing key = %q, nil; want an error", got)
	}
	if got := c.Names("ko"); strings.Join(got, ",") != "bad,n" {
		t.Errorf("Names(ko) = %v", got)
	}
}
