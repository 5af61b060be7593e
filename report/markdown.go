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

	"github.com/aftermath-forensics/aftermath/templates"
)

// mdEscaper neutralises everything that could make text from a log line into
// Markdown structure: table cells, code spans, emphasis, links, HTML and headings.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "|", `\|`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", "&lt;", ">", "&gt;", "#", `\#`, "{", `\{`, "}", `\}`, "!", `\!`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// MarkdownCell escapes attacker-controlled text for a Markdown table cell or line.
func MarkdownCell(s string) string {
	return mdEscaper.Replace(s)
}

// formatInt groups thousands with commas ("8,001"), as the reference postmortem does.
func formatInt(v any) string {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	case float64:
		n = int64(math.Round(x))
	default:
		return fmt.Sprint(v)
	}
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
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

// RenderMarkdown renders the report with the named template of package templates.
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
