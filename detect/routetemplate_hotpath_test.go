package detect

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchreqs"
	"github.com/aftermath-forensics/aftermath/detect/request"
)

// The route table builds a template for every request (Traffic.Observe), so
// it was made to allocate nothing for a template it holds already, without
// changing one: these tests hold it to the code it replaced, kept here as the
// reference (like hotpath_test.go's).

// routeTableOriginal is routeTable's folding as it was: templates built
// from fresh slices and strings, places folded through a callback.
type routeTableOriginal struct {
	literals map[string]map[string]struct{}
	folded   map[string]bool
}

func newRouteTableOriginal() *routeTableOriginal {
	return &routeTableOriginal{literals: map[string]map[string]struct{}{}, folded: map[string]bool{}}
}

// template folds the pieces the template code splits a target into (held
// to their original by TestRouteTemplateMatchesOriginal), fresh for each
// target.
func (t *routeTableOriginal) template(rawPath, rawQuery string) string {
	var sc request.TemplateScratch
	segs := slices.Clone(sc.Segments(rawPath))
	t.fold(segs, true)
	items := slices.Clone(sc.Query(rawQuery))
	for i := range items {
		it := &items[i]
		if it.Value == "" {
			continue
		}
		place := "?" + it.Key
		if t.folded[place] {
			it.Value = ""
			continue
		}
		t.track(place, it.Value, func() { it.Value = "" })
	}
	return string(request.AppendTemplate(nil, segs, items, rawQuery != "", true))
}

// track adds a name seen at a place; past maxLiterals names the place folds
// and folded runs. Past maxFoldPlace places, new places are not tracked.
func (t *routeTableOriginal) track(place, name string, folded func()) {
	names := t.literals[place]
	if names == nil && len(t.literals) < maxFoldPlace {
		names = map[string]struct{}{}
		t.literals[place] = names
	}
	if names == nil {
		return
	}
	names[name] = struct{}{}
	if len(names) > maxLiterals {
		delete(t.literals, place)
		t.folded[place] = true
		folded()
	}
}

// fold replaces the names at folded places by placeholders, and with track
// counts the names at places not folded yet, folding those that overflow.
func (t *routeTableOriginal) fold(segs []string, track bool) {
	var prefix strings.Builder
	for i, s := range segs {
		if s != "" && !request.IsPlaceholder(s) {
			ns, ph := "", request.PlaceholderSlug
			if n, rest, ok := strings.Cut(s, ":"); ok && rest != "" && !request.IsPlaceholder(rest) {
				ns, ph = n+":", n+":"+request.PlaceholderSlug
			}
			place := prefix.String() + "|" + ns
			switch {
			case t.folded[place]:
				segs[i] = ph
			case track:
				t.track(place, s, func() { segs[i] = ph })
			}
		}
		prefix.WriteByte('/')
		prefix.WriteString(segs[i])
	}
}

// canonical is a template as the table folds it at the end: places that
// folded after it was first recorded fold it too.
func (t *routeTableOriginal) canonical(template string) string {
	if template == OtherRoute || len(t.folded) == 0 {
		return template
	}
	p, q, hasQ := strings.Cut(template, "?")
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	t.fold(segs, false)
	out := "/" + strings.Join(segs, "/")
	if hasQ {
		items := strings.Split(q, "&")
		for i, it := range items {
			if k, _, ok := strings.Cut(it, "="); ok && t.folded["?"+k] {
				items[i] = k
			}
		}
		out += "?" + strings.Join(items, "&")
	}
	return out
}

// TestRouteTableMatchesOriginal feeds one stream of targets to the table and
// to its reference: every template, and every template's canonical form at
// the end, must be the same, with the interned templates' table cleared
// again and again too. The stream folds places (titles
// under /wiki/, pages in namespaces, query values), which the test checks
// it did, and repeats targets before and after the folds.
func TestRouteTableMatchesOriginal(t *testing.T) {
	targets := benchreqs.RouteSeeds(t)
	// 20,000 generated targets (28,000 with the repeats and seeds) fold 48
	// places, 3 after a namespace and 17 query keys, and fill the 4,096
	// places tracked (maxFoldPlace): 60,000 folded 97 in three times the CPU.
	for i, tg := range benchreqs.RouteTargets(20000, 1) {
		// Targets come again, before and after places fold.
		targets = append(targets, tg)
		if i%3 == 0 {
			targets = append(targets, targets[len(targets)/2])
		}
	}
	defer func(n int) { maxInterned = n }(maxInterned)
	for _, bound := range []int{maxInterned, 5} {
		maxInterned = bound
		tab, orig := newRouteTable(), newRouteTableOriginal()
		// Observe's way: through the memo of targets, in front of a table of its own.
		var memo targetMemo
		memoTab, scratch := newRouteTable(), []byte(nil)
		seen := map[string]bool{}
		fails := 0
		for _, tg := range targets {
			got, want := tab.template(tg[0], tg[1]), orig.template(tg[0], tg[1])
			if got != want && fails < 10 {
				fails++
				t.Errorf("interned %d: template(%q, %q) = %q, the original %q", bound, tg[0], tg[1], got, want)
			}
			slot := memo.slot(tg[0], tg[1])
			class := request.ClassifyPath(tg[0], tg[1], "/healthz.php")
			if got := slot.routeTemplate(memoTab); (got != want || slot.pathClass("/healthz.php", &scratch) != class || slot.toolLabel(&scratch) != request.ToolLabel(tg[0], tg[1], class)) && fails < 10 {
				fails++
				t.Errorf("interned %d: memo of (%q, %q) = %q, %q, %q, the original %q, %q, %q", bound, tg[0], tg[1], got, slot.pathClass("/healthz.php", &scratch), slot.toolLabel(&scratch),
					want, class, request.ToolLabel(tg[0], tg[1], class))
			}
			seen[want] = true
		}
		for tpl := range seen {
			if got, want := tab.canonical(tpl), orig.canonical(tpl); got != want && fails < 20 {
				fails++
				t.Errorf("interned %d: canonical(%q) = %q, the original %q", bound, tpl, got, want)
			}
		}
		var namespaced, query int
		for place := range orig.folded {
			if strings.HasPrefix(place, "?") {
				query++
			} else if strings.HasSuffix(place, ":") {
				namespaced++
			}
		}
		if len(orig.folded) < 10 || namespaced == 0 || query == 0 {
			t.Errorf("the stream folded %d places (%d after a namespace, %d query keys): it tests too little", len(orig.folded), namespaced, query)
		}
		// A matcher answers the same through its memo as without. Fifty
		// templates spread evenly over the sorted set, not the first fifty
		// of map order: a random pick held no template with a query in
		// about one run of four, and the check below then failed.
		all := slices.Sorted(maps.Keys(seen))
		var some []string
		for i := 0; i < len(all) && len(some) < 50; i += max(1, len(all)/50) {
			some = append(some, all[i])
		}
		// And the same without splitting the targets whose shape fits no
		// template (shapeFits): with the templates that have a query alone
		// (a crawler's expensive routes, often), many are turned away so.
		var withQuery []string
		for _, tpl := range some {
			if strings.Contains(tpl, "?") {
				withQuery = append(withQuery, tpl)
			}
		}
		for _, m := range []*TemplateMatcher{NewTemplateMatcher(some), NewTemplateMatcher(withQuery)} {
			rejected := 0
			for _, tg := range targets {
				got, gotOK := m.Match(tg[0], tg[1])
				want, wantOK := m.matchSplit(tg[0], tg[1])
				if (got != want || gotOK != wantOK) && fails < 20 {
					fails++
					t.Errorf("Match(%q, %q) = %q, %v; split and compared with every template %q, %v", tg[0], tg[1], got, gotOK, want, wantOK)
				}
				if !m.shapeFits(tg[0], tg[1]) {
					rejected++
				}
			}
			if len(withQuery) == 0 || rejected == 0 {
				t.Errorf("%d templates with a query, %d of %d targets turned away by their shape: the test tests too little", len(withQuery), rejected, len(targets))
			}
		}
		for _, tb := range []*routeTable{tab, memoTab} {
			if len(tb.folded) != len(orig.folded) || len(tb.literals) != len(orig.literals) {
				t.Errorf("interned %d: %d places folded and %d tracked, the original %d and %d", bound, len(tb.folded), len(tb.literals), len(orig.folded), len(orig.literals))
			}
		}
		if len(tab.interned) > bound || len(tab.shapes) > bound {
			t.Errorf("%d templates interned and %d shapes, bound %d", len(tab.interned), len(tab.shapes), bound)
		}
	}
}

// FuzzRouteTable feeds a stream of targets, one a line ("path?query"),
// three times over (so that places fold) to the table and its reference.
func FuzzRouteTable(f *testing.F) {
	f.Add("/wiki/Seoul\n/wiki/Talk:Seoul?action=history\n/a:{b:123?%zz=1&k=v")
	f.Add("/2026/10/hello_world_again/?replytocom=4121\n/?s=caddy+rate+limit\n/w/%ED%8A%B9%EC%88%98:%EC%B5%9C%EA%B7%BC")
	var b strings.Builder
	for _, tg := range benchreqs.RouteTargets(200, 3) {
		b.WriteString(tg[0] + "?" + tg[1] + "\n")
	}
	f.Add(b.String())
	f.Fuzz(func(t *testing.T, stream string) {
		tab, orig := newRouteTable(), newRouteTableOriginal()
		for range 3 {
			for line := range strings.SplitSeq(stream, "\n") {
				p, q, _ := strings.Cut(line, "?")
				if got, want := tab.template(p, q), orig.template(p, q); got != want {
					t.Fatalf("template(%q, %q) = %q, the original %q", p, q, got, want)
				}
			}
		}
	})
}
