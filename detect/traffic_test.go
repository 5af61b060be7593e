package detect

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

func TestTrafficMinutesAndClusters(t *testing.T) {
	from := time.Date(2026, 10, 2, 17, 0, 0, 0, time.UTC)
	site := sources.Site{ClientTimeoutS: 10, HealthURI: "/healthz.php"}
	tr := NewTraffic(site, from, from.Add(time.Hour))
	crawlerUA := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"
	add := func(sec int, ip string, status int, origin sources.Origin, dur float64, ua, lang string, path string) {
		tr.Observe(&sources.Request{
			Time: from.Add(time.Duration(sec) * time.Second), ClientIP: netip.MustParseAddr(ip), Status: status, TLS: true,
			Origin: origin, Duration: dur, UserAgent: ua, Lang: lang, LoggedIn: sources.LoggedInNo, Path: path,
		})
	}
	add(-30, "10.0.0.1", 200, sources.OriginUpstream, 0.2, crawlerUA, "zh-cn", "/w/Special:NewItem") // before the window
	add(5, "10.0.1.1", 200, sources.OriginUpstream, 0.3, crawlerUA, "zh-cn", "/w/Special:NewItem")
	add(6, "10.0.2.1", 503, sources.OriginProxy, 0.0002, crawlerUA, "zh-cn", "/w/Special:NewItem")
	add(7, "10.0.2.2", 200, sources.OriginUpstream, 14, crawlerUA, "zh-cn", "/w/index.php")
	add(65, "2001:db8::1", 200, sources.OriginStatic, 0.001, "Mozilla/5.0 Firefox/128.0", "ko-kr", "/static/a.css")

	mins := tr.Minutes()
	if len(mins) != 3 {
		t.Fatalf("got %d minutes, want 3", len(mins))
	}
	m := mins[1]
	if m.Requests != 3 || m.Status[200] != 2 || m.Status[503] != 1 || m.ProxyStatus[503] != 1 {
		t.Errorf("minute 1 = %+v", m)
	}
	if m.Goodput != 1 || m.Late != 1 || m.Abandoned != 1 {
		t.Errorf("goodput %d late %d abandoned %d, want 1 each (a 200 after the client timeout reached nobody)", m.Goodput, m.Late, m.Abandoned)
	}
	cs := tr.Clusters()
	if len(cs) != 2 {
		t.Fatalf("got %d clusters, want 2", len(cs))
	}
	c := cs[0]
	if versions := c.walkedBy(c.IPs, func(tpl string) string { return tpl }).versions[0]; c.Key.UA != "Chrome" || c.Key.Lang != "zh-cn" || !c.Key.NoClientHints || c.Requests != 3 || versions["121"] != 3 {
		t.Errorf("top cluster = %+v, versions %v", c.Key, versions)
	}
	if len(c.IPs) != 3 || c.DistinctPrefixes() != 2 {
		t.Errorf("distinct IPs %d prefixes %d, want 3 and 2", len(c.IPs), c.DistinctPrefixes())
	}
	if got := request.Prefix(netip.MustParseAddr("2001:db8::1")).String(); got != "2001:db8::/64" {
		t.Errorf("IPv6 prefix = %s", got)
	}
}

// TestAddMinuteStatusCountsLikeObserve: per-minute counts of lines that were
// not read give a minute the same requests, statuses, origins and PHP time as
// reading those lines would; in a minute with lines read as well (a client
// family pulled across the window) the two add up.
func TestAddMinuteStatusCountsLikeObserve(t *testing.T) {
	from := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	site := sources.Site{ClientTimeoutS: 10}
	lines := []sources.Request{
		{Status: 200, Origin: sources.OriginUpstream, Duration: 0.25},
		{Status: 200, Origin: sources.OriginUpstream, Duration: 0.5},
		{Status: 200, Origin: sources.OriginUpstream, Duration: 12},
		{Status: 504, Origin: sources.OriginProxy, Duration: 30},
		{Status: 503, Origin: sources.OriginProxy, Duration: 0.0002},
		{Status: 200, Origin: sources.OriginStatic, Duration: 0.001},
		{Status: 302, Origin: sources.OriginUpstream, Duration: 0.1},
	}
	read := NewTraffic(site, from, from.Add(time.Hour))
	for i := range lines {
		r := lines[i]
		r.Time = from.Add(time.Duration(i) * time.Second)
		read.Observe(&r)
	}
	counted := NewTraffic(site, from, from.Add(time.Hour))
	counted.Observe(&sources.Request{Time: from.Add(time.Minute), Status: 200, Origin: sources.OriginStatic})
	added := counted.AddMinuteStatus([]bundle.MinuteStatus{
		{Minute: from, Status: 200, Origin: sources.OriginUpstream, Requests: 2, PHPSeconds: 0.75},
		{Minute: from, Status: 200, Origin: sources.OriginUpstream, Late: true, Requests: 1, PHPSeconds: 12},
		{Minute: from, Status: 504, Origin: sources.OriginProxy, Late: true, Requests: 1},
		{Minute: from, Status: 503, Origin: sources.OriginProxy, Requests: 1},
		{Minute: from, Status: 200, Origin: sources.OriginStatic, Requests: 1},
		{Minute: from, Status: 302, Origin: sources.OriginUpstream, Requests: 1, PHPSeconds: 0.1},
		{Minute: from.Add(time.Minute), Status: 200, Origin: sources.OriginStatic, Requests: 40}, // not the line read
	})
	if added != 7 {
		t.Errorf("added %d rows, want 7", added)
	}
	want, got := read.Minute(from), counted.Minute(from)
	if got == nil {
		t.Fatal("no minute from the counts")
	}
	// Latencies exist only for lines read; Counted says how many were not.
	want.Latency, want.PHPDurations = Histogram{}, Histogram{}
	if got.Counted != 7 || want.Counted != 0 {
		t.Errorf("counted %d (from counts) and %d (from lines), want 7 and 0", got.Counted, want.Counted)
	}
	want.Counted = got.Counted
	if !reflect.DeepEqual(got, want) {
		t.Errorf("from counts %+v\nfrom lines  %+v", got, want)
	}
	if m := counted.Minute(from.Add(time.Minute)); m.Requests != 41 {
		t.Errorf("the minute with a line read and 40 counted got %d requests, want 41", m.Requests)
	}
	if counted.Total() != 1 {
		t.Errorf("Total %d counts lines read, want 1", counted.Total())
	}
}

// A pushdown reads a client's lines whole only when its family was pulled
// across the range; another client's usual rate comes from the minutes read
// whole (the baseline's sample) and is marked estimated. Counting the
// minutes that were only counted as zero would be the obvious and wrong
// answer: a tenth of its rate.
func TestClusterBaselineFromReadMinutes(t *testing.T) {
	from := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	site := sources.Site{}
	tr := NewTraffic(site, from.Add(3*time.Hour), from.Add(4*time.Hour))
	reader := func(ts time.Time, ua string) *sources.Request {
		return &sources.Request{Time: ts, ClientIP: netip.MustParseAddr("198.51.100.7"), Path: "/wiki/A", Status: 200, Origin: sources.OriginStatic, UserAgent: ua, Lang: "en"}
	}
	const sampled, whole = "Mozilla/5.0 Firefox/131.0", "Mozilla/5.0 Chrome/129.0.0.0 Safari/537.36"
	var rows []bundle.MinuteStatus
	for m := range 180 {
		ts := from.Add(time.Duration(m) * time.Minute)
		read := m%6 == 0 // a sample: one minute in six read whole
		// The family pulled whole: 2 a minute, read in every minute.
		tr.Observe(reader(ts, whole))
		tr.Observe(reader(ts.Add(time.Second), whole))
		if read {
			for k := range 5 {
				tr.Observe(reader(ts.Add(time.Duration(k+2)*time.Second), sampled))
			}
			continue
		}
		rows = append(rows, bundle.MinuteStatus{Minute: ts, Status: 200, Origin: sources.OriginStatic, Requests: 5})
	}
	tr.AddMinuteStatus(rows)
	ev := &Evidence{From: from.Add(3 * time.Hour), To: from.Add(4 * time.Hour), Traffic: tr}
	var s, w *Cluster
	for _, c := range tr.clusters {
		switch c.Key.UA {
		case "Firefox":
			s = c
		case "Chrome":
			w = c
		}
	}
	if s == nil || w == nil {
		t.Fatalf("clusters %v", tr.clusters)
	}
	if got, est := ev.clusterBaseline10(s, s.PerMinute(), from, from.Add(3*time.Hour)); got != 50 || !est {
		t.Errorf("sampled client: %v per 10 min (estimated %v), want 50, estimated", got, est)
	}
	if got, est := ev.clusterBaseline10(w, w.PerMinute(), from, from.Add(3*time.Hour)); got != 20 || est {
		t.Errorf("client read whole: %v per 10 min (estimated %v), want 20, measured", got, est)
	}
	// Told that its family was pulled across the range (bundle.yaml), a
	// client is read whole though no line of it shares a counted minute.
	if tr.readWhole(s) {
		t.Fatalf("the sampled client reads as whole")
	}
	tr.PulledFamilies([]string{"firefox/en"})
	if !tr.readWhole(s) {
		t.Errorf("a client of a family pulled whole reads as sampled (family %q)", s.family)
	}
}

// TestClusterDistinctPrefixes: networks are counted as Prefix folds them, so
// an IPv4 address written IPv4-mapped shares its /24 with the plain one, and
// IPv6 addresses share a /64 rather than counting one each.
func TestClusterDistinctPrefixes(t *testing.T) {
	c := &Cluster{IPs: map[netip.Addr]*AddressBehaviour{}}
	for _, ip := range []string{"10.0.1.1", "::ffff:10.0.1.2", "10.0.2.1", "2001:db8::1", "2001:db8::2", "2001:db8:0:1::1"} {
		c.IPs[netip.MustParseAddr(ip)] = &AddressBehaviour{}
	}
	if got := c.DistinctPrefixes(); got != 4 {
		t.Errorf("DistinctPrefixes = %d, want 4 (10.0.1/24, 10.0.2/24, 2001:db8::/64, 2001:db8:0:1::/64)", got)
	}
	if got := (&Cluster{}).DistinctPrefixes(); got != 0 {
		t.Errorf("DistinctPrefixes of no addresses = %d, want 0", got)
	}
}
