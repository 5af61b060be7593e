package detect

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources"
)

// TestRouteTableFolds: names that vary too much in one place are titles, not
// routes, and fold into {slug}, those observed before the fold included; a
// query key with few values keeps them (they name routes); past maxRoutes
// templates, requests land in one counted row.
func TestRouteTableFolds(t *testing.T) {
	tab := newRouteTable()
	r := &sources.Request{Origin: sources.OriginUpstream, Duration: 0.1}
	var early []string
	for i := 0; i < 3*maxLiterals; i++ {
		tpl := tab.template("/wiki/Page"+string(rune('A'+i%26))+string(rune('a'+i/26)), "")
		if i < 3 {
			early = append(early, tpl)
		}
		tab.observe(tpl, 1, r)
		for _, a := range []string{"edit", "history"} {
			tab.observe(tab.template("/index.php", "title=T"+fmt.Sprint(i)+"&action="+a), 1, r)
		}
	}
	if early[0] != "/wiki/PageAa" {
		t.Errorf("before the fold a name is its own template: %q", early[0])
	}
	routes := tab.routes()
	if len(routes) != 3 {
		keys := []string{}
		for k := range routes {
			keys = append(keys, k)
		}
		t.Fatalf("routes %q, want /wiki/{slug} and two index.php actions", keys)
	}
	if n := routes["/wiki/{slug}"][1].Requests; n != 3*maxLiterals {
		t.Errorf("/wiki/{slug} holds %d requests, want all %d (those before the fold too)", n, 3*maxLiterals)
	}
	if routes["/index.php?action=history&title"] == nil {
		t.Errorf("action's few values should stay in the template: %v", routes)
	}

	big := newRouteTable()
	for i := 0; i < maxRoutes+10; i++ {
		// every path distinct at the first segment, folded into /{slug}...
		big.observe(big.template(fmt.Sprintf("/r%04x/x", i), ""), 1, r)
		// ...and distinct templates that never fold: a new query key each time
		big.observe(big.template("/q", fmt.Sprintf("k%04x=1", i)), 1, r)
	}
	if len(big.records) > maxRoutes+1 {
		t.Errorf("%d records, cap %d plus %q", len(big.records), maxRoutes, OtherRoute)
	}
	if big.records[OtherRoute] == nil || big.records[OtherRoute].at(1).requests == 0 {
		t.Errorf("requests past the cap must be counted in %q", OtherRoute)
	}
}

// TestRoutesLeaveTheTableAsItWas: the records of templates that folded
// into one canonical template add up under it, asking twice gives the same
// counts, and the table's own records are unchanged.
func TestRoutesLeaveTheTableAsItWas(t *testing.T) {
	tab := newRouteTable()
	r := &sources.Request{Origin: sources.OriginUpstream, Duration: 0.1}
	for i := 0; i < 3*maxLiterals; i++ {
		for minute := int64(1); minute <= 3; minute++ {
			tab.observe(tab.template("/wiki/Page"+string(rune('A'+i%26))+string(rune('a'+i/26)), ""), minute, r)
		}
		tab.observe(tab.template("/index.php", "action=edit"), 2, r)
	}
	before := map[string][]routeMinuteAt{}
	for tpl, rec := range tab.records {
		before[tpl] = append([]routeMinuteAt(nil), rec.minutes()...)
	}
	first := tab.routes()
	if got := first["/wiki/{slug}"]; len(got) != 3 || got[2].Requests != 3*maxLiterals {
		t.Fatalf("/wiki/{slug}: %+v, want %d requests in each of 3 minutes", got, 3*maxLiterals)
	}
	if got := first["/index.php?action=edit"]; got[2].Requests != 3*maxLiterals {
		t.Fatalf("/index.php?action=edit: %+v, want %d requests in minute 2", got, 3*maxLiterals)
	}
	// The same counts; the seconds to rounding, as routes adds the
	// records in the map's order.
	second := tab.routes()
	for k, minutes := range first {
		again := second[k]
		if len(again) != len(minutes) {
			t.Fatalf("%q asked again: %+v, then %+v", k, minutes, again)
		}
		for m, c := range minutes {
			n := again[m]
			if math.Abs(n.PHPSeconds-c.PHPSeconds) > 1e-9 {
				t.Errorf("%q asked again: %v PHP seconds, then %v", k, c.PHPSeconds, n.PHPSeconds)
			}
			n.PHPSeconds = c.PHPSeconds
			if n != c {
				t.Errorf("%q asked again: %+v, then %+v", k, c, n)
			}
		}
	}
	for tpl, rec := range tab.records {
		if !reflect.DeepEqual(rec.minutes(), before[tpl]) {
			t.Errorf("record %q changed by routes: %+v, was %+v", tpl, rec.minutes(), before[tpl])
		}
	}
}

func TestTemplateMatcher(t *testing.T) {
	m := NewTemplateMatcher([]string{"/{n}/{n}/{slug}/?replytocom", "/?s", "/wiki/{slug}", "/index.php?action=history&title", "/w/Talk:{slug}"})
	tests := []struct {
		path, query, want string
	}{
		{"/2026/09/other-post-title-here/", "replytocom=77", "/{n}/{n}/{slug}/?replytocom"},
		{"/2026/09/other-post-title-here/", "", ""},
		{"/", "s=x", "/?s"},
		{"/", "s=x&paged=2", ""}, // another key set is another template
		{"/wiki/Main_Page", "", "/wiki/{slug}"},
		{"/index.php", "title=Seoul&action=history", "/index.php?action=history&title"},
		{"/index.php", "title=Seoul&action=edit", ""},
		{"/w/Talk:Seoul", "", "/w/Talk:{slug}"},
		{"/w/User:Seoul", "", ""},
		// A literal segment written with an escape is still that segment.
		{"/index%2Ephp", "title=Seoul&action=history", "/index.php?action=history&title"},
		{"/%77/Talk:Seoul", "", "/w/Talk:{slug}"},
		{"/api.php", "title=Seoul&action=history", ""},
		{"/W/Talk:Seoul", "", ""},
		// A value the template names is compared unescaped, and the first
		// of a repeated key is its value; a value it does not name is not
		// read, however it is written.
		{"/index.php", "title=Seoul&action=%68istory", "/index.php?action=history&title"},
		{"/index.php", "title=Seoul&action=history&action=edit", "/index.php?action=history&title"},
		{"/index.php", "title=Seoul&action=edit&action=history", ""},
		{"/index.php", "title=%ZZ&action=history", "/index.php?action=history&title"},
	}
	for _, tt := range tests {
		got, _ := m.Match(tt.path, tt.query)
		if got != tt.want {
			t.Errorf("Match(%q, %q) = %q, want %q", tt.path, tt.query, got, tt.want)
		}
	}
	// A value that normalises to a placeholder is no value: written as it
	// is, "p=2" would match a template naming it, which no table writes.
	if got, ok := NewTemplateMatcher([]string{"/?p=2"}).Match("/", "p=2"); ok {
		t.Errorf("Match(\"/\", \"p=2\") = %q, want none: 2 is a placeholder, not a value", got)
	}
}

// TestTemplateMatcherSegmentCounts holds the matcher's filter by segment
// count to the split: a target deeper than a template's deepest is cut at
// "{rest}" and falls under a template of that depth, and an empty path is
// the root's one segment. A filter that took a target's count for its raw
// depth, or a template's "{rest}" for no segment, turns these away.
func TestTemplateMatcherSegmentCounts(t *testing.T) {
	// Segments keeps 12 segments and cuts the rest.
	deep := "/" + strings.Repeat("{slug}/", 12) + "{rest}"
	m := NewTemplateMatcher([]string{"/", deep, "/a/{slug}"})
	tests := []struct {
		path, query, want string
	}{
		{"", "", "/"},
		{"/", "x=1", ""},
		{"/a/b", "", "/a/{slug}"},
		{"/a/b/c", "", ""},
		{"/" + strings.Repeat("x/", 12) + "y", "", deep},
		{"/" + strings.Repeat("x/", 30) + "y", "", deep},
		{"/" + strings.Repeat("x/", 11) + "y", "", ""},
	}
	for _, tt := range tests {
		got, _ := m.Match(tt.path, tt.query)
		want, _ := m.matchSplit(tt.path, tt.query)
		if got != tt.want || got != want {
			t.Errorf("Match(%q, %q) = %q, want %q (split: %q)", tt.path, tt.query, got, tt.want, want)
		}
	}
}

// TestRouteRecordMinutes holds records' minutes, kept in order in place, to
// a map of them: requests out of order, and the records' counts added by
// minute.
func TestRouteRecordMinutes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	want := map[int32]routeMinute{}
	var recs []*routeRecord
	for range 20 {
		rec := &routeRecord{}
		m := int64(rng.IntN(50))
		for range 200 {
			switch rng.IntN(10) {
			case 0: // a late line: an earlier minute
				m -= int64(rng.IntN(5))
			case 1, 2:
				m += int64(1 + rng.IntN(3))
			}
			php := rng.IntN(3)
			rm := rec.at(m)
			rm.requests++
			rm.php += int32(php)
			w := want[int32(m)]
			w.Requests++
			w.PHP += php
			want[int32(m)] = w
		}
		all := rec.minutes()
		for i := 1; i < len(all); i++ {
			if all[i-1].minute >= all[i].minute {
				t.Fatalf("minutes out of order at %d: %d after %d", i, all[i].minute, all[i-1].minute)
			}
		}
		recs = append(recs, rec)
	}
	if got := minuteSums(recs...); !reflect.DeepEqual(got, want) {
		t.Errorf("the records' minutes differ from the map's:\n%v\n%v", got, want)
	}
}

// TestRouteTableShapeAfterFold: a shape (a template before folding) is
// remembered with the template it folded to, and two targets of one shape
// get one template without the places being looked up again. But a shape
// seen before its place folded must not keep its old template: after the
// fold, "/wiki/Seoul" is "/wiki/{slug}", though the shape "/wiki/Seoul" was
// remembered as "/wiki/Seoul".
func TestRouteTableShapeAfterFold(t *testing.T) {
	tab := newRouteTable()
	if got := tab.template("/wiki/Seoul", ""); got != "/wiki/Seoul" {
		t.Fatalf("first title: %q", got)
	}
	// An escaped letter unescapes to the same shape: the remembered template.
	if got := tab.template("/wiki/%53eoul", ""); got != "/wiki/Seoul" {
		t.Errorf("same shape, other bytes: %q", got)
	}
	if len(tab.shapes) != 1 {
		t.Errorf("%d shapes remembered for one", len(tab.shapes))
	}
	folds := tab.folds
	for i := 0; tab.folds == folds; i++ {
		if i > maxLiterals {
			t.Fatalf("no fold after %d titles", i)
		}
		tab.template(fmt.Sprintf("/wiki/Page%c%c", 'A'+i/26, 'a'+i%26), "")
	}
	for _, p := range []string{"/wiki/Seoul", "/wiki/%53eoul"} {
		if got := tab.template(p, ""); got != "/wiki/{slug}" {
			t.Errorf("%s after the fold: %q, the shape's template before it", p, got)
		}
	}
	// A query value that names a route keeps its own shape and template.
	if a, b := tab.template("/index.php", "action=edit&title=Seoul"), tab.template("/index.php", "action=history&title=Seoul"); a == b {
		t.Errorf("two actions, one template %q", a)
	}
}

// observe adds one request under template tpl, logged in minute m: the
// record's look-up and the count Observe makes through a memo slot's record.
func (t *routeTable) observe(tpl string, m int64, r *sources.Request) {
	t.observeRecord(t.record(tpl), m, r)
}

// routes returns the table's counts by canonical template and minute: the
// sums measureRoutes takes, kept minute by minute so that tests can compare
// two tables.
func (t *routeTable) routes() map[string]map[int32]routeMinute {
	byCanonical := map[string][]*routeRecord{}
	for tpl, rec := range t.records {
		c := t.canonical(tpl)
		byCanonical[c] = append(byCanonical[c], rec)
	}
	out := make(map[string]map[int32]routeMinute, len(byCanonical))
	for c, recs := range byCanonical {
		out[c] = minuteSums(recs...)
	}
	return out
}

// minuteSums adds the records' counts by minute.
func minuteSums(recs ...*routeRecord) map[int32]routeMinute {
	out := map[int32]routeMinute{}
	for _, rec := range recs {
		for _, rm := range rec.minutes() {
			sum, c := out[rm.minute], rm.counts()
			sum.add(&c)
			out[rm.minute] = sum
		}
	}
	return out
}

// minutes returns the record's minutes in time order: its one chunk, or
// its chunks copied into one.
func (rec *routeRecord) minutes() []routeMinuteAt {
	switch len(rec.chunks) {
	case 0:
		return nil
	case 1:
		return rec.chunks[0]
	}
	n := 0
	for _, c := range rec.chunks {
		n += len(c)
	}
	out := make([]routeMinuteAt, 0, n)
	for _, c := range rec.chunks {
		out = append(out, c...)
	}
	return out
}
