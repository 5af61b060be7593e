package detect

import (
	"maps"
	"math"
	"net/netip"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// Readers who share a crawler's fingerprint. A fingerprint (ClusterKey:
// browser family, language, logged in or not, client hints) is coarse: a
// crawler that claims to be Chrome with zh-CN shares it with every reader
// whose Chrome asks for zh-CN. Counting them as the crawler overstates the
// crawl and hides what a rate limit on the fingerprint refuses among people:
// in the lab recording a zone the backtest said refused no reader refused
// three real zh-CN readers clicking page tools once deployed.
//
// An address under a fingerprint counts as a reader when it behaved like a
// person reading the site:
//
//   - it fetched page assets (a browser renders what it reads; the spread
//     crawlers walked tools and fetched none), or
//   - it came to a page from one of the site's own pages (a Referer naming
//     the site) after an earlier request of its own: a click in a session,
//     not a first request, since one header is all a crawler needs to forge
//     a referer and a spread crawler sends one or two requests per address, or
//   - it read several pages over minutes: at least minReaderPages pages
//     spanning minReaderSpan;
//
// and in every case at a reader's pace: no more than maxReaderPagesPerMinute
// pages a minute on average over its span (at least a minute), so that a
// concentrated crawler, which sends many pages from one address, never counts
// as a reader even if it fetches assets and sends referers. A spread crawler
// that fetched assets, or sent referers from an address it used twice, would
// count as readers there: the backtest then overstates collateral and
// understates what a zone stops, which errs on the side a deploy can trust.
const (
	minReaderPages          = 3
	minReaderSpan           = 2 * time.Minute
	maxReaderPagesPerMinute = 10
)

// AddressBehaviour is what one address did under one fingerprint: enough to
// tell a reader from a crawler (Reader), and no more, since there is one per
// address.
type AddressBehaviour struct {
	// Requests counts all its requests, Assets those for page assets, Pages
	// the others.
	Requests, Assets, Pages int
	// SessionClicks counts its pages that came from the site's own pages
	// (sources.Request.SiteReferer) after an earlier request of its own.
	// It, Posts and Credentialed are four bytes each (one address sends
	// fewer than 2^31 requests in a window, as minuteRun and walkCount
	// assume), so that phpMicros fits in the record's 128 bytes.
	SessionClicks int32
	// Posts counts its requests by POST (a form, a login, an API call):
	// pages sent, not read (ObserveMethod).
	Posts int32
	// Credentialed counts its requests that presented an account's
	// credentials: an Authorization header, or the site's logged-in cookie
	// (ObserveCredentials).
	Credentialed int32
	// First is its first arrival, FirstPage and LastPage its first and last
	// page's (unix nanoseconds).
	First, FirstPage, LastPage int64
	// arrivals counts its requests by the minute they arrived, in runs of
	// one minute (unix seconds / 60), so that a reader's requests can be
	// taken out of its fingerprint's rate (Cluster.CrawlerPerMinute).
	arrivals []minuteRun
	// routes has a bit set for each route template it asked for, by the
	// template's bit in its cluster (Cluster.routeBit), so that addresses
	// that walked the same routes can be told from those that did not
	// (actor.go) at eight bytes an address.
	routes uint64
	// walk counts its requests of the window by what it asked for, so
	// that an actor's pages and browser versions are its own addresses'
	// (actorwalk.go).
	walk addressWalk
	// phpMicros sums PHP's time on its requests of the window that PHP
	// answered (their logged durations, as Cluster.PHPSeconds sums them
	// for the whole fingerprint), so that an actor's share of PHP's time
	// is its own addresses' (Cluster.walkedBy). It is whole microseconds
	// so that an actor's sum is exact in whatever order its addresses come
	// (a map's); 2^64 of them are some 580,000 years.
	phpMicros uint64
}

// observePHP adds the duration (seconds) of a request PHP answered.
func (b *AddressBehaviour) observePHP(seconds float64) {
	if seconds > 0 {
		b.phpMicros += uint64(math.Round(seconds * 1e6))
	}
}

// minuteRun is a count of requests that arrived in one minute, in eight
// bytes: there is one per address and minute it sent in, the bulk of an
// address's record on a long log. Unix minutes fit 32 bits until the year
// 6053 (later times share its last minute, runMinute); one address sends
// fewer than 2^31 requests a minute.
type minuteRun struct {
	minute int32
	n      int32
}

// runMinute is minute m (unix seconds / 60) as a minuteRun holds it.
func runMinute(m int64) int32 {
	return int32(min(max(m, math.MinInt32), math.MaxInt32))
}

// Observe adds one arrival at (unix nanoseconds); asset says whether it was
// for a page asset, siteReferer whether its Referer named the site.
func (b *AddressBehaviour) Observe(at int64, asset, siteReferer bool) {
	if b.Requests == 0 || at < b.First {
		b.First = at
	}
	b.Requests++
	// Requests come in log order, so most arrive in the minute of the one
	// before.
	if m := runMinute(at / int64(time.Minute)); len(b.arrivals) > 0 && b.arrivals[len(b.arrivals)-1].minute == m {
		b.arrivals[len(b.arrivals)-1].n++
	} else {
		b.arrivals = append(b.arrivals, minuteRun{minute: m, n: 1})
	}
	if asset {
		b.Assets++
		return
	}
	if siteReferer && b.Requests > 1 && at > b.First {
		b.SessionClicks++
	}
	if b.Pages == 0 || at < b.FirstPage {
		b.FirstPage = at
	}
	if at > b.LastPage {
		b.LastPage = at
	}
	b.Pages++
}

// ObserveCredentials counts the request just observed among Credentialed
// when it carried an Authorization header or the logged-in cookie.
func (b *AddressBehaviour) ObserveCredentials(r *sources.Request) {
	if r.Authorization || r.LoggedIn == sources.LoggedInYes {
		b.Credentialed++
	}
}

// ObserveMethod counts the request just observed among Posts when its
// method was POST.
func (b *AddressBehaviour) ObserveMethod(method string) {
	if method == "POST" {
		b.Posts++
	}
}

// Reader applies the criteria above. Reading over minutes counts the pages
// read, not those posted: an address that posted a login form four times,
// minutes apart, dwelt on nothing.
func (b *AddressBehaviour) Reader() bool {
	if !b.AtReaderPace() {
		return false
	}
	span := b.pageSpan()
	return b.Assets > 0 || b.SessionClicks > 0 || b.Pages-int(b.Posts) >= minReaderPages && span >= minReaderSpan
}

// AtReaderPace reports whether its pages came no faster than a reader's
// (maxReaderPagesPerMinute on average over its span, at least a minute).
func (b *AddressBehaviour) AtReaderPace() bool {
	minutes := max(b.pageSpan(), time.Minute).Minutes()
	return float64(b.Pages)/minutes <= maxReaderPagesPerMinute
}

// pageSpan is the time from its first page to its last.
func (b *AddressBehaviour) pageSpan() time.Duration {
	if b.Pages == 0 {
		return 0
	}
	return time.Duration(b.LastPage - b.FirstPage)
}

// CrawlerPerMinute is the cluster's requests per arrival minute without
// those of the addresses that read like people: the readers of the window
// (Cluster.IPs) and, before it, those the addresses seen there read like
// (judged on what each did before the window, unless the same address
// did not read like a person in the window), so that its rates are the
// crawler's, as its addresses and requests are. It is PerMinute itself when
// no address read like a person. The map is the cluster's until its next
// request, as PerMinute's is: the crawler detector asks for it three times
// a fingerprint (joinActors, riseOf, burstActor), and it is built once.
func (c *Cluster) CrawlerPerMinute() map[int64]int {
	all := c.PerMinute() // drops the map built from an older one
	if !request.IsBrowser(c.Key.UA) {
		// A declared bot or tool is nobody's browser: its addresses that
		// pace like readers (a feed fetcher polling) are its own requests.
		return all
	}
	if c.crawlerPerMinute == nil {
		c.crawlerPerMinute = c.apartPerMinute((*AddressBehaviour).Reader)
	}
	return c.crawlerPerMinute
}

// Browsed reports whether it read like a person by what a browser does
// (fetched assets, or followed the site's own links), not only by pacing:
// an agent that names no browser may still be one (an in-app browser),
// while a poller's addresses only pace like readers.
func (b *AddressBehaviour) Browsed() bool {
	return b.Reader() && (b.Assets > 0 || b.SessionClicks > 0)
}

// apartPerMinute is the cluster's requests per arrival minute without those
// of the addresses person says read like people, whatever its agent.
func (c *Cluster) apartPerMinute(person func(*AddressBehaviour) bool) map[int64]int {
	all := c.PerMinute()
	// The people's requests are summed by the minute in apart, a slice over
	// the minutes of all ([first, first+len)), rather than taken out of a
	// map run by run: a fingerprint's readers over a day's baseline are
	// some tens of thousands of runs, in at most 1,440 minutes. A run outside
	// those minutes (none: every request is counted in all) goes to the map.
	var apart []int
	var first int64
	var out map[int64]int
	for i, ips := range []map[netip.Addr]*AddressBehaviour{c.IPs, c.before} {
		for ip, ab := range ips {
			if !person(ab) {
				continue
			}
			if w := c.IPs[ip]; i == 1 && w != nil && !person(w) {
				// It did not read like a person in the window: a
				// scraper pacing slowly all through the baseline reads
				// like one there (pages over minutes), and taking its
				// earlier requests out would erase the rate it rose from.
				continue
			}
			if out == nil {
				out = maps.Clone(all)
				first, apart = minuteSpan(all)
			}
			for _, r := range ab.arrivals {
				if k := int64(r.minute) - first; k >= 0 && k < int64(len(apart)) {
					apart[k] += int(r.n)
				} else {
					out[int64(r.minute)] -= int(r.n)
				}
			}
		}
	}
	if out == nil {
		return all
	}
	for k, n := range apart {
		if n != 0 {
			out[first+int64(k)] -= n
		}
	}
	return out
}

// minuteSpan is the first of perMinute's minutes and a zeroed count for
// each minute from it to its last; no counts when its minutes are too sparse
// (a log of weeks with a fingerprint seen on a few days) for a count a
// minute to be smaller than the map.
func minuteSpan(perMinute map[int64]int) (first int64, counts []int) {
	if len(perMinute) == 0 {
		return 0, nil
	}
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for m := range perMinute {
		first, last = min(first, m), max(last, m)
	}
	if last-first >= maxSpanPerMinute*int64(len(perMinute)) {
		return first, nil
	}
	return first, make([]int, last-first+1)
}

// maxSpanPerMinute bounds minuteSpan's counts to this many a minute of the
// map: eight bytes each, where a map's entry costs some twenty.
const maxSpanPerMinute = 4
