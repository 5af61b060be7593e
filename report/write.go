package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2/maybe"
)

// Output formats and the file each is written to.
const (
	FormatMarkdown = "md"
	FormatHTML     = "html"
	FormatJSON     = "json"
)

// Files names the file WriteAll writes for each format.
var Files = map[string]string{
	FormatMarkdown: "postmortem.md",
	FormatHTML:     "report.html",
	FormatJSON:     "report.json",
}

// Formats lists the formats in the order the CLI documents them.
var Formats = []string{FormatMarkdown, FormatHTML, FormatJSON}

// WriteAll renders r in each of formats (md, html, json) into dir and returns
// the paths written, in the order of formats. lang ("en" or "ko") is the
// language of postmortem.md and report.html; report.json is always English.
// Each file is written whole or not at all (a temporary file renamed into
// place), so a failed run never leaves half a report beside an old one.
func WriteAll(dir string, r *Report, formats []string, lang string) ([]string, error) {
	if err := langError(lang); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var todo []string
	for _, f := range formats {
		f = strings.ToLower(strings.TrimSpace(f))
		if _, ok := Files[f]; !ok {
			return nil, fmt.Errorf("report: format %q: want a subset of %s", f, strings.Join(Formats, ","))
		}
		if !seen[f] {
			seen[f] = true
			todo = append(todo, f)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: output directory: %w", err)
	}
	var paths []string
	for _, f := range todo {
		data, err := Render(r, f, lang)
		if err != nil {
			return paths, err
		}
		path := filepath.Join(dir, Files[f])
		if err := writeFile(path, data); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// Render renders r in one format (md, html or json) and language.
func Render(r *Report, format, lang string) ([]byte, error) {
	switch format {
	case FormatMarkdown:
		return renderPostmortem(r, lang)
	case FormatHTML:
		return renderHTML(r, lang)
	case FormatJSON:
		return renderJSON(r)
	}
	return nil, fmt.Errorf("report: format %q: want one of %s", format, strings.Join(Formats, ", "))
}

// renderJSON encodes report.json. encoding/json escapes <, > and & as \u003c
// and friends, so even a careless consumer that pastes a value into HTML gets
// no markup.
func renderJSON(r *Report) ([]byte, error) {
	r.normalize()
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("report: encode report.json: %w", err)
	}
	return append(data, '\n'), nil
}

// writeFile replaces path with data atomically (renameio: a synced
// temporary file renamed into place; a plain write on Windows).
func writeFile(path string, data []byte) error {
	if err := maybe.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	return nil
}
