package rules

import (
	"net/netip"

	"github.com/aftermath-forensics/aftermath/detect"
)

// Readers who share a crawler's fingerprint are counted apart from the crawler
// and reported as collateral: a zone on the fingerprint cannot tell them
// apart, so counting them as the crawler would hide the refusals a deploy
// makes among them. Who is a reader is detect's definition
// (detect.AddressBehaviour.Reader), applied here to each address's behaviour
// over all the data the backtest replays; crawler_burst applies it to the
// window. In the lab recording 147 of the 9,112 requests under the crawler's
// fingerprint came from readers (the generator's truth file says which), one
// of whom clicked a page tool mid-crawl and would have been refused.

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
	detect.AddressBehaviour
	// burst is what it did inside its crawler's burst (onset to end).
	burst detect.AddressBehaviour
	cells []addressCell
	// walked is what its requests in the window added to its crawler's
	// evidence, so that a reader's can be taken back out once the pass is
	// over: a zone built on what the readers did (the pages they read, the
	// browser version they run, the Referer of their clicks) would match
	// them and refuse them in the crawler's bucket.
	walked walkedEvidence
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
// page asset, siteReferer whether its Referer named the site, method is its
// method (a POST is no page read), inBurst whether it arrived inside the
// crawler's burst. It returns the address's track.
func (rt readerTracker) observe(crawler int, ip netip.Addr, at int64, asset, siteReferer bool, method string, stretch int, class arrivalClass, inBurst bool) *addressTrack {
	k := readerKey{crawler, ip}
	t := rt[k]
	if t == nil {
		t = &addressTrack{}
		rt[k] = t
	}
	t.Observe(at, asset, siteReferer)
	t.ObserveMethod(method)
	if inBurst {
		t.burst.Observe(at, asset, siteReferer)
		t.burst.ObserveMethod(method)
	}
	for i := range t.cells {
		if c := &t.cells[i]; c.stretch == stretch && c.class == class {
			c.n++
			return t
		}
	}
	t.cells = append(t.cells, addressCell{stretch: stretch, class: class, n: 1})
	return t
}

// settle returns the readers and recounts their arrivals in counts as
// ordinary arrivals from readers who share the fingerprint. An address that
// sent faster than a reader inside the burst is none, though its pace over
// all the data was a reader's: a scraper that walked slowly from the same
// few addresses for hours before it rose averages a reader's pace, and
// counting it as one would hide the crawl from its own zone.
func (rt readerTracker) settle(counts *arrivalCounts) fingerprintReaders {
	out := fingerprintReaders{}
	for k, t := range rt {
		if !t.Reader() || t.burst.Requests > 0 && !t.burst.AtReaderPace() {
			continue
		}
		out[k] = struct{}{}
		for _, c := range t.cells {
			counts.move(c.stretch, c.class, classOf(-1, true, c.class.login(), c.class.php()), c.n)
		}
	}
	return out
}
