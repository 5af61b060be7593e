package detect

import (
	"net/netip"
	"slices"
	"sort"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/failure"
)

// Minute holds the requests logged in one minute, by status and by who answered.
type Minute struct {
	Start    time.Time
	Requests int
	// Status counts every response by HTTP status.
	Status map[int]int
	// ProxyStatus counts responses Caddy made itself (no PHP behind them).
	ProxyStatus map[int]int
	// Goodput counts 2xx answered by PHP within the clients' timeout.
	Goodput int
	// Cached counts 2xx answered without PHP (static files, cache hits).
	Cached int
	// CacheHits and CacheMisses count the responses whose cache headers
	// (Cache-Status, X-Cache, Age) said a cache answered or passed the
	// request on: the minute's hit ratio, where a cache is logged.
	CacheHits, CacheMisses int
	// Late counts 2xx/3xx logged after the clients' timeout: they reached nobody.
	Late int
	// PHPDone counts responses PHP produced (any status); PHPSeconds sums their durations.
	PHPDone    int
	PHPSeconds float64
	// Abandoned counts requests still in PHP's hands when their client gave up:
	// PHP responses logged after the clients' timeout, and the proxy's 504s at
	// its read timeout (the request stays queued in php-fpm and runs later).
	Abandoned int
	// ClientLeft counts requests whose client closed the connection before
	// any response (Caddy logs status 0, or 499 where it names it): PHP,
	// if it had the request, ran on for nobody. They are in Abandoned.
	ClientLeft int
	// Latency holds durations of PHP successes only (overload-lessons.md: a
	// percentile over timeouts describes the client, not the server).
	Latency Histogram
	// PHPDurations holds durations of every PHP response, whatever its status:
	// a stall shows as durations piling up at one fixed timeout.
	PHPDurations Histogram
	// SelfCalls counts requests the site made to its own API.
	SelfCalls int
	// Counted is how many of Requests were counted elsewhere (Loki, under
	// pushdown: AddMinuteStatus) rather than read: their fingerprints,
	// addresses and latencies are unknown.
	Counted int

	// lateMoved counts the successes applyLateAfter moved from Goodput to
	// Late: the share of goodput that was late after all.
	lateMoved int
}

// NeededPHP counts the minute's requests that needed PHP: PHP's answers and
// the proxy's 502, 503 and 504, whose requests were bound for PHP and failed
// on the way (the demand a pool had to meet, answered or not).
func (m *Minute) NeededPHP() int {
	return m.PHPDone + m.upstreamFailed()
}

// FailedPHP counts the NeededPHP requests that failed their client: PHP's
// answers with a failed status (FailedStatus) or logged after the clients
// had left (Late), and the proxy's 502, 503 and 504. A 429 of a rate limit in
// front of PHP refused a request before the pool saw it: it fails the
// client (Failed) but is no PHP request.
func (m *Minute) FailedPHP() int {
	n := m.Late + m.upstreamFailed()
	for s, c := range m.Status {
		if FailedStatus(s) {
			n += c - m.ProxyStatus[s]
		}
	}
	return n
}

// upstreamFailed counts the proxy's 502, 503 and 504: requests bound for
// PHP that failed on the way.
func (m *Minute) upstreamFailed() int {
	n := 0
	for _, code := range upstreamFailedCodes {
		n += m.ProxyStatus[code]
	}
	return n
}

// upstreamFailedCodes are the statuses the proxy answers itself for a
// request bound for PHP that failed on the way (no upstream, a broken or
// timed-out connection).
var upstreamFailedCodes = [...]int{502, 503, 504}

// upstreamFailedStatus reports whether a status the proxy answered itself
// is one of upstreamFailedCodes.
func upstreamFailedStatus(code int) bool {
	return slices.Contains(upstreamFailedCodes[:], code)
}

// maxLabels bounds the per-cluster label table: labels come from URLs, which an
// attacker can vary without limit.
const maxLabels = 500

// Cluster accumulates what one fingerprint did: per-minute counts over all the
// data (for its baseline), and the detail of its requests inside the window.
type Cluster struct {
	Key request.ClusterKey
	// minutes holds what the cluster did by the minute (unix seconds / 60)
	// over all data (clusterMinute): the requests that arrived in it, and
	// PHP's answers logged in it. One map for the three costs a request one
	// look-up where three maps cost three; its values are pointers, which
	// stay where they are as the map grows, so that the entry of the
	// minute of the cluster's last request is held (last), and most
	// requests cost no map operation at all.
	minutes map[int64]*clusterMinute
	last    *clusterMinute
	lastAt  int64
	// perMinute is what PerMinute returns, built when asked and dropped
	// when a request is added; crawlerPerMinute is what CrawlerPerMinute
	// returns, built from it when asked and dropped when it is rebuilt.
	perMinute, crawlerPerMinute map[int64]int
	// The rest is for the window only.
	Requests int
	// IPs is how each address behaved (reader.go): its requests, and
	// whether it read like a person who shares the fingerprint.
	IPs     map[netip.Addr]*AddressBehaviour
	Classes map[request.PathClass]int
	// Routes counts requests by route template (request.RouteTemplate) as the
	// table folded it when they came; Traffic.routes measures what each costs.
	Routes     map[string]int
	PHPSeconds float64
	// Cookies counts requests that carried a Cookie header at all.
	Cookies int

	// logged holds the minutes (of log time, runMinute) in which a request
	// of the cluster was read, so Traffic.readWhole can tell whether its
	// lines were read in minutes that were otherwise only counted. It is
	// appended to when the minute changes from the cluster's last request:
	// four bytes a minute, where a set cost some forty (2.5 MB of the 4 GiB
	// bench log's heap); a minute repeats when lines come out of order,
	// which readWhole's question (is any of them counted?) does not mind.
	logged     []int32
	lastLogged int64
	// family is the client family a pushdown counts it in
	// (bundle.ClientFamily), of its first request.
	family string
	// before is how each address behaved before the window, so that the
	// readers of the baseline are taken out of the crawler's rate as those
	// of the window are (crawlerPerMinute).
	before map[netip.Addr]*AddressBehaviour
	// routeBits numbers its route templates of the window in order of first
	// sight, up to 63; later ones share bit 63 (AddressBehaviour.routes).
	routeBits map[string]uint8
	// walkIDs numbers what its addresses asked for in the window (label,
	// template, version: actorwalk.go).
	walkIDs map[walkKey]uint16
	// Members are the fingerprints of a cluster joined over several
	// (actorjoin.go), the largest first; nil for one fingerprint's.
	Members []MemberOf
}

// clusterMinute is what one cluster did in one minute.
type clusterMinute struct {
	// arrived counts the requests that arrived in the minute (log time
	// minus duration: arrivalTimes).
	arrived int
	// good counts the goodput logged in the minute: PHP's 2xx within the
	// clients' timeout as Observe judged it.
	good int
	// phpSeconds sums the time of PHP's answers logged in the minute, so
	// a client's share of the PHP time added at an incident's onset can be
	// weighed against its own baseline.
	phpSeconds float64
}

// minuteAt returns the cluster's entry of minute m, added empty if new,
// and holds it (last).
func (c *Cluster) minuteAt(m int64) *clusterMinute {
	if c.last != nil && c.lastAt == m {
		return c.last
	}
	e := c.minuteEntry(m)
	c.last, c.lastAt = e, m
	return e
}

// minuteEntry returns the cluster's entry of minute m, added empty if new.
func (c *Cluster) minuteEntry(m int64) *clusterMinute {
	e := c.minutes[m]
	if e == nil {
		e = &clusterMinute{}
		c.minutes[m] = e
	}
	return e
}

// PerMinute counts the cluster's requests by the minute they arrived (unix
// seconds / 60, log time minus duration) over all data. The map is the
// cluster's until its next request: callers read it, never write it.
func (c *Cluster) PerMinute() map[int64]int {
	if c.perMinute == nil {
		c.crawlerPerMinute = nil
		c.perMinute = make(map[int64]int, len(c.minutes))
		for m, e := range c.minutes {
			if e.arrived > 0 {
				c.perMinute[m] = e.arrived
			}
		}
	}
	return c.perMinute
}

// goodIn is the cluster's goodput in minute m (unix seconds / 60).
func (c *Cluster) goodIn(m int64) int {
	if e := c.minutes[m]; e != nil {
		return e.good
	}
	return 0
}

// phpSecondsIn is the PHP time of the cluster's requests answered in
// minute m (unix seconds / 60).
func (c *Cluster) phpSecondsIn(m int64) float64 {
	if e := c.minutes[m]; e != nil {
		return e.phpSeconds
	}
	return 0
}

// Traffic aggregates requests per minute and per fingerprint in one pass. Memory
// grows with minutes, fingerprints and distinct clients, not with requests.
type Traffic struct {
	site     sources.Site
	from, to time.Time
	minutes  map[int64]*Minute
	// inOrder is minutes in time order, kept until a minute is added:
	// the detectors ask for them many times, once the reading is done.
	inOrder  []*Minute
	clusters map[request.ClusterKey]*Cluster
	total    int
	first    time.Time
	last     time.Time

	// Caches of the hot path; they change no result. A user agent repeats
	// across millions of requests: its family is computed once per distinct
	// agent (a bounded table, cleared when full, so a bot rotating agents costs
	// time, not memory). Requests come in time order, so most fall in the
	// minute of the one before.
	lastMinute int64
	lastMM     *Minute
	keys       request.Keyer
	scratch    []byte // request.ClassifyPathScratch's unescaped path
	// targets remembers the class, label and route template of the
	// targets seen lately (targetmemo.go).
	targets targetMemo
	// lastCluster is the cluster of the last request observed: a client's
	// requests come in runs, and a run costs no lookup in clusters.
	lastCluster *Cluster

	// routes aggregates every request by route template: who answered and
	// PHP's time, per minute, so that cost is measured, not named.
	routes *routeTable

	// arrivals counts requests by the minute they arrived (arrival.go),
	// with the last one used cached like lastMM.
	arrivals          map[int64]*arrivalMinute
	lastArrival       *arrivalMinute
	lastArrivalMinute int64
	// counted is true once AddMinuteStatus added a request: some lines
	// were counted, not read (pushdown).
	counted bool
	// pulledFamilies are the client families a pushdown pulled across the
	// whole range: their lines were all read.
	pulledFamilies map[string]bool
	// lateAfter is the estimated client timeout applied by applyLateAfter
	// when the site gives none (0: none applied), lateSource how it was found.
	lateAfter  float64
	lateSource string
	// joined holds the clusters joined over several fingerprints by the
	// crawler detector (actorjoin.go), by their key (ClusterOf).
	joined map[request.ClusterKey]*Cluster
	// seconds counts PHP's demand and failures second by second
	// (arrivalseconds.go).
	seconds phpSeconds
}

// NewTraffic aggregates requests; the window [from, to) bounds the per-client
// detail kept for fingerprints.
func NewTraffic(site sources.Site, from, to time.Time) *Traffic {
	return &Traffic{site: site, from: from, to: to, minutes: map[int64]*Minute{}, clusters: map[request.ClusterKey]*Cluster{},
		routes: newRouteTable()}
}

// minute returns minute m (Unix minutes), created empty if new.
func (t *Traffic) minute(m int64) *Minute {
	mm := t.minutes[m]
	if mm == nil {
		mm = &Minute{Start: time.Unix(m*60, 0).UTC(), Status: map[int]int{}, ProxyStatus: map[int]int{}}
		t.minutes[m] = mm
		t.inOrder = nil
	}
	return mm
}

// statusClientClosed is the status a Caddy that names a client's leaving
// logs for it (caddyserver/caddy#7827, after 2.11, which logs 0).
const statusClientClosed = 499

// count adds n responses of one status, origin and lateness whose PHP
// durations sum to phpSeconds. It reports whether they were goodput, whose
// latencies the caller adds when it has them.
func (mm *Minute) count(status int, origin sources.Origin, late bool, n int, phpSeconds float64) (goodput bool) {
	mm.Requests += n
	mm.Status[status] += n
	if status == 0 || status == statusClientClosed {
		mm.ClientLeft += n
		mm.Abandoned += n
	}
	switch origin {
	case sources.OriginProxy:
		mm.ProxyStatus[status] += n
		if late && status == 504 {
			mm.Abandoned += n
		}
	case sources.OriginUpstream:
		mm.PHPDone += n
		mm.PHPSeconds += phpSeconds
		if late {
			mm.Abandoned += n
		}
	}
	if failure.Answered(status) {
		switch {
		case late:
			mm.Late += n
		case status >= 300:
		case origin == sources.OriginUpstream:
			mm.Goodput += n
			return true
		default:
			mm.Cached += n
		}
	}
	return false
}

// AddMinuteStatus adds per-minute counts computed elsewhere (Loki, under
// pushdown) of lines that were not read: requests, statuses, origins and PHP
// time, but no fingerprint, address or latency. A minute may hold both read
// lines and counted ones (the lines of the client families pulled across the
// window, and the rest counted): the counts never include a line read, so
// both add up. It returns the number of rows added.
func (t *Traffic) AddMinuteStatus(rows []bundle.MinuteStatus) (added int) {
	for _, r := range rows {
		m := r.Minute.Unix() / 60
		mm := t.minute(m)
		mm.count(r.Status, r.Origin, r.Late, int(r.Requests), r.PHPSeconds)
		mm.Counted += int(r.Requests)
		t.arrivalCounts(m, r.Status, r.Late, int(r.Requests))
		// Counted requests are data too: the span (and so the baseline
		// chosen from it) reaches the minutes that were counted, not read.
		if r.Requests > 0 {
			t.extend(r.Minute)
			t.counted = true
		}
		added++
	}
	return added
}

// PulledFamilies says which client families (bundle.ClientFamily) a
// pushdown pulled across the whole range: the lines of their clients were
// all read.
func (t *Traffic) PulledFamilies(families []string) {
	t.pulledFamilies = map[string]bool{}
	for _, f := range families {
		t.pulledFamilies[f] = true
	}
}

// readWhole reports whether every request of c was read, not counted: no
// minute was counted, c's family was pulled across the range, or c has
// requests read in a counted minute (only such a family has lines read
// there).
func (t *Traffic) readWhole(c *Cluster) bool {
	if !t.counted || t.pulledFamilies[c.family] {
		return true
	}
	for _, m := range c.logged {
		if mm := t.minutes[int64(m)]; mm != nil && mm.Counted > 0 {
			return true
		}
	}
	return false
}

// readMinute reports whether minute m (unix seconds / 60) was read whole:
// none of its requests was only counted.
func (t *Traffic) readMinute(m int64) bool {
	mm := t.minutes[m]
	return mm == nil || mm.Counted == 0
}

// extend widens the span of the data seen (first, last) to at.
func (t *Traffic) extend(at time.Time) {
	if t.first.IsZero() || at.Before(t.first) {
		t.first = at
	}
	if at.After(t.last) {
		t.last = at
	}
}

// Observe adds one request. It keeps nothing of r's Path and Query but
// what the target memo copies (targetMemo.slot) and derives from its copy,
// so ingest may lend them (evidence.Aggregate.Observe).
func (t *Traffic) Observe(r *sources.Request) { t.observe(r) }

// ObserveTagged is Observe, and returns the request's path class as its
// code (request.PathClass.Code): ingest keeps it beside the request in the
// spill, so that the rules' passes over it need not classify the path
// again. The class depends on the request and TagScope.
func (t *Traffic) ObserveTagged(r *sources.Request) uint8 { return t.observe(r).Code() }

// ReadAhead prepares the observing of a batch of requests, which are
// then observed in its order (all of them or not): it reads the memo's
// slots of their targets at once (targetMemo.readAhead).
func (t *Traffic) ReadAhead(batch []sources.Request) { t.targets.readAhead(batch) }

// TagScope is what ObserveTagged's class depends on besides the request:
// the site's health URI.
func (t *Traffic) TagScope() string { return t.site.HealthURI }

// observe adds one request and returns its path class.
func (t *Traffic) observe(r *sources.Request) request.PathClass {
	t.total++
	t.extend(r.Time)
	m := r.Time.Unix() / 60
	mm := t.lastMM
	if mm == nil || m != t.lastMinute {
		mm = t.minute(m)
		t.lastMinute, t.lastMM = m, mm
	}
	late := failure.Late(r.Duration, t.site.ClientTimeoutS)
	good := mm.count(r.Status, r.Origin, late, 1, r.Duration)
	if good {
		mm.Latency.Add(r.Duration)
	}
	if r.Origin == sources.OriginUpstream {
		mm.PHPDurations.Add(r.Duration)
	}
	switch r.Cache {
	case sources.CacheHit:
		mm.CacheHits++
	case sources.CacheMiss:
		mm.CacheMisses++
	}
	arrivedAt, start := arrivalTimes(r)
	arrived := arrivedAt.Unix() / 60
	t.observeArrival(r, arrivedAt, arrived)
	inWindow := !r.Time.Before(t.from) && r.Time.Before(t.to)
	target := t.targets.slotOf(r)
	class := target.pathClass(t.site.HealthURI, &t.scratch)
	switch request.SenderOf(class, r) {
	case request.SentByProbe:
		return class
	case request.SentBySite:
		// Counted here and judged by self_amplification.
		mm.SelfCalls++
		return class
	}
	tpl := target.routeTemplate(t.routes)
	t.routes.observeRecord(target.routeRecord(t.routes), m, r)
	a := t.keys.Agent(r.UserAgent)
	k := a.Key(r)
	c := t.lastCluster
	if c == nil || c.Key != k {
		c = t.clusters[k]
	}
	if c == nil {
		c = &Cluster{Key: k, minutes: map[int64]*clusterMinute{}, IPs: map[netip.Addr]*AddressBehaviour{},
			Classes: map[request.PathClass]int{}, Routes: map[string]int{},
			lastLogged: -1, family: bundle.ClientFamily(r.UserAgent, r.Lang)}
		t.clusters[k] = c
	}
	t.lastCluster = c
	if m != c.lastLogged {
		c.logged = append(c.logged, runMinute(m))
		c.lastLogged = m
	}
	// A client's rate is what it sent, so it is counted by arrival: a
	// wedged server answers (and logs) at its own pace, which would cap
	// the crawl's apparent rise at the server's throughput.
	// The entry held is the log minute's: a request arrives in the minute
	// it is logged in but for the few that straddle a minute's end.
	e := c.minuteAt(m)
	if arrived == m {
		e.arrived++
	} else {
		c.minuteEntry(arrived).arrived++
	}
	// Goodput is PHP's (Minute.count): good implies the upstream origin.
	if r.Origin == sources.OriginUpstream {
		if good {
			e.good++
		}
		e.phpSeconds += r.Duration
	}
	c.perMinute = nil
	if !inWindow {
		if r.Time.Before(t.from) {
			if c.before == nil {
				c.before = map[netip.Addr]*AddressBehaviour{}
			}
			ab := c.before[r.ClientIP]
			if ab == nil {
				ab = &AddressBehaviour{}
				c.before[r.ClientIP] = ab
			}
			ab.Observe(start.UnixNano(), class == request.ClassAsset, r.SiteReferer)
			ab.ObserveMethod(r.Method)
			ab.ObserveCredentials(r)
		}
		return class
	}
	c.Requests++
	ab := c.IPs[r.ClientIP]
	if ab == nil {
		ab = &AddressBehaviour{}
		c.IPs[r.ClientIP] = ab
	}
	ab.Observe(start.UnixNano(), class == request.ClassAsset, r.SiteReferer)
	ab.ObserveMethod(r.Method)
	ab.ObserveCredentials(r)
	ab.routes |= c.routeBit(tpl)
	c.Classes[class]++
	ab.walk.add(c.walkID(walkKey{label: target.toolLabel(&t.scratch), template: tpl, version: a.Version}))
	if _, ok := c.Routes[tpl]; ok || len(c.Routes) < maxLabels {
		c.Routes[tpl]++
	} else {
		c.Routes[OtherRoute]++
	}
	if r.HasCookie {
		c.Cookies++
	}
	if r.Origin == sources.OriginUpstream {
		c.PHPSeconds += r.Duration
		ab.observePHP(r.Duration)
	}
	return class
}

// routeBit is the bit of route template tpl among c's (routeBits).
func (c *Cluster) routeBit(tpl string) uint64 {
	bit, ok := c.routeBits[tpl]
	if !ok {
		if c.routeBits == nil {
			c.routeBits = map[string]uint8{}
		}
		bit = uint8(min(len(c.routeBits), 63))
		if bit < 63 {
			c.routeBits[tpl] = bit
		}
	}
	return 1 << bit
}

// DistinctPrefixes is the number of client networks (Prefix) among the
// cluster's addresses in the window. It is counted from IPs when asked rather
// than kept per request: Observe runs for every line, this once per report.
func (c *Cluster) DistinctPrefixes() int {
	return c.networks().prefixes()
}

// Total is the number of requests observed.
func (t *Traffic) Total() int { return t.total }

// Span is the time of the first and last request observed.
func (t *Traffic) Span() (first, last time.Time) { return t.first, t.last }

// Minutes returns the per-minute counts in time order.
func (t *Traffic) Minutes() []Minute {
	in := t.minutesInOrder()
	out := make([]Minute, len(in))
	for i, m := range in {
		out[i] = *m
	}
	return out
}

// minutesInOrder returns the per-minute counts in time order, not copied:
// for callers that only read them.
func (t *Traffic) minutesInOrder() []*Minute {
	if t.inOrder == nil && len(t.minutes) > 0 {
		t.inOrder = make([]*Minute, 0, len(t.minutes))
		for _, m := range t.minutes {
			t.inOrder = append(t.inOrder, m)
		}
		sort.Slice(t.inOrder, func(i, j int) bool { return t.inOrder[i].Start.Before(t.inOrder[j].Start) })
	}
	return t.inOrder
}

// Minute returns the counts of the minute starting at start (nil if none).
func (t *Traffic) Minute(start time.Time) *Minute {
	return t.minutes[start.Unix()/60]
}

// Clusters returns the fingerprints seen in the window, most requests first.
func (t *Traffic) Clusters() []*Cluster {
	out := make([]*Cluster, 0, len(t.clusters))
	for _, c := range t.clusters {
		if c.Requests > 0 {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Requests != out[j].Requests {
			return out[i].Requests > out[j].Requests
		}
		return out[i].Key.String() < out[j].Key.String()
	})
	return out
}
