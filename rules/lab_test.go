package rules

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/ingest"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// labDir is the real recording of a crawler burst on Caddy 2.11.9 +
// caddy-ratelimit v0.1.0 + php8.2-fpm (shared/data/README.md); without it
// the test ends as testenv.Missing says (a failure under CI=true).
func labDir(t *testing.T) string {
	t.Helper()
	return filepath.Dir(testenv.LabIncident(t, bundle.ManifestFile))
}

// truthCounts counts the lab generator's requests by true class
// (truth-requests.csv.gz: crawler, baseline_reader, ...).
func truthCounts(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	testenv.EachCSVRow(t, filepath.Join(labDir(t), "truth-requests.csv.gz"), func(col func(string) int, rec []string) {
		out[rec[col("class")]]++
	})
	return out
}

// TestLabRecording runs the whole chain on the real recording: the detectors'
// crawler_burst finding becomes a zone, Caddy adapts it, and the replay of the
// recorded requests refuses most of the crawler and no logged-in request.
//
// The crawler's fingerprint (Chrome, zh-CN, logged out) is shared by real
// readers whose Chrome asks for zh-CN: the backtest must count them apart
// (the obvious count, everything under the fingerprint, called 9,112 requests
// "crawler" and reported no collateral, while a deploy refused such readers).
// What the crawler sent is known from the generator's truth file.
func TestLabRecording(t *testing.T) {
	labBundle := labDir(t)
	p := proposeForBundle(t, labBundle)
	if len(p.Rules) != 1 {
		t.Fatalf("got %d rules; notes %v", len(p.Rules), p.DataQuality)
	}
	r := p.Rules[0]
	bt := r.Backtest
	t.Logf("%s\n%s\nbacktest %+v", p.Caddyfile, r.Why, bt)
	if err := Validate(p.Caddyfile); err != nil {
		t.Fatal(err)
	}
	truth := truthCounts(t)
	if bt.CrawlerRequests != truth["crawler"] {
		t.Errorf("%d requests counted as the crawler's, the generator sent %d", bt.CrawlerRequests, truth["crawler"])
	}
	// A zh-CN reader clicked Special:CiteThisPage on a page mid-crawl: a zone
	// on the fingerprint alone refused it (as a deploy refused such readers);
	// the crawler sent no Referer, so the zone spares requests that come from
	// the site's own pages, and the backtest, matching with Caddy's matchers,
	// refuses none of the readers' requests.
	if bt.FingerprintReaderRequests == 0 || bt.FingerprintReaderRefused != 0 || bt.FingerprintReadersRefused != 0 {
		t.Errorf("readers who share the fingerprint: %d requests, %d refused from %d addresses; want some, none refused",
			bt.FingerprintReaderRequests, bt.FingerprintReaderRefused, bt.FingerprintReadersRefused)
	}
	if !strings.Contains(r.Caddyfile, "not header Referer https://{http.request.host}/*") || !strings.Contains(r.Name, "no_site_referer") ||
		!strings.Contains(r.Why, "no Referer from the site's own pages") {
		t.Errorf("zone %s does not spare clicks from the site's pages, or does not say so:\n%s\n%s", r.Name, r.Caddyfile, r.Why)
	}
	if bt.OtherLoggedOutRefused < bt.FingerprintReaderRefused {
		t.Errorf("the readers' refusals (%d) are not in the collateral (%d)", bt.FingerprintReaderRefused, bt.OtherLoggedOutRefused)
	}
	if bt.BaselineCrawlerRequests != 0 {
		t.Errorf("%d baseline requests counted as the crawler's, which had not started", bt.BaselineCrawlerRequests)
	}
	// The name and the description state the conditions the zone carries.
	if strings.Contains(r.Name, "chrome") != strings.Contains(r.Caddyfile, "User-Agent") {
		t.Errorf("zone %s and its User-Agent condition disagree:\n%s", r.Name, r.Caddyfile)
	}
	if !strings.Contains(r.Caddyfile, "User-Agent") && !strings.Contains(r.Why, "does not check the User-Agent (Chrome)") {
		t.Errorf("the description does not say the zone ignores the User-Agent: %s", r.Why)
	}
	// The rules file's header states what the backtest found.
	for _, want := range []string{readerHeaderLine(bt), "xcaddy build --with github.com/mholt/caddy-ratelimit@v0.1.0", OrderOption} {
		if !strings.Contains(p.Caddyfile, want) {
			t.Errorf("rules.caddy's header lacks %q:\n%s", want, p.Caddyfile)
		}
	}
	if bt.CrawlerRefusedShare < 0.99 {
		t.Errorf("refused %d of %d crawler requests (%.1f%%), want >= 99%%", bt.CrawlerRefused, bt.CrawlerRequests, 100*bt.CrawlerRefusedShare)
	}
	if bt.LoggedInRequests == 0 || bt.LoggedInRefused != 0 {
		t.Errorf("refused %d of %d logged-in requests, want 0 of some", bt.LoggedInRefused, bt.LoggedInRequests)
	}
	if bt.OtherLoggedOutRefusedShare > 0.02 {
		t.Errorf("refused %.2f%% of other logged-out requests", 100*bt.OtherLoggedOutRefusedShare)
	}
	if bt.BaselineRefused != 0 {
		t.Errorf("refused %d ordinary requests before the crawl", bt.BaselineRefused)
	}
	// The crawler's tools in both URL forms (the site uses both), logged out,
	// and its language, which nobody else used for these tools.
	for _, want := range []string{"/w/Special:WhatLinksHere/*", "Special:WhatLinksHere|", "action=edit", "action=history",
		"action=watch", "not header Cookie *wikiUserID=*", "zh-cn"} {
		if !strings.Contains(r.Caddyfile, want) {
			t.Errorf("the zone lacks %q", want)
		}
	}
	// The recording has no data before the window: the notes must say the
	// baseline was taken before the onset, and that it is short.
	if !hasNote(p.DataQuality, "before the crawler's onset") {
		t.Errorf("notes %v", p.DataQuality)
	}
	if rec := find(p.Recommendations, "listen.backlog"); rec == nil || rec.Value != "16" {
		t.Errorf("backlog advice %+v", rec)
	}
}

// proposeForBundle runs the detectors over a bundle and proposes rules for it,
// as analyze does.
func proposeForBundle(t *testing.T, dir string) *Proposal {
	t.Helper()
	p, err := Propose(context.Background(), inputForBundle(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// inputForBundle runs the detectors over a bundle and returns what analyze
// gives Propose.
func inputForBundle(t *testing.T, dir string) Input {
	t.Helper()
	in, loaded, err := loadBundleInput(dir)
	if loaded != nil {
		t.Cleanup(func() { loaded.Close() }) // after Propose has read the requests
	}
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// loadBundleInput is inputForBundle's work: the Input, and what was loaded,
// for the caller to close once Propose has read the requests (nil when
// nothing was).
func loadBundleInput(dir string) (Input, *evidence.Loaded, error) {
	ctx := context.Background()
	b, err := bundle.Open(dir)
	if err != nil {
		return Input{}, nil, err
	}
	in := evidence.FromBundle(b)
	in.KeepRequests = true
	loaded, err := ingest.Load(ctx, in, time.UTC, detect.NewAggregate)
	if err != nil {
		return Input{}, nil, err
	}
	res, err := detect.Run(ctx, detect.EvidenceOf(loaded), detect.Detectors())
	if err != nil {
		return Input{}, loaded, fmt.Errorf("detect %s: %w", dir, err)
	}
	m := b.Manifest
	return Input{Findings: res.Findings, Access: in.Access, Requests: loaded.Requests, Site: m.Site, From: m.Window.From, To: m.Window.To}, loaded, nil
}

// readerHeaderLine is the header's line for the readers of a backtest.
func readerHeaderLine(bt Backtest) string {
	return "readers who share the crawler's fingerprint: " + fmtInt(bt.FingerprintReaderRefused) + " of " + fmtInt(bt.FingerprintReaderRequests) + " requests refused"
}
