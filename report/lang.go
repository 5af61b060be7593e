package report

import (
	"embed"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
)

// Languages the postmortem is written in.
const (
	LangEN = prose.EN
	LangKO = prose.KO
)

// Langs lists the supported languages.
var Langs = prose.Langs

func validLang(lang string) bool { return slices.Contains(Langs, lang) }

// langError says that lang is not a supported language; nil when it is.
func langError(lang string) error {
	if validLang(lang) {
		return nil
	}
	return fmt.Errorf("report: language %q: want one of %s", lang, strings.Join(Langs, ", "))
}

// phrase is one text in every supported language. Texts are generated in all
// languages at once, from the same numbers, so the English report.json and the
// Korean postmortem can never disagree.
type phrase map[string]string

func (p phrase) in(lang string) string {
	if s, ok := p[lang]; ok {
		return s
	}
	return p[LangEN]
}

// proseFiles are the report's sentences, one file per language (en.tmpl,
// ko.tmpl): the Go code picks a message and its data, the file says it.
//
//go:embed prose/*.tmpl
var proseFiles embed.FS

var messages = prose.MustParse(proseFiles, "prose", Langs)

// printer formats numbers, times and durations for one language and says the
// report's messages in it. Its texts are plain (not Markdown, not HTML):
// renderers escape them. A printer and its copies belong to one goroutine.
type printer struct {
	lang string
	loc  *time.Location
	// day is the incident's local date: times on another day carry their date.
	day time.Time
	// shared is what the printer's copies share.
	shared *printerShared
}

// printerShared is what a printer's copies share.
type printerShared struct {
	// failed keeps the first message that could not be said: whoever made
	// the printer reports it as an error, so a broken message never reads as
	// an empty sentence.
	failed error
	// bound holds each catalog the printer has said a message of, its
	// functions bound to the printer: a Bound adds each message to its set
	// the first time it says it, so the printer keeps one per catalog and
	// a message said again is only executed.
	bound map[*prose.Catalog]*prose.Bound
}

func newPrinter(lang string, loc *time.Location, day time.Time) printer {
	if loc == nil {
		loc = time.UTC
	}
	d := day.In(loc)
	return printer{lang: lang, loc: loc, day: time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, loc), shared: &printerShared{}}
}

// say renders the report's message name with data in the printer's language.
func (p printer) say(name string, data any) string {
	return p.sayFrom(messages, name, data)
}

// text says t in the printer's language: English is t's own rendering,
// which report.json holds (english, so that a text read back without its
// message says the same), and any other language renders t's message again
// with the printer's numbers and times. A text with no message behind it
// reads as english in every language.
func (p printer) text(t prose.Text, english string) string {
	c, name, data := t.Message()
	if p.lang == LangEN || c == nil {
		return english
	}
	return p.sayFrom(c, name, data)
}

// sayFrom renders message name of catalog c with data in the printer's
// language; a failure is kept in the printer.
func (p printer) sayFrom(c *prose.Catalog, name string, data any) string {
	b, ok := p.shared.bound[c]
	if !ok {
		var err error
		if b, err = c.Bind(p.lang, formats{p}); err != nil {
			p.fail(err)
			return ""
		}
		if p.shared.bound == nil {
			p.shared.bound = map[*prose.Catalog]*prose.Bound{}
		}
		p.shared.bound[c] = b
	}
	s, err := b.Render(name, data)
	p.fail(err)
	return s
}

// fail keeps err when it is the printer's first.
func (p printer) fail(err error) {
	if err != nil && p.shared.failed == nil {
		p.shared.failed = err
	}
}

// err is the first message the printer could not say.
func (p printer) err() error { return p.shared.failed }

// printerKey names one of Assemble's printers.
type printerKey struct {
	lang string
	loc  *time.Location
	day  int64
}

// say runs f once per language the report is said in (languages). The printers are made once per Assemble
// (Report.printers), so that each binds its messages once for every phrase
// it says. The first message that could not be said is kept in r, for
// Assemble to return.
func (r *Report) say(loc *time.Location, day time.Time, f func(p printer) string) phrase {
	out := phrase{}
	for _, l := range r.languages() {
		p := newPrinter(l, loc, day)
		key := printerKey{l, p.loc, p.day.Unix()}
		if made, ok := r.printers[key]; ok {
			p = made
		} else {
			if r.printers == nil {
				r.printers = map[printerKey]printer{}
			}
			r.printers[key] = p
		}
		out[l] = f(p)
		if r.proseErr == nil {
			r.proseErr = p.err()
		}
	}
	return out
}

// languages are those the report's texts are said in: English, whose texts
// report.json keeps, and those Build was asked for; every language when it
// was asked for none.
func (r *Report) languages() []string {
	if r.saidIn == nil {
		return Langs
	}
	return r.saidIn
}

// saidIn is the languages of Build's langs, English first: nil (every
// language) when langs is empty. An unknown language is an error.
func saidIn(langs []string) ([]string, error) {
	if len(langs) == 0 {
		return nil, nil
	}
	out := []string{LangEN}
	for _, l := range langs {
		if err := langError(l); err != nil {
			return nil, err
		}
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, nil
}

// n prints a count with thousands separators ("8,001"); fractional values
// under 100 keep one decimal ("1.5").
func (p printer) n(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "?"
	}
	if v == math.Trunc(v) || math.Abs(v) >= 100 {
		return detect.FormatInt(int64(math.Round(v)))
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

func (p printer) i(v int) string { return detect.FormatInt(int64(v)) }

// pct prints a share (0-1) as a percentage: "53%", "0.4%".
func (p printer) pct(share float64) string {
	v := share * 100
	// "100%" and "0%" claim all and none: a share near either end keeps a
	// decimal, cut towards 50%, so that 99.7% of a crawler refused never
	// reads as every request, nor one refusal in 5,000 as none.
	switch {
	case v > 0 && v < 0.1:
		return "<0.1%"
	case v > 0 && v < 1:
		return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + "%"
	case v > 99 && v < 100:
		return strconv.FormatFloat(math.Floor(v*10)/10, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(math.Round(v), 'f', 0, 64) + "%"
}

// secs prints seconds with a precision that suits their size.
func (p printer) secs(v float64) string {
	var s string
	switch {
	case v >= 10:
		s = detect.FormatInt(int64(math.Round(v)))
	default:
		s = strconv.FormatFloat(v, 'g', 2, 64)
	}
	return p.say("unit.seconds", s)
}

// dur prints a duration in minutes and seconds ("5 min 5 s", "5분 5초").
func (p printer) dur(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	var parts []string
	if h > 0 {
		parts = append(parts, p.say("unit.hours", h))
	}
	if m > 0 {
		parts = append(parts, p.say("unit.minutes", m))
	}
	if s > 0 && h == 0 && m < 10 {
		parts = append(parts, p.say("unit.seconds", s))
	}
	if len(parts) == 0 {
		return p.say("unit.seconds", 0)
	}
	return strings.Join(parts, " ")
}

// hm is the table form of a local time: "02:26".
func (p printer) hm(t time.Time) string { return t.In(p.loc).Format("15:04") }

// clock is the prose form of a local time: "02:26", "2시 26분".
func (p printer) clock(t time.Time) string {
	return p.say("time.clock", t.In(p.loc))
}

// date is the prose form of a local date: "3 October", "10월 3일".
func (p printer) date(t time.Time) string {
	return p.say("time.date", t.In(p.loc))
}

// sameDay reports whether t falls on the incident's local date.
func (p printer) sameDay(t time.Time) bool {
	t = t.In(p.loc)
	return t.Year() == p.day.Year() && t.YearDay() == p.day.YearDay()
}

// at is a local time in prose, with its date when it is not the incident's day:
// "02:26", "23:48 on 2 October", "10월 2일 23시 48분".
func (p printer) at(t time.Time) string {
	if p.sameDay(t) {
		return p.clock(t)
	}
	return p.dated(t)
}

// ends prints the two ends of a stretch [from, to) for prose. Within one
// local day the date is said once, where the language puts it ("23:00",
// "23:48 on 2 October" / "10월 2일 23시", "23시 48분"), and only when that day is
// not the incident's or dated asks for it. A stretch across local midnight
// dates both ends ("23:48 on 2 October", "03:10 on 3 October"), so that
// "From 23:48 to 03:10" never reads as running backwards.
func (p printer) ends(from, to time.Time, dated bool) (string, string) {
	f, t := from.In(p.loc), to.In(p.loc)
	if f.Year() != t.Year() || f.YearDay() != t.YearDay() {
		return p.dated(from), p.dated(to)
	}
	if !dated && p.sameDay(from) {
		return p.clock(from), p.clock(to)
	}
	return p.say("time.dated_from", p.clockDate(from)), p.say("time.dated_to", p.clockDate(to))
}

// dated is a local time in prose with its date: "23:48 on 2 October",
// "10월 2일 23시 48분".
func (p printer) dated(t time.Time) string {
	return p.say("time.dated", p.clockDate(t))
}

// clockDate is a local time's clock and date in prose, for the messages
// that put them in the language's order.
func (p printer) clockDate(t time.Time) struct{ Clock, Date string } {
	return struct{ Clock, Date string }{p.clock(t), p.date(t)}
}

// stamp is a local time for a table cell: "02:26", or "10-02 23:48" on another day.
func (p printer) stamp(t time.Time) string {
	if p.sameDay(t) {
		return p.hm(t)
	}
	return t.In(p.loc).Format("01-02 15:04")
}

// list joins items as prose: "a, b and c" / "a, b, c".
func (p printer) list(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return p.say("list", struct {
		Head []string
		Last string
	}{items[:len(items)-1], items[len(items)-1]})
}

// josa appends the Korean particle that fits the end of word: pair is the
// form after a final consonant and the form after a vowel, e.g. "이/가",
// "을/를", "과/와", "으로/로" (ㄹ takes 로). Numbers are read as Sino-Korean
// ("503" ends in 삼, so 503이; "502" ends in 이, so 502가).
func josa(word, pair string) string {
	withC, withV, _ := strings.Cut(pair, "/")
	has, rieul := finalConsonant(word)
	if withC == "으로" && rieul {
		return word + withV
	}
	if has {
		return word + withC
	}
	return word + withV
}

// finalConsonant reports whether word, read aloud in Korean, ends in a
// consonant (batchim), and whether that consonant is ㄹ.
func finalConsonant(word string) (has, rieul bool) {
	rs := []rune(strings.TrimRight(word, " )"))
	if len(rs) == 0 {
		return false, false
	}
	r := rs[len(rs)-1]
	switch {
	case r == '%': // 퍼센트
		return false, false
	case r >= 0xAC00 && r <= 0xD7A3:
		f := (r - 0xAC00) % 28
		return f != 0, f == 8
	case r >= '0' && r <= '9':
		if r == '0' {
			// 영, or 십/백/천/만: all end in a consonant, none in ㄹ.
			return true, false
		}
		switch r {
		case '1', '7', '8': // 일, 칠, 팔
			return true, true
		case '3', '6': // 삼, 육
			return true, false
		}
		return false, false // 이, 사, 오, 구
	case unicode.IsLetter(r):
		switch unicode.ToLower(r) {
		case 'l', 'r': // 엘, 알
			return true, true
		case 'm', 'n': // 엠, 엔
			return true, false
		}
	}
	return false, false
}

// formats lends a printer to the messages' templates (prose.Formats).
type formats struct{ p printer }

func (x formats) N(v float64) string            { return x.p.n(v) }
func (x formats) I(v int) string                { return x.p.i(v) }
func (x formats) Pct(share float64) string      { return x.p.pct(share) }
func (x formats) Secs(v float64) string         { return x.p.secs(v) }
func (x formats) Dur(d time.Duration) string    { return x.p.dur(d) }
func (x formats) At(t time.Time) string         { return x.p.at(t) }
func (x formats) Date(t time.Time) string       { return x.p.date(t) }
func (x formats) Stamp(t time.Time) string      { return x.p.stamp(t) }
func (x formats) HM(t time.Time) string         { return x.p.hm(t) }
func (x formats) List(items []string) string    { return x.p.list(items) }
func (x formats) Josa(pair, word string) string { return josa(word, pair) }
func (x formats) Capitalize(s string) string    { return capitalize(s) }
func (x formats) Text(t prose.Text) string      { return x.p.text(t, t.String()) }
func (x formats) Ends(from, to time.Time, dated bool) prose.Span {
	a, b := x.p.ends(from, to, dated)
	return prose.Span{From: a, To: b}
}

// phraser lends a printer to the detectors' own prose (detect.Spec's Explain
// and Moments), so their wording matches the report's. messages is the
// kind's catalog (Spec.Messages); nil means detect's.
type phraser struct {
	p        printer
	messages *prose.Catalog
}

// Say renders the detectors' message name with data; a failure is kept in
// the printer, for the report to return.
func (x phraser) Say(name string, data any) string {
	c := x.messages
	if c == nil {
		c = detect.Messages
	}
	return x.p.sayFrom(c, name, data)
}

// story is what a detector's prose may read of the report.
type story struct{ r *Report }

func (s story) Findings() []detect.Finding   { return s.r.Findings }
func (s story) Window() (from, to time.Time) { return s.r.Window.From, s.r.Window.To }
func (s story) Changes() []sources.Change    { return s.r.Changes }
func (s story) Coverage() []sources.Coverage { return s.r.Coverage }

func (s story) QueueSeries() []detect.SeriesPoint {
	q := s.r.Evidence.series(SeriesQueue)
	if q == nil {
		return nil
	}
	out := make([]detect.SeriesPoint, len(q.Points))
	for i, pt := range q.Points {
		out[i] = detect.SeriesPoint{T: pt.T, V: pt.V}
	}
	return out
}

func (s story) Minutes() []detect.MinuteFailures {
	out := make([]detect.MinuteFailures, len(s.r.Evidence.Minutes))
	for i := range s.r.Evidence.Minutes {
		m := &s.r.Evidence.Minutes[i]
		st := map[string]int{}
		for code, n := range m.Status {
			if failedStatus(code) && n > 0 {
				st[code] = n
			}
		}
		out[i] = detect.MinuteFailures{Time: m.Time, Failed: m.failed(), Status: st, Late: m.Late}
	}
	return out
}
