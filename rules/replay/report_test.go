package replay

import (
	"encoding/json"
	"flag"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenRun is a replay's measurement written by hand: two seconds, a
// crawler mostly refused, an ordinary client that timed out, and a crawler
// fingerprint whose user agent tries to inject Markdown.
func goldenRun() ReportInput {
	from := time.Date(2026, 10, 2, 17, 20, 0, 0, time.UTC)
	hostile := detect.ClusterKey{UA: "Evil](http://x.example/) | <b>", Lang: "zh-cn", LoggedIn: sources.LoggedInNo}
	p := &Plan{From: from, To: from.Add(20 * time.Second), Speed: 10, CrawlerKeys: []detect.ClusterKey{hostile}, HealthChecks: 2, ClientsByPlan: 5}
	for i := range 10 {
		c := ClassCrawler
		if i >= 8 {
			c = ClassOtherLoggedOut
		}
		p.Shots = append(p.Shots, Shot{Offset: time.Duration(i) * 200 * time.Millisecond, Class: c})
	}
	res := &Result{Started: from.Add(24 * time.Hour), Ended: from.Add(24*time.Hour + 5*time.Second), Sources: 5, InFlightHigh: 3, OpenHigh: 4,
		WorstLag: 2500 * time.Microsecond, WorstLagAt: 1200 * time.Millisecond,
		Environment:  Environment{GoVersion: "go1.26", GOOS: "linux", GOARCH: "amd64", NumCPU: 2, GOMAXPROCS: 2},
		ErrorSamples: map[string]string{"timeout": "context deadline exceeded"}}
	res.Lags = make([]time.Duration, 10)
	for i := range res.Lags {
		res.Lags[i] = time.Duration(i) * 250 * time.Microsecond
	}
	res.Seconds = make([]Second, 3)
	add := func(sec int, c Class, o Outcome, status int) {
		res.Classes[c].add(o, status)
		res.Seconds[sec].Classes[c].add(o, status)
	}
	add(0, ClassCrawler, OutcomeAnswered, 200)
	add(0, ClassCrawler, OutcomeAnswered, 200)
	add(0, ClassCrawler, OutcomeAnswered, 429)
	add(0, ClassCrawler, OutcomeAnswered, 429)
	add(0, ClassCrawler, OutcomeAnswered, 429)
	add(1, ClassCrawler, OutcomeAnswered, 429)
	add(1, ClassCrawler, OutcomeAnswered, 429)
	add(1, ClassCrawler, OutcomeAnswered, 503)
	add(1, ClassOtherLoggedOut, OutcomeAnswered, 200)
	add(1, ClassOtherLoggedOut, OutcomeTimeout, 0)
	res.Seconds[0].InFlightHigh, res.Seconds[1].InFlightHigh = 2, 3
	res.Goodput = []int{2, 0, 1}
	bt := &rules.Backtest{CrawlerRequests: 8, CrawlerRefused: 6, CrawlerRefusedShare: 0.75, OtherLoggedOutRequests: 2}
	return ReportInput{Plan: p, Result: res, Backtest: bt, RuleName: "tools_chrome_zh_cn", RuleFile: "out/rules.caddy", ScaledRuleFile: "out/rules-speed-10x.caddy",
		Options: Options{Target: &url.URL{Scheme: "http", Host: "127.0.0.1:8080"}, Loopback: true, ClientTimeout: 10 * time.Second, LateWindow: 10 * time.Second, MaxLag: 100 * time.Millisecond},
		Notes:   []string{"client timeout 10s from the site facts (client_timeout_s)"}}
}

func TestReportGolden(t *testing.T) {
	rep := NewReport(goldenRun())
	js, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	md := rep.Markdown()
	page, err := rep.HTML()
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{"report.json": js, "report.md": md, "report.html": page} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to write it)", err)
		}
		if string(want) != string(got) {
			t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", name, got)
		}
	}
	// The numbers a reader acts on.
	crawler := rep.Classes["crawler"]
	if crawler.RateLimited != 5 || crawler.RefusedShare != 0.625 || crawler.Goodput != 2 || crawler.ProxyErrors != 1 {
		t.Errorf("crawler: %+v", crawler)
	}
	if rep.Backtest.Agree || len(rep.Backtest.Disagreements) != 1 || !strings.Contains(rep.Backtest.Disagreements[0], "crawler") {
		t.Errorf("62.5%% against 75%% is 12.5 points apart and must be named: %v", rep.Backtest.Disagreements)
	}
	if !rep.Generator.Valid || rep.Generator.MedianLagMS != 1.25 || rep.Generator.InFlightBound != 10 {
		t.Errorf("generator: %+v", rep.Generator)
	}
	// A value from a log line never becomes a link or markup.
	if strings.Contains(string(md), "Evil](") || strings.Contains(string(md), "<b>") {
		t.Errorf("the crawler's fingerprint was not escaped:\n%s", md)
	}
	var back map[string]any
	if err := json.Unmarshal(js, &back); err != nil || back["schema"] != Schema {
		t.Errorf("schema: %v %v", err, back["schema"])
	}
}
