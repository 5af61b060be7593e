// Package templates embeds the text/template and html/template files that the
// report package renders, so the binary carries them and users can read them.
package templates

import "embed"

// FS holds every template file of this directory.
//
//go:embed *.tmpl
var FS embed.FS
