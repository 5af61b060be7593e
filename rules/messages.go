package rules

import (
	"embed"

	"github.com/aftermath-forensics/aftermath/prose"
)

// proseFiles are the sentences rules says to a reader (the configuration
// advice and its notes), one file per language: prose/en.tmpl and
// prose/ko.tmpl.
//
//go:embed prose/*.tmpl
var proseFiles embed.FS

// Messages are rules' sentences in every language. The advice says them as
// prose.Texts: report.json keeps the English, the report says them again in
// its language.
var Messages = prose.MustParse(proseFiles, "prose", prose.Langs)
