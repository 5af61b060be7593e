package detect

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// TestCrawlerWeighsWithoutItsReaders: an office's staff, logged in under
// one browser fingerprint, read and edit over lunch; their number rises
// tenfold, and a few dozen of them leave one request each without assets
// (an edit submitted, a page opened once): the shape of a spread crawl,
// under a fingerprint that carries a large share of the window. Its
// readers are not the crawler's weight: what is left is a fraction of a
// percent of the window, no crawler, and the check says so.
func TestCrawlerWeighsWithoutItsReaders(t *testing.T) {
	from, to := t0, t0.Add(time.Hour)
	tr := NewTraffic(sources.Site{}, from, to)
	const ua = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36"
	var rs []sources.Request
	addr := 0
	next := func() netip.Addr {
		addr++
		return nthAddr(addr)
	}
	req := func(at time.Time, ip netip.Addr, method, path string) sources.Request {
		return sources.Request{Time: at, ClientIP: ip, Method: method, Path: path, Status: 200, UserAgent: ua, Lang: "ko-kr",
			LoggedIn: sources.LoggedInYes, Origin: sources.OriginUpstream, TLS: true, SecChUa: true, Duration: 0.1}
	}
	for at := from.Add(-time.Hour); at.Before(to); at = at.Add(time.Minute) {
		n := 4
		lunch := !at.Before(from.Add(20 * time.Minute))
		if lunch {
			n = 40
		}
		for k := range n {
			ip, ts := next(), at.Add(time.Duration(k)*time.Minute/time.Duration(n))
			rs = append(rs, req(ts, ip, "GET", fmt.Sprintf("/w/Page_%d", k)), req(ts.Add(time.Second), ip, "GET", "/skins/vector/style.css"))
		}
		if !at.Before(from.Add(30*time.Minute)) && at.Before(from.Add(36*time.Minute)) {
			for k := range 6 {
				rs = append(rs, req(at.Add(time.Duration(k)*10*time.Second), next(), "POST", "/index.php"))
			}
		}
	}
	observeInOrder(tr, rs)
	fs, check := crawlersOf(t, tr, from, to)
	if len(fs) != 0 {
		t.Fatalf("staff at lunch were called a crawler: %s", fs[0].Summary)
	}
	if !strings.Contains(check.Reason, "once their readers are left out") {
		t.Errorf("the check does not say the rise was too small without its readers: %s", check.Reason)
	}
}
