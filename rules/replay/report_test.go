package replay

import (
	"encoding/json"
	"flag"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/rules/replay/replayreport"
	"github.com/aftermath-forensics/aftermath/sources"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenRun is a replay's measurement written by hand: two seconds, a
// crawler mostly refused, an ordinary client that timed out, and a crawler
// fingerprint whose user agent tries to inject Markdown.
func goldenRun() ReportInput {
	from := time.Date(2026, 10, 2, 17, 20, 0, 0, time.UTC)
	hostile := request.ClusterKey{UA: "Evil](http://x.example/) | <b>", Lang: "zh-cn", LoggedIn: sources.LoggedInNo}
	p := &Plan{From: from, To: from.Add(20 * time.Second), Speed: 10, CrawlerKeys: []request.ClusterKey{hostile}, HealthChecks: 2, ClientsByPlan: 5}
	for i := range 10 {
		c := replayreport.ClassCrawler
		if i >= 8 {
			c = replayreport.ClassOtherLoggedOut
		}
		p.Shots = append(p.Shots, Shot{Offset: time.Duration(i) * 200 * time.Millisecond, Class: c})
	}
	res := &Result{Started: from.Add(24 * time.Hour), Ended: from.Add(24*time.Hour + 5*time.Second), Sources: 5, InFlightHigh: 3, OpenHigh: 4,
		WorstLag: 2500 * time.Microsecond, WorstLagAt: 1200 * time.Millisecond,
		Environment:  replayreport.Environment{GoVersion: "go1.26", GOOS: "linux", GOARCH: "amd64", NumCPU: 2, GOMAXPROCS: 2},
		ErrorSamples: map[string]string{"timeout": "context deadline exceeded"}}
	res.Lags = make([]time.Duration, 10)
	for i := range res.Lags {
		res.Lags[i] = time.Duration(i) * 250 * time.Microsecond
	}
	res.Seconds = make([]Second, 3)
	add := func(sec int, c replayreport.Class, o replayreport.Outcome, status int) {
		res.Classes[c].Add(o, status)
		res.Seconds[sec].Classes[c].Add(o, status)
	}
	add(0, replayreport.ClassCrawler, replayreport.OutcomeAnswered, 200)
	add(0, replayreport.ClassCrawler, replayreport.OutcomeAnswered, 200)
	add(0, replayreport.ClassCrawler, replayreport.OutcomeAnswered, 429)
	add(0, replayreport.ClassCrawler, replayreport.OutcomeAnswered, 429)
	add(0, replayreport.ClassCrawler, replayreport.OutcomeAnswered, 429)
	add(1, replayreport.ClassCrawler, replayreport.OutcomeAnswered, 429)
	add(1, replayreport.ClassCrawler, replayreport.OutcomeAnswered, 429)
	add(1, replayreport.ClassCrawler, replayreport.OutcomeAnswered, 503)
	add(1, replayreport.ClassOtherLoggedOut, replayreport.OutcomeAnswered, 200)
	add(1, replayreport.ClassOtherLoggedOut, replayreport.OutcomeTimeout, 0)
	res.Seconds[0].InFlightHigh, res.Seconds[1].InFlightHigh = 2, 3
	res.Goodput = []int{2, 0, 1}
	bt := &rules.Backtest{CrawlerRequests: 8, CrawlerRefused: 6, CrawlerRefusedShare: 0.75, OtherLoggedOutRequests: 2}
	return ReportInput{Plan: p, Result: res, Backtest: bt, RuleName: "tools_chrome_zh_cn", RuleFile: "out/rules.caddy", ScaledRuleFile: "out/rules-speed-10x.caddy",
		Options: Options{Target: &url.URL{Scheme: "http", Host: "127.0.0.1:8080"}, Loopback: true, ClientTimeout: 10 * time.Second, LateWindow: 10 * time.Second, MaxLag: 100 * time.Millisecond},
		Notes:   []string{"client timeout 10s from the site facts (client_timeout_s)"}}
}

// renderings are the measurements package report/replayview renders in its
// tests: the golden run as report.json, and the runs that mark a report
// (invalid, without a rule, stopped early) each as NAME.json.
func renderings() map[string]ReportInput {
	noRule := goldenRun()
	noRule.Backtest = nil
	stopped := goldenRun()
	stopped.Result.Stopped, stopped.Result.Unsent = "interrupted", 4
	return map[string]ReportInput{"report": goldenRun(), "saturated": saturatedRun(), "no-rule": noRule, "stopped": stopped}
}

func TestReportGolden(t *testing.T) {
	for name, in := range renderings() {
		js, err := NewReport(in).JSON()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", name+".json")
		if *update {
			if err := os.WriteFile(path, js, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to write it)", err)
		}
		if string(want) != string(js) {
			t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", path, js)
		}
	}
	rep := NewReport(goldenRun())
	js, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
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
	var back map[string]any
	if err := json.Unmarshal(js, &back); err != nil || back["schema"] != replayreport.Schema {
		t.Errorf("schema: %v %v", err, back["schema"])
	}
}

// saturatedRun is a replay's measurement written by hand in the shape of a
// saturated stack: two incident minutes at 10x, a crawler of 40 requests a
// replay second beside 12 ordinary and 1 logged-in, answered for four
// seconds and then timing out, late, 503, reset and refused, with the
// generator falling 150 ms behind in three seconds (so the run is invalid),
// a fingerprint that tries to inject markup and a transport error message
// that does too.
func saturatedRun() ReportInput {
	from := time.Date(2026, 10, 2, 17, 20, 0, 0, time.UTC)
	hostile := request.ClusterKey{UA: `<script>alert(1)</script>"><b>bold</b>`, Lang: "zh-cn", LoggedIn: sources.LoggedInNo}
	p := &Plan{From: from, To: from.Add(2 * time.Minute), Speed: 10, CrawlerKeys: []request.ClusterKey{hostile}, ClientsByPlan: 900}
	rng := rand.New(rand.NewPCG(1, 2))
	perSecond := [replayreport.NumClasses]int{replayreport.ClassCrawler: 40, replayreport.ClassOtherLoggedOut: 12, replayreport.ClassLoggedIn: 1}
	res := &Result{Started: from.Add(24 * time.Hour), Ended: from.Add(24*time.Hour + 33*time.Second), Sources: 900, OpenHigh: 420,
		Environment:  replayreport.Environment{GoVersion: "go1.26", GOOS: "linux", GOARCH: "amd64", NumCPU: 2, GOMAXPROCS: 1},
		ErrorSamples: map[string]string{"connection_reset": `read tcp 127.0.0.9:1->127.0.0.1:2: <img src=x onerror=alert(1)> reset`}}
	res.Seconds = make([]Second, 13)
	res.Goodput = make([]int, 23)
	for sec := range 12 {
		for c := replayreport.Class(0); c < replayreport.NumClasses; c++ {
			for k := range perSecond[c] {
				offset := time.Duration(sec)*time.Second + time.Duration(k)*time.Second/time.Duration(perSecond[c])
				p.Shots = append(p.Shots, Shot{Offset: offset, Class: c, Arrival: from.Add(offset * 10)})
				lag := time.Duration(rng.IntN(3000)) * time.Microsecond
				if sec >= 6 && sec <= 8 && k == 0 {
					lag = 150 * time.Millisecond
				}
				res.Lags = append(res.Lags, lag)
				o, status := replayreport.OutcomeAnswered, 200
				switch x := rng.IntN(100); {
				case sec < 4 && c == replayreport.ClassCrawler && x < 30:
					status = 429
				case sec < 4:
				case x < 45:
					o, status = replayreport.OutcomeTimeout, 0
				case x < 60:
					o = replayreport.OutcomeLate
				case x < 75:
					status = 503
				case x < 80:
					o, status = replayreport.OutcomeReset, 0
				case x < 83:
					o, status = replayreport.OutcomeRefused, 0
				case x < 85:
					status = 404
				}
				if sec == 11 && k == 0 {
					o, status = replayreport.OutcomeStopped, 0
				}
				res.Classes[c].Add(o, status)
				res.Seconds[sec].Classes[c].Add(o, status)
				if o == replayreport.OutcomeAnswered && status == 200 {
					res.Goodput[sec+rng.IntN(2)]++
				}
			}
		}
		res.Seconds[sec].InFlightHigh = min(53*(sec+1), 420)
		res.InFlightHigh = max(res.InFlightHigh, res.Seconds[sec].InFlightHigh)
	}
	res.WorstLag, res.WorstLagAt = 150*time.Millisecond, 6*time.Second
	slices.SortStableFunc(p.Shots, func(a, b Shot) int { return int(a.Offset - b.Offset) })
	bt := &rules.Backtest{CrawlerRequests: 480, CrawlerRefused: 470, OtherLoggedOutRequests: 144, LoggedInRequests: 12}
	return ReportInput{Plan: p, Result: res, Backtest: bt, RuleName: "tools_chrome_zh_cn", RuleFile: "out/rules.caddy", ScaledRuleFile: "out/rules-speed-10x.caddy",
		Options: Options{Target: &url.URL{Scheme: "http", Host: "127.0.0.1:8080"}, Loopback: true, ClientTimeout: 10 * time.Second, LateWindow: 10 * time.Second, MaxLag: 100 * time.Millisecond},
		Notes:   []string{"client timeout 10s from the site facts (client_timeout_s)"}}
}

// TestLagAndInFlightInEveryReport: whatever the run (valid, invalid, stopped
// early, with no rule to compare), replay.json states the generator's worst
// scheduling lag and its in-flight high-water mark (replay.md and replay.html:
// package report/replayview).
func TestLagAndInFlightInEveryReport(t *testing.T) {
	for name, in := range renderings() {
		rep := NewReport(in)
		high := rep.Generator.InFlightHigh
		if high == 0 || rep.Generator.WorstLagMS == 0 {
			t.Fatalf("%s: the fixture should have lag and requests in flight", name)
		}
		js, err := rep.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			Generator map[string]any `json:"generator"`
		}
		if err := json.Unmarshal(js, &back); err != nil {
			t.Fatal(err)
		}
		if back.Generator["worst_lag_ms"] != rep.Generator.WorstLagMS || back.Generator["in_flight_high_water"] != float64(high) {
			t.Errorf("%s: replay.json generator %v", name, back.Generator)
		}
	}
}

// TestTargetPasswordNeverWritten: a target given with a password in its URL
// is redacted in the report, so in replay.json and in what package
// report/replayview renders of it (Report.Target).
func TestTargetPasswordNeverWritten(t *testing.T) {
	in := goldenRun()
	in.Options.Target = &url.URL{Scheme: "http", User: url.UserPassword("ops", "s3cret-pw"), Host: "127.0.0.1:8080"}
	rep := NewReport(in)
	js, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"replay.json": string(js), "Target": rep.Target} {
		if strings.Contains(out, "s3cret-pw") {
			t.Errorf("%s holds the target's password", name)
		}
		if !strings.Contains(out, "127.0.0.1:8080") {
			t.Errorf("%s does not name the target", name)
		}
	}
}
