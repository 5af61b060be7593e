package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"text/template"
	"time"
	"unicode"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/templates"
)

// mdEscaper neutralises everything that could make text from a log line into
// Markdown structure: table cells, code spans, emphasis, strikethrough, links
// (inline, reference and GFM's bare-URL and e-mail autolinks), HTML, entities
// and headings. Line breaks become spaces, so no text can start a line of its
// own (a heading, a list, a fence or a setext underline).
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "|", `\|`, "`", "\\`", "*", `\*`, "_", `\_`, "~", `\~`, "[", `\[`, "]", `\]`,
	"<", "&lt;", ">", "&gt;", "&", "&amp;", "#", `\#`, "{", `\{`, "}", `\}`, "!", `\!`,
	// GFM links bare URLs and addresses; an escaped character breaks the match.
	"://", `\://`, "www.", `www\.`, "WWW.", `WWW\.`, "@", `\@`,
	"\r\n", " ", "\n", " ", "\r", " ", "\t", " ",
)

// MarkdownCell escapes attacker-controlled text for a Markdown table cell or a
// line of prose. The result renders as the same characters, but as text only.
// Never put its result inside a code span: backslash escapes do not work there.
func MarkdownCell(s string) string {
	return strings.Map(func(r rune) rune {
		// Other control characters (NUL, VT, FF, bidi overrides) have no
		// business in a report and some renderers treat them as breaks.
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, mdEscaper.Replace(s))
}

// formatInt renders a count for humans, whatever numeric type the template has.
func formatInt(v any) string {
	switch x := v.(type) {
	case int:
		return detect.FormatInt(int64(x))
	case int64:
		return detect.FormatInt(x)
	case float64:
		return detect.FormatInt(int64(math.Round(x)))
	}
	return fmt.Sprint(v)
}

func funcs(loc *time.Location) template.FuncMap {
	return template.FuncMap{
		"hm":   func(t time.Time) string { return t.In(loc).Format("15:04") },
		"num":  formatInt,
		"cell": MarkdownCell,
	}
}

// postmortemTemplate names the Markdown template of a language.
func postmortemTemplate(lang string) string { return "postmortem." + lang + ".md.tmpl" }

// renderPostmortem renders postmortem.md in lang.
func renderPostmortem(r *Report, lang string) ([]byte, error) {
	v, err := newView(r, lang)
	if err != nil {
		return nil, err
	}
	name := postmortemTemplate(lang)
	t, err := template.New(name).Funcs(template.FuncMap{"md": MarkdownCell}).ParseFS(templates.FS, name)
	if err != nil {
		return nil, fmt.Errorf("report: template %s: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("report: template %s: %w", name, err)
	}
	return buf.Bytes(), nil
}
