package duration

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string // a part of the error, "" for none
	}{
		{"90s", 90 * time.Second, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"7d", 7 * Day, ""},
		{"2w", 14 * Day, ""},
		{"1w2d", 9 * Day, ""},
		{"1d12h", 36 * time.Hour, ""},
		{"1.5d", 36 * time.Hour, ""},
		{"0.5w", 84 * time.Hour, ""},
		{"500ms", 500 * time.Millisecond, ""},
		{"250us", 250 * time.Microsecond, ""},
		{"250µs", 250 * time.Microsecond, ""},
		{"0", 0, ""},
		{" 3h ", 3 * time.Hour, ""},
		{"-2h", -2 * time.Hour, ""},
		{"+1d", Day, ""},
		// The units are case-sensitive, as Go's: "M" is not minutes, "D" not days.
		{"7D", 0, `unknown unit "D"`},
		{"10M", 0, `unknown unit "M"`},
		// A bare number is refused: seconds or minutes would be a guess.
		{"30", 0, "has no unit"},
		{"1.5", 0, "has no unit"},
		{"", 0, "empty"},
		{"d", 0, "want a number"},
		{"7days", 0, `unknown unit "days"`},
		{"1y", 0, `unknown unit "y"`},
		{"1h30", 0, `"30" has no unit`},
		{"1..5h", 0, "bad number"},
		{".d", 0, "bad number"},
		{"-", 0, "no number"},
		{"20000w", 0, "too long"},
		{"15000w", 15000 * Week, ""},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", tt.in, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("Parse(%q) = %v, %v; want an error about %q", tt.in, got, err, tt.err)
		case tt.err != "" && !strings.Contains(err.Error(), `"`+tt.in+`"`):
			t.Errorf("Parse(%q): error %q does not quote the input", tt.in, err)
		case got != tt.want:
			t.Errorf("Parse(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if _, err := Parse("45"); !errors.Is(err, ErrNoUnit) {
		t.Errorf("a bare number: %v, want ErrNoUnit", err)
	}
}

func TestFormat(t *testing.T) {
	tests := map[time.Duration]string{
		7 * Day:          "7d",
		14 * Day:         "14d",
		36 * time.Hour:   "36h0m0s",
		90 * time.Minute: "1h30m0s",
		0:                "0",
		-Day:             "-1d",
	}
	for d, want := range tests {
		if got := Format(d); got != want {
			t.Errorf("Format(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestValueIsAFlag(t *testing.T) {
	var d time.Duration
	v := (*Value)(&d)
	if err := v.Set("2w"); err != nil || d != 14*Day || v.String() != "14d" || v.Type() != "duration" {
		t.Errorf("Set(2w): %v, d=%v, String=%q", err, d, v.String())
	}
	if err := v.Set("soon"); err == nil || d != 14*Day {
		t.Errorf("Set(soon): %v, d=%v; want an error and the value kept", err, d)
	}
}

// FuzzParse checks that Parse never panics, agrees with Go wherever Go's
// grammar applies, and reads back what Format writes.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"7d", "2w", "1h30m", "90s", "1.5d", "0", "30", "-1w2d3h", "1e3h", "9999999w", "1µs", ".5d", "5.m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			return
		}
		if !strings.ContainsAny(s, "dw") && strings.TrimSpace(s) != "0" && strings.TrimSpace(s) == s {
			if want, gerr := time.ParseDuration(s); gerr != nil || want != d {
				t.Errorf("Parse(%q) = %v, but time.ParseDuration says %v, %v", s, d, want, gerr)
			}
		}
		back, err := Parse(Format(d))
		if err != nil || back != d {
			t.Errorf("Parse(Format(%v) = %q) = %v, %v", d, Format(d), back, err)
		}
	})
}
