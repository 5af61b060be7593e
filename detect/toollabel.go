package detect

import (
	"net/url"
	"strings"
)

// ToolLabel names what a request asked for at the granularity a rate limit would
// match: "Special:WhatLinksHere (path)" and "Special:WhatLinksHere (title=)" are
// distinct because a matcher written for one form misses the other (the
// reference incident's link_walk limit did exactly that). Articles and assets are
// not named individually: their titles are unbounded and cheap.
func ToolLabel(rawPath, rawQuery string, class PathClass) string {
	switch class {
	case ClassSpecial:
		p, err := url.PathUnescape(rawPath)
		if err != nil {
			p = rawPath
		}
		if name := specialName(p); name != "" {
			return name + " (path)"
		}
		q, _ := url.ParseQuery(rawQuery)
		if name := specialName(q.Get("title")); name != "" {
			return name + " (title=)"
		}
		return "special"
	case ClassTool:
		q, _ := url.ParseQuery(rawQuery)
		if a := q.Get("action"); a != "" {
			return "action=" + strings.ToLower(a)
		}
		if q.Has("diff") {
			return "diff"
		}
		return "oldid"
	}
	return string(class)
}

// specialName extracts "Special:Name" from a path or title, dropping the page
// argument after the next slash ("Special:WhatLinksHere/Foo" -> "Special:WhatLinksHere").
func specialName(s string) string {
	ls := strings.ToLower(s)
	for _, ns := range specialNamespaces {
		i := strings.Index(ls, ns)
		if i < 0 {
			continue
		}
		rest := s[i:]
		if j := strings.IndexByte(rest[len(ns):], '/'); j >= 0 {
			rest = rest[:len(ns)+j]
		}
		return rest
	}
	return ""
}
