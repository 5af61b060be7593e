package prose

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Text is a sentence said before its reader's language is known: a message
// of a catalog with its data, and its English rendering. Code below the
// report (detectors, sources, rules) says its summaries, reasons, notes and
// advice as Texts; report.json and logs keep the English, and the report
// renders the message again in the postmortem's language with its own
// numbers and times. The zero Text says nothing.
type Text struct {
	catalog *Catalog
	name    string
	data    any
	english string
	// later: the English is rendered when read (SayLater), not held.
	later bool
}

// Say makes the Text of message name with data, rendered in English at once
// with Plain's numbers: an English message that needs an exact number format
// (report.json is a contract) prints it with printf. A message that cannot be
// said is a defect of the catalog or its caller, and reads as one
// ("%!(prose: ...)", as fmt marks a bad verb) rather than as an empty
// sentence; the catalog's tests say every message.
func (c *Catalog) Say(name string, data any) Text {
	return Text{catalog: c, name: name, data: data, english: c.english(name, data)}
}

// SayLater makes the Text of message name with data as Say does, its English
// rendered each time it is read rather than now: for a Text a package makes
// while the program starts (a variable, a detector's registration in init),
// where Say would parse the catalog's English before main, whatever the
// command and whether or not the Text is ever read. Rendering it again is
// cheap for the short names such Texts are (a metric's).
func (c *Catalog) SayLater(name string, data any) Text {
	return Text{catalog: c, name: name, data: data, later: true}
}

// english renders message name with data in English with Plain's numbers,
// or says why it cannot (Say).
func (c *Catalog) english(name string, data any) string {
	c.plainOnce.Do(func() { c.plain, c.plainErr = c.Bind(EN, Plain{}) })
	err := c.plainErr
	var s string
	if err == nil {
		s, err = c.plain.Render(name, data)
	}
	if err != nil {
		return "%!(" + err.Error() + ")"
	}
	return s
}

// Plainly is a Text that has no message behind it: a sentence read back from
// report.json, or one that only ever is English (an error's text). Every
// language renders it as written.
func Plainly(s string) Text { return Text{english: s} }

// InPlain renders t in lang with Plain's numbers and times, for text whose
// numbers arrive printed (a comment in a generated file, where every language
// shows the same digits), not for prose that says numbers in its reader's
// language. A nested Text says its English, and a Text with no message reads
// as written.
func (t Text) InPlain(lang string) (string, error) {
	if t.catalog == nil || lang == EN {
		return t.String(), nil
	}
	b, ok := t.catalog.plainIn.Load(lang)
	if !ok {
		bound, err := t.catalog.Bind(lang, Plain{})
		if err != nil {
			return "", err
		}
		b, _ = t.catalog.plainIn.LoadOrStore(lang, bound)
	}
	return b.(*Bound).Render(t.name, t.data)
}

// String is the English rendering.
func (t Text) String() string {
	if t.later {
		return t.catalog.english(t.name, t.data)
	}
	return t.english
}

// Message is the catalog, name and data the Text was said with; a nil
// catalog means it has none (Plainly, the zero Text) and reads as String in
// every language.
func (t Text) Message() (c *Catalog, name string, data any) { return t.catalog, t.name, t.data }

// Plain prints numbers and times as the detectors' English always has: counts
// with thousands separators ("8,001"), fractions under 100 with one decimal
// ("1.5"), shares as whole percentages ("53%"), seconds with a precision that
// suits their size ("0.3 s", "77 s"), durations as Go prints them ("5m5s").
// It is the English of a Text, which report.json keeps; an English message
// that needs another format says so with printf. It knows no zone (times
// print in their own) and no incident day.
type Plain struct{}

func (Plain) N(v float64) string {
	if v == math.Trunc(v) || math.Abs(v) >= 100 {
		return GroupDigits(int64(math.Round(v)))
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}
func (Plain) I(v int) string { return GroupDigits(int64(v)) }
func (Plain) Pct(share float64) string {
	return strconv.FormatFloat(math.Round(share*100), 'f', 0, 64) + "%"
}
func (Plain) Secs(v float64) string {
	switch {
	case v >= 100:
		return GroupDigits(int64(math.Round(v))) + " s"
	case v >= 10:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64) + " s"
	}
	return strconv.FormatFloat(v, 'g', 2, 64) + " s"
}
func (Plain) Dur(d time.Duration) string { return d.String() }
func (Plain) At(t time.Time) string      { return t.Format("15:04") }
func (Plain) Date(t time.Time) string    { return t.Format("2 January") }
func (Plain) Stamp(t time.Time) string   { return t.Format("15:04") }
func (Plain) HM(t time.Time) string      { return t.Format("15:04") }
func (Plain) List(items []string) string { return englishList(items) }
func (Plain) Josa(_, word string) string { return word }
func (Plain) Capitalize(s string) string { return capitalize(s) }
func (Plain) Text(t Text) string         { return t.String() }
func (p Plain) Ends(from, to time.Time, _ bool) Span {
	return Span{From: p.At(from), To: p.At(to)}
}

// GroupDigits prints n with a comma every three digits ("8,001"), as the
// reference postmortem writes its numbers; detect prints its counts with it.
func GroupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func englishList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}
