package report

import (
	"testing"
	"time"
)

// The benchmarks below measure what saying the report's sentences costs: one
// sentence whose numbers and times are messages of their own (seconds, the
// clock), the sentences Assemble says in every language, and the postmortem
// rendered whole. Run with go test -bench . -benchmem ./report/.

// BenchmarkSay says one sentence that nests three messages (two durations in
// seconds and a clock time) with a printer made beforehand.
func BenchmarkSay(b *testing.B) {
	data := struct {
		Change, Made503 bool
		Key, Old, New   string
		Grew            int
		At              time.Time
		Wait, Timeout   float64
	}{true, true, "listen.backlog", "511", "4096", 1, at("10-02 23:48"), 76.8, 10}
	for _, lang := range Langs {
		b.Run(lang, func(b *testing.B) {
			p := newPrinter(lang, kst, at("02:26"))
			b.ReportAllocs()
			for b.Loop() {
				if p.say("summary.health", data) == "" {
					b.Fatal("empty sentence")
				}
			}
			if err := p.err(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkAssemble says the impact's caveats, the timeline and the causes of
// the reference incident in every language.
func BenchmarkAssemble(b *testing.B) {
	r := referenceReport(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Assemble(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRender renders the reference incident's postmortem and HTML
// report in each language.
func BenchmarkRender(b *testing.B) {
	r := referenceReport(b)
	for _, format := range []string{FormatMarkdown, FormatHTML} {
		for _, lang := range Langs {
			b.Run(format+"-"+lang, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Render(r, format, lang); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
