package rules

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// The replay follows caddy-ratelimit v0.1.0 as its source reads (handler.go,
// ratelimit.go, ringbuffer.go):
//
//   - an event is a request that reaches the rate_limit handler and matches any
//     of a zone's matcher sets; it is judged when it arrives, before any later
//     handler runs, so the replay orders requests by arrival (log time minus
//     duration), not by the log's order (the end of the response);
//   - each key has a ring buffer of Events timestamps and a cursor on the
//     oldest; an event is allowed when now - ring[cursor] > window (strictly),
//     and only then is a reservation made (the slot takes now, the cursor
//     moves on). A refused event reserves nothing, so a crawler that keeps
//     knocking does not extend its own ban;
//   - zones are tried in the handler's order, most permissive first (sorted by
//     events/window descending, the opposite of what its comment says; ties
//     are in map order, which the replay breaks by name). Each matching zone
//     reserves in turn; the first that refuses answers 429 and later zones are
//     not consulted;
//   - a static key is one ring buffer for every client; {client_ip} is one per
//     client address, and the module sweeps idle ones (as the replay does).
//
// What cannot be replayed: a refused client's reaction (retries, giving up),
// and the load a refusal would have taken off PHP, which would have changed
// later durations and statuses. The counts are of the recorded requests.

// zoneMatchers holds, per zone, the matcher sets Caddy itself provisioned from
// the adapted config: the replay matches requests with Caddy's own code.
type zoneMatchers struct {
	sets []caddyhttp.MatcherSets
	// cookie is the Cookie value of a logged-in request (LoggedInCookie).
	cookie string
	cancel context.CancelFunc
	// filter skips building a request for Caddy when no zone can match it
	// (the recording pass's line and spill filters).
	filter *lineFilter
	// targets[i][k] is filter for the target of zone i's k-th matcher set
	// alone: a set whose target cannot match a request is not run on it
	// (a set matches when all its matchers do). nil for a zone whose sets
	// are not one per target (then all are run).
	targets [][]*lineFilter
	// req is the request match hands Caddy's matchers, remade for each
	// record (matchRequest): match is for one goroutine at a time.
	req *matchRequest
}

// matchHolder lets caddy.Context load a zone's raw matcher sets the way v0.1.0 does.
type matchHolder struct {
	MatcherSetsRaw caddyhttp.RawMatcherSets `json:"match,omitempty" caddy:"namespace=http.matchers"`
}

// loadMatchers provisions each zone's adapted matcher sets.
func loadMatchers(adapted map[string]adaptedZone, zones []Zone, cookiePattern string) (*zoneMatchers, error) {
	if len(zones) > 64 {
		return nil, fmt.Errorf("backtest: %d zones, at most 64", len(zones))
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	m := &zoneMatchers{cookie: LoggedInCookie(cookiePattern), cancel: cancel, filter: newLineFilter(zones)}
	for _, z := range zones {
		az, ok := adapted[z.Name]
		if !ok {
			cancel()
			return nil, fmt.Errorf("backtest: zone %s not adapted", z.Name)
		}
		h := &matchHolder{}
		for _, set := range az.Match {
			h.MatcherSetsRaw = append(h.MatcherSetsRaw, caddy.ModuleMap(set))
		}
		val, err := ctx.LoadModule(h, "MatcherSetsRaw")
		if err != nil {
			cancel()
			return nil, fmt.Errorf("backtest: zone %s: loading matchers: %w", z.Name, err)
		}
		var ms caddyhttp.MatcherSets
		if err := ms.FromInterface(val); err != nil {
			cancel()
			return nil, fmt.Errorf("backtest: zone %s: %w", z.Name, err)
		}
		for _, set := range ms {
			sortCheapestFirst(set)
		}
		m.sets = append(m.sets, ms)
		m.targets = append(m.targets, targetFilters(z, ms))
	}
	return m, nil
}

func (m *zoneMatchers) close() { m.cancel() }

// sortCheapestFirst orders a matcher set's matchers by what one costs to
// run: a set matches when all of its matchers do, and is done with a request
// at the first that does not. Caddy runs them in the order it loaded them, a
// map's (caddy.Context.LoadModule, MatcherSets.FromInterface): any order is
// one Caddy may run, and the matchers the zones use only read the request
// (matchRequest), so none depends on another having run. The target (path,
// query) decides which of a zone's sets a request could match, and costs
// less than a regular expression: a request is mostly turned away by it, or
// by a plain header, before the header_regexp and vars_regexp matchers run.
func sortCheapestFirst(set caddyhttp.MatcherSet) {
	sort.SliceStable(set, func(i, j int) bool { return matcherCost(set[i]) < matcherCost(set[j]) })
}

// matcherCost ranks the matchers the zones use by their cost; any other
// comes last.
func matcherCost(m any) int {
	switch m.(type) {
	case *caddyhttp.MatchMethod, *caddyhttp.MatchPath, *caddyhttp.MatchQuery:
		return 0
	case *caddyhttp.MatchHeader:
		return 1
	case *caddyhttp.MatchVarsRE:
		return 2
	case *caddyhttp.MatchNot:
		return 3
	case *caddyhttp.MatchHeaderRE:
		return 4
	}
	return 5
}

// targetFilters returns a lineFilter for each of the zone's matcher sets,
// of its target alone: the k-th set holds the zone's k-th target (printTarget
// prints one set per target, in order, and validateZones holds the adapted
// sets to expectedZone's, which follows the same order), ANDed with the
// conditions, so a request the target's filter rejects is one the set
// rejects. nil when there are not as many sets as targets.
func targetFilters(z Zone, sets caddyhttp.MatcherSets) []*lineFilter {
	if len(sets) != len(z.Targets) {
		return nil
	}
	filters := make([]*lineFilter, len(z.Targets))
	for k, t := range z.Targets {
		filters[k] = newLineFilter([]Zone{{Targets: []Target{t}}})
	}
	return filters
}

// match returns the zones whose matchers match r, as a bit set: what
// MatcherSets.AnyMatchWithError says of each zone's sets, but for the sets
// whose target cannot match r (targets), which are not asked.
func (m *zoneMatchers) match(r *sources.Request) (uint64, error) {
	var req *http.Request
	var mask uint64
	for i, sets := range m.sets {
		if len(sets) == 0 {
			// AnyMatchWithError matches any request with no set; match
			// asked it only of those the zones' filter let through.
			if m.filter.requestMayMatch(r) {
				mask |= 1 << i
			}
			continue
		}
		for k, set := range sets {
			if m.targets[i] != nil && !m.targets[i][k].requestMayMatch(r) {
				continue
			}
			if req == nil {
				if m.req == nil {
					m.req = newMatchRequest()
				}
				req = m.req.remake(r, m.cookie)
			}
			ok, err := set.MatchWithError(req)
			if err != nil {
				return 0, fmt.Errorf("backtest: matching %s: %w", clip(r.Path, 80), err)
			}
			if ok {
				mask |= 1 << i
				break
			}
		}
	}
	return mask, nil
}

// matchRequest is one http.Request, with its context's variables and
// replacer, remade for record after record: building a request, its context
// and Caddy's replacer (NewTestReplacer) anew for each cost more than
// matching it.
//
// Remade, it is in the state a new one would be in. Caddy's matchers the
// zones use (path, query, method, header, header_regexp, vars_regexp, not:
// caddyhttp v2.11.9's matchers.go and vars.go) change nothing in the request
// itself; what they write goes to the replacer's static values (a regexp
// match's captures, {http.regexp.*}, which a later matcher may read) and,
// through SetVar, to the context's variables (the variables a placeholder
// such as {http.request.uuid} caches, a matcher's error). remake empties
// both: the replacer's static values (a new replacer has none), the variables
// down to the two a new request has (the client address and start_time,
// which addHTTPVarsToReplacer sets), and copies every field of the request
// from what it was when made (base) before the record's. The header map is
// emptied and filled again (matchers only read it). The replacer's
// providers read the request through its pointer, which stays the same.
type matchRequest struct {
	req    *http.Request
	base   http.Request // *req as made: no record's fields, the context's
	url    url.URL
	header http.Header
	values headerValues
	tls    tls.ConnectionState
	vars   map[string]any
	repl   *caddy.Replacer
}

// newMatchRequest makes the request, its variables and its replacer once.
func newMatchRequest() *matchRequest {
	m := &matchRequest{vars: map[string]any{}, header: http.Header{}}
	req := &http.Request{Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	m.req = req.WithContext(context.WithValue(context.Background(), caddyhttp.VarsCtxKey, m.vars))
	m.repl = caddyhttp.NewTestReplacer(m.req)
	m.base = *m.req
	return m
}

// remake makes the request Caddy would have seen from the log's record r,
// with the headers RequestHeader rebuilds, and returns it: valid until the
// next remake.
func (m *matchRequest) remake(r *sources.Request, cookie string) *http.Request {
	m.repl.DeleteByPrefix("")
	clear(m.vars)
	m.vars[caddyhttp.ClientIPVarKey] = r.ClientIP.String()
	m.vars["start_time"] = time.Now()
	m.url = url.URL{Path: decodedPath(r.Path), RawQuery: r.Query}
	if m.url.Path != r.Path {
		m.url.RawPath = r.Path
	}
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	clear(m.header)
	fillRequestHeader(m.header, &m.values, r, cookie)
	req := m.req
	*req = m.base
	req.Method, req.URL, req.Header, req.Host = method, &m.url, m.header, r.Host
	req.RemoteAddr, req.RequestURI = netip.AddrPortFrom(r.ClientIP, 0).String(), m.url.RequestURI()
	if r.TLS {
		m.tls = tls.ConnectionState{}
		req.TLS = &m.tls
	}
	return req
}

// arrival is what the replay keeps of a request: small, so the reorder buffer
// stays cheap.
type arrival struct {
	at      int64  // arrival, unix nanoseconds
	match   uint64 // zones whose matchers matched
	crawler int    // index of the crawler fingerprint, -1 for none
	// reader: the arrival shares a crawler's fingerprint but came from an
	// address that behaved like a person (readers.go); crawler is then -1.
	reader bool
	login  sources.LoggedIn
	php    bool    // reached PHP (answered by it, or a 504 still queued in php-fpm)
	cost   float64 // estimated PHP worker seconds
	ip     netip.Addr
}

// stream reads the access logs and hands fn, in arrival order (a
// reorderBuffer), the requests whose arrival passes keep. A line whose arrival
// is already behind the released ones is replayed at the last released time
// and counted in late.
func (e *engine) stream(ctx context.Context, keep func(at int64) bool, fn func(a *arrival)) (late int, err error) {
	var order reorderBuffer[arrival]
	release := func(at int64, a *arrival) {
		a.at = at
		fn(a)
	}
	var convErr error
	_, err = e.in.readRequests(ctx, nil, nil,
		func(batch []sources.Request) error {
			for i := range batch {
				r := &batch[i]
				if isHealthCheck(r, e.in.Site.HealthURI) {
					continue
				}
				order.observe(r.Time.UnixNano(), int64(r.Duration*float64(time.Second)))
				at := r.Start().UnixNano()
				if keep(at) {
					a, err := e.arrival(r, at)
					if err != nil {
						convErr = err
						return err
					}
					order.push(at, a)
				}
				order.release(release)
			}
			return nil
		})
	if convErr != nil {
		return order.late, convErr
	}
	if err != nil {
		return order.late, fmt.Errorf("backtest: %w", err)
	}
	order.drain(release)
	return order.late, nil
}

// isHealthCheck is detect.ClassifyPath(r.Path, r.Query, healthURI) ==
// detect.ClassHealth without classifying the rest, which costs an unescape
// and a query parse per line (it is ClassifyPath's first test;
// TestIsHealthCheck holds it to it): the replays leave the proxy's health
// checks out, as the profile does.
func isHealthCheck(r *sources.Request, healthURI string) bool {
	return isHealthPath(r.Path, healthURI)
}

// isHealthPath is isHealthCheck on a path alone, as a request or a spill
// record's undecoded head holds it (comparing string(p) allocates nothing).
func isHealthPath[P string | []byte](p P, healthURI string) bool {
	return healthURI != "" && string(p) == healthURI
}

// engine holds what every pass over the logs shares.
type engine struct {
	in       *Input
	refs     []crawlerRef
	matchers *zoneMatchers
	// serviceS is php-fpm's mean service time (worker_saturation), 0 if unknown.
	serviceS float64
	// keys fingerprints requests with a cache of user agents.
	keys request.Keyer
	// arrivals hands the replays their arrivals: a recording, or nil to
	// stream the logs for each replay.
	arrivals arrivalSource
	// readers are the addresses that share a crawler's fingerprint and
	// behaved like people (the profile's readers).
	readers fingerprintReaders
}

// source returns where the replays take their arrivals from.
func (e *engine) source() arrivalSource {
	if e.arrivals == nil {
		return streamedArrivals{e}
	}
	return e.arrivals
}

// arrival is what the replay keeps of r, arrived at at.
func (e *engine) arrival(r *sources.Request, at int64) (arrival, error) {
	a := e.describe(r, at)
	if e.matchers != nil {
		m, err := e.matchers.match(r)
		if err != nil {
			return a, err
		}
		a.match = m
	}
	return a, nil
}

// describe is arrival without the zones' matchers.
func (e *engine) describe(r *sources.Request, at int64) arrival {
	// The profile counted the arrivals no zone matched with the same class
	// (crawlerIndex, readers, login, reachedPHP): a recording's counts subtract from its.
	a := arrival{at: at, crawler: crawlerIndex(e.refs, e.keys.Key(r)), login: r.LoggedIn, ip: r.ClientIP, php: reachedPHP(r)}
	if a.crawler >= 0 && e.readers.has(a.crawler, r.ClientIP) {
		a.crawler, a.reader = -1, true
	}
	switch {
	case r.Origin == sources.OriginUpstream:
		a.cost = r.Duration
		if e.serviceS > 0 {
			a.cost = math.Min(r.Duration, e.serviceS)
		}
	case a.php:
		// A 504 still queued in php-fpm when the proxy gave up: it ran later.
		a.cost = e.serviceS
	}
	return a
}

// costBasis says how a refused request's worker time was estimated.
func (e *engine) costBasis() string {
	if e.serviceS > 0 {
		return fmt.Sprintf("per refused request that reached PHP: its logged duration, capped at php-fpm's mean service time %.3g s (worker_saturation), since a logged duration also counts the time queued", e.serviceS)
	}
	return "per refused request answered by PHP: its logged duration (no service time was measured, so time queued in php-fpm is counted too: an overestimate under overload)"
}

// timeFIFO holds the arrival times within the last window of one bucket.
type timeFIFO struct {
	ts   []int64
	head int
}

// push adds t, drops times before t-window and returns how many remain: the
// count the module compares with events (a closed window: an event exactly
// one window old still counts, as ring[cursor] must be more than a window old).
func (f *timeFIFO) push(t, window int64) int {
	f.ts = append(f.ts, t)
	for f.head < len(f.ts) && f.ts[f.head] < t-window {
		f.head++
	}
	if f.head > 1024 && f.head*2 > len(f.ts) {
		f.ts = append(f.ts[:0], f.ts[f.head:]...)
		f.head = 0
	}
	return len(f.ts) - f.head
}

func (f *timeFIFO) newest() int64 { return f.ts[len(f.ts)-1] }

// candidateWindows are the windows sizing chooses from, longest first.
var candidateWindows = []time.Duration{10 * time.Minute, 5 * time.Minute, time.Minute}

// size measures, for each zone, the highest number of ordinary requests (no
// crawler fingerprint) the zone matched in any window of length win over the
// baseline: in total for a site-wide zone, for the busiest single client for
// a per-client zone.
func (e *engine) size(ctx context.Context, zones []Zone, win time.Duration, from, to time.Time) ([]int, error) {
	lo, hi, w := from.UnixNano(), to.UnixNano(), int64(win)
	peak := make([]int, len(zones))
	shared := make([]*timeFIFO, len(zones))
	clients := make([]map[netip.Addr]*timeFIFO, len(zones))
	for i := range zones {
		shared[i] = &timeFIFO{}
		clients[i] = map[netip.Addr]*timeFIFO{}
	}
	var lastSweep int64
	_, err := e.source().each(ctx, func(at int64) bool { return at >= lo && at < hi }, func(a *arrival) {
		if a.crawler >= 0 || a.match == 0 {
			return
		}
		for i := range zones {
			if a.match&(1<<i) == 0 {
				continue
			}
			f := shared[i]
			if zones[i].PerClient {
				f = clients[i][a.ip]
				if f == nil {
					f = &timeFIFO{}
					clients[i][a.ip] = f
				}
			}
			peak[i] = max(peak[i], f.push(a.at, w))
		}
		if a.at-lastSweep > int64(time.Minute) {
			lastSweep = a.at
			for i := range clients {
				for ip, f := range clients[i] {
					if f.newest() < a.at-w {
						delete(clients[i], ip)
					}
				}
			}
		}
	})
	return peak, err
}

// limiter is v0.1.0's ring buffer (ringbuffer.go) on replay time.
type limiter struct {
	ring   []int64
	cursor int
	window int64
}

func newLimiter(events int, window time.Duration) *limiter {
	// Zero slots read as the Unix epoch: more than a window before any log.
	return &limiter{ring: make([]int64, events), window: int64(window)}
}

// allow is ringBufferRateLimiter.allowed: reserve and admit, or refuse without reserving.
func (l *limiter) allow(now int64) bool {
	if len(l.ring) == 0 {
		return false
	}
	if now-l.ring[l.cursor] > l.window {
		l.ring[l.cursor] = now
		l.cursor = (l.cursor + 1) % len(l.ring)
		return true
	}
	return false
}

func (l *limiter) newest() int64 {
	return l.ring[(l.cursor+len(l.ring)-1)%len(l.ring)]
}

// handlerOrder is the order v0.1.0 tries zones in: most permissive first.
func handlerOrder(zones []Zone) []int {
	order := make([]int, len(zones))
	for i := range order {
		order[i] = i
	}
	perm := func(z *Zone) float64 { return float64(z.Events) / float64(z.Window) }
	sort.SliceStable(order, func(a, b int) bool {
		za, zb := &zones[order[a]], &zones[order[b]]
		if pa, pb := perm(za), perm(zb); pa != pb {
			return pa > pb
		}
		return za.Name < zb.Name
	})
	return order
}

// replay is one run of the handler over a stretch of time.
type replay struct {
	zones   []Zone
	order   []int
	shared  []*limiter
	clients []map[netip.Addr]*limiter
	// from and to bound the arrivals counted; earlier ones only warm the buffers.
	from, to  int64
	lastSweep int64
	zone      []*tally // per zone
	all       *tally   // the handler as a whole
}

func newReplay(zones []Zone, from, to int64) *replay {
	r := &replay{zones: zones, order: handlerOrder(zones), from: from, to: to, all: newTally()}
	for _, z := range zones {
		if z.PerClient {
			r.shared = append(r.shared, nil)
		} else {
			r.shared = append(r.shared, newLimiter(z.Events, z.Window))
		}
		r.clients = append(r.clients, map[netip.Addr]*limiter{})
		r.zone = append(r.zone, newTally())
	}
	return r
}

// feed runs one arrival through the handler and counts it.
func (r *replay) feed(a *arrival) {
	refusedBy := -1
	for _, i := range r.order {
		if a.match&(1<<i) == 0 {
			continue
		}
		l := r.shared[i]
		if l == nil {
			l = r.clients[i][a.ip]
			if l == nil {
				l = newLimiter(r.zones[i].Events, r.zones[i].Window)
				r.clients[i][a.ip] = l
			}
		}
		if !l.allow(a.at) {
			refusedBy = i
			break
		}
	}
	if a.at-r.lastSweep > int64(time.Minute) {
		r.sweep(a.at)
	}
	if a.at < r.from || a.at >= r.to {
		return
	}
	r.all.add(a, a.crawler >= 0, refusedBy >= 0)
	for i, t := range r.zone {
		t.add(a, a.crawler == r.zones[i].crawler, refusedBy == i)
	}
}

// sweep drops per-client buffers whose newest event is a window old, as the
// module's sweeper does.
func (r *replay) sweep(now int64) {
	r.lastSweep = now
	for i, m := range r.clients {
		for ip, l := range m {
			if l.newest() < now-int64(r.zones[i].Window) {
				delete(m, ip)
			}
		}
	}
}

// tally accumulates a Backtest.
type tally struct {
	bt      Backtest
	legit   map[netip.Addr]struct{}
	readers map[netip.Addr]struct{} // readers sharing a fingerprint refused at least once
	first   int64
}

func newTally() *tally {
	return &tally{legit: map[netip.Addr]struct{}{}, readers: map[netip.Addr]struct{}{}}
}

// add counts one arrival: crawler says whether it is the tallied crawler's
// fingerprint, refused whether the tallied zone (or handler) refused it.
// Another crawler's fingerprint refused by this zone is neither crawler nor
// collateral here.
func (t *tally) add(a *arrival, crawler, refused bool) {
	t.count(a.crawler, a.reader, a.login, a.php, crawler, 1)
	if !refused {
		return
	}
	b := &t.bt
	b.PHPSecondsSaved += a.cost
	if t.first == 0 || a.at < t.first {
		t.first = a.at
	}
	switch {
	case crawler:
		b.CrawlerRefused++
		b.CrawlerPHPSecondsSaved += a.cost
		if a.php {
			b.CrawlerPHPRefused++
		}
	case a.crawler >= 0:
	case a.login == sources.LoggedInYes:
		b.LoggedInRefused++
		t.legit[a.ip] = struct{}{}
	default:
		b.OtherLoggedOutRefused++
		if a.login == sources.LoggedInUnknown {
			b.LoginUnknownRefused++
		}
		t.legit[a.ip] = struct{}{}
	}
	if a.reader {
		b.FingerprintReaderRefused++
		t.readers[a.ip] = struct{}{}
	}
}

// count adds n requests of one kind, refused or not (add counts the
// refusals): crawlerIndex is their fingerprint's (-1 for none), reader
// whether they came from a reader who shares a crawler's fingerprint (counted
// as ordinary, and apart), crawler whether the fingerprint is the tallied
// crawler's.
func (t *tally) count(crawlerIndex int, reader bool, login sources.LoggedIn, php, crawler bool, n int) {
	b := &t.bt
	if reader {
		b.FingerprintReaderRequests += n
	}
	switch {
	case crawler:
		b.CrawlerRequests += n
		if php {
			b.CrawlerPHPRequests += n
		}
	case crawlerIndex >= 0:
	case login == sources.LoggedInYes:
		b.LoggedInRequests += n
	default:
		b.OtherLoggedOutRequests += n
		if login == sources.LoggedInUnknown {
			b.LoginUnknownRequests += n
		}
	}
}

// window returns the tally as the window's Backtest.
func (t *tally) window() Backtest {
	b := t.bt
	b.LegitimateClientsRefused = len(t.legit)
	b.FingerprintReadersRefused = len(t.readers)
	b.FingerprintReaderRefusedShare = share(b.FingerprintReaderRefused, b.FingerprintReaderRequests)
	b.CrawlerRefusedShare = share(b.CrawlerRefused, b.CrawlerRequests)
	b.OtherLoggedOutRefusedShare = share(b.OtherLoggedOutRefused, b.OtherLoggedOutRequests)
	b.CrawlerPHPSecondsSaved = round3(b.CrawlerPHPSecondsSaved)
	b.PHPSecondsSaved = round3(b.PHPSecondsSaved)
	if t.first != 0 {
		b.FirstRefusal = time.Unix(0, t.first).UTC()
	}
	return b
}

// baselineInto copies the tally, run over the baseline, into b's baseline fields.
func (t *tally) baselineInto(b *Backtest) {
	ordinary := t.bt.LoggedInRequests + t.bt.OtherLoggedOutRequests
	b.BaselineRequests = ordinary
	b.BaselineRefused = t.bt.LoggedInRefused + t.bt.OtherLoggedOutRefused
	b.BaselineCrawlerRequests = t.bt.CrawlerRequests
	b.BaselineCrawlerRefused = t.bt.CrawlerRefused
}

func share(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return math.Round(float64(n)/float64(of)*10000) / 10000
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// backtest replays the window (warming the buffers for the longest window
// before it) and, separately, the baseline, in one pass over the logs.
func (e *engine) backtest(ctx context.Context, zones []Zone, bFrom, bTo time.Time) (win, base *replay, late int, err error) {
	if len(zones) == 0 {
		return nil, nil, 0, errors.New("backtest: no zone")
	}
	var warm time.Duration
	for _, z := range zones {
		warm = max(warm, z.Window)
	}
	wFrom, wTo := e.in.From.UnixNano(), e.in.To.UnixNano()
	bLo, bHi := bFrom.UnixNano(), bTo.UnixNano()
	win = newReplay(zones, wFrom, wTo)
	base = newReplay(zones, bLo, bHi)
	src := e.source()
	late, err = src.each(ctx, func(at int64) bool {
		return at >= wFrom-int64(warm) && at < wTo || at >= bLo && at < bHi
	}, func(a *arrival) {
		if a.at >= wFrom-int64(warm) && a.at < wTo {
			win.feed(a)
		}
		if a.at >= bLo && a.at < bHi {
			base.feed(a)
		}
	})
	if err != nil {
		return nil, nil, late, err
	}
	if err := src.settle(win); err != nil {
		return nil, nil, late, err
	}
	if err := src.settle(base); err != nil {
		return nil, nil, late, err
	}
	return win, base, late, nil
}

// baselineOnly replays the baseline alone (for resizing).
func (e *engine) baselineOnly(ctx context.Context, zones []Zone, bFrom, bTo time.Time) (*replay, error) {
	bLo, bHi := bFrom.UnixNano(), bTo.UnixNano()
	base := newReplay(zones, bLo, bHi)
	src := e.source()
	if _, err := src.each(ctx, func(at int64) bool { return at >= bLo && at < bHi }, base.feed); err != nil {
		return nil, err
	}
	if err := src.settle(base); err != nil {
		return nil, err
	}
	return base, nil
}
