package rules

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestProposeSpreadWhenPerClientMisses: a scraper over thousands of proxy
// addresses sending about six requests each, the busiest fifty. The obvious
// reading (a median above a handful per address: concentrated, a limit per
// client) is wrong: the shop's ordinary clients send as many in ten minutes,
// so a limit per client sized to let them through would refuse a few
// percent of the scraper. detect's finding says it is spread, and the rule
// is one bucket for all its clients, which refuses at least 95% of it. The site's logged-in pattern is an expression
// (remember_web_<sha1>=), so the zone exempts logins with header_regexp and
// refuses none of the logged-in requests. Conditions on the headers the
// scraper shares and the shop's other logged-out clients lack keep those
// clients out of its bucket.
func TestProposeSpreadWhenPerClientMisses(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation in -short mode")
	}
	dir := filepath.Join(t.TempDir(), "b")
	if _, err := simulate.Run(context.Background(), simulate.Options{Scenario: "laravel-rotating-scraper", Seed: 1, BaselineHours: 2, Out: dir, StoredGzip: true}); err != nil {
		t.Fatal(err)
	}
	in := inputForBundle(t, dir)
	_, r := onlyRule(t, in)
	if strings.Contains(r.Key, "{") {
		t.Errorf("key %q: want one bucket for the scraper's clients", r.Key)
	}
	for _, f := range in.Findings {
		if f.ID == r.Finding && !detect.FactsOf[detect.CrawlerBurstFacts](&f).Spread {
			t.Errorf("%s is not spread, yet its rule is one bucket", f.ID)
		}
	}
	if b := r.Backtest; b.CrawlerRefusedShare < 0.95 || b.LoggedInRequests == 0 || b.LoggedInRefused > 0 {
		t.Errorf("backtest: %.1f%% of the scraper refused, %d of %d logged-in", 100*b.CrawlerRefusedShare, b.LoggedInRefused, b.LoggedInRequests)
	}
	// Shoppers without client hints open the same product pages all
	// day; most keep the shop's session cookie, and the search engines'
	// bots send no Accept-Language, while the scraper sends no cookie and
	// always a language: the zone holds under 0.5% of the other logged-out
	// requests (2.4% with the client hints alone).
	if b := r.Backtest; b.OtherLoggedOutRequests == 0 || b.OtherLoggedOutRefusedShare >= 0.005 {
		t.Errorf("backtest: %d of %d other logged-out requests refused", b.OtherLoggedOutRefused, b.OtherLoggedOutRequests)
	}
	for _, want := range []string{"header !Cookie", "header Accept-Language *"} {
		if !strings.Contains(r.Caddyfile, want) {
			t.Errorf("no %q:\n%s", want, r.Caddyfile)
		}
	}
	if !strings.Contains(r.Caddyfile, "not header_regexp Cookie `remember_web_[0-9a-f]{40}=`") {
		t.Errorf("no logged-in exemption by expression:\n%s", r.Caddyfile)
	}
}
