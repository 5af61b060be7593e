package detect

import (
	"net/netip"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// TestTrafficCountsBySender: Traffic leaves out of every fingerprint exactly
// the requests request.SenderOf calls the probe's or the site's, and counts
// the site's own calls as SelfCalls: PHP's HTTP client on the health check is
// the probe's (not a self-call), and a MediaWiki user agent reading a page is
// a client's. The sorting is SenderOf's alone: Traffic holds no branch of its
// own that could disagree with the scan's profiles.
func TestTrafficCountsBySender(t *testing.T) {
	from := time.Date(2026, 10, 2, 17, 0, 0, 0, time.UTC)
	site := sources.Site{ClientTimeoutS: 10, HealthURI: "/healthz.php"}
	tr := NewTraffic(site, from, from.Add(time.Hour))
	sent := map[request.Sender]int{}
	for i, c := range []struct{ path, ua string }{
		{"/healthz.php", "Go-http-client/1.1"},
		{"/healthz.php", "GuzzleHttp/7"},
		{"/w/api.php", "MediaWiki/1.41.1"},
		{"/w/api.php", "GuzzleHttp/7"},
		{"/w/api.php", "curl/8.5.0"},
		{"/wiki/Seoul", "MediaWiki/1.41.1"},
		{"/wiki/Seoul", "Mozilla/5.0 (X11; Linux x86_64; rv:131.0) Gecko/20100101 Firefox/131.0"},
	} {
		r := &sources.Request{Time: from.Add(time.Duration(i) * time.Second), ClientIP: netip.MustParseAddr("10.0.0.1"), Method: "GET",
			Path: c.path, Status: 200, Origin: sources.OriginUpstream, Duration: 0.1, UserAgent: c.ua, TLS: true}
		sent[request.SenderOf(request.ClassifyPath(r.Path, r.Query, site.HealthURI), r)]++
		tr.Observe(r)
	}
	if sent[request.SentByProbe] != 2 || sent[request.SentBySite] != 2 || sent[request.SentByClient] != 3 {
		t.Fatalf("SenderOf sorted the requests %v, want 2 probe, 2 site, 3 client", sent)
	}
	selfCalls := 0
	for _, m := range tr.Minutes() {
		selfCalls += m.SelfCalls
	}
	clients := 0
	for _, c := range tr.Clusters() {
		clients += c.Requests
	}
	if selfCalls != sent[request.SentBySite] || clients != sent[request.SentByClient] {
		t.Errorf("Traffic counted %d self-calls and %d client requests, SenderOf %d and %d", selfCalls, clients, sent[request.SentBySite], sent[request.SentByClient])
	}
}
