// Package templates embeds the template files that packages report and
// report/replayview render, so the binary carries them and users can read (and
// translate) them:
//
//   - postmortem.en.md.tmpl, postmortem.ko.md.tmpl: postmortem.md (text/template;
//     every value goes through report.MarkdownCell);
//   - report.html.tmpl: report.html (html/template, which escapes every value;
//     the charts' SVG is drawn by report/timechart);
//   - replay.html.tmpl: replay.html, the replay's report (package
//     report/replayview, html/template, charts by report/timechart);
//   - style.html.tmpl: the style both HTML pages share;
//   - scan.en.md.tmpl, scan.ko.md.tmpl: scan.md, the scheduled scan's report
//     (text/template; sentences said by the catalogs in the report's language).
package templates

import "embed"

// FS holds every template file of this directory.
//
//go:embed *.tmpl
var FS embed.FS
