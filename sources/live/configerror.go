package live

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a configuration error: file, line and key, as in
// "aftermath.yaml:12: loki.password: ...".
type Error struct {
	File string
	Line int    // 0 when unknown
	Key  string // dotted path, e.g. "loki.selector"; "" for the whole file
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// lineOf finds the line of a key path in a document (0 if absent).
func lineOf(n *yaml.Node, path ...string) int {
	line := 0
	for _, p := range path {
		found := false
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					line, n, found = n.Content[i].Line, n.Content[i+1], true
					break
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(p); err == nil && i >= 0 && i < len(n.Content) {
				line, n, found = n.Content[i].Line, n.Content[i], true
			}
		}
		if !found {
			return line
		}
	}
	return line
}

func keyErr(key, format string, args ...any) error {
	return &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
}
