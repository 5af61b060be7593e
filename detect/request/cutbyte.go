package request

import "strings"

// CutByte is strings.Cut(s, string(sep)) for a one-byte separator. The
// route template and the path class cut every target at '/', '&', '=' and
// ':', most of them a few bytes long: strings.Cut goes through
// strings.Index, which chooses among its searches by the separator's length
// on every call (some 60 instructions a cut), where CutByte calls
// IndexByte's assembly directly.
func CutByte(s string, sep byte) (before, after string, found bool) {
	i := strings.IndexByte(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}
