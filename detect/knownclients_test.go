package detect

import (
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestKnownClientsRiseIsNoCrawler: a Nextcloud upgrade makes its desktop
// sync clients re-scan (PROPFIND) for half an hour, and they retry once the
// share crawl fills the pool. Their fingerprint (a non-browser agent, no
// language, no cookie, no assets, PHP every time) rose four times over
// hundreds of addresses: the obvious answer is a second crawler. But 26 of
// those addresses sent under it through the whole baseline, signed every
// request with an account's app password (an Authorization header, logged
// REDACTED) and carried most of the rise: they are the site's own clients,
// and the crawl check says so. The share crawler, whose ten thousand addresses were all new, stays
// the one crawler and the trigger.
func TestKnownClientsRiseIsNoCrawler(t *testing.T) {
	t.Parallel()
	res, truth := simulateBundle(t, simulate.Options{Scenario: "nextcloud-share-crawl", Seed: 1})
	if truth.Trigger == nil || truth.Trigger.Kind != string(KindCrawlerBurst) {
		t.Fatalf("truth trigger %+v: want the share crawler", truth.Trigger)
	}
	var crawlers []*Finding
	for i := range res.Findings {
		if res.Findings[i].Kind == KindCrawlerBurst {
			crawlers = append(crawlers, &res.Findings[i])
		}
	}
	if len(crawlers) != 1 {
		for _, f := range crawlers {
			t.Errorf("crawler %s (%s, %s): %s", f.ID, f.Fingerprint.UserAgent, f.Role, f.Summary)
		}
		t.Fatalf("%d crawler findings: want the share crawler alone", len(crawlers))
	}
	if f := crawlers[0]; f.Role != RoleTrigger || !strings.Contains(truth.Trigger.UserAgent, "Chrome/"+strings.TrimPrefix(f.Fingerprint.UserAgent, "Chrome ")+".") {
		t.Errorf("crawler %s (%s) role %s: want the truth's trigger %q", f.ID, f.Fingerprint.UserAgent, f.Role, truth.Trigger.UserAgent)
	}
	for _, c := range res.Checks {
		if c.Name == KindCrawlerBurst && !strings.Contains(c.Reason, "site's own clients") {
			t.Errorf("crawler check %q: want it to say the sync clients' rise was the site's own clients'", c.Reason)
		}
	}
}

// TestSteadyScraperRiseIsCrawler: a scraper walked page histories from a
// dozen addresses of its own all through the baseline, in every ten-minute
// bucket, then multiplied its rate into saturation. Steady presence is
// what the site's own clients show too, and the obvious answer from it
// ("known clients: no crawler") is wrong: none of its requests carried an
// account's credentials. Its baseline requests paced like a person's from
// each address (a page every half minute), which must not erase the rate
// it rose from either: the crawler is found, ranked the trigger, from
// where its rate rose.
func TestSteadyScraperRiseIsCrawler(t *testing.T) {
	t.Parallel()
	res, truth := simulateBundle(t, simulate.Options{Scenario: "steady-scraper-rises", Seed: 1})
	if truth.Trigger == nil || truth.Trigger.Kind != string(KindCrawlerBurst) {
		t.Fatalf("truth trigger %+v: want the scraper", truth.Trigger)
	}
	onset, err := time.Parse(time.RFC3339, truth.Trigger.Onset)
	if err != nil {
		t.Fatal(err)
	}
	var crawler *Finding
	for i := range res.Findings {
		if f := &res.Findings[i]; f.Kind == KindCrawlerBurst {
			if crawler != nil {
				t.Fatalf("crawlers %s and %s: want the scraper alone", crawler.ID, f.ID)
			}
			crawler = f
		}
	}
	if crawler == nil {
		for _, c := range res.Checks {
			if c.Name == KindCrawlerBurst {
				t.Fatalf("no crawler finding; the check says %q", c.Reason)
			}
		}
		t.Fatal("no crawler finding")
	}
	if crawler.Role != RoleTrigger {
		t.Errorf("scraper role %s: want trigger", crawler.Role)
	}
	if d := crawler.Start.Sub(onset); d < -2*time.Minute || d > 2*time.Minute {
		t.Errorf("scraper starts at %s, %s from its rise at %s", crawler.Start.Format(time.TimeOnly), d, onset.Format(time.TimeOnly))
	}
	if b := FactsOf[CrawlerBurstFacts](crawler).BaselinePer10m; !b.OK || b.V < 100 {
		t.Errorf("baseline %v per 10 min: want the ~180 it walked before its rise", b)
	}
}
