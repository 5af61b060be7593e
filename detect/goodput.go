package detect

import (
	"math"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// Goodput, as the report states it, is the ordinary clients' answers in time:
// PHP's 2xx within the clients' timeout, without the crawler's own. A crawler
// served at full speed while readers time out is not a site that kept up.

// Goodput reports whether one request is goodput: PHP's 2xx (origin
// upstream) logged within the clients' timeout (late is failure.Late of its
// duration). Minute.Goodput counts these and Minute.Latency holds their
// durations; the scan's latency measure reads the same requests.
func Goodput(status int, origin sources.Origin, late bool) bool {
	return status >= 200 && status < 300 && !late && origin == sources.OriginUpstream
}

// crawlerClusters returns the clusters of the crawler_burst findings made so far.
func crawlerClusters(ev *Evidence, prior []Finding) []*Cluster {
	if ev.Traffic == nil {
		return nil
	}
	var out []*Cluster
	for _, f := range prior {
		if f.Kind != KindCrawlerBurst || f.Cluster == nil {
			continue
		}
		if c := ev.Traffic.ClusterOf(*f.Cluster); c != nil {
			out = append(out, c)
		}
	}
	return out
}

// ordinaryGoodput is minute m's goodput without the given clusters' answers:
// the series the report's text (upstream_errors' lowest and usual goodput)
// and its goodput chart (Summary.Minutes) both describe, computed here once.
// When the clients' timeout was estimated after the pass (applyLateAfter),
// a cluster's answers in time are its answers scaled by the share of the
// minute's that stayed in time: one FIFO queue serves every client alike.
func (ev *Evidence) ordinaryGoodput(m *Minute, crawlers []*Cluster) int {
	good := m.Goodput
	if len(crawlers) == 0 {
		return good
	}
	keep := 1.0
	if m.lateMoved > 0 {
		keep = float64(m.Goodput) / float64(m.Goodput+m.lateMoved)
	}
	minute := m.Start.Unix() / 60
	theirs := 0.0
	for _, c := range crawlers {
		theirs += float64(c.goodIn(minute)) * keep
	}
	return max(0, good-int(math.Round(theirs)))
}

// crawlersReadWhole reports whether every one of crawlers had all its lines
// read (Traffic.readWhole): only then can its answers be taken out of a
// minute a pushdown only counted, whose goodput holds them unnamed.
func (ev *Evidence) crawlersReadWhole(crawlers []*Cluster) bool {
	for _, c := range crawlers {
		if !ev.Traffic.readWhole(c) {
			return false
		}
	}
	return true
}

// usualOrdinaryGoodput is the baseline's median minute of ordinary goodput.
// When a crawler's lines were not all read and some baseline minutes were
// only counted, its answers cannot be taken out of those minutes: the
// minutes read whole (the baseline's sample) speak for the baseline, and
// sampled is true.
func (ev *Evidence) usualOrdinaryGoodput(crawlers []*Cluster) (usual float64, sampled bool) {
	good := func(m *Minute) int { return ev.ordinaryGoodput(m, crawlers) }
	bFrom, bTo, _ := ev.baselineRange()
	if ev.crawlersReadWhole(crawlers) || !ev.countedIn(bFrom, bTo) {
		return Median(ev.countMinutes(good).Base), false
	}
	return Median(ev.countReadMinutes(good).Base), true
}

// lowestOrdinaryGoodput is the fewest ordinary answers in time of one of
// minutes that starts in [from, to); ok is false when none does. A minute
// only counted is left out when a crawler's lines were not all read (its
// answers there cannot be taken out), and readOnly then says the lowest
// comes from the minutes read whole.
func (ev *Evidence) lowestOrdinaryGoodput(minutes []Minute, from, to time.Time, crawlers []*Cluster) (lowest int, ok, readOnly bool) {
	whole := ev.crawlersReadWhole(crawlers)
	lowest = math.MaxInt
	for i := range minutes {
		m := &minutes[i]
		if m.Start.Before(from) || !m.Start.Before(to) {
			continue
		}
		if !whole && m.Counted > 0 {
			readOnly = true
			continue
		}
		lowest = min(lowest, ev.ordinaryGoodput(m, crawlers))
	}
	if lowest == math.MaxInt {
		return 0, false, readOnly
	}
	return lowest, true, readOnly
}
