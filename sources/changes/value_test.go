package changes

import (
	"math"
	"testing"
)

func TestNumber(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"4096", 4096, true},
		{" 4096 ", 4096, true},
		{"4096.0", 4096, true},
		{"-1", -1, true},
		// A change log written by a person groups thousands.
		{"4,096", 4096, true},
		{"1,000,000", 1e6, true},
		{"-2,048.5", -2048.5, true},
		// php-fpm refuses a unit in a pool's integer: "4k" is no 4,096 (nor 4,000).
		{"4k", 0, false},
		// A comma that groups no thousands is a list, not 12 or 1.2.
		{"1,2", 0, false},
		{"40,96", 0, false},
		{"4,0960", 0, false},
		{",096", 0, false},
		{"0x10", 0, false},
		{"inf", 0, false},
		{"NaN", 0, false},
		{"", 0, false},
		{"static", 0, false},
	}
	for _, tt := range tests {
		got, ok := Number(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("Number(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSeconds(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"10s", 10, true},
		{"1m30s", 90, true},
		{"500ms", 0.5, true},
		{"2d", 172800, true},
		// php-fpm's request_terminate_timeout = 30: seconds, not an error.
		{"30", 30, true},
		{"1,800", 1800, true},
		{"0", 0, true},
		{"inf", math.Inf(1), true},
		{"10 seconds", 0, false},
		{"1,8", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := Seconds(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("Seconds(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSameValue(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"4096", "4096.0", true},
		{"4,096", "4096", true},
		{"Static", "static", true},
		// Stripping every comma would make these equal.
		{"1,2", "12", false},
		{"4k", "4096", false},
		{"511", "4096", false},
	}
	for _, tt := range tests {
		if got := SameValue(tt.a, tt.b); got != tt.want {
			t.Errorf("SameValue(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
