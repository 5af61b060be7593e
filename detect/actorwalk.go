package detect

import (
	"net/netip"
	"slices"
	"strings"
)

// What an actor walked, counted on its own addresses. A fingerprint's
// counts (Cluster.Labels, Routes, Versions) hold everyone under it: the
// readers who share the crawler's browser family and language (on their own
// browser versions, fetching the pages' assets) and its other clients of the
// day. A crawler finding names the actor alone (its browser versions, the
// pages it walked, their counts, what they cost: its routes, the share of
// its pages no cache holds, its share of PHP's time), so each address keeps
// PHP's time on its requests (AddressBehaviour.phpMicros) and what it asked
// for: a count per walk, a (tool label, route template, browser major
// version) its cluster numbers in order of first sight (Cluster.walkID).
// The finding sums those of the actor's addresses (Cluster.walkedBy).
//
// A spread crawl's address walks one or two of them, a reader a page and
// its assets, a concentrated scraper's address its dozen tools: the first
// two walks are held in the address's record (eight bytes each: the record
// is in the allocator's 128-byte class), the rest in a list beside it
// (walkMore), kept in walk order and searched by halves. A request costs
// one map look-up on its cluster's walks; an address allocates once for
// its third to eighth walks, and its list grows by doubling past them.

// walkKey is one thing an address can ask for: a tool label (what
// walkedCounts names), the route template as the table folded it when the
// request came, and the user agent's major version ("" for none). member
// is the fingerprint it came under in an actor joined over several (its
// index in Cluster.Members), 0 otherwise.
type walkKey struct {
	label, template, version string
	member                   uint16
}

// maxWalks bounds the walks a cluster numbers: labels and templates come
// from URLs and versions from the User-Agent, which an attacker can vary
// without limit. Past it, walks share one (otherWalk), as Labels and Routes
// share "(other)" past maxLabels.
const maxWalks = 4096

// otherWalk is the walk the ones past maxWalks share: no label, template or
// version of its own.
var otherWalk = walkKey{label: "(other)", template: OtherRoute}

// walkID numbers k among c's walks, in order of first sight.
func (c *Cluster) walkID(k walkKey) uint16 {
	if id, ok := c.walkIDs[k]; ok {
		return id
	}
	if c.walkIDs == nil {
		c.walkIDs = map[walkKey]uint16{}
	}
	if len(c.walkIDs) >= maxWalks-1 && k != otherWalk {
		return c.walkID(otherWalk)
	}
	id := uint16(len(c.walkIDs))
	c.walkIDs[k] = id
	return id
}

// walkNames lists c's walks by id: the keys of walkIDs, which is all the
// hot path keeps.
func (c *Cluster) walkNames() []walkKey {
	names := make([]walkKey, len(c.walkIDs))
	for k, id := range c.walkIDs {
		names[id] = k
	}
	return names
}

// walkCount is how many requests an address sent on one walk of its
// cluster. One address sends fewer than 2^32 requests in a window (a 4 GiB
// log holds some 16 million lines).
type walkCount struct {
	n  uint32
	id uint16
}

// addressWalk is what one address walked in the window: its first two
// walks inline, the others (more, in walk order) only when it had some.
type addressWalk struct {
	first, second walkCount
	more          *walkMore
}

// walkMore holds an address's walks past its first two, in walk order:
// in the record's own inline array (one allocation of 80 bytes for a
// reader's page, stylesheet, script, logo and pictures) until they
// outgrow it.
type walkMore struct {
	counts []walkCount
	inline [6]walkCount
}

// add counts one request on walk id.
func (w *addressWalk) add(id uint16) { w.addN(id, 1) }

// addN counts n requests on walk id.
func (w *addressWalk) addN(id uint16, n uint32) {
	switch {
	case w.first.n == 0:
		w.first = walkCount{n: n, id: id}
	case w.first.id == id:
		w.first.n += n
	case w.second.n == 0:
		w.second = walkCount{n: n, id: id}
	case w.second.id == id:
		w.second.n += n
	default:
		w.addMore(id, n)
	}
}

// addMore counts n requests on walk id, which is neither of the first two.
func (w *addressWalk) addMore(id uint16, n uint32) {
	if w.more == nil {
		w.more = &walkMore{}
		w.more.counts = w.more.inline[:0]
	}
	more := w.more.counts
	i, found := slices.BinarySearchFunc(more, id, func(c walkCount, id uint16) int { return int(c.id) - int(id) })
	if found {
		more[i].n += n
		return
	}
	w.more.counts = slices.Insert(more, i, walkCount{n: n, id: id})
}

// each calls f with each walk of the address and its requests.
func (w *addressWalk) each(f func(id uint16, n int)) {
	if w.first.n == 0 {
		return
	}
	f(w.first.id, int(w.first.n))
	if w.second.n > 0 {
		f(w.second.id, int(w.second.n))
	}
	if w.more != nil {
		for _, c := range w.more.counts {
			f(c.id, int(c.n))
		}
	}
}

// merged is w with the walks of b added, b's walk ids mapped by remap
// (from b's cluster to w's); w is not changed, nor shares a list with the
// result.
func (w addressWalk) merged(b addressWalk, remap func(uint16) uint16) addressWalk {
	var out addressWalk
	w.each(func(id uint16, n int) { out.addN(id, uint32(n)) })
	b.each(func(id uint16, n int) { out.addN(remap(id), uint32(n)) })
	return out
}

// actorWalked is what a set of a cluster's addresses walked in the window:
// their requests by tool label and by route template (as the table folds
// it at the end), by major version for each of the cluster's fingerprints
// (Cluster.Members' order; one for a single fingerprint's), their requests
// and assets, and PHP's time on them.
type actorWalked struct {
	labels, routes   map[string]int
	versions         []map[string]int
	requests, assets int
	phpSeconds       float64
}

// walkedBy sums what the addresses of actor walked; canonical folds a
// route template as the table does at the end.
func (c *Cluster) walkedBy(actor map[netip.Addr]*AddressBehaviour, canonical func(string) string) actorWalked {
	perWalk := make([]int, len(c.walkIDs))
	var phpMicros uint64
	out := actorWalked{labels: map[string]int{}, routes: map[string]int{}, versions: make([]map[string]int, max(len(c.Members), 1))}
	for _, ab := range actor {
		out.requests += ab.Requests
		out.assets += ab.Assets
		phpMicros += ab.phpMicros
		ab.walk.each(func(id uint16, n int) { perWalk[id] += n })
	}
	out.phpSeconds = float64(phpMicros) / 1e6
	for i := range out.versions {
		out.versions[i] = map[string]int{}
	}
	names := c.walkNames()
	for id, n := range perWalk {
		if n == 0 {
			continue
		}
		k := names[id]
		out.labels[k.label] += n
		out.routes[canonical(k.template)] += n
		if k.version != "" && int(k.member) < len(out.versions) {
			out.versions[k.member][k.version] += n
		}
	}
	return out
}

// userAgent names family with the major versions of versions, most used
// first ("Chrome 121/120/119"), the family alone when none was seen.
func userAgent(family string, versions map[string]int) string {
	vs := topLabels(versions, 4)
	if len(vs) == 0 {
		return family
	}
	return family + " " + strings.Join(vs, "/")
}

// Labels counts the requests of all the cluster's addresses in the window
// by tool label ("Special:Contributions (path)", "asset"): the whole
// fingerprint's, readers and all.
func (c *Cluster) Labels() map[string]int {
	return c.walkedBy(c.IPs, func(tpl string) string { return tpl }).labels
}
