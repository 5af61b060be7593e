package live

import (
	"strings"
	"testing"
	"time"
)

func TestDurationSyntax(t *testing.T) {
	clearEnv(t)
	for _, tt := range []struct {
		doc  string
		want time.Duration
		err  string
	}{
		{"baseline: 90m\n", 90 * time.Minute, ""},
		{"baseline: 0\n", 0, ""},
		{"baseline: 0s\n", 0, ""},
		{"baseline: 1.5h\n", 90 * time.Minute, ""},
		// Days and weeks as the flags take them (--baseline 7d).
		{"baseline: 2d\n", 48 * time.Hour, ""},
		{"baseline: 1w\n", 7 * 24 * time.Hour, ""},
		{"baseline: 1d12h\n", 36 * time.Hour, ""},
		{"baseline: 3y\n", 0, `duration "3y": unknown unit "y"`},
		{"baseline: -1h\n", 0, "must not be negative"},
		{"baseline: [1h]\n", 0, "want a duration"},
	} {
		c, err := Parse("a.yaml", []byte(tt.doc+"prometheus: {url: 'http://p:9090'}\n"))
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err %v, want %q", tt.doc, err, tt.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tt.doc, err)
		case c.BaselineDuration() != tt.want:
			t.Errorf("%q: %v, want %v", tt.doc, c.BaselineDuration(), tt.want)
		}
	}
}
