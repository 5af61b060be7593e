package report

import (
	"regexp"
	"strings"
	"testing"
)

func TestMarkdownCellIsInert(t *testing.T) {
	tests := []string{
		"<script>alert(1)</script>",
		"a | b",
		"`code`",
		"[x](javascript:alert(1))",
		"line\nbreak\r\n# heading",
		"{{ .Secret }}",
		"</svg><img src=x onerror=alert(1)>",
		"http://evil.example/x www.evil.example WWW.EVIL.EXAMPLE bot@evil.example",
		"~~struck~~ &lt;b&gt; \x00\x0b\x0c\u202e\u2066",
	}
	for _, in := range tests {
		out := MarkdownCell(in)
		if regexp.MustCompile(`(^|[^\\])(://|www\.|WWW\.)`).MatchString(out) {
			t.Errorf("MarkdownCell(%q) = %q leaves an autolink", in, out)
		}
		if regexp.MustCompile(`&($|[^agl]|a[^m]|g[^t]|l[^t])`).MatchString(out) {
			t.Errorf("MarkdownCell(%q) = %q leaves an entity of the input live", in, out)
		}
		for _, bad := range []string{"<", "\n", "\r", "\x00", "\x0b", "\x0c", "\u202e", "\u2066"} {
			if strings.Contains(out, bad) {
				t.Errorf("MarkdownCell(%q) = %q still contains %q", in, out, bad)
			}
		}
		for _, special := range []string{"|", "`", "[", "]", "#", "{", "~", "@"} {
			if strings.Count(out, special) != strings.Count(out, `\`+special) {
				t.Errorf("MarkdownCell(%q) = %q leaves %q unescaped", in, out, special)
			}
		}
	}
}

func TestFormatInt(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1,000"}, {8001, "8,001"}, {1234567, "1,234,567"},
		{int64(-4096), "-4,096"}, {2490.4, "2,490"},
	}
	for _, tt := range tests {
		if got := formatInt(tt.in); got != tt.want {
			t.Errorf("formatInt(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A report with nothing in it still renders every format.
func TestRenderEmpty(t *testing.T) {
	r := &Report{Window: Window{From: at("02:00"), To: at("03:00"), TZ: "Asia/Seoul"}}
	if err := r.Assemble(); err != nil {
		t.Fatal(err)
	}
	for _, lang := range Langs {
		for _, f := range Formats {
			out, err := Render(r, f, lang)
			if err != nil || len(out) == 0 {
				t.Errorf("%s/%s: %v", f, lang, err)
			}
			if f == FormatHTML {
				checkInertHTML(t, out, 0)
			}
		}
	}
}
