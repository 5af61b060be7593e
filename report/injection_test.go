package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestInjectionMarkdown: text from log lines (user agents, paths, languages,
// change notes, detector messages) cannot add a heading, a link, an image, a
// list item, HTML or a template action to postmortem.md, in either language.
func TestInjectionMarkdown(t *testing.T) {
	for _, lang := range Langs {
		t.Run(lang, func(t *testing.T) {
			md, err := Render(injectionReport(t), FormatMarkdown, lang)
			if err != nil {
				t.Fatal(err)
			}
			prose, blocks := splitFences(t, string(md))
			if blocks != 1 {
				t.Errorf("want the rule's one code block, found %d", blocks)
			}
			unescaped := func(ch string) *regexp.Regexp {
				return regexp.MustCompile(`(^|[^\\])(\\\\)*` + regexp.QuoteMeta(ch))
			}
			for _, bad := range []struct {
				name string
				re   *regexp.Regexp
			}{
				{"raw HTML", regexp.MustCompile(`<`)},
				{"link or image", unescaped("](")},
				{"opening bracket", unescaped("[")},
				{"code span", unescaped("`")},
				{"template action", regexp.MustCompile(`\{\{`)},
				{"bare URL autolink", regexp.MustCompile(`[a-z]://`)},
				{"www autolink", regexp.MustCompile(`www\.evil`)},
				{"e-mail autolink", regexp.MustCompile(`[a-z]@b`)},
				{"control or bidi character", regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f\u202e]")},
				{"injected heading", regexp.MustCompile(`(?m)^\\?#+ heading`)},
				{"injected list item", regexp.MustCompile(`(?m)^- item`)},
			} {
				if loc := bad.re.FindStringIndex(prose); loc != nil {
					from, to := max(0, loc[0]-60), min(len(prose), loc[1]+60)
					t.Errorf("%s in postmortem.md: …%s…", bad.name, prose[from:to])
				}
			}
			// Every heading is one of the template's.
			var headings []string
			for _, line := range strings.Split(prose, "\n") {
				if strings.HasPrefix(line, "#") {
					headings = append(headings, line)
				}
			}
			if len(headings) != 1+len(referenceSections[lang])+3 {
				t.Errorf("headings: %q", headings)
			}
			// Table rows keep their column count: no | escaped out of a cell.
			for _, line := range strings.Split(prose, "\n") {
				if strings.HasPrefix(line, "| ") && strings.Count(line, " | ")+2 != strings.Count(line, "|")-strings.Count(line, `\|`) {
					t.Errorf("table row with a stray pipe: %q", line)
				}
			}
			// The hostile text is still shown, as text.
			if !strings.Contains(prose, `&lt;script&gt;alert(1)&lt;/script&gt;`) {
				t.Errorf("the hostile text vanished instead of being escaped")
			}
		})
	}
}

// splitFences removes fenced code blocks from md (their content is literal in
// Markdown), checking that nothing in a block can close its fence early.
func splitFences(t *testing.T, md string) (string, int) {
	t.Helper()
	var prose []string
	fence, blocks := "", 0
	for _, line := range strings.Split(md, "\n") {
		if fence == "" {
			if strings.HasPrefix(line, "```") {
				fence = line[:len(line)-len(strings.TrimLeft(line, "`"))]
				blocks++
				continue
			}
			prose = append(prose, line)
			continue
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == fence {
			fence = ""
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, "`") == "" {
			t.Errorf("a line inside the code block could close its fence: %q", line)
		}
	}
	if fence != "" {
		t.Errorf("unclosed code block")
	}
	return strings.Join(prose, "\n"), blocks
}

// TestInjectionHTML parses report.html as a browser would: the only elements
// are the template's, no script, no handler, no link off the page, no fetch.
func TestInjectionHTML(t *testing.T) {
	for _, lang := range Langs {
		t.Run(lang, func(t *testing.T) {
			r := injectionReport(t)
			page, err := Render(r, FormatHTML, lang)
			if err != nil {
				t.Fatal(err)
			}
			checkInertHTML(t, page, 6)
			pre := regexp.MustCompile(`(?s)<pre>.*?</pre>`).ReplaceAll(page, nil) // the rule snippet, literal
			if loc := regexp.MustCompile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]").FindIndex(pre); loc != nil {
				t.Errorf("control or bidi character in report.html: %q", pre[max(0, loc[0]-40):loc[1]])
			}
			if !strings.Contains(textOf(t, page), "<script>alert(1)</script>") {
				t.Errorf("the hostile text vanished instead of being escaped")
			}
		})
	}
}

// checkInertHTML asserts that page holds no active content and wantSVG
// charts, each drawn twice (wide and narrow: 2*wantSVG <svg> elements).
func checkInertHTML(t *testing.T, page []byte, wantSVG int) {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	svgs, paths := 0, 0
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "img", "iframe", "object", "embed", "link", "image", "use", "foreignobject", "form", "base", "audio", "video":
				t.Errorf("<%s> element in report.html", n.Data)
			case "svg":
				svgs++
			case "path":
				paths++
			}
			for _, a := range n.Attr {
				key := strings.ToLower(a.Key)
				switch {
				case strings.HasPrefix(key, "on"):
					t.Errorf("<%s %s=%q>: event handler", n.Data, a.Key, a.Val)
				case key == "src" || key == "srcset" || key == "xlink:href" || key == "action" || key == "formaction":
					t.Errorf("<%s %s=%q>: external reference", n.Data, a.Key, a.Val)
				case key == "href" && !strings.HasPrefix(a.Val, "#"):
					t.Errorf("<%s href=%q>: link off the page", n.Data, a.Val)
				case key == "style" && strings.Contains(strings.ToLower(a.Val), "url("):
					t.Errorf("<%s style=%q>: fetch from CSS", n.Data, a.Val)
				}
			}
		}
		if n.Type == html.ElementNode && n.Data == "style" && n.FirstChild != nil {
			css := strings.ToLower(n.FirstChild.Data)
			if strings.Contains(css, "url(") || strings.Contains(css, "@import") {
				t.Errorf("the stylesheet fetches something")
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if svgs != 2*wantSVG {
		t.Errorf("%d <svg> elements, want %d (%d charts, wide and narrow)", svgs, 2*wantSVG, wantSVG)
	}
	if paths < wantSVG {
		t.Errorf("%d <path> elements for %d charts", paths, wantSVG)
	}
	if !bytes.Contains(page, []byte("default-src 'none'")) {
		t.Errorf("no Content-Security-Policy forbidding fetches")
	}
}

func textOf(t *testing.T, page []byte) string {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return b.String()
}

// TestInjectionJSON: report.json escapes markup and round-trips the hostile
// text unchanged.
func TestInjectionJSON(t *testing.T) {
	r := injectionReport(t)
	data, err := Render(r, FormatJSON, LangEN)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script", "</svg", "<img"} {
		if bytes.Contains(data, []byte(bad)) {
			t.Errorf("report.json holds %q unescaped", bad)
		}
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Findings[0].Fingerprint.UserAgent; got != "Chrome "+hostile {
		t.Errorf("user agent round-trips as %q", got)
	}
	validate(t, data)
}

// TestInjectionTerminal: no escape sequence, carriage return or bidi override
// reaches the terminal, and no hostile line break splits a table row.
func TestInjectionTerminal(t *testing.T) {
	var buf bytes.Buffer
	PrintSummary(&buf, injectionReport(t), LangEN, "/tmp/x\x1b]0;title\x07/report.json")
	out := buf.String()
	if regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f\u202e]").MatchString(out) {
		t.Errorf("control characters reach the terminal: %q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "# heading") || strings.HasPrefix(line, "- item") {
			t.Errorf("a hostile line break split the output: %q", line)
		}
	}
}
