package detect

import "time"

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
	SessionClicks int
	// First is its first arrival, FirstPage and LastPage its first and last
	// page's (unix nanoseconds).
	First, FirstPage, LastPage int64
}

// Observe adds one arrival at (unix nanoseconds); asset says whether it was
// for a page asset, siteReferer whether its Referer named the site.
func (b *AddressBehaviour) Observe(at int64, asset, siteReferer bool) {
	if b.Requests == 0 || at < b.First {
		b.First = at
	}
	b.Requests++
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

// Reader applies the criteria above.
func (b *AddressBehaviour) Reader() bool {
	span := time.Duration(b.LastPage - b.FirstPage)
	if b.Pages == 0 {
		span = 0
	}
	minutes := max(span, time.Minute).Minutes()
	if float64(b.Pages)/minutes > maxReaderPagesPerMinute {
		return false
	}
	return b.Assets > 0 || b.SessionClicks > 0 || b.Pages >= minReaderPages && span >= minReaderSpan
}
