package rules

import (
	"strings"
)

// routeTarget turns a route template detect measured as expensive into what a
// match block can select, for any application, in this order:
//   - a query value the template names ("/index.php?route=product/search" is
//     not it: values with '/' are not kept; "?action=history&title" ->
//     query action=history): the value chose the route;
//   - a path without placeholders other than the root ("/wp-json/wp/v2/search"):
//     the path itself, with and without a trailing slash (query keys are left
//     out: a client that drops one would otherwise walk past the rule);
//   - a query key ("/?s" -> query s=*; "/{n}/{n}/{slug}/?replytocom" ->
//     query replytocom=*): the key made the page uncacheable, on whatever
//     path it comes;
//   - a path glob with each placeholder segment as '*'
//     ("/api/items/{n}/export" -> /api/items/*/export).
//
// Templates come from the log: a part that is not provably inert in a
// Caddyfile token, a path pattern and a query matcher is refused (ok false).
func routeTarget(template string) (t Target, ok bool) {
	p, q, _ := strings.Cut(template, "?")
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	literal := true
	for _, s := range segs {
		literal = literal && !strings.Contains(s, "{")
	}
	var items []string
	if q != "" {
		items = strings.Split(q, "&")
	}
	for _, it := range items {
		if k, v, hasV := strings.Cut(it, "="); hasV && safeQueryKey(k) && safeName(v) {
			return Target{QueryKey: k, QueryValues: []string{v}}, true
		}
	}
	switch {
	case p == "/" && len(items) == 0:
		return Target{Paths: []string{"/"}}, true
	case literal && p != "/":
		if !safePath(strings.TrimSuffix(p, "/")) {
			return t, false
		}
		base := strings.TrimSuffix(p, "/")
		return Target{Paths: []string{base, base + "/"}}, true
	case len(items) > 0:
		for _, it := range items {
			if k, _, _ := strings.Cut(it, "="); safeQueryKey(k) {
				return Target{QueryKey: k, QueryValues: []string{"*"}}, true
			}
		}
		return t, false
	}
	glob := make([]string, len(segs))
	for i, s := range segs {
		switch {
		case s == "":
		case strings.HasPrefix(s, "{"):
			glob[i] = "*"
		case safeName(s):
			glob[i] = s
		default:
			return t, false
		}
	}
	if len(glob) == 1 && glob[0] == "*" {
		return t, false // "/*": every request
	}
	return Target{Paths: []string{"/" + strings.Join(glob, "/")}}, true
}

// safeQueryKey accepts a query key a query matcher can name as it is
// ("s", "replytocom", "per_page"): ASCII letters, digits, '_', '-', '.'.
func safeQueryKey(k string) bool {
	if k == "" || len(k) > 40 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// mergeRouteTargets folds the targets of several templates into one path
// target and one query target per key (values ORed; "*" takes them all), in
// the order they came.
func mergeRouteTargets(ts []Target) []Target {
	var paths, keys []string
	values := map[string][]string{}
	for _, t := range ts {
		if len(t.Paths) > 0 {
			paths = append(paths, t.Paths...)
			continue
		}
		keys = appendNew(keys, t.QueryKey)
		values[t.QueryKey] = appendNew(values[t.QueryKey], t.QueryValues[0])
	}
	var out []Target
	if len(paths) > 0 {
		out = append(out, Target{Paths: dedup(paths)})
	}
	for _, k := range keys {
		vs := values[k]
		for _, v := range vs {
			if v == "*" {
				vs = []string{"*"}
				break
			}
		}
		out = append(out, Target{QueryKey: k, QueryValues: vs})
	}
	return out
}
