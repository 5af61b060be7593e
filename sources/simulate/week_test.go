package simulate

import (
	"math"
	"slices"
	"testing"
	"time"
)

// The week scenario's run is exercised by detect/scan's replay; these check
// its definition and that the weekly shape leaves every other scenario alone.
func TestWeekScenario(t *testing.T) {
	sc, err := Lookup("week")
	if err != nil {
		t.Fatal(err)
	}
	if sc.To.Sub(sc.From) != 7*24*time.Hour || sc.From.In(kst).Weekday() != time.Monday {
		t.Errorf("window %s to %s: want a week from a Monday", sc.From, sc.To)
	}
	if sc.Crawler == nil || sc.Crowd == nil {
		t.Fatal("want a crawler and a flash crowd")
	}
	crawlDay := sc.Crawler.Onset.In(kst).YearDay()
	crowdDay := sc.Crowd.Start.In(kst).YearDay()
	if crawlDay == crowdDay || sc.Crawler.BaselineFrom.In(kst).YearDay() == crowdDay {
		t.Errorf("crawler (%s) and crowd (%s) on the same day", sc.Crawler.Onset, sc.Crowd.Start)
	}
	for _, at := range []time.Time{sc.Crawler.BaselineFrom, sc.Crawler.End(), sc.Crowd.Start} {
		if at.Before(sc.From) || !at.Before(sc.To) {
			t.Errorf("%s is outside the week", at)
		}
	}
	// The crawl meets the configuration of crawler-backlog's night.
	cfg, _ := sc.configAt(sc.Crawler.Onset)
	if cfg.Backlog != 4096 || cfg.ReadTimeoutS != 0 || !sc.HealthTimeoutQueued {
		t.Errorf("config at the onset %+v, queued health timeout %v: want crawler-backlog's", cfg, sc.HealthTimeoutQueued)
	}
	if len(sc.Weekly) != 7 || slices.Min(sc.Weekly) >= 1 || slices.Max(sc.Weekly) <= 1 {
		t.Errorf("weekly factors %v: want seven, some above and some below 1", sc.Weekly)
	}
}

func TestSeasonalRate(t *testing.T) {
	begin := at(2026, 10, 18, 0, 0, 0).UnixNano() // a Sunday
	end := at(2026, 10, 21, 0, 0, 0).UnixNano()
	plain := diurnalRate(begin, end, 0.1)
	same := seasonalRate(begin, end, 0.1, nil)
	if !slices.Equal(plain.t, same.t) || !slices.Equal(plain.v, same.v) {
		t.Error("without weekly factors the rate is not diurnalRate's: other scenarios would change")
	}
	shaped := seasonalRate(begin, end, 0.1, weekly)
	sunday := at(2026, 10, 18, 15, 0, 0).UnixNano()
	tuesday := at(2026, 10, 20, 15, 0, 0).UnixNano()
	got := shaped.at(sunday) / shaped.at(tuesday)
	if want := weekly[time.Sunday] / weekly[time.Tuesday]; math.Abs(got-want) > 1e-9 {
		t.Errorf("Sunday/Tuesday at 15:00 = %v, want %v", got, want)
	}
	if plain.at(sunday) != plain.at(tuesday) {
		t.Error("diurnalRate differs by weekday")
	}
}
