package detect

import (
	"net/netip"
	"sort"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// Minute holds the requests logged in one minute, by status and by who answered.
type Minute struct {
	Start    time.Time
	Requests int
	// Status counts every response by HTTP status.
	Status map[int]int
	// ProxyStatus counts responses Caddy made itself (no PHP behind them).
	ProxyStatus map[int]int
	// Goodput counts 2xx answered by PHP (upstream) within the clients' timeout.
	Goodput int
	// Late counts 2xx/3xx logged after the clients' timeout: they reached nobody.
	Late int
}

// ClusterKey is a client fingerprint without the path: what a rate limit or a
// human would use to say "these requests come from the same kind of client".
type ClusterKey struct {
	UA       string // family and major version, e.g. "Chrome 121"
	Lang     string // primary Accept-Language, "" if none
	LoggedIn sources.LoggedIn
	// NoClientHints is true for a Chromium UA without Sec-Ch-Ua: a forged agent.
	NoClientHints bool
}

// Cluster accumulates what one fingerprint did.
type Cluster struct {
	Key      ClusterKey
	Requests int
	IPs      map[netip.Addr]int
	Prefixes map[netip.Prefix]struct{}
	Classes  map[PathClass]int
	// PHPSeconds sums durations of requests PHP answered: the worker time used.
	PHPSeconds float64
}

// Traffic aggregates requests per minute and per fingerprint. Memory grows with
// minutes and distinct clients, not with requests.
type Traffic struct {
	site     sources.Site
	from, to time.Time
	minutes  map[int64]*Minute
	clusters map[ClusterKey]*Cluster
	total    int
}

// NewTraffic aggregates requests whose log time falls in [from, to) into
// fingerprints; minutes are kept for all requests.
func NewTraffic(site sources.Site, from, to time.Time) *Traffic {
	return &Traffic{site: site, from: from, to: to, minutes: map[int64]*Minute{}, clusters: map[ClusterKey]*Cluster{}}
}

// Key computes the fingerprint of a request.
func Key(r *sources.Request) ClusterKey {
	ua := UAFamily(r.UserAgent)
	return ClusterKey{UA: ua, Lang: r.Lang, LoggedIn: r.LoggedIn, NoClientHints: chromium(ua) && !r.SecChUa}
}

// Observe adds one request.
func (t *Traffic) Observe(r *sources.Request) {
	t.total++
	m := r.Time.Unix() / 60
	mm := t.minutes[m]
	if mm == nil {
		mm = &Minute{Start: time.Unix(m*60, 0).UTC(), Status: map[int]int{}, ProxyStatus: map[int]int{}}
		t.minutes[m] = mm
	}
	mm.Requests++
	mm.Status[r.Status]++
	if r.Origin == sources.OriginProxy {
		mm.ProxyStatus[r.Status]++
	}
	if r.Status >= 200 && r.Status < 400 {
		if t.site.ClientTimeoutS > 0 && r.Duration > t.site.ClientTimeoutS {
			mm.Late++
		} else if r.Status < 300 && r.Origin == sources.OriginUpstream {
			mm.Goodput++
		}
	}
	if r.Time.Before(t.from) || !r.Time.Before(t.to) {
		return
	}
	k := Key(r)
	c := t.clusters[k]
	if c == nil {
		c = &Cluster{Key: k, IPs: map[netip.Addr]int{}, Prefixes: map[netip.Prefix]struct{}{}, Classes: map[PathClass]int{}}
		t.clusters[k] = c
	}
	c.Requests++
	c.IPs[r.ClientIP]++
	c.Prefixes[Prefix(r.ClientIP)] = struct{}{}
	c.Classes[ClassifyPath(r.Path, r.Query, t.site.HealthURI)]++
	if r.Origin == sources.OriginUpstream {
		c.PHPSeconds += r.Duration
	}
}

// Prefix is the network a per-prefix limit would group an address into: /24 for
// IPv4, /64 for IPv6.
func Prefix(a netip.Addr) netip.Prefix {
	bits := 64
	if a.Is4() || a.Is4In6() {
		a = a.Unmap()
		bits = 24
	}
	p, _ := a.Prefix(bits)
	return p
}

// Total is the number of requests observed.
func (t *Traffic) Total() int { return t.total }

// Minutes returns the per-minute counts in time order.
func (t *Traffic) Minutes() []Minute {
	out := make([]Minute, 0, len(t.minutes))
	for _, m := range t.minutes {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// Clusters returns the fingerprints seen in the window, most requests first.
func (t *Traffic) Clusters() []*Cluster {
	out := make([]*Cluster, 0, len(t.clusters))
	for _, c := range t.clusters {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Requests != out[j].Requests {
			return out[i].Requests > out[j].Requests
		}
		return out[i].Key.String() < out[j].Key.String()
	})
	return out
}

// String renders a fingerprint for humans: "Chrome 121 / zh-cn / logged out / no client hints".
func (k ClusterKey) String() string {
	lang := k.Lang
	if lang == "" {
		lang = "no language"
	}
	s := k.UA + " / " + lang + " / "
	switch k.LoggedIn {
	case sources.LoggedInYes:
		s += "logged in"
	case sources.LoggedInNo:
		s += "logged out"
	default:
		s += "login unknown"
	}
	if k.NoClientHints {
		s += " / no client hints"
	}
	return s
}
