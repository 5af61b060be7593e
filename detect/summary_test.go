package detect

import (
	"context"
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestSummaryOfReferenceCrawl checks the numbers the report states against
// the simulator's truth: the crawler's volume, the queue's peak, and the
// goodput split, where the obvious figures are wrong (the whole-minute scrapes
// miss the queue's peak; the minute's goodput is mostly the crawler's own).
func TestSummaryOfReferenceCrawl(t *testing.T) {
	res, truth := simulateBundle(t, simulate.Options{Scenario: "crawler-backlog", Seed: 1})
	s := res.Summary
	from, to := mustTime(t, truth.Window.From), mustTime(t, truth.Window.To)
	if want := int(to.Sub(from) / time.Minute); len(s.Minutes) != want {
		t.Errorf("%d minutes summarized, want the window's %d", len(s.Minutes), want)
	}
	for _, m := range s.Minutes {
		if m.Start.Before(from) || !m.Start.Before(to) {
			t.Errorf("minute %s lies outside the window [%s, %s)", m.Start, from, to)
		}
	}

	// The queue's peak fell between two scrapes: php-fpm's high-water mark
	// catches it, and the series states it rather than the scrapes' highest.
	var scraped int64
	for _, q := range truth.Pool.QueueByMinute {
		scraped = max(scraped, q.Count)
	}
	queue := seriesOf(s, SeriesQueue)
	switch {
	case queue == nil:
		t.Fatal("no listen queue series")
	case int64(truth.Pool.QueuePeak) <= scraped:
		t.Fatalf("the scenario no longer peaks between scrapes (peak %d, scraped %d): the test proves nothing", truth.Pool.QueuePeak, scraped)
	case queue.Max != float64(truth.Pool.QueuePeak):
		t.Errorf("queue series peaks at %.0f, want the true peak %d (the whole-minute scrapes reach %d)", queue.Max, truth.Pool.QueuePeak, scraped)
	}

	// The crawler's volume is its requests in the window, readers left out.
	if len(s.Crawlers) != 1 {
		t.Fatalf("%d crawler volumes, want the one crawler's", len(s.Crawlers))
	}
	var crawled float64
	for _, p := range s.Crawlers[0].Points {
		crawled += p.V
	}
	if want := float64(truth.Crawler.RequestsInWindow); math.Abs(crawled-want) > 0.01*want {
		t.Errorf("crawler volume %.0f requests in the window, want %.0f within 1%%", crawled, want)
	}
	if base := s.Crawlers[0].BaselinePerMin; math.Abs(base-float64(truth.Crawler.BaselinePer10m)/10) > 0.2*float64(truth.Crawler.BaselinePer10m)/10 {
		t.Errorf("crawler baseline %.1f a minute, want %d within 20%%", base, truth.Crawler.BaselinePer10m/10)
	}

	// Most answers in time went to the crawler: the ordinary clients' goodput
	// is what is left, and the two add up to no more than the 2xx answered.
	var ordinary, crawler, late, answered int
	for _, m := range s.Minutes {
		ordinary += m.Goodput
		crawler += m.CrawlerGoodput
		late += m.Late
		for code, n := range m.Status {
			if code >= 200 && code < 400 {
				answered += n
			}
		}
	}
	if crawler <= ordinary {
		t.Errorf("crawler's goodput %d, ordinary clients' %d: the crawler's own answers were not taken out", crawler, ordinary)
	}
	if ordinary+crawler+late > answered {
		t.Errorf("goodput %d + crawler's %d + late %d exceed the %d 2xx/3xx answered", ordinary, crawler, late, answered)
	}

	if len(s.Clusters) == 0 || len(s.Clusters) > SummaryClusters {
		t.Fatalf("%d clusters, want 1 to %d", len(s.Clusters), SummaryClusters)
	}
	for i := 1; i < len(s.Clusters); i++ {
		if s.Clusters[i].Requests > s.Clusters[i-1].Requests {
			t.Errorf("cluster %d (%d requests) follows a smaller one (%d)", i, s.Clusters[i].Requests, s.Clusters[i-1].Requests)
		}
	}
	if s.Clusters[0].Fingerprint != s.Crawlers[0].Fingerprint {
		t.Errorf("busiest fingerprint %q, want the crawler's %q", s.Clusters[0].Fingerprint, s.Crawlers[0].Fingerprint)
	}
}

func seriesOf(s *Summary, id string) *MinuteSeries {
	for i := range s.Series {
		if s.Series[i].ID == id {
			return &s.Series[i]
		}
	}
	return nil
}

// TestRunLeavesEvidenceUnwritten checks that detection fills in what the
// evidence lacks (its zone, incidents) on its own copy: a caller's Evidence
// reads the same after Run, and a second Run on it judges the same.
func TestRunLeavesEvidenceUnwritten(t *testing.T) {
	from := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour)
	site := sources.Site{ClientTimeoutS: 30}
	tr := NewTraffic(site, from.Add(-time.Hour), to)
	for i := range 1200 {
		status := 200
		if i >= 900 && i < 960 {
			status = 503
		}
		tr.Observe(&sources.Request{Time: from.Add(-time.Hour + time.Duration(i)*6*time.Second), ClientIP: netip.AddrFrom4([4]byte{10, 0, 0, byte(i % 50)}),
			Method: "GET", Host: "example.org", Path: "/index.php", Status: status, Duration: 0.05, UserAgent: "Mozilla/5.0 Firefox/120.0", Origin: sources.OriginUpstream})
	}
	ev := &Evidence{From: from, To: to, Site: site, Traffic: tr}
	first, err := Run(context.Background(), ev, Detectors())
	if err != nil {
		t.Fatal(err)
	}
	if ev.Loc != nil || ev.Incidents != nil || ev.Pool != nil {
		t.Errorf("Run wrote the caller's evidence: Loc %v, Incidents %v, Pool %v", ev.Loc, ev.Incidents, ev.Pool)
	}
	if first.Incidents == nil || len(first.Incidents.List) == 0 {
		t.Fatal("the 503s found no incident: the test proves nothing")
	}
	second, err := Run(context.Background(), ev, Detectors())
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Findings) != len(first.Findings) || len(second.Summary.Minutes) != len(first.Summary.Minutes) {
		t.Errorf("a second Run found %d findings over %d minutes, the first %d over %d",
			len(second.Findings), len(second.Summary.Minutes), len(first.Findings), len(first.Summary.Minutes))
	}
}
