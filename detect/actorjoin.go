package detect

import (
	"math"
	"math/bits"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
)

// Fingerprints that are one actor. A fingerprint (ClusterKey) is one
// browser family, language, login state and client hints; a flood sent
// through residential proxies draws its User-Agent and Accept-Language from
// a rotating set, so one actor shows as many fingerprints, each a fraction
// of it, sharing their fingerprints with the readers who use those
// browsers. Judged one fingerprint at a time, the flood is a crawler of a
// few thousand addresses (the largest part) and the rest is missed or
// listed as separate crawlers.
//
// What the parts share is what they do, and joinActors joins two
// fingerprints' bursts (burstPart: the addresses, readers apart, that sent
// most of their requests in the span where the fingerprint's rate rose)
// when they did the same thing at the same time:
//
//   - the same login state;
//   - spans that overlap over at least minJoinOverlap of the shorter one,
//     and rates that rose and fell together: a correlation of their
//     per-minute counts of at least minJoinShape over the spans and as
//     long again on each side (within the window; with no minute outside
//     the spans there is no shape to compare, and the overlap decides);
//   - the same route templates: a cosine of at least minJoinRoutes between
//     the counts of their addresses that walked each template;
//   - the same method: shares of POST requests within maxJoinPostGap;
//   - the same pace per address: medians of requests per address within a
//     factor maxJoinPacing;
//   - and neither fetched assets (under maxAssetShare of its requests): a
//     crowd of browsers rendering pages is people, whatever they share.
//
// Joined, the parts are one Cluster (joinClusters) that the crawler
// detector judges as it judges a fingerprint, its key the largest part's.
const (
	minJoinOverlap = 0.5
	minJoinShape   = 0.8
	minJoinRoutes  = 0.8
	maxJoinPostGap = 0.2
	maxJoinPacing  = 2.0
)

// actorPart is one fingerprint's burst as joinActors weighs it.
type actorPart struct {
	c *Cluster
	// start and end bound its span (unix minutes, [start, end)).
	start, end int64
	// perMinute counts its addresses' requests by arrival minute.
	perMinute map[int64]int
	// routes counts, per route template, its addresses that walked it.
	routes                  map[string]float64
	requests, posts, assets int
	// perAddress is the median of requests per address.
	perAddress float64
}

// burstPart measures c's burst, if its rate (readers apart) rose in the
// window as riseOf judges a rise, whatever its share of the window.
func (ev *Evidence) burstPart(c *Cluster, bFrom, bTo time.Time) (actorPart, bool) {
	perMinute := c.CrawlerPerMinute()
	base, _ := ev.clusterBaseline10(c, perMinute, bFrom, bTo)
	peak, peakAt := rollingMax(perMinute, ev.From, ev.To, 10)
	if !poissonExcess(float64(peak), base, riseRatio, riseZ) {
		return actorPart{}, false
	}
	start, end, ok := burstSpan(perMinute, base, peakAt, ev.From, ev.To)
	if !ok {
		return actorPart{}, false
	}
	names := c.routeNames()
	p := actorPart{c: c, start: start, end: end, perMinute: map[int64]int{}, routes: map[string]float64{}}
	var perIP []int
	for _, ab := range c.IPs {
		if ab.Reader() || 2*ab.inSpan(start, end) < ab.Requests {
			continue
		}
		perIP = append(perIP, ab.Requests)
		p.requests += ab.Requests
		p.posts += int(ab.Posts)
		p.assets += ab.Assets
		for _, r := range ab.arrivals {
			p.perMinute[int64(r.minute)] += int(r.n)
		}
		for b := ab.routes; b != 0; b &= b - 1 {
			p.routes[names[bits.TrailingZeros64(b)]]++
		}
	}
	if len(perIP) == 0 {
		return actorPart{}, false
	}
	p.perAddress = Median(perIP)
	return p, true
}

// sameActor applies the criteria above to two parts; from and to bound
// the window (unix minutes).
func sameActor(a, b *actorPart, from, to int64) bool {
	if a.c.Key.LoggedIn != b.c.Key.LoggedIn {
		return false
	}
	share := func(n, of int) float64 { return float64(n) / float64(max(of, 1)) }
	if share(a.assets, a.requests) >= maxAssetShare || share(b.assets, b.requests) >= maxAssetShare {
		return false
	}
	if math.Abs(share(a.posts, a.requests)-share(b.posts, b.requests)) > maxJoinPostGap {
		return false
	}
	if r := a.perAddress / b.perAddress; r > maxJoinPacing || r < 1/maxJoinPacing {
		return false
	}
	overlap := min(a.end, b.end) - max(a.start, b.start)
	if float64(overlap) < minJoinOverlap*float64(min(a.end-a.start, b.end-b.start)) {
		return false
	}
	if cosine(a.routes, b.routes) < minJoinRoutes {
		return false
	}
	lo, hi := min(a.start, b.start), max(a.end, b.end)
	lo, hi = max(from, lo-(hi-lo)), min(to, hi+(hi-lo))
	if lo >= min(a.start, b.start) && hi <= max(a.end, b.end) {
		return true // no minute outside the spans: no shape to compare
	}
	return correlation(a.perMinute, b.perMinute, lo, hi) >= minJoinShape
}

// cosine is the cosine similarity of two count vectors.
func cosine(a, b map[string]float64) float64 {
	var dot, na, nb float64
	for k, v := range a {
		dot += v * b[k]
		na += v * v
	}
	for _, v := range b {
		nb += v * v
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// correlation is Pearson's correlation of two per-minute counts over the
// minutes [from, to); 0 when either is flat.
func correlation(a, b map[int64]int, from, to int64) float64 {
	n := float64(to - from)
	if n < 2 {
		return 0
	}
	var sa, sb, saa, sbb, sab float64
	for m := from; m < to; m++ {
		x, y := float64(a[m]), float64(b[m])
		sa, sb, saa, sbb, sab = sa+x, sb+y, saa+x*x, sbb+y*y, sab+x*y
	}
	va, vb := saa-sa*sa/n, sbb-sb*sb/n
	if va <= 0 || vb <= 0 {
		return 0
	}
	return (sab - sa*sb/n) / math.Sqrt(va*vb)
}

// joinActors returns clusters with the fingerprints that are one actor
// joined (the criteria above), each joined cluster in the place of its
// largest part, and records the joined ones in the traffic
// (Traffic.ClusterOf) for the consumers of the findings made of them.
func (ev *Evidence) joinActors(clusters []*Cluster, bFrom, bTo time.Time) []*Cluster {
	var parts []actorPart
	for _, c := range clusters {
		if p, ok := ev.burstPart(c, bFrom, bTo); ok {
			parts = append(parts, p)
		}
	}
	if len(parts) < 2 {
		return clusters
	}
	from, to := ev.From.Unix()/60, ev.To.Unix()/60
	group := make([]int, len(parts))
	for i := range group {
		group[i] = i
	}
	var root func(int) int
	root = func(i int) int {
		for group[i] != i {
			group[i] = group[group[i]]
			i = group[i]
		}
		return i
	}
	for i := range parts {
		for j := i + 1; j < len(parts); j++ {
			if root(i) != root(j) && sameActor(&parts[i], &parts[j], from, to) {
				group[root(j)] = root(i)
			}
		}
	}
	members := map[int][]*actorPart{}
	for i := range parts {
		members[root(i)] = append(members[root(i)], &parts[i])
	}
	joined := map[*Cluster]*Cluster{} // part -> its joined cluster
	drop := map[*Cluster]bool{}
	for _, ps := range members {
		if len(ps) < 2 {
			continue
		}
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].requests > ps[j].requests })
		cs := make([]*Cluster, len(ps))
		for i, p := range ps {
			cs[i] = p.c
			drop[p.c] = true
		}
		joined[cs[0]] = joinClusters(cs)
	}
	if len(joined) == 0 {
		return clusters
	}
	t := ev.Traffic
	if t.joined == nil {
		t.joined = map[request.ClusterKey]*Cluster{}
	}
	out := make([]*Cluster, 0, len(clusters))
	for _, c := range clusters {
		if j := joined[c]; j != nil {
			out = append(out, j)
			t.joined[j.Key] = j
		} else if !drop[c] {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Requests > out[j].Requests })
	return out
}

// routeNames names c's route bits (AddressBehaviour.routes); the last bit
// stands for every template past the first 63.
func (c *Cluster) routeNames() *[64]string {
	var names [64]string
	names[63] = OtherRoute
	for tpl, b := range c.routeBits {
		names[b] = tpl
	}
	return &names
}

// joinClusters is one cluster holding the parts' requests, the first
// part's key and user-agent versions; Members lists the parts' keys.
func joinClusters(parts []*Cluster) *Cluster {
	lead := parts[0]
	j := &Cluster{Key: lead.Key, minutes: map[int64]*clusterMinute{}, IPs: map[netip.Addr]*AddressBehaviour{},
		Classes: map[request.PathClass]int{}, Routes: map[string]int{}, lastLogged: -1, family: lead.family}
	for _, c := range parts {
		j.Members = append(j.Members, MemberOf{Key: c.Key})
		addCounts(j.Classes, c.Classes)
		addCounts(j.Routes, c.Routes)
		for m, v := range c.minutes {
			e := j.minuteEntry(m)
			e.arrived += v.arrived
			e.good += v.good
			e.phpSeconds += v.phpSeconds
		}
		j.logged = append(j.logged, c.logged...)
		j.Requests += c.Requests
		j.PHPSeconds += c.PHPSeconds
		j.Cookies += c.Cookies
		names := c.routeNames()
		// Its walks are the joined cluster's, as the walks of fingerprint
		// len(j.Members)-1 (versions are told per fingerprint).
		walks := make([]uint16, len(c.walkIDs))
		for id, k := range c.walkNames() {
			k.member = uint16(min(len(j.Members)-1, math.MaxUint16))
			walks[id] = j.walkID(k)
		}
		remap := func(id uint16) uint16 { return walks[id] }
		for ip, ab := range c.IPs {
			j.IPs[ip] = joinBehaviour(j.IPs[ip], ab, func(b uint64) uint64 {
				var out uint64
				for ; b != 0; b &= b - 1 {
					out |= j.routeBit(names[bits.TrailingZeros64(b)])
				}
				return out
			}, remap)
		}
		for ip, ab := range c.before {
			if j.before == nil {
				j.before = map[netip.Addr]*AddressBehaviour{}
			}
			j.before[ip] = joinBehaviour(j.before[ip], ab, func(uint64) uint64 { return 0 }, remap)
		}
	}
	return j
}

// joinBehaviour is what one address did under two fingerprints (a flood
// that changes its User-Agent between attempts); b's route bits are
// mapped by remap, its walks by remapWalk. into may be nil.
func joinBehaviour(into, b *AddressBehaviour, remap func(uint64) uint64, remapWalk func(uint16) uint16) *AddressBehaviour {
	if into == nil {
		c := *b
		c.arrivals = slices.Clone(b.arrivals)
		c.routes = remap(b.routes)
		c.walk = addressWalk{}.merged(b.walk, remapWalk)
		return &c
	}
	into.walk = into.walk.merged(b.walk, remapWalk)
	if into.Requests == 0 || b.First < into.First {
		into.First = b.First
	}
	if b.Pages > 0 && (into.Pages == 0 || b.FirstPage < into.FirstPage) {
		into.FirstPage = b.FirstPage
	}
	into.LastPage = max(into.LastPage, b.LastPage)
	into.Requests += b.Requests
	into.Assets += b.Assets
	into.Pages += b.Pages
	into.Posts += b.Posts
	into.Credentialed += b.Credentialed
	into.SessionClicks += b.SessionClicks
	into.phpMicros += b.phpMicros
	into.routes |= remap(b.routes)
	runs := append(into.arrivals, b.arrivals...)
	sort.SliceStable(runs, func(i, k int) bool { return runs[i].minute < runs[k].minute })
	into.arrivals = runs[:0]
	for _, r := range runs {
		if n := len(into.arrivals); n > 0 && into.arrivals[n-1].minute == r.minute {
			into.arrivals[n-1].n += r.n
		} else {
			into.arrivals = append(into.arrivals, r)
		}
	}
	return into
}

// addCounts adds src's counts to dst.
func addCounts[K comparable](dst, src map[K]int) {
	for k, v := range src {
		dst[k] += v
	}
}

// MemberOf is one fingerprint of an actor joined over several: its key.
type MemberOf struct {
	Key request.ClusterKey
}

// ClusterOf is the cluster of fingerprint k: the actor it was joined into
// when it is the key of one (joinActors), else its own.
func (t *Traffic) ClusterOf(k request.ClusterKey) *Cluster {
	if j := t.joined[k]; j != nil {
		return j
	}
	return t.clusters[k]
}

// minMethodShare: a crawler whose requests were POSTs at least this often
// is a flood of POSTs (Fingerprint.Method), and a rule on it matches the
// method.
const minMethodShare = 0.95

// posts counts the POSTs of the burst's addresses (readers and the
// fingerprint's other clients apart).
func (b burst) posts() int {
	n := 0
	for ip, ab := range b.c.IPs {
		if !ab.Reader() && b.inActor(ip) {
			n += int(ab.Posts)
		}
	}
	return n
}

// rotating lists in fp the user agents (one per family, with the major
// versions seen, each member's by versions in members' order: the actor's
// own, actorWalked) and languages of an actor's fingerprints, and returns
// its languages in order ("" for none), for a summary to name.
func (fp *Fingerprint) rotating(members []MemberOf, seen []map[string]int) []string {
	var langs, families []string
	versions := map[string][]string{}
	for i, m := range members {
		f := m.Key.UA
		if !slices.Contains(families, f) {
			families = append(families, f)
		}
		var mine map[string]int
		if i < len(seen) {
			mine = seen[i]
		}
		for _, v := range topLabels(mine, 4) {
			if !slices.Contains(versions[f], v) {
				versions[f] = append(versions[f], v)
			}
		}
		if !slices.Contains(langs, m.Key.Lang) {
			langs = append(langs, m.Key.Lang)
		}
	}
	for _, f := range families {
		fp.UserAgents = append(fp.UserAgents, strings.TrimSpace(f+" "+strings.Join(versions[f], "/")))
	}
	if len(langs) > 1 {
		fp.AcceptLanguages = langs
	}
	return langs
}
