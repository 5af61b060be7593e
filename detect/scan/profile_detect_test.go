package scan

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// TestProfileCountsAsDetect: the scan's window profile and detect's Traffic
// read the same requests and must say the same of them, since the scan
// judges its own rises and the detectors' findings side by side: failed
// (status or a late answer), late, goodput (the latency's requests), the
// client requests (no health check, no self-call), their path classes and
// fingerprints. The requests mix what each definition tells apart: every
// origin, statuses 0 to 504, durations either side of the clients' timeout,
// the health check, PHP calling its own API and a MediaWiki agent on a page.
func TestProfileCountsAsDetect(t *testing.T) {
	cfg := Config{}.Defaults()
	now := time.Date(2026, 10, 22, 3, 0, 0, 0, time.UTC)
	site := sources.Site{HealthURI: "/healthz.php", ClientTimeoutS: 10}
	c := NewCollector(cfg, site, []time.Time{now})
	rng := rand.New(rand.NewPCG(27, 7))
	statuses := []int{200, 200, 200, 204, 301, 304, 404, 429, 499, 500, 502, 503, 504, 0}
	origins := []sources.Origin{sources.OriginUpstream, sources.OriginUpstream, sources.OriginProxy, sources.OriginStatic}
	durations := []float64{0.05, 0.4, 9.99, 10, 10.01, 31}
	paths := []struct{ path, query string }{
		{"/wiki/Seoul", ""}, {"/w/index.php", "title=Seoul&action=history"}, {"/w/index.php", "title=Special:RecentChanges"},
		{"/w/api.php", "action=query"}, {"/static/a.css", ""}, {"/healthz.php", ""}, {"/", ""}, {"/w/load.php", "modules=site"},
	}
	agents := []string{
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36",
		"Mozilla/5.0 (X11; Linux x86_64; rv:131.0) Gecko/20100101 Firefox/131.0",
		"MediaWiki/1.41.1", "curl/8.5.0", "Mozilla/5.0 (compatible; Googlebot/2.1)", "",
	}
	w := cfg.Window(now)
	for i := 0; i < 20000; i++ {
		p := paths[rng.IntN(len(paths))]
		r := &sources.Request{
			Time:      w.From.Add(time.Duration(rng.Int64N(int64(cfg.Since)))),
			ClientIP:  netip.AddrFrom4([4]byte{192, 0, byte(rng.IntN(4)), byte(rng.IntN(40))}),
			Method:    "GET",
			Path:      p.path,
			Query:     p.query,
			Status:    statuses[rng.IntN(len(statuses))],
			Duration:  durations[rng.IntN(len(durations))],
			UserAgent: agents[rng.IntN(len(agents))],
			Lang:      []string{"", "ko-kr", "en-us"}[rng.IntN(3)],
			LoggedIn:  sources.LoggedIn(rng.IntN(3)),
			TLS:       rng.IntN(2) == 0,
			SecChUa:   rng.IntN(2) == 0,
			Origin:    origins[rng.IntN(len(origins))],
		}
		c.Observe(r)
	}
	c.finish()
	prof := c.profile(w)
	tr := c.scan(now).traffic

	var lines, failed, late, goodput int
	for _, m := range tr.Minutes() {
		lines += m.Requests
		failed += m.Failed()
		late += m.Late
		goodput += m.Goodput
	}
	classes := map[request.PathClass]int{}
	clusters := map[request.ClusterKey]int{}
	requests := 0
	for _, cl := range tr.Clusters() {
		requests += cl.Requests
		clusters[cl.Key] = cl.Requests
		for class, n := range cl.Classes {
			classes[class] += n
		}
	}
	for _, x := range []struct {
		what          string
		scan, detects int
	}{
		{"lines", prof.Lines, lines},
		{"failed", prof.Failed, failed},
		{"late", prof.Late, late},
		{"goodput (latency samples)", prof.Latency.N, goodput},
		{"client requests", prof.Requests, requests},
		{"fingerprints", len(prof.Clusters), len(clusters)},
	} {
		if x.scan != x.detects {
			t.Errorf("%s: scan %d, detect %d", x.what, x.scan, x.detects)
		}
	}
	if fmt.Sprint(prof.Classes) != fmt.Sprint(classes) {
		t.Errorf("path classes: scan %v, detect %v", prof.Classes, classes)
	}
	for k, n := range clusters {
		if got := prof.Clusters[k]; got == nil || got.Requests != n {
			t.Errorf("fingerprint %v: scan %+v, detect %d requests", k, got, n)
		}
	}
	// The mix holds every case each definition tells apart.
	if prof.Late == 0 || prof.Status429 == 0 || prof.Proxy503 == 0 || prof.Latency.N == 0 || prof.Lines == prof.Requests {
		t.Fatalf("the mix lacks a case: %d late, %d 429, %d proxy 503, %d goodput, %d of %d lines from clients",
			prof.Late, prof.Status429, prof.Proxy503, prof.Latency.N, prof.Requests, prof.Lines)
	}
}
