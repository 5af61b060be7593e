package lokitest

import (
	"strings"
	"testing"
	"text/template"
)

// TestNumericTemplateIsTextTemplate: a template the fake evaluates itself
// prints what text/template prints, for labels that are numbers, are not,
// are missing, and literals of every kind; a template outside the numeric
// subset is left to text/template.
func TestNumericTemplateIsTextTemplate(t *testing.T) {
	numeric := []string{
		`{{ ceil (minf 1 (maxf 0 (subf (float64 .d) 30))) }}`,
		`{{ ceil (minf 1 (maxf 0 (subf (float64 .d) 30.25))) }}`,
		`{{ subf .d 1e3 0x10 2.5 }}`,
		`{{ floor (float64 .d) }}`,
		`{{ maxf .d .e }}`,
		`{{ minf .missing -1 }}`,
		`{{ float64 .d }}`,
	}
	others := []string{
		`x{{ ceil (float64 .d) }}`,
		`{{ .d | float64 }}`,
		`{{ ceil 1 2 }}`,
		`{{ subf 18446744073709551615 1 }}`,
		`{{ if contains "a" .d }}a{{ end }}`,
		`{{ lower .d }}`,
	}
	values := []string{"", "0", "29.999", "30", "30.25", "31", "-4", "1e400", "NaN", "Inf", "0x1p4", "abc", " 7"}
	check := func(text string, wantNumeric bool) {
		tmpl, err := template.New("t").Option("missingkey=zero").Funcs(templateFuncs).Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		eval, ok := numericTemplate(tmpl.Tree.Root)
		if ok != wantNumeric {
			t.Fatalf("%s: evaluated by the fake %v, want %v", text, ok, wantNumeric)
		}
		if !ok {
			return
		}
		for _, d := range values {
			for _, e := range values[:4] {
				ls := map[string]string{"d": d, "e": e}
				var b strings.Builder
				if err := tmpl.Execute(&b, ls); err != nil {
					t.Fatalf("%s with %v: %v", text, ls, err)
				}
				if got := eval(ls); got != b.String() {
					t.Errorf("%s with %v: %q, text/template %q", text, ls, got, b.String())
				}
			}
		}
	}
	for _, text := range numeric {
		check(text, true)
	}
	for _, text := range others {
		check(text, false)
	}
}
