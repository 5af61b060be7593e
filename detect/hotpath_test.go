package detect

import (
	"math"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchreqs"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

// The hot path of ingest (issue 9) was made faster without changing a result:
// these tests hold the new code to the old, kept here as the reference.

// observeOriginal is Observe as it was before its caches (issue 9), the
// reference the cached one must match. It counts each cluster's requests by
// arrival minute in perMinute, as Cluster.PerMinute was before they were
// counted in the cluster's minutes.
func (t *Traffic) observeOriginal(r *sources.Request, perMinute map[request.ClusterKey]map[int64]int) {
	t.total++
	if t.first.IsZero() || r.Time.Before(t.first) {
		t.first = r.Time
	}
	if r.Time.After(t.last) {
		t.last = r.Time
	}
	m := r.Time.Unix() / 60
	mm := t.minutes[m]
	if mm == nil {
		mm = &Minute{Start: time.Unix(m*60, 0).UTC(), Status: map[int]int{}, ProxyStatus: map[int]int{}}
		t.minutes[m] = mm
	}
	mm.Requests++
	mm.Status[r.Status]++
	late := t.site.ClientTimeoutS > 0 && r.Duration > t.site.ClientTimeoutS
	good := false
	switch r.Origin {
	case sources.OriginProxy:
		mm.ProxyStatus[r.Status]++
		if late && r.Status == 504 {
			mm.Abandoned++
		}
	case sources.OriginUpstream:
		mm.PHPDone++
		mm.PHPSeconds += r.Duration
		mm.PHPDurations.Add(r.Duration)
		if late {
			mm.Abandoned++
		}
	}
	if r.Status >= 200 && r.Status < 400 {
		switch {
		case late:
			mm.Late++
		case r.Status >= 300:
		case r.Origin == sources.OriginUpstream:
			mm.Goodput++
			mm.Latency.Add(r.Duration)
			good = true
		default:
			mm.Cached++
		}
	}
	class := request.ClassifyPath(r.Path, r.Query, t.site.HealthURI)
	if class == request.ClassHealth {
		// The proxy's own probe is not a client: it would blur every fingerprint.
		return
	}
	if class == request.ClassAPI && request.SelfCall(r) {
		// The site calling itself is not a client either; it is counted here
		// and judged by self_amplification.
		mm.SelfCalls++
		return
	}
	tpl := t.routes.template(r.Path, r.Query)
	t.routes.observe(tpl, m, r)
	k := request.Key(r)
	c := t.clusters[k]
	if c == nil {
		c = &Cluster{Key: k, minutes: map[int64]*clusterMinute{}, IPs: map[netip.Addr]*AddressBehaviour{},
			Classes: map[request.PathClass]int{}, Routes: map[string]int{},
			lastLogged: -1, family: bundle.ClientFamily(r.UserAgent, r.Lang)}
		t.clusters[k] = c
	}
	if m != c.lastLogged {
		c.logged = append(c.logged, runMinute(m))
	}
	c.lastLogged = m
	if perMinute[k] == nil {
		perMinute[k] = map[int64]int{}
	}
	perMinute[k][arrivedIn(r)]++
	// Looked up every time; the held entry (last) is the cache's state,
	// set as the cache leaves it.
	at := func(m int64) *clusterMinute {
		if c.minutes[m] == nil {
			c.minutes[m] = &clusterMinute{}
		}
		return c.minutes[m]
	}
	at(arrivedIn(r)).arrived++
	if good {
		at(m).good++
	}
	if r.Origin == sources.OriginUpstream {
		at(m).phpSeconds += r.Duration
	}
	c.last, c.lastAt = at(m), m
	c.perMinute = nil
	if r.Time.Before(t.from) {
		if c.before == nil {
			c.before = map[netip.Addr]*AddressBehaviour{}
		}
		if c.before[r.ClientIP] == nil {
			c.before[r.ClientIP] = &AddressBehaviour{}
		}
		c.before[r.ClientIP].Observe(r.Start().UnixNano(), class == request.ClassAsset, r.SiteReferer)
		c.before[r.ClientIP].ObserveMethod(r.Method)
		return
	}
	if !r.Time.Before(t.to) {
		return
	}
	c.Requests++
	if c.IPs[r.ClientIP] == nil {
		c.IPs[r.ClientIP] = &AddressBehaviour{}
	}
	c.IPs[r.ClientIP].Observe(r.Start().UnixNano(), class == request.ClassAsset, r.SiteReferer)
	c.IPs[r.ClientIP].ObserveMethod(r.Method)
	c.IPs[r.ClientIP].routes |= c.routeBit(tpl)
	c.Classes[class]++
	label := request.ToolLabel(r.Path, r.Query, class)
	_, version := request.SplitFamily(request.UAFamily(r.UserAgent))
	c.IPs[r.ClientIP].walk.add(c.walkID(walkKey{label: label, template: tpl, version: version}))
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
		c.IPs[r.ClientIP].observePHP(r.Duration)
	}
}

// arrivedIn is the minute (unix seconds / 60) request r arrived in, as
// the reference counts it.
func arrivedIn(r *sources.Request) int64 {
	at := r.Time
	if r.Duration > 0 && !math.IsInf(r.Duration, 0) {
		at = at.Add(-time.Duration(r.Duration * float64(time.Second)))
	}
	return at.Unix() / 60
}

// TestArrivalTimesMatchOriginal holds arrivalTimes, one time.Time.Add for
// what the arrival counts and the address's took with one each, to them:
// arrived is the reference's (arrivedIn), start r.Start(), for the
// durations where they part (negative, infinite, NaN: start is a careless
// "arrived" there, and the other way round), 0, and the usual ones.
func TestArrivalTimesMatchOriginal(t *testing.T) {
	at := time.Date(2026, 10, 3, 2, 0, 0, 500, time.UTC)
	for _, d := range []float64{0, 0.25, 2.5, 30, 59.9999, 1e-10, -3, -0.5, math.Inf(1), math.Inf(-1), math.NaN(), 1e12} {
		r := sources.Request{Time: at, Duration: d}
		arrived, start := arrivalTimes(&r)
		if !start.Equal(r.Start()) {
			t.Errorf("duration %v: start %v, r.Start() %v", d, start, r.Start())
		}
		wantArrived := r.Time
		if d > 0 && !math.IsInf(d, 0) {
			wantArrived = r.Start()
		}
		if !arrived.Equal(wantArrived) || arrived.Unix()/60 != arrivedIn(&r) {
			t.Errorf("duration %v: arrived %v, the original %v", d, arrived, wantArrived)
		}
	}
}

func TestObserveMatchesOriginal(t *testing.T) {
	reqs := benchreqs.Requests(t, 8<<20)
	odd := []sources.Request{
		{Time: reqs[0].Time, ClientIP: netip.MustParseAddr("::ffff:10.1.2.3"), Path: "/healthz.php", Status: 200, Origin: sources.OriginUpstream},
		{Time: reqs[1].Time, ClientIP: netip.MustParseAddr("10.1.2.3"), Path: "/api.php", Query: "action=query", UserAgent: "MediaWiki/1.42", Status: 200},
		{Time: reqs[2].Time.Add(-time.Hour), ClientIP: netip.MustParseAddr("2001:db8::7"), Path: "/w/%ED%8A%B9%EC%88%98:%EC%B5%9C%EA%B7%BC", Status: 504, Origin: sources.OriginProxy, Duration: 30},
		{Time: reqs[3].Time, ClientIP: netip.MustParseAddr("10.9.9.9"), Path: "/W/İSTANBUL", Query: "title=Special%3ANewItem&action=EDIT", UserAgent: "Mozilla/5.0 Chrome/", Status: 302, TLS: true},
	}
	reqs = append(odd, reqs...)
	site := sources.Site{ClientTimeoutS: 10, HealthURI: "/healthz.php"}
	from := reqs[len(reqs)/3].Time
	to := reqs[2*len(reqs)/3].Time
	got, want := NewTraffic(site, from, to), NewTraffic(site, from, to)
	perMinute := map[request.ClusterKey]map[int64]int{}
	for i := range reqs {
		if i%64 == 0 { // in batches, as ingest observes them
			got.ReadAhead(reqs[i:min(i+64, len(reqs))])
		}
		got.Observe(&reqs[i])
		want.observeOriginal(&reqs[i], perMinute)
		if i == len(reqs)/2 {
			// Asked halfway, PerMinute must not keep the first half's
			// answer once requests are added.
			for _, c := range got.clusters {
				c.PerMinute()
			}
		}
	}
	for k, c := range got.clusters {
		if pm := c.PerMinute(); !reflect.DeepEqual(pm, perMinute[k]) {
			t.Fatalf("cluster %v: PerMinute has %d minutes, %d before", k, len(pm), len(perMinute[k]))
		}
		c.perMinute = nil // as the reference's are
	}
	if got.Total() != want.Total() || !reflect.DeepEqual(got.Minutes(), want.Minutes()) {
		t.Fatalf("minutes differ")
	}
	gc, wc := got.Clusters(), want.Clusters()
	if len(gc) < 10 || !reflect.DeepEqual(gc, wc) {
		t.Fatalf("clusters differ (%d and %d)", len(gc), len(wc))
	}
	// Route records are found through the memo (memoSlot.routeRecord).
	if gr, wr := got.routes.routes(), want.routes.routes(); len(gr) < 10 || !reflect.DeepEqual(gr, wr) {
		t.Fatalf("route tables differ (%d and %d templates)", len(gr), len(wr))
	}
}
