package detect

import (
	"strings"
	"testing"

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
