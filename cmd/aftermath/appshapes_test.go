package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestApplicationShapes: sites that are neither MediaWiki nor WordPress
// (issue 25), analyzed as `aftermath analyze` does. A Laravel shop whose
// scraper rotates browser User-Agents over /products/{id}, with the Cookie
// logged whole, every visitor holding a session cookie and logins marked by
// a cookie only an expression names; a Nextcloud server whose desktop sync
// clients (their own User-Agent, WebDAV PROPFIND) re-scan after an upgrade
// and retry once the site fails them, while a crawler on public share links
// fills the pool, with the Cookie redacted. In each the truth's crawler is
// the trigger and ranked first, no other cause is called a trigger (the sync
// clients are a consequence), its onset is within two minutes, its clients
// (addresses, IPv6 per /64) within 5%, and the rule refuses at least 95% of
// it; where the log shows logins, the rule refuses none of them.
func TestApplicationShapes(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"laravel-rotating-scraper", "nextcloud-share-crawl"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := scenarioBundle(t, name)
			// The report.json `analyze` writes for b, shared with the
			// tests that analyze the same scenario.
			out := t.TempDir()
			if err := os.WriteFile(filepath.Join(out, "report.json"), scenarioReportJSON(t, name), 0o644); err != nil {
				t.Fatal(err)
			}
			var tr simulate.Truth
			if err := readJSON(filepath.Join(b, "truth.json"), &tr); err != nil {
				t.Fatal(err)
			}
			var rep accReport
			if err := readJSON(filepath.Join(out, "report.json"), &rep); err != nil {
				t.Fatal(err)
			}
			s := score(name, 1, tr, rep)
			if !s.TriggerRight {
				t.Errorf("trigger: want %s, got %s", s.WantTrigger, s.GotTrigger)
			}
			if s.OnsetErr == nil || s.OnsetErr.Abs() > accTolerance {
				t.Errorf("onset off by %v (want within %v)", s.OnsetErr, accTolerance)
			}
			if len(s.Missing) > 0 || len(s.Forbidden) > 0 {
				t.Errorf("findings missing %v, forbidden but present %v", s.Missing, s.Forbidden)
			}
			if s.ActorRefused == nil || *s.ActorRefused < 0.95 {
				t.Errorf("rules refuse %v of the crawler, want >= 95%%", s.ActorRefused)
			}
			if s.OthersRefused == nil || *s.OthersRefused >= 0.005 {
				t.Errorf("rules refuse %v of other logged-out requests, want < 0.5%%", s.OthersRefused)
			}
			clients := -1.0
			for _, f := range rep.Findings {
				if f.ID == firstCause(rep) {
					clients = f.Facts["clients"]
				}
			}
			if want := float64(tr.Crawler.Clients); math.Abs(clients-want) > 0.05*want {
				t.Errorf("trigger's clients %v, truth %v", clients, want)
			}
			var logins struct {
				Findings []struct {
					ID      string `json:"id"`
					Summary string `json:"summary"`
					Facts   struct {
						// 1 spread, 0 concentrated (report.json's facts are numbers).
						Spread *float64 `json:"spread"`
					} `json:"facts"`
				} `json:"findings"`
				Rules []struct {
					Finding  string `json:"finding"`
					Key      string `json:"key"`
					Backtest struct {
						LoggedInRequests int `json:"logged_in_requests"`
						LoggedInRefused  int `json:"logged_in_refused"`
					} `json:"backtest"`
				} `json:"rules"`
			}
			js, err := os.ReadFile(filepath.Join(out, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(js, &logins); err != nil {
				t.Fatal(err)
			}
			// Whether a limit per client would catch the crawler is said
			// once: the finding's spread fact, its prose and its rule's key
			// agree (a rule keyed per client answers a concentrated crawler,
			// one bucket a spread one).
			for _, r := range logins.Rules {
				for _, f := range logins.Findings {
					if f.ID != r.Finding || f.Facts.Spread == nil {
						continue
					}
					perClient, spread := strings.Contains(r.Key, "{"), *f.Facts.Spread == 1
					if perClient == spread {
						t.Errorf("%s: spread %v, yet its rule is keyed %q", f.ID, spread, r.Key)
					}
					if claims := strings.Contains(f.Summary, "a per-client limit would catch it"); claims != perClient {
						t.Errorf("%s says %q, while its rule is keyed %q", f.ID, f.Summary, r.Key)
					}
				}
			}
			for _, r := range logins.Rules {
				if tr.CookieLog == "logged" && r.Backtest.LoggedInRequests == 0 {
					t.Errorf("the Cookie is logged, yet the backtest saw no logged-in request")
				}
				if r.Backtest.LoggedInRefused > 0 {
					t.Errorf("the rule refuses %d logged-in requests", r.Backtest.LoggedInRefused)
				}
			}
		})
	}
}

// firstCause is the finding the report ranks first.
func firstCause(rep accReport) string {
	best, id := math.MaxInt, ""
	for _, c := range rep.Causes {
		if c.Rank < best {
			best, id = c.Rank, c.Finding
		}
	}
	return id
}
