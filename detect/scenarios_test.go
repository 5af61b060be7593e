package detect

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/ingest"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// simulateBundle is a scenario with a short baseline (an hour unless
// o.BaselineHours says otherwise), simulated and analyzed once per test
// binary: several tests read the same scenario at the same seed, and each
// simulation takes seconds. Tests must not change the Result. An hour of
// baseline is a third fewer lines than three on the night scenarios (two
// fifths on slow-dependency-reloads and heavy-scraper-among-bots); a test
// whose assertion needs more asks for it and says why.
func simulateBundle(t *testing.T, o simulate.Options) (*Result, simulate.Truth) {
	t.Helper()
	res, truth, _ := simulateBundleDir(t, o)
	return res, truth
}

// simulateBundleDir is simulateBundle with the bundle's directory, for a
// test that reads its truth-requests.csv.gz (the simulator's record of
// every request, which no detector reads).
func simulateBundleDir(t *testing.T, o simulate.Options) (*Result, simulate.Truth, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("simulation in -short mode")
	}
	if o.BaselineHours == 0 {
		o.BaselineHours = 1
	}
	key, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := simulated.LoadOrStore(string(key), &simulatedOnce{})
	s := v.(*simulatedOnce)
	s.once.Do(func() {
		o.Out = filepath.Join(fixtureDir, fmt.Sprintf("bundle-%d", simulatedCount.Add(1)))
		o.StoredGzip = true // the bundle is read once and thrown away
		var sum simulate.Summary
		if sum, s.err = simulate.Run(context.Background(), o); s.err != nil {
			return
		}
		s.truth, s.dir = sum.Truth, o.Out
		s.res, s.err = analyzeBundle(o.Out)
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.res, s.truth, s.dir
}

// simulatedOnce is one scenario's analysis, made once.
type simulatedOnce struct {
	once  sync.Once
	res   *Result
	truth simulate.Truth
	dir   string
	err   error
}

var (
	simulated      sync.Map // simulate.Options as JSON -> *simulatedOnce
	simulatedCount atomic.Int64
)

// analyzeBundle is runBundle's analysis for a bundle shared between tests:
// what it loaded is closed once the detectors have run.
func analyzeBundle(dir string) (*Result, error) {
	b, err := bundle.Open(dir)
	if err != nil {
		return nil, err
	}
	loaded, err := ingest.Load(context.Background(), evidence.FromBundle(b), time.UTC, NewAggregate)
	if err != nil {
		return nil, err
	}
	defer loaded.Close()
	return Run(context.Background(), EvidenceOf(loaded), Detectors())
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("truth time %q: %v", s, err)
	}
	return v
}

// TestScenarios checks the detectors against the simulator's ground truth: the
// crawler's addresses and onset, and which findings must and must not appear.
func TestScenarios(t *testing.T) {
	firefoxRu := simulate.DefaultCrawler()
	firefoxRu.UserAgent = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	firefoxRu.AcceptLanguage = "ru-RU,ru;q=0.9"
	firefoxRu.Tools = []simulate.Tool{simulate.ToolHistory, simulate.ToolContributions, simulate.ToolCiteThisPage}
	v6 := simulate.DefaultCrawler()
	v6.IPv6 = true
	v6.AcceptLanguage = "en-US,en;q=0.9"
	v6.Tools = []simulate.Tool{simulate.ToolEdit, simulate.ToolWatch, simulate.ToolRecentChangesLinked}

	tests := []struct {
		name    string
		opts    simulate.Options
		must    []Kind
		mustNot []Kind
		lang    string // the crawler's primary language, if one is expected
	}{
		{"reference crawl", simulate.Options{Scenario: "crawler-backlog", Seed: 1},
			[]Kind{KindCrawlerBurst, KindWorkerSaturation, KindListenQueueOverflow, KindHealthcheckStarved, KindUpstreamErrors},
			[]Kind{KindIdlePinning}, "zh-cn"},
		{"reference crawl, another seed", simulate.Options{Scenario: "crawler-backlog", Seed: 7},
			[]Kind{KindCrawlerBurst, KindHealthcheckStarved}, nil, "zh-cn"},
		{"Firefox crawler in Russian on other tools", simulate.Options{Scenario: "crawler-backlog", Seed: 2, Crawler: &firefoxRu},
			[]Kind{KindCrawlerBurst}, nil, "ru-ru"},
		{"IPv6 crawler in English", simulate.Options{Scenario: "crawler-backlog", Seed: 3, Crawler: &v6},
			[]Kind{KindCrawlerBurst}, nil, "en-us"},
		{"fixed: backlog 64 and a page-tools limit", simulate.Options{Scenario: "crawler-backlog-fixed", Seed: 1},
			[]Kind{KindCrawlerBurst}, []Kind{KindHealthcheckStarved}, "zh-cn"},
		{"flash crowd", simulate.Options{Scenario: "flash-crowd", Seed: 1},
			nil, []Kind{KindCrawlerBurst}, ""},
		{"slow database", simulate.Options{Scenario: "slow-database", Seed: 1},
			[]Kind{KindWorkerSaturation}, []Kind{KindCrawlerBurst, KindIdlePinning}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, truth := simulateBundle(t, tt.opts)
			for _, k := range tt.must {
				if first(res.Findings, k) == nil {
					t.Errorf("no %s finding; checks: %+v", k, res.Checks)
				}
			}
			for _, k := range tt.mustNot {
				if f := first(res.Findings, k); f != nil {
					t.Errorf("unexpected %s: %s", k, f.Summary)
				}
			}
			c := first(res.Findings, KindCrawlerBurst)
			if c == nil || truth.Crawler == nil || tt.lang == "" {
				return
			}
			// The crawler that took the workers is the trigger by time and
			// weight, not merely by being first. Where PHP time did not rise
			// at the onset (a rate limit holds the crawler to its bursts:
			// crawler-backlog-fixed), no share is measured and time decides.
			cf := FactMap(c.Facts)
			share, measured := cf["php_added_share"]
			if c.Role != RoleTrigger || (measured && share < MaterialPHPShare) || cf["onset_lead_s"] > TriggerLead.Seconds() {
				t.Errorf("crawler role %q, php_added_share %v, onset_lead_s %v: want the trigger", c.Role, cf["php_added_share"], cf["onset_lead_s"])
			}
			if c.Fingerprint.AcceptLanguage != tt.lang || c.Fingerprint.LoggedIn != "no" {
				t.Errorf("fingerprint %+v, want language %s, logged out", c.Fingerprint, tt.lang)
			}
			want := float64(truth.Crawler.Window.DistinctIPs)
			if got := FactMap(c.Facts)["distinct_ips"]; math.Abs(got-want) > 0.05*want {
				t.Errorf("distinct_ips = %v, truth %v: more than 5%% apart", got, want)
			}
			if d := c.Start.Sub(mustTime(t, truth.Phases.Onset)); d < -2*time.Minute || d > 2*time.Minute {
				t.Errorf("onset %v, truth %s: more than 2 minutes apart", c.Start, truth.Phases.Onset)
			}
			if tt.opts.Crawler != nil && tt.opts.Crawler.IPv6 && FactMap(c.Facts)["distinct_prefixes_64"] == 0 {
				t.Errorf("an IPv6 crawler needs distinct_prefixes_64: %v", c.Facts)
			}
			if e := first(res.Findings, KindUpstreamErrors); e != nil {
				for status, n := range truth.WindowStatusCounts {
					if status[0] == '5' && FactMap(e.Facts)["status_"+status] != float64(n) {
						t.Errorf("status %s: finding says %v, the log has %d", status, FactMap(e.Facts)["status_"+status], n)
					}
				}
			}
			if hc := first(res.Findings, KindHealthcheckStarved); hc != nil && FactMap(hc.Facts)["est_queue_wait_s"] <= FactMap(hc.Facts)["health_timeout_s"] {
				t.Errorf("healthcheck_starved with est wait %v <= timeout %v", FactMap(hc.Facts)["est_queue_wait_s"], FactMap(hc.Facts)["health_timeout_s"])
			}
		})
	}
}
