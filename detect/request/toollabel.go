package request

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// ToolLabel names what a request asked for at the granularity a rate limit would
// match: "Special:WhatLinksHere (path)" and "Special:WhatLinksHere (title=)" are
// distinct because a matcher written for one form misses the other (the
// reference incident's link_walk limit did exactly that). Articles and assets are
// not named individually: their titles are unbounded and cheap.
func ToolLabel(rawPath, rawQuery string, class PathClass) string {
	return ToolLabelScratch(rawPath, rawQuery, class, nil)
}

// ToolLabelScratch is ToolLabel with a scratch buffer for the unescaped path
// and query values (nil: allocate one), which a pass over many requests keeps
// from one to the next: it reads the query as ClassifyPath does (readQuery,
// url.ParseQuery's reading without its map), so that a label costs no
// allocation but its own text.
func ToolLabelScratch(rawPath, rawQuery string, class PathClass, scratch *[]byte) string {
	if class != ClassSpecial && class != ClassTool {
		return string(class)
	}
	if scratch == nil {
		scratch = new([]byte)
	}
	*scratch = (*scratch)[:0]
	// p and q's values may view *scratch: what is returned is built anew.
	switch class {
	case ClassSpecial:
		if name := specialName(pathUnescape(rawPath, scratch)); name != "" {
			return SpecialPathLabel(name)
		}
		if name := specialName(readQuery(rawQuery, scratch).title); name != "" {
			return name + specialTitleForm
		}
		return "special"
	default: // ClassTool
		q := readQuery(rawQuery, scratch)
		if q.action != "" {
			return "action=" + strings.ToLower(q.action)
		}
		if q.has&hasDiff != 0 {
			return "diff"
		}
		return "oldid"
	}
}

// The URL forms a special page's label ends with: its name in the path, or
// in the title= query parameter.
const (
	specialPathForm  = " (path)"
	specialTitleForm = " (title=)"
)

// SpecialPathLabel is the label of special page name asked for by its path.
func SpecialPathLabel(name string) string { return name + specialPathForm }

// SpecialLabel splits a special page's label into the page's name and
// whether it was asked for by its path (else by title=); ok is false for
// every other label.
func SpecialLabel(label string) (name string, byPath, ok bool) {
	if name, ok := strings.CutSuffix(label, specialPathForm); ok {
		return name, true, true
	}
	if name, ok := strings.CutSuffix(label, specialTitleForm); ok {
		return name, false, true
	}
	return "", false, false
}

// specialName extracts "Special:Name" from a path or title, dropping the page
// argument after the next slash ("Special:WhatLinksHere/Foo" -> "Special:WhatLinksHere").
func specialName(s string) string {
	ls := lower(s)
	for _, ns := range specialNamespaces {
		i := strings.Index(ls, ns)
		if i < 0 {
			continue
		}
		start, nsEnd := i, i+len(ns)
		if strings.IndexFunc(s, func(r rune) bool { return r >= utf8.RuneSelf }) >= 0 {
			// Lowering may change a rune's width (an invalid byte becomes
			// U+FFFD, "İ" becomes "i"): find where the match is in s.
			start, nsEnd = lowerToOriginal(s, i, i+len(ns))
			if start < 0 || nsEnd < 0 {
				continue
			}
		}
		rest := s[start:]
		if j := strings.IndexByte(s[nsEnd:], '/'); j >= 0 {
			rest = s[start : nsEnd+j]
		}
		return rest
	}
	return ""
}

// lowerToOriginal maps byte offsets of strings.ToLower(s) back to s, rune by
// rune as ToLower maps them (-1 where an offset falls inside a rune), for
// from < to. It stops at to: the offsets only grow, and what follows a
// special page's name (a page title, often all of the string) is not read.
func lowerToOriginal(s string, from, to int) (sFrom, sTo int) {
	sFrom, sTo = -1, -1
	lo := 0
	for si, r := range s { // an invalid byte is U+FFFD, as ToLower writes it
		if lo == from {
			sFrom = si
		}
		if lo >= to {
			if lo == to {
				sTo = si
			}
			return sFrom, sTo
		}
		if r < utf8.RuneSelf {
			lo++ // ASCII lowers to ASCII
		} else {
			lo += utf8.RuneLen(unicode.ToLower(r))
		}
	}
	if lo == to {
		sTo = len(s)
	}
	return sFrom, sTo
}
