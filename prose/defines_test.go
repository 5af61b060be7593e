package prose

import (
	"strings"
	"testing"
	"testing/fstest"
	"text/template"
)

// tricky is a catalog file whose messages a scan for "{{define" and
// "{{end}}" would cut wrong: a comment that names both, blocks nested in a
// message, quoted strings holding "}}" and "{{end}}", trim markers, a
// message on a later line than its define and one indented, whose failures
// name their line and column.
const tricky = `{{/*
A header that names {{define "ghost"}} and {{end}} in its prose.
*/}}
{{define "nested"}}{{if .A}}a{{else if .B}}b{{range .C}}c{{end}}{{else}}{{with .D}}d{{end}}{{end}}!{{end}}
{{define "quoted"}}{{print "}}{{end}}" ` + "`{{define \"x\"}}`" + ` '}'}} after{{end}}
  {{- define "trimmed" -}}
   {{.A}} {{- /* a comment */ -}} .
{{- end}}
{{define "includes"}}[{{template "nested" .}}]{{end}}
  {{define "late"}}{{if .A}}
line two {{i .Missing}}{{end}}{{end}}
   {{define "indented"}}{{if .A}}{{i .Missing}}{{end}}{{end}}
`

type trickyData struct {
	A, B bool
	C    []int
	D    string
}

// TestMessagesParsedAloneAreTheFilesMessages: each message of a file parsed
// alone, as a Bound parses it when first said, is the message of the whole
// file: the same names, the same trees, the same sentences and the same
// failures, at the file's line and column.
func TestMessagesParsedAloneAreTheFilesMessages(t *testing.T) {
	c := MustParse(fstest.MapFS{"m/en.tmpl": {Data: []byte(tricky)}}, "m", []string{EN})
	if err := c.CheckAlone(EN); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Names(EN), ","); got != "includes,indented,late,nested,quoted,trimmed" {
		t.Errorf("Names = %s", got)
	}
	whole, err := template.New("m/en.tmpl").Option("missingkey=error").Funcs(funcs(plain{})).Parse(tricky)
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range []any{
		trickyData{A: true},
		trickyData{B: true, C: []int{1, 2}},
		trickyData{D: "x"},
		map[string]any{"A": true},
	} {
		b := mustBind(t, c, EN, plain{})
		for _, name := range []string{"nested", "quoted", "trimmed", "includes", "late", "indented"} {
			got, gotErr := b.Render(name, data)
			var want strings.Builder
			wantErr := whole.ExecuteTemplate(&want, name, data)
			if gotErr != nil || wantErr != nil {
				if gotErr == nil || wantErr == nil || !strings.HasSuffix(gotErr.Error(), wantErr.Error()) {
					t.Errorf("%s with %+v: failed with %v, the whole file with %v", name, data, gotErr, wantErr)
				}
				continue
			}
			if got != want.String() {
				t.Errorf("%s with %+v = %q, the whole file says %q", name, data, got, want.String())
			}
		}
	}
	// The failure names the file's line and column.
	if _, err := mustBind(t, c, EN, plain{}).Render("late", map[string]any{"A": true}); err == nil || !strings.Contains(err.Error(), "m/en.tmpl:11:13") {
		t.Errorf("late without its key: %v, want a failure at m/en.tmpl:11:13", err)
	}
	if _, err := mustBind(t, c, EN, plain{}).Render("indented", map[string]any{"A": true}); err == nil || !strings.Contains(err.Error(), "m/en.tmpl:12:37") {
		t.Errorf("indented without its key: %v, want a failure at m/en.tmpl:12:37", err)
	}
}

// A file the scan cannot follow is parsed whole, and says the same.
func TestFindDefinesLeavesWhatItCannotFollowToTheWholeParse(t *testing.T) {
	for _, src := range []string{
		`{{define "a"}}{{if .}}a{{end}}`,
		`{{define "a"}}a{{end}}{{end}}`,
		`{{define "a"}}{{define "b"}}b{{end}}{{end}}`,
		`{{block "a" .}}a{{end}}`,
		`{{define "a"}}{{print "}}a{{end}}`,
		`{{/* a comment that does not close }}{{define "a"}}a{{end}}`,
	} {
		if d, ok := findDefines(src); ok {
			t.Errorf("findDefines(%q) = %v, true; want false", src, d)
		}
	}
	c := MustParse(fstest.MapFS{"m/en.tmpl": {Data: []byte(`{{block "a" .}}a {{i .}}{{end}}`)}}, "m", []string{EN})
	if got, err := mustBind(t, c, EN, plain{}).Render("a", 2); got != "a #II" || err != nil {
		t.Errorf("a block's message = %q, %v; want %q", got, err, "a #II")
	}
}
