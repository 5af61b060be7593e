package scan

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"sort"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/failure"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// Profile is one time range aggregated: the unit a seasonal baseline compares.
// The recent window and every baseline slot are Profiles built the same way,
// so an observation and its baseline never differ by how they were counted.
type Profile struct {
	Range
	// Covered is true when the access log spans the whole range: a slot
	// before the log begins is missing data, not a quiet hour.
	Covered bool `json:"covered"`
	// Lines counts every access-log line in the range.
	Lines int `json:"lines"`
	// Requests counts client requests: the proxy's health checks and the
	// site's calls to its own API are not clients.
	Requests int `json:"requests"`
	// Failed counts what reached no one: 5xx, 429 and successes logged after
	// the clients' timeout (detect's definition).
	Failed int `json:"failed"`
	// Server5xx, Status429: responses with those statuses.
	Server5xx int `json:"status_5xx"`
	Status429 int `json:"status_429"`
	// Proxy503 counts 503s Caddy made itself (no PHP behind them): the
	// upstream was marked down.
	Proxy503 int `json:"proxy_503"`
	// Late counts 2xx/3xx logged after the clients' timeout.
	Late int `json:"late"`
	// Latency holds the durations of PHP successes (within the clients'
	// timeout): a percentile over timeouts describes the client, not PHP.
	Latency detect.Histogram `json:"-"`
	// Classes counts client requests by path class.
	Classes map[request.PathClass]int `json:"classes"`
	// Clusters are the client fingerprints seen in the range.
	Clusters map[request.ClusterKey]*ClusterProfile `json:"-"`
	// Pool is php-fpm and the host over the range; nil without metrics.
	Pool *PoolProfile `json:"pool,omitempty"`
}

// ClusterProfile is what one fingerprint did in a range.
type ClusterProfile struct {
	Requests int `json:"requests"`
	// IPs and Prefixes count distinct client addresses and networks (/24 for
	// IPv4, /64 for IPv6).
	IPs      int `json:"distinct_ips"`
	Prefixes int `json:"distinct_prefixes"`
	// Assets counts requests for static files: people fetch assets after
	// pages. (Whether a fingerprint is automated is judged on detect's
	// measured reading of the window, not on these counts.)
	Assets int `json:"assets"`
	// Cookies counts requests that carried a Cookie header (sessions).
	Cookies int `json:"cookies"`

	ips      map[netip.Addr]struct{}
	prefixes map[netip.Prefix]struct{}
}

// PoolProfile is php-fpm and the host over a range, from metrics.
type PoolProfile struct {
	// Workers is the pool's size: pm.max_children from the site facts, or
	// the most processes seen when more.
	Workers float64 `json:"workers"`
	// SaturatedMinutes is how long every worker was busy.
	SaturatedMinutes float64 `json:"saturated_minutes"`
	// FirstSaturated is the first scrape with every worker busy (zero if none).
	FirstSaturated time.Time `json:"first_saturated,omitzero"`
	// QueuePeak is the deepest listen queue scraped; Backlog its cap.
	QueuePeak float64 `json:"queue_peak"`
	Backlog   float64 `json:"backlog,omitempty"`
	// HasCPU is false when no CPU series exists; CPUMean and CPUPeak are
	// host CPU utilisation in percent.
	HasCPU  bool    `json:"has_cpu"`
	CPUMean float64 `json:"cpu_mean_pct,omitempty"`
	CPUPeak float64 `json:"cpu_peak_pct,omitempty"`
}

func newProfile(r Range) *Profile {
	return &Profile{Range: r, Classes: map[request.PathClass]int{}, Clusters: map[request.ClusterKey]*ClusterProfile{}}
}

// observe adds one request; class and key are computed once by the caller.
// key is nil for a request that is not a client's (the proxy's health check,
// the site's call to its own API).
func (p *Profile) observe(r *sources.Request, class request.PathClass, key *request.ClusterKey, site sources.Site) {
	p.Lines++
	// Failed is the one definition (failure.Failed, per minute
	// detect.Minute.Failed): a failed status, or an answer logged after the
	// clients had left. The latency is goodput's (detect.Goodput).
	late := failure.Late(r.Duration, site.ClientTimeoutS)
	if failure.Failed(r.Status, r.Duration, site.ClientTimeoutS) {
		p.Failed++
	}
	switch {
	case failure.Status(r.Status) && !failure.ServerError(r.Status):
		p.Status429++ // the one failed status that is not 5xx
	case failure.ServerError(r.Status):
		p.Server5xx++
		if r.Status == 503 && r.Origin == sources.OriginProxy {
			p.Proxy503++
		}
	case failure.LateAnswer(r.Status, r.Duration, site.ClientTimeoutS):
		p.Late++
	case detect.Goodput(r.Status, r.Origin, late):
		p.Latency.Add(r.Duration)
	}
	if key == nil {
		return
	}
	p.Requests++
	p.Classes[class]++
	c := p.Clusters[*key]
	if c == nil {
		c = &ClusterProfile{ips: map[netip.Addr]struct{}{}, prefixes: map[netip.Prefix]struct{}{}}
		p.Clusters[*key] = c
	}
	c.Requests++
	c.ips[r.ClientIP] = struct{}{}
	c.prefixes[request.Prefix(r.ClientIP)] = struct{}{}
	if class == request.ClassAsset {
		c.Assets++
	}
	if r.HasCookie {
		c.Cookies++
	}
}

// finish turns address sets into counts and frees them.
func (p *Profile) finish() {
	for _, c := range p.Clusters {
		c.IPs, c.Prefixes = len(c.ips), len(c.prefixes)
		c.ips, c.prefixes = nil, nil
	}
}

// Collector reads requests once for a set of scans: every request lands in
// the profiles of the slots that hold it and in the detect.Traffic of the scans
// whose window or lookback holds it. One scan (the CLI) or a whole schedule
// (a replay) costs one pass over the log.
type Collector struct {
	cfg  Config
	site sources.Site
	// slots are every profile any scan needs, each Since long, by From.
	slots  []*Profile
	byFrom map[int64]*Profile
	// scans are the pending scans, by now.
	scans []*pending

	first, last time.Time
	requests    int64
	used        int64
	finished    bool
	// fetched, when set, are the ranges the evidence claims to hold in full
	// (bundle.yaml's complete access-log queries): a slot outside them is
	// missing data even when requests before and after it were read.
	fetched []Range
	// keys computes each request's fingerprint once for all its slots,
	// classes its path class (with detect's classifier and scratch buffer).
	keys    request.Keyer
	classes request.PathClassifier
}

// pending is one scan's share of the reading.
type pending struct {
	now     time.Time
	traffic *detect.Traffic
}

// NewCollector prepares the profiles and traffic of scans at nows. cfg must
// have its defaults set.
func NewCollector(cfg Config, site sources.Site, nows []time.Time) *Collector {
	c := &Collector{cfg: cfg, site: site, byFrom: map[int64]*Profile{}, classes: request.PathClassifier{HealthURI: site.HealthURI}}
	add := func(r Range) {
		if _, ok := c.byFrom[r.From.UnixNano()]; !ok {
			p := newProfile(r)
			c.byFrom[r.From.UnixNano()] = p
			c.slots = append(c.slots, p)
		}
	}
	seen := map[int64]bool{}
	for _, now := range nows {
		now = now.UTC()
		if seen[now.UnixNano()] {
			continue
		}
		seen[now.UnixNano()] = true
		w := cfg.Window(now)
		add(w)
		for _, s := range cfg.Slots(now) {
			add(s)
		}
		c.scans = append(c.scans, &pending{now: now, traffic: detect.NewTraffic(site, w.From, w.To)})
	}
	sort.Slice(c.slots, func(i, j int) bool { return c.slots[i].From.Before(c.slots[j].From) })
	sort.Slice(c.scans, func(i, j int) bool { return c.scans[i].now.Before(c.scans[j].now) })
	return c
}

// Observe adds one request to every slot and scan that holds it.
func (c *Collector) Observe(r *sources.Request) {
	t := r.Time
	c.requests++
	if c.first.IsZero() || t.Before(c.first) {
		c.first = t
	}
	if t.After(c.last) {
		c.last = t
	}
	used := false
	// Every slot is Since long: it holds t when t-Since < From <= t.
	lo := t.Add(-c.cfg.Since)
	i := sort.Search(len(c.slots), func(i int) bool { return c.slots[i].From.After(lo) })
	if i < len(c.slots) && !c.slots[i].From.After(t) {
		class := c.classes.Classify(r.Path, r.Query)
		var key *request.ClusterKey
		if request.FromClient(class, r) {
			k := c.keys.Key(r)
			key = &k
		}
		for ; i < len(c.slots) && !c.slots[i].From.After(t); i++ {
			c.slots[i].observe(r, class, key, c.site)
		}
		used = true
	}
	// A scan observes [now-Since-Lookback, now): t < now <= t+Since+Lookback.
	hi := t.Add(c.cfg.Since + c.cfg.Lookback)
	j := sort.Search(len(c.scans), func(j int) bool { return c.scans[j].now.After(t) })
	for ; j < len(c.scans) && !c.scans[j].now.After(hi); j++ {
		c.scans[j].traffic.Observe(r)
		used = true
	}
	if used {
		c.used++
	}
}

// finish closes the reading: address sets become counts, and each slot learns
// whether the log covered it.
func (c *Collector) finish() {
	if c.finished {
		return
	}
	c.finished = true
	for _, p := range c.slots {
		p.finish()
		if c.fetched != nil {
			// The evidence says which ranges it holds in full (a live
			// scan's fetches). A complete query that returned nothing is
			// more likely past Loki's retention than an hour without a
			// single request: it covers nothing.
			p.Covered = within(p.Range, c.fetched) && p.Lines > 0
			continue
		}
		// Otherwise a slot is covered when the log began before it and went
		// on past it (a log that ends early is missing data, not silence).
		p.Covered = c.requests > 0 && !c.first.After(p.From) && !c.last.Before(p.To.Add(-coverageSlack))
	}
}

// within reports whether r lies inside one of rs.
func within(r Range, rs []Range) bool {
	for _, x := range rs {
		if !r.From.Before(x.From) && !r.To.After(x.To) {
			return true
		}
	}
	return false
}

// mergeRanges sorts rs and joins those that overlap or touch.
func mergeRanges(rs []Range) []Range {
	sort.Slice(rs, func(i, j int) bool { return rs[i].From.Before(rs[j].From) })
	var out []Range
	for _, r := range rs {
		if n := len(out); n > 0 && !r.From.After(out[n-1].To) {
			if r.To.After(out[n-1].To) {
				out[n-1].To = r.To
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// coverageSlack tolerates a quiet end of a slot: a log whose last request is
// this close to a slot's end still covers it.
const coverageSlack = 5 * time.Minute

// profile returns the profile of range r (nil when no scan asked for it).
func (c *Collector) profile(r Range) *Profile { return c.byFrom[r.From.UnixNano()] }

func (c *Collector) scan(now time.Time) *pending {
	for _, s := range c.scans {
		if s.now.Equal(now) {
			return s
		}
	}
	return nil
}

// metricsStep is the grid metric slots are read on: Prometheus' default
// scrape interval, so no scrape is skipped.
const metricsStep = 15 * time.Second

// poolProfile aggregates the metrics of one range. It returns nil when no
// php-fpm series covers the range.
func poolProfile(ctx context.Context, q metrics.Querier, r Range, workersFact int) (*PoolProfile, error) {
	end := r.To.Add(-time.Second)
	get := func(query string) ([]metrics.Point, error) {
		query = detect.RateQuery(q, query)
		s, err := q.QueryRange(ctx, query, r.From, end, metricsStep)
		if err != nil {
			return nil, fmt.Errorf("scan: metrics %s over %s: %w", query, r, err)
		}
		if len(s) == 0 {
			return nil, nil
		}
		return s[0].Points, nil
	}
	active, err := get(detect.QueryActive)
	if err != nil || len(active) == 0 {
		return nil, err
	}
	total, err := get(detect.QueryTotal)
	if err != nil {
		return nil, err
	}
	queue, err := get(detect.QueryQueue)
	if err != nil {
		return nil, err
	}
	backlog, err := get(detect.QueryBacklog)
	if err != nil {
		return nil, err
	}
	p := &PoolProfile{Workers: float64(detect.PoolSizeOf(workersFact, total)), QueuePeak: maxOf(queue), Backlog: maxOf(backlog)}
	n := 0
	for _, pt := range active {
		if p.Workers > 0 && pt.V >= p.Workers {
			n++
			if p.FirstSaturated.IsZero() {
				p.FirstSaturated = pt.T.UTC()
			}
		}
	}
	p.SaturatedMinutes = float64(n) * metricsStep.Minutes()
	for _, cq := range detect.CPUQueries {
		cpu, err := get(cq)
		if err != nil {
			return nil, err
		}
		if len(cpu) == 0 {
			continue
		}
		sum := 0.0
		for _, pt := range cpu {
			sum += pt.V
		}
		p.HasCPU, p.CPUMean, p.CPUPeak = true, sum/float64(len(cpu)), maxOf(cpu)
		break
	}
	return p, nil
}

func maxOf(ps []metrics.Point) float64 {
	m := 0.0
	for _, p := range ps {
		m = math.Max(m, p.V)
	}
	return m
}

// String renders a range in UTC for errors.
func (r Range) String() string {
	return r.From.UTC().Format(time.RFC3339) + "/" + r.To.UTC().Format(time.RFC3339)
}
