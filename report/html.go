package report

import (
	"bytes"
	"fmt"
	"html/template"

	"github.com/aftermath-forensics/aftermath/report/timechart"
	"github.com/aftermath-forensics/aftermath/templates"
)

const (
	htmlTemplate  = "report.html.tmpl"
	styleTemplate = "style.html.tmpl"
)

// renderHTML renders report.html: one self-contained page (inline CSS and SVG,
// no script, no font, no image, nothing fetched; a Content-Security-Policy of
// default-src 'none' makes sure of it). html/template escapes every value.
func renderHTML(r *Report, lang string) ([]byte, error) {
	v, err := newView(r, lang)
	if err != nil {
		return nil, err
	}
	loc, err := r.location()
	if err != nil {
		return nil, err
	}
	day := r.incidentDay()
	p := newPrinter(lang, loc, day)
	v.Charts = charts(r, v, p)
	if err := p.err(); err != nil {
		return nil, fmt.Errorf("report: charts: %w", err)
	}
	for i := range v.Charts {
		v.Charts[i].Caption = cleanText(v.Charts[i].Caption)
	}
	t, err := template.New(htmlTemplate).Funcs(timechart.PageFuncs()).ParseFS(templates.FS, htmlTemplate, styleTemplate)
	if err != nil {
		return nil, fmt.Errorf("report: template %s: %w", htmlTemplate, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("report: template %s: %w", htmlTemplate, err)
	}
	return buf.Bytes(), nil
}
