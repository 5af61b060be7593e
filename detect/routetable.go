package detect

import (
	"cmp"
	"slices"
	"strings"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// Bounds of the route table. Templates come from URLs, which a client can vary
// without limit; shape rules (request/routetemplate.go) catch most identifiers, and
// the table folds what they miss: when one place in the path (the segments
// before it being equal) has held more than maxLiterals distinct names, they
// are titles, not routes ("/wiki/Main_Page", "/wiki/Seoul", ...), and all
// become "{slug}" there. Past maxRoutes templates, requests are counted in
// one "(other)" row, so memory grows with distinct templates up to the cap.
const (
	maxLiterals  = 40
	maxFoldPlace = 4096
	maxRoutes    = 2000
	// OtherRoute names the row of requests past maxRoutes templates.
	OtherRoute = "(other)"
)

// routeMinute is what one template's requests logged in one minute cost.
type routeMinute struct {
	Requests int
	// PHP counts responses PHP produced, PHPSeconds their durations; Static
	// those Caddy served from disk or cache, Proxy those Caddy made itself
	// (errors, rate limits): who answered, from the log's response headers.
	PHP        int
	PHPSeconds float64
	Static     int
	Proxy      int
	// CacheHits and CacheMisses count the responses whose cache headers
	// said a cache answered (counted in Static too: PHP did not run) or
	// passed the request on; responses without such headers are neither.
	CacheHits, CacheMisses int
}

func (a *routeMinute) add(b *routeMinute) {
	a.Requests += b.Requests
	a.PHP += b.PHP
	a.PHPSeconds += b.PHPSeconds
	a.Static += b.Static
	a.Proxy += b.Proxy
	a.CacheHits += b.CacheHits
	a.CacheMisses += b.CacheMisses
}

// routeRecord is one template's requests by the minute they were logged
// (unix seconds / 60), so that cost can be measured over any stretch (the
// baseline, minutes without a queue) once it is known. Its minutes are
// in time order, each held in place: requests come in log order, so a
// request's minute is nearly always the last one or a new one after it.
// They are held in chunks, each with room for twice as many as the one
// before it, so that a template's minutes grow without being copied: the
// arrays a growing slice left behind were half of what the route table
// allocated on the bench log (2 of 3.8 MB), all of it memory touched for
// the first time while the heap grows, which costs microseconds a page on
// a virtual machine.
type routeRecord struct {
	// last is the entry at returned last, so that the next request of the
	// minute reads it without the chunks: a record is read once per
	// request, rarely by the request before (memoSlot.routeRecord), so each
	// level read is a cache miss.
	last   *routeMinuteAt
	chunks [][]routeMinuteAt
}

// routeMinuteAt is a routeMinute with its minute (runMinute), in 40 bytes
// rather than 64: there is one per template and minute it was asked for in,
// most of the route table on a long log. A template is asked for fewer than
// 2^31 times a minute.
type routeMinuteAt struct {
	minute                                               int32
	requests, php, static, proxy, cacheHits, cacheMisses int32
	phpSeconds                                           float64
}

// counts returns the minute's counts as a routeMinute.
func (a *routeMinuteAt) counts() routeMinute {
	return routeMinute{Requests: int(a.requests), PHP: int(a.php), PHPSeconds: a.phpSeconds, Static: int(a.static),
		Proxy: int(a.proxy), CacheHits: int(a.cacheHits), CacheMisses: int(a.cacheMisses)}
}

// at returns the counts of minute m (unix seconds / 60), added empty if
// new. The pointer holds until a minute before the last is added.
func (rec *routeRecord) at(m64 int64) *routeMinuteAt {
	m := runMinute(m64)
	if e := rec.last; e != nil && e.minute == m {
		return e
	}
	// Every entry found or added is held: one a late line inserts may
	// move the chunk it is in, and the last held with it.
	e := rec.find(m)
	rec.last = e
	return e
}

// find is at without last.
func (rec *routeRecord) find(m int32) *routeMinuteAt {
	n := len(rec.chunks)
	if n == 0 {
		rec.chunks = [][]routeMinuteAt{{{minute: m}}}
		return &rec.chunks[0][0]
	}
	last := rec.chunks[n-1]
	k := len(last)
	if last[k-1].minute == m {
		return &last[k-1]
	}
	if last[k-1].minute < m {
		if k < cap(last) {
			rec.chunks[n-1] = append(last, routeMinuteAt{minute: m})
			return &rec.chunks[n-1][k]
		}
		next := make([]routeMinuteAt, 1, 2*cap(last))
		next[0].minute = m
		rec.chunks = append(rec.chunks, next)
		return &next[0]
	}
	// A late line, before the last minute: a line that straddles a
	// minute's end, or a second log over the same hours. The minute is
	// found, or put in its place, in the last chunk that starts at or
	// before it (the first, for one before them all).
	ci := n - 1
	for ci > 0 && rec.chunks[ci][0].minute > m {
		ci--
	}
	c := rec.chunks[ci]
	i, found := slices.BinarySearchFunc(c, m, func(a routeMinuteAt, m int32) int { return cmp.Compare(a.minute, m) })
	if !found {
		rec.chunks[ci] = slices.Insert(c, i, routeMinuteAt{minute: m})
	}
	return &rec.chunks[ci][i]
}

// routeTable aggregates requests by route template in one streaming pass.
type routeTable struct {
	records map[string]*routeRecord
	// literals holds, per place in a path, the distinct names seen there
	// until the place folds; folded are the places that did, each with what
	// stands for its names ("{slug}", "Talk:{slug}"; "" for a query key).
	literals map[string]map[string]struct{}
	folded   map[string]string
	// folds counts the places folded so far: while it stays the same, a
	// target's template stays what it was (targetmemo.go).
	folds uint64

	// The hot path's scratch: template runs once per request, and a request
	// whose template and names the table holds already allocates nothing.
	// interned holds the templates built lately (a bounded table, cleared
	// when full, so that a client varying its URLs costs time, not memory).
	scratch  request.TemplateScratch
	place    []byte // the place being looked up
	prefix   []byte // the path folded so far
	built    []byte // the template being built
	interned map[string]string
	// shapes holds the templates of the shapes (templates before folding)
	// seen lately, bounded like interned; shape is the one being looked up.
	shapes map[string]foldedShape
	shape  []byte
}

// maxInterned bounds routeTable.interned (a variable for tests): a few times
// maxRoutes, so that the templates of a table full to its cap stay interned.
var maxInterned = 4 * maxRoutes

func newRouteTable() *routeTable {
	return &routeTable{records: map[string]*routeRecord{}, literals: map[string]map[string]struct{}{}, folded: map[string]string{},
		interned: map[string]string{}, shapes: map[string]foldedShape{}}
}

// template returns the template of a request as the table folds it now.
// Query values are kept for keys that have held at most maxLiterals distinct
// values so far: an enumeration ("action=edit|history|watch") names routes
// that cost differently, a search term or a title names one page.
func (t *routeTable) template(rawPath, rawQuery string) string {
	sc := &t.scratch
	sc.Reset()
	segs := sc.Segments(rawPath)
	items := sc.Query(rawQuery)
	// The target's shape (its template before folding) comes again far more
	// often than the target: every title under one place is "/w/{slug}".
	// While the folds count is the one its template was folded under,
	// folding it again would give that template and track nothing new
	// (the argument of targetmemo.go), so the places are not looked up.
	t.shape = request.AppendTemplate(t.shape[:0], segs, items, rawQuery != "", true)
	if s, ok := t.shapes[string(t.shape)]; ok && s.folds == t.folds {
		return s.template
	}
	tpl := t.foldTemplate(segs, items, rawQuery != "")
	if len(t.shapes) >= maxInterned {
		clear(t.shapes)
	}
	t.shapes[string(t.shape)] = foldedShape{template: tpl, folds: t.folds}
	return tpl
}

// foldedShape is the template a shape folded to, and the route table's
// folds count after it did.
type foldedShape struct {
	template string
	folds    uint64
}

// foldTemplate folds the segments and query items of a target, tracking
// their names, and returns the template they make, interned.
func (t *routeTable) foldTemplate(segs []string, items []request.QueryItem, hadQuery bool) string {
	t.fold(segs, true)
	for i := range items {
		it := &items[i]
		if it.Value == "" {
			continue
		}
		t.place = append(append(t.place[:0], '?'), it.Key...)
		if _, ok := t.folded[string(t.place)]; ok {
			it.Value = ""
			continue
		}
		if t.track(t.place, it.Value) {
			t.folded[string(t.place)] = ""
			t.folds++
			it.Value = ""
		}
	}
	t.built = request.AppendTemplate(t.built[:0], segs, items, hadQuery, true)
	if tpl, ok := t.interned[string(t.built)]; ok {
		return tpl
	}
	tpl := string(t.built)
	if len(t.interned) >= maxInterned {
		clear(t.interned)
	}
	t.interned[tpl] = tpl
	return tpl
}

// track adds a name seen at a place and reports whether the place overflows
// with it: past maxLiterals names, its names are forgotten and the caller
// folds it. Past maxFoldPlace places, new places are not tracked. Place and
// name may be views of scratch memory: what the table keeps is copied.
func (t *routeTable) track(place []byte, name string) (overflows bool) {
	names, ok := t.literals[string(place)]
	if !ok {
		if len(t.literals) >= maxFoldPlace {
			return false
		}
		names = map[string]struct{}{}
		t.literals[string(place)] = names
	}
	if _, ok := names[name]; ok {
		return false
	}
	names[strings.Clone(name)] = struct{}{}
	if len(names) > maxLiterals {
		delete(t.literals, string(place))
		return true
	}
	return false
}

// fold replaces the names at folded places by placeholders, and with track
// counts the names at places not folded yet, folding those that overflow.
// A place is the path folded before the name, "|" and the name's namespace.
func (t *routeTable) fold(segs []string, track bool) {
	t.prefix = t.prefix[:0]
	for i, s := range segs {
		if s != "" && !request.IsPlaceholder(s) {
			ns := ""
			if n, rest, ok := request.CutByte(s, ':'); ok && rest != "" && !request.IsPlaceholder(rest) {
				ns = s[:len(n)+1]
			}
			t.place = append(append(t.place[:0], t.prefix...), '|')
			t.place = append(t.place, ns...)
			if ph, ok := t.folded[string(t.place)]; ok {
				segs[i] = ph
			} else if track && t.track(t.place, s) {
				ph := ns + request.PlaceholderSlug
				t.folded[string(t.place)] = ph
				t.folds++
				segs[i] = ph
			}
		}
		t.prefix = append(append(t.prefix, '/'), segs[i]...)
	}
}

// canonical is a template as the table folds it at the end: places that
// folded after it was first recorded fold it too.
func (t *routeTable) canonical(template string) string {
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
			if k, _, ok := strings.Cut(it, "="); ok {
				if _, folded := t.folded["?"+k]; folded {
					items[i] = k
				}
			}
		}
		out += "?" + strings.Join(items, "&")
	}
	return out
}

// record returns the record of template tpl, added if new; past maxRoutes
// templates, the one of OtherRoute. The record of a template stays the one
// returned: records are never dropped, and the table, once full, stays full.
func (t *routeTable) record(tpl string) *routeRecord {
	rec := t.records[tpl]
	if rec == nil {
		if len(t.records) >= maxRoutes {
			tpl = OtherRoute
			rec = t.records[tpl]
		}
		if rec == nil {
			rec = &routeRecord{}
			t.records[tpl] = rec
		}
	}
	return rec
}

// observeRecord adds one request to the record of its template (record),
// logged in minute m.
func (t *routeTable) observeRecord(rec *routeRecord, m int64, r *sources.Request) {
	rm := rec.at(m)
	rm.requests++
	switch r.Origin {
	case sources.OriginUpstream:
		rm.php++
		rm.phpSeconds += r.Duration
	case sources.OriginStatic:
		rm.static++
	case sources.OriginProxy:
		rm.proxy++
	}
	switch r.Cache {
	case sources.CacheHit:
		rm.cacheHits++
	case sources.CacheMiss:
		rm.cacheMisses++
	}
}
