package sources

import (
	"embed"

	"github.com/aftermath-forensics/aftermath/prose"
)

// proseFiles are the sentences package sources says to a reader (the notes
// reading a YAML description leaves), one file per language: prose/en.tmpl
// and prose/ko.tmpl.
//
//go:embed prose/*.tmpl
var proseFiles embed.FS

// Messages are package sources' notes in every language: report.json keeps
// their English, the report says them again in its language.
var Messages = prose.MustParse(proseFiles, "prose", prose.Langs)
