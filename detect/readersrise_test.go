package detect

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// TestReadersRiseIsNoCrawler: a story goes round and the people reading it
// share one browser fingerprint; its requests rise twentyfold from many new
// addresses, and with the site's assets in their browsers' caches they fetch
// none: the shape crawler_burst looks for, and what it called a crawler
// while readers counted in its rates. But each address reads three pages
// over two minutes, following links from the site's own pages: a rise only
// through readers is no crawler, and the check says the rise was theirs.
func TestReadersRiseIsNoCrawler(t *testing.T) {
	from, to := t0, t0.Add(time.Hour)
	tr := NewTraffic(sources.Site{}, from, to)
	const ua = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"
	var rs []sources.Request
	visit := 0
	read := func(at time.Time) {
		ip := nthAddr(visit)
		visit++
		for page := range 3 {
			rs = append(rs, sources.Request{Time: at.Add(time.Duration(page) * time.Minute), ClientIP: ip, Method: "GET",
				Path: fmt.Sprintf("/wiki/Story_%d", (visit+page)%7), Status: 200, UserAgent: ua, Lang: "en-us",
				LoggedIn: sources.LoggedInNo, Origin: sources.OriginUpstream, TLS: true, SiteReferer: page > 0})
		}
	}
	for at := from.Add(-time.Hour); at.Before(to); at = at.Add(time.Minute) {
		n := 2
		if !at.Before(from.Add(20*time.Minute)) && at.Before(to.Add(-3*time.Minute)) {
			n = 40
		}
		for k := range n {
			read(at.Add(time.Duration(k) * time.Minute / time.Duration(n)))
		}
	}
	observeInOrder(tr, rs)
	fs, check := crawlersOf(t, tr, from, to)
	if len(fs) != 0 {
		t.Fatalf("readers reading a story were called a crawler: %s", fs[0].Summary)
	}
	if !strings.Contains(check.Reason, "only through the addresses that read like people") {
		t.Errorf("the check does not say the rise was the readers': %s", check.Reason)
	}
}
