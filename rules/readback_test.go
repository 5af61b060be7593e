package rules

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestRulesFromReportJSON: a credential-stuffing flood rotates browser
// fingerprints; detect joins them into one actor. The rules made from the
// findings as report.json holds them (no in-process cluster keys) must be
// those made in process: the same block, the same backtest, over every
// fingerprint the join merged. Rebuilt from the largest fingerprint alone
// (the obvious reading of report.json's fingerprint), the rules would
// count the other fingerprints' attempts as other clients' and miss them.
// The backtest refuses at least 95% of the actor and under 0.5% of other
// logged-out requests (issue 25's goal).
func TestRulesFromReportJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation in -short mode")
	}
	dir := filepath.Join(t.TempDir(), "b")
	if _, err := simulate.Run(context.Background(), simulate.Options{Scenario: "credential-stuffing", Seed: 2, BaselineHours: 3, Out: dir, StoredGzip: true}); err != nil {
		t.Fatal(err)
	}
	in := inputForBundle(t, dir)
	inProcess, err := Propose(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(in.Findings)
	if err != nil {
		t.Fatal(err)
	}
	var read []detect.Finding
	if err := json.Unmarshal(js, &read); err != nil {
		t.Fatal(err)
	}
	joined := 0
	for _, f := range read {
		if f.Kind == detect.KindCrawlerBurst && f.Fingerprint != nil && len(f.Fingerprint.Members) > 1 {
			joined++
		}
	}
	if joined != 1 {
		t.Fatalf("%d crawler findings with joined fingerprints in report.json, want the flood", joined)
	}
	in.Findings = read
	fromJSON, err := Propose(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if fromJSON.Caddyfile != inProcess.Caddyfile {
		t.Errorf("rules from report.json:\n%s\nin process:\n%s", fromJSON.Caddyfile, inProcess.Caddyfile)
	}
	a, b := inProcess.Backtest, fromJSON.Backtest
	if a == nil || b == nil {
		t.Fatalf("backtest in process %v, from report.json %v", a, b)
	}
	if a.CrawlerRequests != b.CrawlerRequests || a.CrawlerRefused != b.CrawlerRefused || a.OtherLoggedOutRefused != b.OtherLoggedOutRefused {
		t.Errorf("backtest from report.json: actor %d of %d refused, others %d; in process %d of %d, others %d",
			b.CrawlerRefused, b.CrawlerRequests, b.OtherLoggedOutRefused, a.CrawlerRefused, a.CrawlerRequests, a.OtherLoggedOutRefused)
	}
	if a.CrawlerRefusedShare < 0.95 || a.OtherLoggedOutRefusedShare >= 0.005 {
		t.Errorf("refused %.1f%% of the actor and %.2f%% of other logged-out requests; want >= 95%% and < 0.5%%",
			100*a.CrawlerRefusedShare, 100*a.OtherLoggedOutRefusedShare)
	}
}
