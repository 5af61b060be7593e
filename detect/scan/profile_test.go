package scan

import (
	"net/netip"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

func req(t time.Time, ip, ua, path string, status int, origin sources.Origin) *sources.Request {
	return &sources.Request{Time: t, ClientIP: netip.MustParseAddr(ip), Method: "GET", Path: path, Status: status,
		Duration: 0.2, UserAgent: ua, Lang: "ko-kr", LoggedIn: sources.LoggedInNo, Origin: origin}
}

// TestCollector: one pass fills the window, the baseline slots and the
// detectors' traffic; the proxy's health checks and the site's calls to itself
// are no client; a slot outside what the evidence holds, or fetched but
// empty (past Loki's retention), is not covered.
func TestCollector(t *testing.T) {
	cfg := Config{}.Defaults()
	now := time.Date(2026, 10, 22, 3, 0, 0, 0, time.UTC)
	site := sources.Site{HealthURI: "/healthz.php", ClientTimeoutS: 10}
	c := NewCollector(cfg, site, []time.Time{now})
	ff := "Mozilla/5.0 (X11; Linux x86_64; rv:131.0) Gecko/20100101 Firefox/131.0"
	for d := 0; d <= 6; d++ { // nothing 7 days back
		at := now.AddDate(0, 0, -d).Add(-30 * time.Minute)
		c.Observe(req(at, "192.0.2.1", ff, "/w/Seoul", 200, sources.OriginUpstream))
		c.Observe(req(at, "192.0.2.2", ff, "/w/Busan", 200, sources.OriginUpstream))
		c.Observe(req(at, "198.51.100.7", ff, "/static/a.css", 200, sources.OriginStatic))
		c.Observe(req(at, "127.0.0.1", "Go-http-client/1.1", "/healthz.php", 200, sources.OriginUpstream))
		c.Observe(req(at, "127.0.0.1", "MediaWiki/1.41.1", "/w/api.php", 200, sources.OriginUpstream))
	}
	c.Observe(req(now.Add(-time.Minute), "203.0.113.9", ff, "/w/x", 503, sources.OriginProxy))
	c.Observe(req(now.Add(-2*time.Hour), "192.0.2.1", ff, "/w/Seoul", 200, sources.OriginUpstream)) // lookback only
	c.Observe(req(now.Add(-5*time.Hour), "192.0.2.1", ff, "/w/Seoul", 200, sources.OriginUpstream)) // read by nothing
	c.fetched = mergeRanges([]Range{{now.AddDate(0, 0, -8), now.AddDate(0, 0, -3)}, {now.AddDate(0, 0, -2).Add(-time.Hour), now}})
	c.finish()

	w := c.profile(cfg.Window(now))
	if w.Lines != 6 || w.Requests != 4 || w.Failed != 1 || w.Proxy503 != 1 || w.Classes[request.ClassAsset] != 1 {
		t.Errorf("window: %d lines, %d client requests, %d failed, %d proxy 503, classes %v; want 6, 4, 1, 1, one asset",
			w.Lines, w.Requests, w.Failed, w.Proxy503, w.Classes)
	}
	cl := w.Clusters[request.ClusterKey{UA: "Firefox", Lang: "ko-kr", LoggedIn: sources.LoggedInNo}]
	if cl == nil || cl.Requests != 4 || cl.IPs != 4 || cl.Prefixes != 3 || cl.Assets != 1 {
		t.Errorf("Firefox cluster %+v: want 4 requests from 4 addresses in 3 networks, 1 asset", cl)
	}
	if len(w.Clusters) != 1 {
		t.Errorf("clusters %v: health checks and self-calls are not clients", w.Clusters)
	}
	covered := map[int]bool{}
	for i, s := range cfg.Slots(now) {
		p := c.profile(s)
		covered[i+1] = p.Covered
		if want := 3 * min(1, 7-(i+1)); p.Requests != want {
			t.Errorf("slot %d days back: %d requests, want %d", i+1, p.Requests, want)
		}
	}
	// The fetched ranges hold every slot; the oldest one (7 days back)
	// returned nothing and is therefore not covered.
	for day, want := range map[int]bool{1: true, 2: true, 3: true, 6: true, 7: false} {
		if covered[day] != want {
			t.Errorf("slot %d days back covered = %v, want %v", day, covered[day], want)
		}
	}
	if tr := c.scan(now).traffic; tr.Total() != 7 {
		t.Errorf("detect traffic saw %d requests, want 7 (the window's 6 and one in the lookback)", tr.Total())
	}
	if c.used != 7*5+2 {
		t.Errorf("used %d requests, want every one but the one 5 hours back", c.used)
	}

	// Without the fetch's ranges, a gap between reads cannot be told.
	gap := NewCollector(cfg, site, []time.Time{now})
	gap.Observe(req(now.AddDate(0, 0, -3), "192.0.2.1", ff, "/w/Seoul", 200, sources.OriginUpstream))
	gap.Observe(req(now.Add(-time.Minute), "192.0.2.1", ff, "/w/Seoul", 200, sources.OriginUpstream))
	gap.fetched = []Range{{now.AddDate(0, 0, -3), now.AddDate(0, 0, -3).Add(time.Hour)}, {now.Add(-4 * time.Hour), now}}
	gap.finish()
	if p := gap.profile(cfg.Slots(now)[0]); p.Covered {
		t.Error("yesterday's slot lies between two fetched ranges and is covered")
	}
}
