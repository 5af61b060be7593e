package simulate

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAppendJSONString: zap's escapes (quote, backslash, \n, \r, \t, \u00XX
// for other control bytes), everything else copied as is, whatever run of
// plain bytes surrounds an escape; and every result reads back as s.
func TestAppendJSONString(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{"", `""`},
		{"/w/index.php?title=Spécial", `"/w/index.php?title=Spécial"`},
		{`"`, `"\""`},
		{`a"b\c`, `"a\"b\\c"`},
		{"x\ny\rz\t", `"x\ny\rz\t"`},
		{"\x00\x1f\x7f", `"\u0000\u001f` + "\x7f\""},
		{"tail\x01", `"tail\u0001"`},
	} {
		got := string(AppendJSONString([]byte("prefix "), tc.s))
		if got != "prefix "+tc.want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", tc.s, got[len("prefix "):], tc.want)
		}
	}
	var all []byte
	for c := range 128 {
		all = append(all, 'a', byte(c))
	}
	var back string
	if err := json.Unmarshal(AppendJSONString(nil, string(all)), &back); err != nil || back != string(all) {
		t.Errorf("every ASCII byte: read back %q, %v", back, err)
	}
}

// TestNextEscape: the eight-bytes-at-a-time scan finds the first byte to
// escape where a byte-at-a-time scan does, with the byte at each place of a
// word and after it, for every byte value (those above 0x7f, whose high bit
// the word test must not take for a match, and 0x20, '"'±1, '\\'±1 around
// the ones it must).
func TestNextEscape(t *testing.T) {
	naive := func(s string, i int) int {
		for ; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
				return i
			}
		}
		return len(s)
	}
	for c := range 256 {
		for n := range 20 {
			for at := range n {
				bs := []byte(strings.Repeat("a", n))
				bs[at] = byte(c)
				if at+1 < n {
					bs[at+1] = 0xff // a high byte after it
				}
				s := string(bs)
				for from := range min(n, 9) {
					if got, want := nextEscape(s, from), naive(s, from); got != want {
						t.Fatalf("nextEscape(%q, %d) = %d, want %d", s, from, got, want)
					}
				}
			}
		}
	}
}

func BenchmarkAppendJSONString(b *testing.B) {
	ua := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36"
	uri := "/index.php?title=Special:WhatLinksHere/Page_1234&limit=500"
	buf := make([]byte, 0, 512)
	for b.Loop() {
		buf = AppendJSONString(AppendJSONString(buf[:0], ua), uri)
	}
}
