package report

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
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

// seriesRow is one minute across all summarised series (for a wide table).
type seriesRow struct {
	Time   time.Time
	Values []string
}

func funcs(loc *time.Location) template.FuncMap {
	return template.FuncMap{
		"local": func(t time.Time) string { return t.In(loc).Format("2006-01-02 15:04") },
		"hm":    func(t time.Time) string { return t.In(loc).Format("15:04") },
		"num":   formatInt,
		"cell":  MarkdownCell,
		"statuses": func(m map[string]int) []string {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return keys
		},
		"class": func(m map[string]int, hundred int) int {
			total := 0
			for k, n := range m {
				if s, err := strconv.Atoi(k); err == nil && s/100 == hundred {
					total += n
				}
			}
			return total
		},
		"classes": func(m map[string]int) string {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Slice(keys, func(i, j int) bool {
				if m[keys[i]] != m[keys[j]] {
					return m[keys[i]] > m[keys[j]]
				}
				return keys[i] < keys[j]
			})
			parts := make([]string, len(keys))
			for i, k := range keys {
				parts[i] = fmt.Sprintf("%s %d", k, m[k])
			}
			return strings.Join(parts, ", ")
		},
		"seriesRows": func(series []SeriesRow) []seriesRow {
			byTime := map[int64][]string{}
			var times []int64
			for i, s := range series {
				for _, p := range s.Points {
					k := p.T.Unix()
					if _, ok := byTime[k]; !ok {
						byTime[k] = make([]string, len(series))
						times = append(times, k)
					}
					byTime[k][i] = strconv.FormatFloat(p.V, 'f', -1, 64)
					if math.Abs(p.V) >= 10 || p.V != math.Trunc(p.V) {
						byTime[k][i] = strconv.FormatFloat(math.Round(p.V*10)/10, 'f', -1, 64)
					}
				}
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			rows := make([]seriesRow, len(times))
			for i, k := range times {
				rows[i] = seriesRow{Time: time.Unix(k, 0), Values: byTime[k]}
			}
			return rows
		},
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

// RenderMarkdown renders the report with the named template of package
// templates, giving the template the Report itself (the evidence summary,
// evidence.md.tmpl, is such a template).
//
// Deprecated: for the postmortem use WriteAll or Render.
func RenderMarkdown(r *Report, name string) ([]byte, error) {
	loc, err := time.LoadLocation(r.Window.TZ)
	if err != nil {
		return nil, fmt.Errorf("report: time zone %q: %w", r.Window.TZ, err)
	}
	t, err := template.New(name).Funcs(funcs(loc)).ParseFS(templates.FS, name)
	if err != nil {
		return nil, fmt.Errorf("report: template %s: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, r); err != nil {
		return nil, fmt.Errorf("report: template %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// WriteMarkdown renders r with template name into path.
//
// Deprecated: use WriteAll.
func WriteMarkdown(path, name string, r *Report) error {
	data, err := RenderMarkdown(r, name)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
