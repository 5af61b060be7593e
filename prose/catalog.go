// Package prose renders the report's sentences from per-language message
// catalogs: one text/template file per language (en.tmpl, ko.tmpl), each
// sentence a {{define "name"}} block. Go code decides what to say (which
// message, with which data); how each language says it, word order and
// particles included, lives only in its file, so a translator edits a
// template and never a Go branch.
package prose

import (
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
	"time"
)

// The languages every catalog speaks: a message missing from one of them
// fails Parse.
const (
	EN = "en"
	KO = "ko"
)

// Langs lists the languages, English first.
var Langs = []string{EN, KO}

// Formats are the functions every message may call to print numbers and
// times. The report implements them once per language, so English and Korean
// numbers come out of the same code.
type Formats interface {
	// N prints a count ("8,001") or a small fraction ("1.5").
	N(v float64) string
	// I prints an integer count ("8,001").
	I(v int) string
	// Pct prints a share (0-1) as a percentage.
	Pct(share float64) string
	// Secs prints seconds ("141 s", "141초").
	Secs(v float64) string
	// Dur prints a duration ("5 min 5 s").
	Dur(d time.Duration) string
	// At prints a local clock time, with its date when off the incident's day.
	At(t time.Time) string
	// Date prints a local date ("3 October").
	Date(t time.Time) string
	// Stamp prints a local time for a table cell ("02:26", "10-02 23:48").
	Stamp(t time.Time) string
	// HM prints a local clock time for a table cell or a title ("02:26").
	HM(t time.Time) string
	// Ends prints the two ends of a stretch [from, to) for prose, dating them
	// as a reader needs; dated asks for the date even on the incident's day.
	Ends(from, to time.Time, dated bool) Span
	// List joins items as prose ("a, b and c").
	List(items []string) string
	// Josa appends the Korean particle of pair ("이/가") that fits word. The
	// word comes last so that a pipeline reads {{pct .Share | josa "을/를"}}.
	Josa(pair, word string) string
	// Capitalize starts a sentence: its first letter upper case.
	Capitalize(s string) string
	// Text says a Text held in a message's data (a reason inside a
	// summary) in the same language: English is its own rendering.
	Text(t Text) string
}

// Span is a stretch's two ends as Formats.Ends prints them.
type Span struct{ From, To string }

// funcs binds the template functions to f. Parsing binds them to noFormats:
// text/template checks at parse time that a function exists, not what it
// does.
func funcs(f Formats) template.FuncMap {
	return template.FuncMap{
		"n":     func(v any) (string, error) { x, err := number(v); return f.N(x), err },
		"i":     func(v any) (string, error) { x, err := number(v); return f.I(int(x)), err },
		"pct":   func(v any) (string, error) { x, err := number(v); return f.Pct(x), err },
		"secs":  func(v any) (string, error) { x, err := number(v); return f.Secs(x), err },
		"dur":   f.Dur,
		"at":    f.At,
		"date":  f.Date,
		"stamp": f.Stamp,
		"hm":    f.HM,
		"ends":  f.Ends,
		"list":  f.List,
		"josa":  f.Josa,
		// capitalize starts a sentence with a message said inside it.
		"capitalize": f.Capitalize,
		// text says a Text of the data in the message's language.
		"text": f.Text,
		// seconds turns a number of seconds into a duration, for dur.
		"seconds": func(v any) (time.Duration, error) {
			x, err := number(v)
			return time.Duration(x * float64(time.Second)), err
		},
		// join keeps a list's commas in every language: file names, not prose.
		"join": strings.Join,
	}
}

// number reads any integer or float, so that a message prints a count as
// the data holds it (int, int64, float64) without a conversion in Go.
func number(v any) (float64, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	}
	return 0, fmt.Errorf("%v (%T) is not a number", v, v)
}

type noFormats struct{}

func (noFormats) N(float64) string                 { return "" }
func (noFormats) I(int) string                     { return "" }
func (noFormats) Pct(float64) string               { return "" }
func (noFormats) Secs(float64) string              { return "" }
func (noFormats) Dur(time.Duration) string         { return "" }
func (noFormats) At(time.Time) string              { return "" }
func (noFormats) Date(time.Time) string            { return "" }
func (noFormats) Stamp(time.Time) string           { return "" }
func (noFormats) HM(time.Time) string              { return "" }
func (noFormats) Ends(_, _ time.Time, _ bool) Span { return Span{} }
func (noFormats) List([]string) string             { return "" }
func (noFormats) Josa(_, word string) string       { return word }
func (noFormats) Capitalize(s string) string       { return s }
func (noFormats) Text(Text) string                 { return "" }

// Catalog is one package's messages in every language.
type Catalog struct {
	// langs holds each language's messages, each parsed on its first use
	// (MustParse) or the whole file at once (Parse).
	langs map[string]*catalogLang
	// plain is the English bound to Plain, made on the first Say: Texts
	// render their English through it.
	plain     *Bound
	plainErr  error
	plainOnce sync.Once
	// plainIn holds each language bound to Plain (InPlain), made on its
	// first use.
	plainIn sync.Map
}

// catalogLang is one language's file of a catalog and its messages once
// parsed.
type catalogLang struct {
	fsys fs.FS
	file string
	// must: a file that does not parse is the program's defect (MustParse)
	// and panics.
	must bool

	// src is the file's text and defines where each message lies in it
	// (findDefines), read on first use; defines is nil when the messages
	// cannot be found without parsing the whole file.
	readOnce sync.Once
	src      string
	defines  map[string]define
	readErr  error

	// whole is the whole file parsed (Parse, Names, Includes, and every
	// message when defines is nil).
	wholeOnce sync.Once
	whole     *template.Template
	wholeErr  error

	// alone holds the messages parsed alone so far (message), under mu.
	mu    sync.Mutex
	alone *template.Template
}

// read reads the file and finds its messages, the first time.
func (l *catalogLang) read() error {
	l.readOnce.Do(func() {
		src, err := fs.ReadFile(l.fsys, l.file)
		if err != nil {
			l.readErr = fmt.Errorf("prose: %w", err)
			return
		}
		l.src = string(src)
		if d, ok := findDefines(l.src); ok {
			l.defines = d
		}
	})
	if l.readErr != nil && l.must {
		panic(l.readErr)
	}
	return l.readErr
}

// newSet is an empty set of l's messages with the functions bound to f:
// messages are parsed into one bound to noFormats (text/template checks at
// parse time that a function exists) and said from one bound to a
// printer's (Bind).
func (l *catalogLang) newSet(f Formats) *template.Template {
	return template.New(l.file).Option("missingkey=error").Funcs(funcs(f))
}

// parsed returns the language's whole file parsed, parsing it the first
// time.
func (l *catalogLang) parsed() (*template.Template, error) {
	if err := l.read(); err != nil {
		return nil, err
	}
	l.wholeOnce.Do(func() {
		l.whole, l.wholeErr = l.newSet(noFormats{}).Parse(l.src)
		if l.wholeErr != nil {
			l.wholeErr = fmt.Errorf("prose: %w", l.wholeErr)
		}
	})
	if l.wholeErr != nil && l.must {
		panic(l.wholeErr)
	}
	return l.whole, l.wholeErr
}

// message returns message name's parse tree, nil for a message the file
// does not define: the message parsed alone the first time it is asked
// for, and parsed from the whole file when it cannot be found without
// parsing. A message that does not parse alone is reported with the whole
// file's error, which names its line.
func (l *catalogLang) message(name string) (*parse.Tree, error) {
	if err := l.read(); err != nil {
		return nil, err
	}
	if l.defines == nil {
		return l.wholeMessage(name)
	}
	d, ok := l.defines[name]
	if !ok {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.alone == nil {
		l.alone = l.newSet(noFormats{})
	}
	if t := l.alone.Lookup(name); t != nil {
		return t.Tree, nil
	}
	if _, err := l.alone.Parse(d.text(l.src)); err != nil {
		if _, wholeErr := l.parsed(); wholeErr != nil {
			return nil, wholeErr
		}
		return nil, fmt.Errorf("prose: message %q of %s does not parse alone: %w", name, l.file, err)
	}
	return l.alone.Lookup(name).Tree, nil
}

// wholeMessage is message name's tree in the whole file parsed.
func (l *catalogLang) wholeMessage(name string) (*parse.Tree, error) {
	t, err := l.parsed()
	if err != nil {
		return nil, err
	}
	if m := t.Lookup(name); m != nil && m != t {
		return m.Tree, nil
	}
	return nil, nil
}

// lazy is the catalog of dir/<lang>.tmpl in fsys for each of langs, none of
// them read yet.
func lazy(fsys fs.FS, dir string, langs []string) *Catalog {
	c := &Catalog{langs: map[string]*catalogLang{}}
	for _, lang := range langs {
		c.langs[lang] = &catalogLang{fsys: fsys, file: path.Join(dir, lang+".tmpl")}
	}
	return c
}

// lang returns lang's file, not yet read; an unknown language is an
// error.
func (c *Catalog) lang(lang string) (*catalogLang, error) {
	l, ok := c.langs[lang]
	if !ok {
		return nil, fmt.Errorf("prose: no messages in language %q", lang)
	}
	return l, nil
}

// whole returns lang's messages, its whole file parsed; an unknown
// language is an error, and so is a file that does not parse.
func (c *Catalog) whole(lang string) (*template.Template, error) {
	l, err := c.lang(lang)
	if err != nil {
		return nil, err
	}
	return l.parsed()
}

// Parse reads dir/<lang>.tmpl from fsys for each of langs. Every message
// must be defined in every language: a message missing from one is an error
// here, so a catalog that parses is complete.
func Parse(fsys fs.FS, dir string, langs []string) (*Catalog, error) {
	c := lazy(fsys, dir, langs)
	for _, lang := range langs {
		if _, err := c.whole(lang); err != nil {
			return nil, err
		}
	}
	for _, lang := range langs {
		names := c.Names(lang)
		for _, other := range langs {
			if other == lang {
				continue
			}
			t, _ := c.whole(other)
			for _, name := range names {
				if t.Lookup(name) == nil {
					return nil, fmt.Errorf("prose: %s: message %q is defined in %s.tmpl but not in %s.tmpl", dir, name, lang, other)
				}
			}
		}
	}
	return c, nil
}

// MustParse is the catalog of files embedded in the binary, each message
// parsed on its first use: parsing every catalog in both languages was a
// tenth of the CPU aftermath spent starting (perf, `aftermath --help`), most
// runs say their sentences in one language, many in none, and a run says a
// few dozen of a catalog's hundreds of messages. A file that cannot be read
// panics at its language's first use, and a message that does not parse at
// its own, rather than leave a report without its words: the embedded files
// are the program's own, and each package's messages test (prosetest.Check)
// parses every language whole, holds them to the same messages, which Parse
// checks at once, and checks that each message parses alone as it does in
// its file (CheckAlone).
func MustParse(fsys fs.FS, dir string, langs []string) *Catalog {
	c := lazy(fsys, dir, langs)
	for _, l := range c.langs {
		l.must = true
	}
	return c
}

// Names lists the messages defined in lang, sorted.
func (c *Catalog) Names(lang string) []string {
	t, err := c.whole(lang)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range t.Templates() {
		if d.Name() != t.Name() {
			out = append(out, d.Name())
		}
	}
	slices.Sort(out)
	return out
}

// CheckAlone returns an error unless each message of lang parsed alone, as
// a message is parsed when first said (MustParse), is the message its whole
// file defines, the same parse tree, and the file defines no other: a
// file whose messages cannot be found without parsing it whole fails too,
// for every run would then parse it whole.
func (c *Catalog) CheckAlone(lang string) error {
	whole, err := c.whole(lang)
	if err != nil {
		return err
	}
	l, _ := c.lang(lang)
	if l.defines == nil {
		return fmt.Errorf("prose: %s: its messages cannot be found without parsing the whole file (findDefines)", l.file)
	}
	names := c.Names(lang)
	if len(names) != len(l.defines) {
		return fmt.Errorf("prose: %s: %d messages found alone, %d in the whole file", l.file, len(l.defines), len(names))
	}
	for _, name := range names {
		tree, err := l.message(name)
		if err != nil {
			return err
		}
		if tree == nil {
			return fmt.Errorf("prose: %s: message %q was not found alone", l.file, name)
		}
		if got, want := tree.Root.String(), whole.Lookup(name).Tree.Root.String(); got != want {
			return fmt.Errorf("prose: %s: message %q parsed alone reads %q, in its file %q", l.file, name, got, want)
		}
	}
	return nil
}

// Includes lists the messages that message name of lang says through
// {{template "other" ...}}, directly or through one it includes, sorted: a
// part two sentences share is a message of its own, said wherever they are.
func (c *Catalog) Includes(lang, name string) []string {
	t, err := c.whole(lang)
	if err != nil {
		return nil
	}
	var out []string
	walkIncludes(t.Lookup(name), func(n *parse.TemplateNode) bool {
		if slices.Contains(out, n.Name) {
			return false
		}
		out = append(out, n.Name)
		return true
	})
	slices.Sort(out)
	return out
}

// walkIncludes calls include for each {{template}} of message m and, when
// include returns true, walks the message it names, as m's set holds it.
func walkIncludes(m *template.Template, include func(*parse.TemplateNode) bool) {
	if m == nil || m.Tree == nil {
		return
	}
	var walk func(n parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, m := range n.Nodes {
					walk(m)
				}
			}
		case *parse.IfNode:
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.List)
			walk(n.ElseList)
		case *parse.TemplateNode:
			if include(n) {
				if d := m.Lookup(n.Name); d != nil && d.Tree != nil {
					walk(d.Tree.Root)
				}
			}
		}
	}
	walk(m.Tree.Root)
}

// Bind binds the message functions of lang to f, for a printer to say all
// its sentences with. Binding parses nothing: a Bound takes each message
// the first time it says it, parsed once for the catalog (message), so
// printers of several languages and zones share the parsing and can bind
// and render at once. An unknown language is an error, and so is a file
// that cannot be read.
func (c *Catalog) Bind(lang string, f Formats) (*Bound, error) {
	l, err := c.lang(lang)
	if err != nil {
		return nil, err
	}
	if err := l.read(); err != nil {
		return nil, err
	}
	return &Bound{lang: l, t: l.newSet(f)}, nil
}

// Bound is a catalog's messages in one language, printing numbers and times
// with the Formats they were bound to. Render is safe for concurrent use
// when those Formats are.
type Bound struct {
	lang *catalogLang
	// t holds the messages said so far and those they include, bound to
	// the Formats; mu keeps two first uses of a message from adding it
	// twice.
	mu sync.Mutex
	t  *template.Template
}

// Render says message name with data. An unknown message, a key data lacks
// and a failed execution are errors, never an empty sentence.
func (b *Bound) Render(name string, data any) (string, error) {
	m, err := b.message(name)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	if err := m.Execute(&out, data); err != nil {
		return "", fmt.Errorf("prose: message %q in %s: %w", name, b.t.Name(), err)
	}
	return out.String(), nil
}

// message returns message name bound, adding it and the messages it
// includes ({{template}}) to b the first time.
func (b *Bound) message(name string) (*template.Template, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := b.t.Lookup(name); m != nil && m != b.t {
		return m, nil
	}
	m, err := b.add(name)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("prose: no message %q in %s", name, b.t.Name())
	}
	var failed error
	walkIncludes(m, func(n *parse.TemplateNode) bool {
		if b.t.Lookup(n.Name) != nil || failed != nil {
			return false
		}
		// A message that includes one the file lacks fails when said, as
		// text/template says.
		inc, err := b.add(n.Name)
		failed = err
		return inc != nil
	})
	if failed != nil {
		return nil, failed
	}
	return m, nil
}

// add adds message name of b's language to b, nil when the file does not
// define it.
func (b *Bound) add(name string) (*template.Template, error) {
	tree, err := b.lang.message(name)
	if err != nil || tree == nil {
		return nil, err
	}
	return b.t.AddParseTree(name, tree)
}
