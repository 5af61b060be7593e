package rules

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestScenarioAcceptance is issue #6's acceptance on the simulator's
// crawler-backlog, with the reference crawler and with others: the zone refuses
// at least 90% of the crawler, no logged-in request, at most 2% of other
// logged-out requests in the window and none over the baseline day; Caddy
// adapts it; and the backlog advice follows the queueing numbers.
func TestScenarioAcceptance(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation in -short mode")
	}
	ru := simulate.DefaultCrawler()
	ru.UserAgent = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	ru.AcceptLanguage = "ru-RU,ru;q=0.9"
	ru.IPv6 = true
	ru.Tools = []simulate.Tool{simulate.ToolHistory, simulate.ToolContributions, simulate.ToolWhatLinksHereTitle}
	tests := []struct {
		name    string
		crawler *simulate.CrawlerSpec
		seed    int64
	}{
		{"reference crawler", nil, 1},
		{"Firefox ru-RU over IPv6 on other tools", &ru, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "b")
			sum, err := simulate.Run(ctx, simulate.Options{Scenario: "crawler-backlog", Seed: tt.seed, BaselineHours: 24, Crawler: tt.crawler, Out: dir, StoredGzip: true})
			if err != nil {
				t.Fatal(err)
			}
			// A seed may write the log without the Cookie header's value
			// (redacted or omitted, as sites log it): no request can then
			// be told logged in, and the backtest must count none.
			cookieless := sum.Truth.CookieLog != simulate.CookieLogged.String()
			p := proposeForBundle(t, dir)
			if len(p.Rules) == 0 {
				t.Fatalf("no rule; notes %v", p.DataQuality)
			}
			if err := Validate(p.Caddyfile); err != nil {
				t.Fatalf("Caddy rejects the rules: %v\n%s", err, p.Caddyfile)
			}
			bt := p.Backtest
			if bt.CrawlerRefusedShare < 0.9 {
				t.Errorf("refused %.1f%% of the crawler, want >= 90%%", 100*bt.CrawlerRefusedShare)
			}
			if (bt.LoggedInRequests == 0) != cookieless || bt.LoggedInRefused != 0 {
				t.Errorf("refused %d of %d logged-in requests (Cookie header kept in the log: %v)", bt.LoggedInRefused, bt.LoggedInRequests, !cookieless)
			}
			if bt.OtherLoggedOutRefusedShare > 0.02 {
				t.Errorf("refused %.2f%% of other logged-out requests", 100*bt.OtherLoggedOutRefusedShare)
			}
			if bt.BaselineRequests == 0 || bt.BaselineRefused != 0 {
				t.Errorf("refused %d of %d ordinary requests over the baseline day", bt.BaselineRefused, bt.BaselineRequests)
			}
			rec := find(p.Recommendations, "listen.backlog")
			if rec == nil {
				t.Fatalf("no backlog advice: %+v", p.Recommendations)
			}
			// B <= W*T/(8*S) rounded down to a power of two: 32 or 64 for 16
			// workers, a 10 s timeout and this scenario's 0.3-0.4 s service time.
			if v, _ := strconv.Atoi(rec.Value); v < 16 || v > 64 {
				t.Errorf("backlog advice %s: %s", rec.Value, rec.Why)
			}
		})
	}
}
