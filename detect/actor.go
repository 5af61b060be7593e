package detect

import (
	"math/bits"
	"net/netip"
	"time"
)

// Who is one actor under a fingerprint. A fingerprint (ClusterKey) gathers
// every client whose headers look alike: the readers who share it are set
// apart by what they did (reader.go), and so are the other automated clients
// of the day that share it without taking part in its burst. A library's
// user agent (python-requests) is one fingerprint for a wiki's archiving bot
// polling all day, a scanner probing for a minute at 03:00 and the scraper
// whose four addresses took the workers at 14:12; counting them as one
// crawler states ten addresses where four acted, and a start when the
// fingerprint first appeared (the bot's first poll) rather than when its
// rate rose.
//
// The burst's span is the stretch around its peak in which the fingerprint's
// rate (readers apart) stayed above its baseline's level, as sustainedRise
// judges a minute above it, with gaps shorter than spanGap bridged. An
// address is part of the burst when at least half of its requests of the
// window arrived inside that span; the others are the fingerprint's other
// clients, counted and named in the facts but not as the burst, unless it
// walked only route templates the burst's addresses walked: a crawl's early
// addresses, before its rate rose, are the crawl. The burst's
// start is then where the rate of its own addresses rose (sustainedRise from
// the span's start), never earlier than the span.
const spanGap = 10 // minutes

// burstSpan is the span (unix minutes, [start, end)) of the rise whose peak
// ten minutes start at peakAt, in perMinute against the level of
// baseline10; ok is false when no minute of the peak was above the level.
func burstSpan(perMinute map[int64]int, baseline10 float64, peakAt, from, to time.Time) (start, end int64, ok bool) {
	level := RiseLevel(baseline10/10, riseZ)
	above := func(m int64) bool { return float64(perMinute[m]) >= level }
	fromM, toM := from.Unix()/60, to.Unix()/60
	anchor, best := int64(-1), -1
	for m := peakAt.Unix() / 60; m < peakAt.Unix()/60+10 && m < toM; m++ {
		if n := perMinute[m]; above(m) && n > best {
			anchor, best = m, n
		}
	}
	if anchor < 0 {
		return 0, 0, false
	}
	start, last := anchor, anchor
	for m := anchor - 1; m >= fromM && start-m <= spanGap; m-- {
		if above(m) {
			start = m
		}
	}
	for m := anchor + 1; m < toM && m-last <= spanGap; m++ {
		if above(m) {
			last = m
		}
	}
	return start, last + 1, true
}

// minActorRouteShare: a route template is the burst's when the addresses
// in its span that walked it sent at least this share of the span
// addresses' requests. A spread crawl's tools each carry several percent
// of it; a reader's article reloaded in the outage, a few requests among a
// scraper's thousands, carries hundredths of one.
const minActorRouteShare = 0.01

// inSpan counts the requests of ab that arrived in the minutes [start, end).
func (b *AddressBehaviour) inSpan(start, end int64) int {
	n := 0
	for _, r := range b.arrivals {
		if m := int64(r.minute); m >= start && m < end {
			n += int(r.n)
		}
	}
	return n
}

// burstActor sets apart, within b's fingerprint, the addresses (readers
// apart) that sent most of their requests outside the burst's span, and
// moves b's start to where the rate of the remaining ones rose. It changes
// nothing when every address took part.
func (ev *Evidence) burstActor(b *burst) {
	c := b.c
	start, end, ok := burstSpan(c.CrawlerPerMinute(), b.baseline10, b.peakAt, ev.From, ev.To)
	if !ok {
		return
	}
	// Sized for the fingerprint's addresses, most of which are a burst's
	// (a spread crawl's thousands): grown from empty, its tables would
	// take twice the memory on the way.
	actor := make(map[netip.Addr]bool, len(c.IPs))
	var spanRoutes uint64
	var routeRequests [64]int
	total := 0
	for ip, ab := range c.IPs {
		if !ab.Reader() && 2*ab.inSpan(start, end) >= ab.Requests {
			actor[ip] = true
			total += ab.Requests
			for r := ab.routes; r != 0; r &= r - 1 {
				routeRequests[bits.TrailingZeros64(r)] += ab.Requests
			}
		}
	}
	// An address in the span that walked only routes carrying under
	// minActorRouteShare of the span's requests, and sent under
	// 1/maxJoinPacing of the span addresses' median, did not walk what the
	// burst walked nor at its pace: a reader whose one page failed and who
	// reloaded it in the outage, not one of a concentrated scraper's few
	// hosts. A spread crawl's addresses send one or two requests each: none
	// of them is that far under its median.
	//
	// Nor did one that sent, in the whole window, fewer requests than the
	// span's median address sent in one minute of the span (burstPace),
	// whatever it walked: a reader who opened one page history in the
	// outage walked the scraper's own route, once, while each of the
	// scraper's five hosts sent eighty a minute. A spread crawl's median
	// address sends a request or two over the whole span: no address is
	// under a minute of that.
	perAddress := make([]int, 0, len(actor))
	inSpan := make([]int, 0, len(actor))
	for ip := range actor {
		perAddress = append(perAddress, c.IPs[ip].Requests)
		inSpan = append(inSpan, c.IPs[ip].inSpan(start, end))
	}
	median := Median(perAddress)
	burstPace := Median(inSpan) / float64(end-start)
	stray := map[netip.Addr]bool{}
	var left leftOut
	for ip := range actor {
		ab := c.IPs[ip]
		walked := float64(ab.Requests)*maxJoinPacing >= median
		for r := ab.routes; r != 0 && !walked; r &= r - 1 {
			walked = float64(routeRequests[bits.TrailingZeros64(r)]) >= minActorRouteShare*float64(total)
		}
		offRoute, few := ab.routes != 0 && !walked, float64(ab.Requests) < burstPace
		if offRoute || few {
			delete(actor, ip)
			stray[ip] = true
			if offRoute {
				left.OffRoute++
			} else {
				left.Few++
			}
			continue
		}
		spanRoutes |= ab.routes
	}
	// An address that came mostly outside the span but walked only routes
	// the burst's addresses walked is the same actor early or late (a
	// crawl's first requests before its rate rose).
	others, otherRequests := 0, 0
	for ip, ab := range c.IPs {
		if ab.Reader() || actor[ip] {
			continue
		}
		if ab.routes != 0 && ab.routes&^spanRoutes == 0 && !stray[ip] {
			actor[ip] = true
			continue
		}
		others++
		otherRequests += ab.Requests
	}
	if others == 0 || len(actor) == 0 {
		return
	}
	left.Outside = others - left.OffRoute - left.Few
	if left.Few > 0 {
		left.PacePerMin = round(burstPace, 1)
	}
	// The actor's own rate: its addresses' arrivals, before the window too.
	perMinute := map[int64]int{}
	for ip := range actor {
		for _, ips := range []map[netip.Addr]*AddressBehaviour{c.IPs, c.before} {
			if ab := ips[ip]; ab != nil {
				for _, r := range ab.arrivals {
					perMinute[int64(r.minute)] += int(r.n)
				}
			}
		}
	}
	onset, _, from10 := sustainedRise(perMinute, b.baseline10, time.Unix(start*60, 0).UTC(), ev.To)
	if onset.IsZero() {
		return
	}
	b.actor, b.left, b.otherRequests = actor, left, otherRequests
	b.onset, b.roseFrom10 = onset, from10
	b.actorPerMinute = perMinute
}

// leftOut counts the addresses of a burst's fingerprint (readers apart)
// that burstActor set apart from the burst, by why, so that the finding
// says each reason with its count: Outside sent most of their requests
// outside the burst's span (and walked a page its addresses did not);
// OffRoute came in the span but only to pages that carried under
// minActorRouteShare of its requests, far under its median address's
// count; Few came in the span but sent, in the whole window, fewer requests
// than the span's median address sent a minute in it (PacePerMin, stated
// when some did). An address that is both OffRoute and Few counts as
// OffRoute.
type leftOut struct {
	Outside, OffRoute, Few int
	PacePerMin             float64
}

// total is how many addresses were set apart, whatever the reason.
func (l leftOut) total() int { return l.Outside + l.OffRoute + l.Few }

// inActor reports whether ip, an address of b's fingerprint that did not
// read like a person, took part in the burst.
func (b *burst) inActor(ip netip.Addr) bool {
	return b.actor == nil || b.actor[ip]
}

// actorAddresses are the addresses of b's fingerprint in the window that
// took part in the burst: those that did not read like people, less the
// fingerprint's other clients (inActor). Everything a crawler finding
// counts of the crawler is theirs.
func (b *burst) actorAddresses() map[netip.Addr]*AddressBehaviour {
	actor := make(map[netip.Addr]*AddressBehaviour, len(b.c.IPs))
	for ip, ab := range b.c.IPs {
		if !ab.Reader() && b.inActor(ip) {
			actor[ip] = ab
		}
	}
	return actor
}
