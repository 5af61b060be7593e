package rules

import (
	"net/netip"
	"time"
)

// Readers who share a crawler's fingerprint. A fingerprint (detect's cluster
// key: browser family, language, logged in or not, client hints) is coarse: a
// crawler that claims to be Chrome with zh-CN shares it with every reader
// whose Chrome asks for zh-CN. The zone cannot tell them apart, so counting
// them as the crawler would hide the refusals a deploy makes among them. In
// the lab recording 147 of the 9,112 requests under the crawler's fingerprint
// came from readers (the generator's truth file says which), one of whom
// clicked a page tool mid-crawl and would have been refused.
//
// An address under a crawler's fingerprint counts as a reader when it
// behaved like a person reading the site, over all the data:
//
//   - it fetched page assets (a browser renders what it reads; the spread
//     crawlers walked tools and fetched none), or
//   - it read several pages over minutes: at least minReaderPages requests for
//     pages spanning minReaderSpan;
//
// and in either case at a reader's pace: no more than maxReaderPagesPerMinute
// pages a minute on average over its span (at least a minute), so that a
// concentrated crawler, which sends many pages from one address, never counts
// as a reader even if it fetches assets. A crawler that fetched assets from
// addresses it otherwise used once or twice would count as readers there: the
// backtest then overstates collateral and understates what the zone stops,
// which errs on the side a deploy can trust.
const (
	minReaderPages          = 3
	minReaderSpan           = 2 * time.Minute
	maxReaderPagesPerMinute = 10
)

// readerKey is one address under one crawler's fingerprint.
type readerKey struct {
	crawler int
	ip      netip.Addr
}

// fingerprintReaders holds the addresses judged to be readers.
type fingerprintReaders map[readerKey]struct{}

func (f fingerprintReaders) has(crawler int, ip netip.Addr) bool {
	_, ok := f[readerKey{crawler, ip}]
	return ok
}

// count returns how many reader addresses share crawler's fingerprint.
func (f fingerprintReaders) count(crawler int) int {
	n := 0
	for k := range f {
		if k.crawler == crawler {
			n++
		}
	}
	return n
}

// addressTrack is what the profile pass keeps per address under a crawler's
// fingerprint: how it behaved, and its arrivals by stretch and class
// (arrivalCounts) so that a reader's can be recounted as ordinary once the
// pass is over. Most crawler addresses send one or two requests: cells stays
// one or two entries long.
type addressTrack struct {
	assets, pages       int
	firstPage, lastPage int64
	cells               []addressCell
}

type addressCell struct {
	stretch int
	class   arrivalClass
	n       int
}

// readerTracker follows every address under a crawler's fingerprint.
type readerTracker map[readerKey]*addressTrack

// observe notes one arrival at (unix nanoseconds) from ip under crawler's
// fingerprint, in the given stretch and class; asset says whether it was for a
// page asset.
func (rt readerTracker) observe(crawler int, ip netip.Addr, at int64, asset bool, stretch int, class arrivalClass) {
	k := readerKey{crawler, ip}
	t := rt[k]
	if t == nil {
		t = &addressTrack{}
		rt[k] = t
	}
	if asset {
		t.assets++
	} else {
		if t.pages == 0 || at < t.firstPage {
			t.firstPage = at
		}
		if at > t.lastPage {
			t.lastPage = at
		}
		t.pages++
	}
	for i := range t.cells {
		if c := &t.cells[i]; c.stretch == stretch && c.class == class {
			c.n++
			return
		}
	}
	t.cells = append(t.cells, addressCell{stretch: stretch, class: class, n: 1})
}

// isReader applies the criteria above to one address.
func (t *addressTrack) isReader() bool {
	span := time.Duration(t.lastPage - t.firstPage)
	if t.pages == 0 {
		span = 0
	}
	minutes := max(span, time.Minute).Minutes()
	if float64(t.pages)/minutes > maxReaderPagesPerMinute {
		return false
	}
	return t.assets > 0 || t.pages >= minReaderPages && span >= minReaderSpan
}

// settle returns the readers and recounts their arrivals in counts as
// ordinary arrivals from readers who share the fingerprint.
func (rt readerTracker) settle(counts *arrivalCounts) fingerprintReaders {
	out := fingerprintReaders{}
	for k, t := range rt {
		if !t.isReader() {
			continue
		}
		out[k] = struct{}{}
		for _, c := range t.cells {
			counts.move(c.stretch, c.class, classOf(-1, true, c.class.login(), c.class.php()), c.n)
		}
	}
	return out
}
