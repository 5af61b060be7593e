package detect

import (
	"math"
	"time"
)

// Goodput, as the report states it, is the ordinary clients' answers in time:
// PHP's 2xx within the clients' timeout, without the crawler's own. A crawler
// served at full speed while readers time out is not a site that kept up.

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
		if c := ev.Traffic.clusters[*f.Cluster]; c != nil {
			out = append(out, c)
		}
	}
	return out
}

// ordinaryGoodput is minute m's goodput without the given clusters' answers.
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
		theirs += float64(c.Good[minute]) * keep
	}
	return max(0, good-int(math.Round(theirs)))
}

// OrdinaryGoodput is the minute starting at start's goodput without the
// crawler_burst findings' own answers in time: the series the report's text
// (upstream_errors' lowest and usual goodput) and its goodput chart both
// describe, computed here once. ok is false when the access log holds no such
// minute.
func (ev *Evidence) OrdinaryGoodput(start time.Time, findings []Finding) (good int, ok bool) {
	if ev.Traffic == nil {
		return 0, false
	}
	m := ev.Traffic.Minute(start)
	if m == nil {
		return 0, false
	}
	return ev.ordinaryGoodput(m, crawlerClusters(ev, findings)), true
}
