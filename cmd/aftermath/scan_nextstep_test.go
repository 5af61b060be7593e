package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources/changes"
)

// TestScanTellsTheNextStep replays a scan of the reference incident
// (crawler-backlog seed 1, the sample incident with two hours of baseline
// rather than the demo's 24, which took the scan twice the CPU) at 02:40, in
// the middle of the crawl. The bundle runs to 03:30 and its config
// repository holds the 07:07 fix (commit bdb164e): a scan at 02:40 cannot
// know of it, so neither scan.json nor scan.md may cite it, while the changes
// made before (297178f) are still judged. The crawler anomaly carries the
// zone to deploy now, with the steps rules.caddy opens with and its backtest
// over the window; the health check's timeout is never shown as a usual
// value.
func TestScanTellsTheNextStep(t *testing.T) {
	t.Parallel()
	b := referenceBundle(t)
	now := time.Date(2026, 10, 3, 2, 40, 0, 0, seoul)
	out := filepath.Join(t.TempDir(), "scan")
	code, stdout := runScanCLI(t, "--bundle", b, "--now", now.Format(time.RFC3339), "--out", out)
	if code != exitIncomplete {
		t.Fatalf("scan exit %d, want 1 (anomalous):\n%s", code, stdout)
	}
	js, err := os.ReadFile(filepath.Join(out, "scan.json"))
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "scan.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The changes the bundle holds after now, found from the bundle itself.
	after, before := changesAround(t, b, now)
	if len(after) == 0 || len(before) == 0 {
		t.Fatalf("the sample bundle should hold changes before and after %s (before %v, after %v)", now, before, after)
	}
	for _, ref := range after {
		if strings.Contains(string(js), ref) || strings.Contains(string(md), ref) {
			t.Errorf("the scan at %s cites commit %s, made after it", now.Format("15:04"), ref)
		}
	}
	if !strings.Contains(string(md), before[0]) {
		t.Errorf("the scan no longer judges commit %s, made before it", before[0])
	}

	var doc struct {
		Anomalies []struct {
			Kind       string   `json:"kind"`
			Findings   []string `json:"findings"`
			Baseline   float64  `json:"baseline"`
			NoBaseline bool     `json:"no_baseline"`
		} `json:"anomalies"`
		Rules     []rules.Rule `json:"rules"`
		Caddyfile string       `json:"caddyfile"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	crawlers := 0
	for _, a := range doc.Anomalies {
		switch a.Kind {
		case "crawler_burst":
			crawlers++
			var rule *rules.Rule
			for i := range doc.Rules {
				for _, id := range a.Findings {
					if doc.Rules[i].Finding == id {
						rule = &doc.Rules[i]
					}
				}
			}
			if rule == nil {
				t.Errorf("crawler anomaly %v carries no rule (rules: %d)", a.Findings, len(doc.Rules))
				continue
			}
			if rule.Backtest.CrawlerRefusedShare < 0.9 {
				t.Errorf("zone %s refuses %.1f%% of the crawler over the window", rule.Name, 100*rule.Backtest.CrawlerRefusedShare)
			}
			for _, want := range []string{"**Do this now:**", rules.BuildCommand, rules.OrderOption, "zone " + rule.Name + " {",
				"refuses " + fmtCount(rule.Backtest.CrawlerRefused) + " of the crawler's " + fmtCount(rule.Backtest.CrawlerRequests) + " requests"} {
				if !strings.Contains(string(md), want) {
					t.Errorf("scan.md lacks %q", want)
				}
			}
		case "healthcheck_starved":
			if !a.NoBaseline || a.Baseline != 0 {
				t.Errorf("healthcheck_starved shows %v as its usual value: a timeout is a limit, not a usual value", a.Baseline)
			}
		}
	}
	if crawlers == 0 {
		t.Fatal("no crawler anomaly in the middle of the crawl: the test proves nothing")
	}
	if !strings.Contains(doc.Caddyfile, rules.BuildCommand) {
		t.Errorf("scan.json's caddyfile lacks the deploy header:\n%s", doc.Caddyfile)
	}
}

// changesAround reads the bundle's configuration changes (changes.yaml) and
// returns the commits made after now and before it.
func changesAround(t *testing.T, bundleDir string, now time.Time) (after, before []string) {
	t.Helper()
	cs, err := changes.Read(filepath.Join(bundleDir, "changes", "changes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if len(c.Ref) < 7 {
			continue
		}
		// Reports cite a commit by its first seven digits.
		if ref := c.Ref[:7]; c.Time.Before(now) {
			before = append(before, ref)
		} else {
			after = append(after, ref)
		}
	}
	return after, before
}
