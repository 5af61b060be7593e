package report

import (
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
	}
	for _, in := range tests {
		out := MarkdownCell(in)
		for _, bad := range []string{"<", "\n", "\r"} {
			if strings.Contains(out, bad) {
				t.Errorf("MarkdownCell(%q) = %q still contains %q", in, out, bad)
			}
		}
		for _, special := range []string{"|", "`", "[", "]", "#", "{"} {
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
