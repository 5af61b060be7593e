package ingest

import (
	"embed"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

// proseFiles are the sentences loading says to a reader (its data-quality
// notes), one file per language: prose/en.tmpl and prose/ko.tmpl.
//
//go:embed prose/*.tmpl
var proseFiles embed.FS

// Messages are loading's notes in every language: report.json keeps their
// English, the report says them again in its language.
var Messages = prose.MustParse(proseFiles, "prose", prose.Langs)

// sayNote is a data-quality note of source and severity said by message t.
func sayNote(l *evidence.Loaded, source string, severity sources.Severity, t prose.Text) {
	l.DataQuality = append(l.DataQuality, sources.Note(source, severity, t))
}
