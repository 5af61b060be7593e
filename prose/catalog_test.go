package prose

import (
	"fmt"
	"strings"
	"sync"
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

// TestMustParseParsesAMessageOnItsFirstUse: an embedded catalog costs
// nothing until a message is said, and only that message is parsed; a
// broken message panics when it is first said, not before, and not when
// another of its file is.
func TestMustParseParsesAMessageOnItsFirstUse(t *testing.T) {
	c := MustParse(fstest.MapFS{
		"m/en.tmpl": {Data: []byte(`{{define "a"}}A {{i .}}{{end}}{{define "b"}}{{nosuchfunc .}}{{end}}`)},
		"m/ko.tmpl": {Data: []byte(`{{define "a"}}{{nosuchfunc .}}{{end}}{{define "b"}}나{{end}}`)},
	}, "m", []string{"en", "ko"})
	if got := c.Say("a", 2).String(); got != "A 2" {
		t.Errorf("said %q, want %q", got, "A 2")
	}
	ko := mustBind(t, c, "ko", plain{})
	if got, err := ko.Render("b", nil); got != "나" || err != nil {
		t.Errorf("ko's b = %q, %v; want 나", got, err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "ko.tmpl") {
			t.Errorf("the broken message of ko.tmpl at its first use: recovered %v, want a panic naming the file", r)
		}
	}()
	ko.Render("a", nil)
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
		got, err := mustBind(t, c, lang, plain{}).Render("n", data)
		if err != nil || got != want {
			t.Errorf("Render(%s) = %q, %v; want %q", lang, got, err, want)
		}
	}
	// Formats are bound per Bind: a second printer gets its own numbers, and
	// the first keeps its.
	first := mustBind(t, c, "en", plain{})
	if got, _ := mustBind(t, c, "en", noFormats{}).Render("n", data); got != " failed" {
		t.Errorf("Render with other formats = %q, want %q", got, " failed")
	}
	if got, _ := first.Render("n", data); got != "#III failed" {
		t.Errorf("Render after another Bind = %q, want %q", got, "#III failed")
	}
	for _, name := range []string{"bad", "nosuch"} {
		if got, err := first.Render(name, data); err == nil {
			t.Errorf("Render(en, %s) = %q, nil; want an error, not an empty sentence", name, got)
		}
	}
	if b, err := c.Bind("de", plain{}); err == nil {
		t.Errorf("Bind(de) = %v, nil; want an error", b)
	}
	// A map without the key is an error too, not "<no value>".
	if got, err := first.Render("bad", map[string]any{"N": 1}); err == nil {
		t.Errorf("Render with a missing key = %q, nil; want an error", got)
	}
	if got := c.Names("ko"); strings.Join(got, ",") != "bad,n" {
		t.Errorf("Names(ko) = %v", got)
	}
}

func mustBind(t *testing.T, c *Catalog, lang string, f Formats) *Bound {
	t.Helper()
	b, err := c.Bind(lang, f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBoundConcurrent renders one catalog through several bindings from
// several goroutines at once, as reports in two languages and zones do, and
// through one binding shared by all of them, each message said first by
// several at once; run with -race it fails if a binding touched the shared
// templates, or if two first uses of a message parsed it unguarded.
func TestBoundConcurrent(t *testing.T) {
	c := MustParse(fstest.MapFS{
		"m/en.tmpl": {Data: []byte(`{{define "n"}}{{i .}} failed{{end}}{{define "m"}}[{{template "n" .}}]{{end}}`)},
		"m/ko.tmpl": {Data: []byte(`{{define "n"}}{{i . | josa "이/가"}} 실패{{end}}{{define "m"}}[{{template "n" .}}]{{end}}`)},
	}, "m", Langs)
	want := map[string]string{"en": "#II failed", "ko": "#II(이/가) 실패"}
	shared := mustBind(t, c, EN, plain{})
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Go(func() {
			lang := Langs[g%2]
			b, err := c.Bind(lang, plain{})
			if err != nil {
				errs <- err.Error()
				return
			}
			for range 50 {
				if got, err := b.Render("n", 2); err != nil || got != want[lang] {
					errs <- fmt.Sprintf("Render(%s) = %q, %v; want %q", lang, got, err, want[lang])
					return
				}
				if got, err := shared.Render("m", 2); err != nil || got != "["+want[EN]+"]" {
					errs <- fmt.Sprintf("shared Render(m) = %q, %v; want %q", got, err, "["+want[EN]+"]")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// A Text keeps its English, rendered with Plain's numbers at once, and the
// message it was said with, for the report to say again in its language; a
// message that cannot be said reads as a marked defect, not as nothing.
func TestSayText(t *testing.T) {
	c, err := catalog(t,
		`{{define "n"}}{{i .N}} failed in {{secs .S}}{{end}}{{define "bad"}}{{i .Missing}}{{end}}`,
		`{{define "n"}}{{i .N}}건이 {{secs .S}} 동안 실패{{end}}{{define "bad"}}{{i .Missing}}{{end}}`)
	if err != nil {
		t.Fatal(err)
	}
	data := struct {
		N int
		S float64
	}{8001, 0.199}
	txt := c.Say("n", data)
	if got, want := txt.String(), "8,001 failed in 0.2 s"; got != want {
		t.Errorf("Say(n).String() = %q, want %q", got, want)
	}
	if mc, name, d := txt.Message(); mc != c || name != "n" || d != data {
		t.Errorf("Say(n).Message() = %p, %q, %v; want the catalog, n and the data", mc, name, d)
	}
	ko, err := mustBind(t, c, "ko", plain{}).Render("n", data)
	if err != nil || !strings.HasPrefix(ko, "#") {
		t.Errorf("the Text's message in ko = %q, %v", ko, err)
	}
	if got := c.Say("bad", data).String(); !strings.HasPrefix(got, "%!(prose:") {
		t.Errorf("Say(bad) = %q, want a marked defect", got)
	}
	if mc, _, _ := Plainly("as written").Message(); mc != nil || Plainly("as written").String() != "as written" {
		t.Error("Plainly has a message or changed its text")
	}
}

// TestSayLaterSaysOnFirstRead: a Text made with SayLater parses nothing when made
// (a broken English file does not panic then, as Say's would), and once
// read it is Say's Text: the same English, message and Korean.
func TestSayLaterSaysOnFirstRead(t *testing.T) {
	broken := MustParse(fstest.MapFS{
		"m/en.tmpl": {Data: []byte(`{{define "a"}}{{nosuchfunc .}}{{end}}`)},
		"m/ko.tmpl": {Data: []byte(`{{define "a"}}가{{end}}`)},
	}, "m", []string{"en", "ko"})
	later := broken.SayLater("a", nil) // must not parse en.tmpl
	if mc, name, _ := later.Message(); mc != broken || name != "a" {
		t.Errorf("SayLater(a).Message() = %p, %q; want the catalog and a", mc, name)
	}

	c, err := catalog(t, `{{define "n"}}{{i .}} failed{{end}}`, `{{define "n"}}{{i .}}건 실패{{end}}`)
	if err != nil {
		t.Fatal(err)
	}
	said, lazy := c.Say("n", 8001), c.SayLater("n", 8001)
	if got, want := lazy.String(), said.String(); got != want || got != "8,001 failed" {
		t.Errorf("SayLater(n).String() = %q, want Say's %q", got, want)
	}
	for _, lang := range []string{EN, KO} {
		got, err1 := lazy.InPlain(lang)
		want, err2 := said.InPlain(lang)
		if got != want || err1 != nil || err2 != nil {
			t.Errorf("InPlain(%s): SayLater %q (%v), Say %q (%v)", lang, got, err1, want, err2)
		}
	}
}
