package detect

import (
	"embed"

	"github.com/aftermath-forensics/aftermath/prose"
)

// proseFiles are the detectors' sentences (their explanations and timeline
// moments), one file per language: prose/en.tmpl and prose/ko.tmpl.
//
//go:embed prose/*.tmpl
var proseFiles embed.FS

// Messages are the detectors' sentences in every language. A detector says
// one with Phraser.Say; the report renders it with its numbers and times.
var Messages = prose.MustParse(proseFiles, "prose", prose.Langs)

// about is what a finding's message reads: the finding (its times, .Start)
// and its kind's facts (.Facts).
type about[T any] struct {
	*Finding
	Facts *T
}
