package detect

import (
	"context"
	"encoding/json"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/ingest"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

type labTruth struct {
	Phases struct {
		Onset time.Time `json:"onset"`
	} `json:"phases"`
	Crawler struct {
		DistinctIPs        int `json:"distinct_ips"`
		DistinctPrefixes24 int `json:"distinct_prefixes_24"`
	} `json:"crawler"`
	ExpectedFindings []struct {
		Kind Kind `json:"kind"`
		Must bool `json:"must"`
	} `json:"expected_findings"`
}

func runBundle(t *testing.T, dir string) *Result {
	t.Helper()
	b, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := ingest.Load(context.Background(), evidence.FromBundle(b), time.UTC, NewAggregate)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loaded.Close() })
	res, err := Run(context.Background(), EvidenceOf(loaded), Detectors())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestLabRecording checks every expected finding of the real recording against
// its ground truth, and the crawler's numbers against the true request classes.
func TestLabRecording(t *testing.T) {
	labDir := testenv.LabIncident(t, "") // the real recording (real Caddy, php-fpm and Prometheus)
	var truth labTruth
	data, err := os.ReadFile(filepath.Join(labDir, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &truth); err != nil {
		t.Fatal(err)
	}
	res := runBundle(t, labDir)
	for _, want := range truth.ExpectedFindings {
		// config_change is issue #4's detector and runs elsewhere.
		if !want.Must || want.Kind == KindConfigChange {
			continue
		}
		if first(res.Findings, want.Kind) == nil {
			t.Errorf("expected a %s finding; checks: %+v", want.Kind, res.Checks)
		}
	}
	if f := first(res.Findings, KindIdlePinning); f != nil {
		t.Errorf("idle_pinning found on busy-waiting workers that kept completing requests: %s", f.Summary)
	}

	crawler := first(res.Findings, KindCrawlerBurst)
	if crawler == nil {
		t.Fatal("no crawler_burst")
	}
	// Independent count from the ground truth's request classes.
	trueIPs := crawlerIPsFromTruth(t)
	if len(trueIPs) != truth.Crawler.DistinctIPs {
		t.Fatalf("truth-requests.csv has %d crawler IPs, truth.json says %d", len(trueIPs), truth.Crawler.DistinctIPs)
	}
	if got, want := FactMap(crawler.Facts)["distinct_ips"], float64(truth.Crawler.DistinctIPs); math.Abs(got-want) > 0.05*want {
		t.Errorf("distinct_ips = %v, want within 5%% of %v", got, want)
	}
	if got, want := FactMap(crawler.Facts)["distinct_prefixes_24"], float64(truth.Crawler.DistinctPrefixes24); math.Abs(got-want) > 0.05*want {
		t.Errorf("distinct_prefixes_24 = %v, want within 5%% of %v", got, want)
	}
	// Readers whose browsers ask for zh-CN share the crawler's fingerprint.
	// The obvious count, every address under it, made them crawler (6,200
	// addresses, 9,112 requests); counted apart, the crawler's addresses are
	// exactly the generator's, and the readers are reported on their own.
	cf := FactsOf[CrawlerBurstFacts](crawler)
	if cf.DistinctIPs != len(trueIPs) || cf.DistinctPrefixes24.V != truth.Crawler.DistinctPrefixes24 {
		t.Errorf("crawler addresses %d in %d /24, the generator's %d in %d", cf.DistinctIPs, cf.DistinctPrefixes24.V, len(trueIPs), truth.Crawler.DistinctPrefixes24)
	}
	if cf.FingerprintReaders == 0 || cf.FingerprintReaderRequests == 0 || cf.AssetShare != 0 {
		t.Errorf("readers who share the fingerprint: %d addresses, %d requests; crawler's asset share %v (it fetched none)",
			cf.FingerprintReaders, cf.FingerprintReaderRequests, cf.AssetShare)
	}
	if d := crawler.Start.Sub(truth.Phases.Onset); d < -2*time.Minute || d > 2*time.Minute {
		t.Errorf("onset %v, truth %v: more than 2 minutes apart", crawler.Start, truth.Phases.Onset)
	}
	fp := crawler.Fingerprint
	if fp.AcceptLanguage != "zh-cn" || fp.LoggedIn != "no" || FactMap(crawler.Facts)["requests_per_ip_median"] > 2 || FactMap(crawler.Facts)["spread"] != 1 {
		t.Errorf("fingerprint %+v facts %v", fp, crawler.Facts)
	}

	hc := first(res.Findings, KindHealthcheckStarved)
	if hc != nil && FactMap(hc.Facts)["est_queue_wait_s"] <= FactMap(hc.Facts)["health_timeout_s"] {
		t.Errorf("healthcheck_starved with est wait %v <= timeout %v", FactMap(hc.Facts)["est_queue_wait_s"], FactMap(hc.Facts)["health_timeout_s"])
	}
	if e := first(res.Findings, KindUpstreamErrors); e != nil {
		if FactMap(e.Facts)["status_503"] != 3027 || FactMap(e.Facts)["proxy_503"] != 3027 || FactMap(e.Facts)["status_504"] != 2365 {
			t.Errorf("5xx taxonomy %v, want 3,027 proxy-made 503 and 2,365 504 (the recording's counts)", e.Facts)
		}
	}
	if q := first(res.Findings, KindListenQueueOverflow); q != nil && (FactMap(q.Facts)["queue_peak"] < 300 || FactMap(q.Facts)["reached_cap"] != 0) {
		t.Errorf("queue facts %v: the recording peaked at 361 of 4,096", q.Facts)
	}
}

func crawlerIPsFromTruth(t *testing.T) map[netip.Addr]bool {
	t.Helper()
	ips := map[netip.Addr]bool{}
	testenv.EachCSVRow(t, testenv.LabIncident(t, "truth-requests.csv.gz"), func(col func(string) int, rec []string) {
		if rec[col("class")] == "crawler" {
			ips[netip.MustParseAddr(rec[col("src_ip")])] = true
		}
	})
	return ips
}
