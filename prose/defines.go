package prose

import (
	"strconv"
	"strings"
)

// define is where one message's {{define "name"}}...{{end}} lies in its
// file's text, so that the message can be parsed alone: a run says a few
// dozen of the two hundred messages of a catalog like detect's, and parsing
// its whole 59 kB file took about 4 ms of the analysis (perf), as long as
// every other initialiser of aftermath's own packages together.
type define struct {
	// start and end are the block's byte offsets, [start, end), from the
	// "{{" of its define to the "}}" of its end.
	start, end int
}

// text is the block prefixed with blank lines and spaces up to where it
// starts in src, so that the message parsed alone reports errors at the
// file's line and column, as when the whole file is parsed.
func (d define) text(src string) string {
	before := src[:d.start]
	col := d.start - (strings.LastIndexByte(before, '\n') + 1)
	return strings.Repeat("\n", strings.Count(before, "\n")) + strings.Repeat(" ", col) + src[d.start:d.end]
}

// findDefines finds each message's block in a catalog file's text without
// parsing the messages: it follows the actions ({{...}}), skipping comments
// and quoted strings, and counts the ones that open a block (if, range,
// with, define, block) against their end. It returns false for a file it
// cannot follow so (an action that does not close, a define inside a block,
// a {{block}} or {{end}} at the top level): the file is then parsed whole,
// as text/template reads it, and says the same. Text and actions outside
// the defines are left out, as they are from every message.
func findDefines(src string) (map[string]define, bool) {
	out := map[string]define{}
	depth := 0
	var name string
	var start int
	for i := 0; ; {
		open := strings.Index(src[i:], "{{")
		if open < 0 {
			break
		}
		open += i
		k := open + 2
		// A left trim marker is "-" and a space.
		if len(src) > k+1 && src[k] == '-' && isSpace(src[k+1]) {
			k += 2
		}
		if strings.HasPrefix(src[k:], "/*") {
			// A comment ends at "*/" and then the action's end.
			c := strings.Index(src[k+2:], "*/")
			if c < 0 {
				return nil, false
			}
			k += 2 + c + 2
			if len(src) > k+1 && isSpace(src[k]) && src[k+1] == '-' {
				k += 2
			}
			if !strings.HasPrefix(src[k:], "}}") {
				return nil, false
			}
			i = k + 2
			continue
		}
		for k < len(src) && isSpace(src[k]) {
			k++
		}
		w := k
		for w < len(src) && isWordByte(src[w]) {
			w++
		}
		keyword := src[k:w]
		close, ok := actionEnd(src, w)
		if !ok {
			return nil, false
		}
		switch keyword {
		case "define":
			if depth != 0 {
				return nil, false
			}
			rest := strings.TrimLeft(src[w:close], " \t\r\n")
			quoted, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, false
			}
			if name, err = strconv.Unquote(quoted); err != nil {
				return nil, false
			}
			start = open
			depth = 1
		case "if", "range", "with":
			if depth == 0 {
				return nil, false
			}
			depth++
		case "block":
			// A block defines a template of its own: left to the whole
			// parse.
			return nil, false
		case "end":
			if depth == 0 {
				return nil, false
			}
			depth--
			if depth == 0 {
				// A message defined twice is its last definition, as
				// text/template keeps it.
				out[name] = define{start: start, end: close + 2}
			}
		}
		i = close + 2
	}
	if depth != 0 {
		return nil, false
	}
	return out, true
}

// actionEnd returns the offset of the "}}" that ends the action whose inside
// goes on at i, past any "}}" inside a quoted string, a raw string or a
// character constant.
func actionEnd(src string, i int) (int, bool) {
	for {
		close := strings.Index(src[i:], "}}")
		if close < 0 {
			return 0, false
		}
		close += i
		// Most actions hold no quote: the first "}}" ends them.
		q := strings.IndexAny(src[i:close], "\"'`")
		if q < 0 {
			return close, true
		}
		i += q
		switch c := src[i]; c {
		case '"', '\'':
			i++
			for i < len(src) && src[i] != c {
				if src[i] == '\\' {
					i++
				} else if src[i] == '\n' {
					return 0, false
				}
				i++
			}
			if i >= len(src) {
				return 0, false
			}
			i++
		case '`':
			end := strings.IndexByte(src[i+1:], '`')
			if end < 0 {
				return 0, false
			}
			i += 1 + end + 1
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func isWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
