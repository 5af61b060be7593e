package rules

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestTightenSteadyScraper: a scraper walks a wiki's tools steadily through
// the baseline from a dozen of its own addresses, then multiplies its rate.
// Each address sends far more than any ordinary client, so the obvious rule
// (a limit per address, sized max(2 x the busiest ordinary client's 10
// minutes, that + 10)) looks safe and tight; but the slack of ten lets
// every one of its addresses through at ten a window, before and after the
// rise, and the zone refused 93.1% of the scraper on this seed. The zone
// gives the slack up, no lower than twice the busiest ordinary client, and
// refuses 95% of the scraper while refusing under 0.5% of the other
// logged-out requests and none of the baseline's.
func TestTightenSteadyScraper(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation in -short mode")
	}
	dir := filepath.Join(t.TempDir(), "b")
	sum, err := simulate.Run(context.Background(), simulate.Options{Scenario: "steady-scraper-rises", Seed: 4, BaselineHours: 3, Out: dir, StoredGzip: true})
	if err != nil {
		t.Fatal(err)
	}
	in := inputForBundle(t, dir)
	// The baseline the harness gives analyze (the simulated hours before
	// the window), as the CLI passes it.
	for _, b := range []struct {
		s  string
		at *time.Time
	}{{sum.Truth.Baseline.From, &in.BaselineFrom}, {sum.Truth.Baseline.To, &in.BaselineTo}} {
		if *b.at, err = time.Parse(time.RFC3339, b.s); err != nil {
			t.Fatalf("truth baseline: %v", err)
		}
	}
	_, r := onlyRule(t, in)
	if r.Key != "{client_ip}" {
		t.Fatalf("key %q: want a limit per address (the scraper is a dozen addresses)", r.Key)
	}
	b := r.Backtest
	if b.CrawlerRefusedShare < actorGoal {
		t.Errorf("backtest: %d of %d of the scraper's requests refused (%.2f%%), want at least %.0f%%; events %d per %s",
			b.CrawlerRefused, b.CrawlerRequests, 100*b.CrawlerRefusedShare, 100*actorGoal, r.Events, r.Window)
	}
	if b.OtherLoggedOutRequests == 0 || float64(b.OtherLoggedOutRefused) >= collateralGoal*float64(b.OtherLoggedOutRequests) {
		t.Errorf("backtest: %d of %d other logged-out requests refused", b.OtherLoggedOutRefused, b.OtherLoggedOutRequests)
	}
	if b.LoggedInRefused > 0 || b.BaselineRequests == 0 || b.BaselineRefused > 0 {
		t.Errorf("backtest: %d logged-in requests refused, %d of the baseline's %d", b.LoggedInRefused, b.BaselineRefused, b.BaselineRequests)
	}
}
