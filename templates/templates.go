// Package templates embeds the template files that package report renders, so
// the binary carries them and users can read (and translate) them:
//
//   - postmortem.en.md.tmpl, postmortem.ko.md.tmpl: postmortem.md (text/template;
//     every value goes through report.MarkdownCell);
//   - report.html.tmpl: report.html (html/template, which escapes every value;
//     the charts' SVG is drawn by report/chart.go);
//   - scan.md.tmpl: scan.md, the scheduled scan's report (text/template).
package templates

import "embed"

// FS holds every template file of this directory.
//
//go:embed *.tmpl
var FS embed.FS
