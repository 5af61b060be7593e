package simulate

import (
	"encoding/json"
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
