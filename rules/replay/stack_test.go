package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile" // the caddyfile adapter
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	_ "github.com/caddyserver/caddy/v2/modules/logging"
	_ "github.com/mholt/caddy-ratelimit"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/rules/replay/replayreport"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/ingest"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// backend is a small real PHP-like server: a fixed number of workers, a
// bounded queue in front of them (php-fpm's listen backlog), a fixed service
// time, and, like php-fpm, no notion of a client that gave up: queued work
// runs anyway. Beyond the queue a connection is closed unanswered, which
// Caddy turns into a 502.
type backend struct {
	workers, queue chan struct{}
	service        time.Duration
	served         atomic.Int64
	overflow       atomic.Int64
	busyMax        atomic.Int64
	busy           atomic.Int64
	srv            *http.Server
	addr           string
}

func startBackend(t *testing.T, workers, queue int, service time.Duration) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{workers: make(chan struct{}, workers), queue: make(chan struct{}, queue), service: service, addr: ln.Addr().String()}
	b.srv = &http.Server{Handler: b}
	go b.srv.Serve(ln)
	t.Cleanup(func() { b.srv.Close() })
	return b
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case b.queue <- struct{}{}:
	default:
		b.overflow.Add(1)
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	b.workers <- struct{}{}
	<-b.queue
	n := b.busy.Add(1)
	for m := b.busyMax.Load(); n > m && !b.busyMax.CompareAndSwap(m, n); m = b.busyMax.Load() {
	}
	time.Sleep(b.service)
	b.busy.Add(-1)
	<-b.workers
	b.served.Add(1)
	w.Header().Set("X-Powered-By", "PHP/8.2.24")
	w.Header().Set("Content-Type", "text/html; charset=UTF-8")
	fmt.Fprintln(w, "<html><body>page</body></html>")
}

// caddySite is one site of the stack's Caddy: the rate_limit block (if
// any) in front of reverse_proxy to upstream.
type caddySite struct {
	rateLimit, upstream string
}

// startCaddy runs the real Caddy in process, on loopback, with one site per
// entry of sites, each on a port of its own with its access log in JSON to
// a file of its own. It returns the sites' URLs and their logs' paths, in
// order; Caddy stops (flushing the logs) at cleanup or when stop is called.
func startCaddy(t *testing.T, sites ...caddySite) (urls []*url.URL, accessLogs []string, stop func()) {
	t.Helper()
	dir := t.TempDir()
	// Caddy keeps its instance id under the data directory: keep it here.
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	cf := `{
	admin off
	persist_config off
	auto_https off
	log default {
		output discard
	}
}
`
	for i, s := range sites {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		accessLog := filepath.Join(dir, fmt.Sprintf("access-%d.log", i))
		cf += fmt.Sprintf(`http://:%d {
	bind 127.0.0.1
	log {
		output file %s
		format json
	}
%s
	reverse_proxy %s
}
`, port, accessLog, s.rateLimit, s.upstream)
		urls = append(urls, &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port)})
		accessLogs = append(accessLogs, accessLog)
	}
	js, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		t.Fatalf("adapting the stack's Caddyfile: %v\n%s", err, cf)
	}
	if len(warnings) > 0 {
		t.Logf("caddy warnings: %v", warnings)
	}
	// Loading the config redirects Caddy's default log to discard, saying
	// so on the log it replaces.
	silenceCaddyLog(t)
	if err := caddy.Load(js, true); err != nil {
		t.Fatalf("starting caddy: %v", err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { _ = caddy.Stop() }) }
	t.Cleanup(stop)
	return urls, accessLogs, stop
}

// incident is the simulated crawler incident, loaded and analysed once.
var incident struct {
	once     sync.Once
	dir      string
	err      error
	analysis testAnalysis
	site     sources.Site
}

// TestMain removes the simulated incident the tests shared.
func TestMain(m *testing.M) {
	code := m.Run()
	if incident.analysis.Loaded != nil {
		incident.analysis.Loaded.Close()
	}
	if incident.dir != "" {
		os.RemoveAll(incident.dir)
	}
	os.Exit(code)
}

// crawlerIncident simulates crawler-backlog (one hour of baseline) and runs
// the detectors over it, as analyze does.
func crawlerIncident(t *testing.T) testAnalysis {
	t.Helper()
	incident.once.Do(func() {
		dir, err := os.MkdirTemp("", "aftermath-replay-incident-")
		if err != nil {
			incident.err = err
			return
		}
		incident.dir = dir
		out := filepath.Join(dir, "bundle")
		ctx := context.Background()
		if _, err := simulate.Run(ctx, simulate.Options{Scenario: "crawler-backlog", Out: out, Seed: 1, Scale: 1, BaselineHours: 1, StoredGzip: true}); err != nil {
			incident.err = err
			return
		}
		b, err := bundle.Open(out)
		if err != nil {
			incident.err = err
			return
		}
		in := evidence.FromBundle(b)
		in.KeepRequests = true
		loaded, err := ingest.Load(ctx, in, time.UTC, detect.NewAggregate)
		if err != nil {
			incident.err = err
			return
		}
		res, err := detect.Run(ctx, detect.EvidenceOf(loaded), detect.Detectors())
		if err != nil {
			incident.err = err
			return
		}
		incident.analysis = testAnalysis{Loaded: loaded, Findings: res.Findings, Access: in.Access}
		incident.site = loaded.Site
	})
	if incident.err != nil {
		t.Fatal(incident.err)
	}
	return incident.analysis
}

// testAnalysis is what the pipeline gives a replay (analysis.Detect): the
// evidence loaded with its requests and the detectors' findings.
type testAnalysis struct {
	Loaded   *evidence.Loaded
	Findings []detect.Finding
	Access   []string
}

// prepare is what analysis.PrepareReplay does with the test's incident (this
// package cannot import analysis, which imports it): the rule proposed over
// the range, sized on the bundle's baseline (else the 30 days before the
// window, clipped to the data), and the range's plan.
func prepare(ctx context.Context, a testAnalysis, o PlanOptions) (*Plan, *rules.Proposal, error) {
	l := a.Loaded
	bFrom, bTo := l.BaselineFrom, l.BaselineTo
	if bFrom.IsZero() || !bTo.After(bFrom) {
		bFrom, bTo = l.From.Add(-30*24*time.Hour), l.From
	}
	prop, err := rules.Propose(ctx, rules.Input{Findings: a.Findings, Access: a.Access, Requests: l.Requests, Site: l.Site, Zone: l.LogZone,
		From: o.From, To: o.To, BaselineFrom: bFrom, BaselineTo: bTo})
	if err != nil {
		return nil, nil, err
	}
	o.Findings, o.Site = a.Findings, l.Site
	plan, err := NewPlan(ctx, l.Requests.Read, o)
	return plan, prop, err
}

// The crawl at its height, after the pool saturated (17:19:45 in the simulation).
var (
	rangeFrom = time.Date(2026, 10, 2, 17, 20, 0, 0, time.UTC)
	rangeTo   = time.Date(2026, 10, 2, 17, 22, 0, 0, time.UTC)
)

const (
	testSpeed   = 10
	testTimeout = 2 * time.Second
	// testMaxLag is the bound the stack's checks need: the scaled rule's
	// window is 30 s and the client timeout 2 s, so a sending lag under 1 s
	// moves a handful of requests across a window's edge and none across a
	// timeout. It is not the command's default (100 ms): the machine running
	// the tests is shared, and a stalled process is not what these tests
	// are about (TestStarvedGeneratorInvalid is).
	testMaxLag = time.Second
	// stackWorkers is the backend's pool; its service time is derived from
	// the replayed rate (below), and its queue holds several client timeouts of work, as the incident's 4,096 backlog did.
	stackWorkers = 4
	stackQueue   = 256
)

func testOptions(target *url.URL) Options {
	return Options{Target: target, Loopback: true, ClientTimeout: testTimeout, LateWindow: testTimeout, MaxLag: testMaxLag}
}

// TestStackCrawlerIncident replays the crawl at 10x against real Caddy and a
// real saturable backend, without and then with the generated rule.
func TestStackCrawlerIncident(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a simulated incident against a real stack")
	}
	a := crawlerIncident(t)
	ctx := context.Background()
	plan, prop, err := prepare(ctx, a, PlanOptions{From: rangeFrom, To: rangeTo, Speed: testSpeed, MaxRequests: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.CrawlerKeys) == 0 || prop.Caddyfile == "" || prop.Backtest == nil {
		t.Fatalf("the incident should have a crawler and a rule: keys %v, rule %q", plan.CrawlerKeys, prop.Caddyfile)
	}
	var perClass [replayreport.NumClasses]int
	for _, s := range plan.Shots {
		perClass[s.Class]++
	}
	// Size the backend from the data: it answers half the replayed rate, and
	// the ordinary clients alone use well under half of it.
	rate := float64(len(plan.Shots)) / plan.Duration().Seconds()
	service := time.Duration(float64(stackWorkers) / (rate / 2) * float64(time.Second))
	ordinaryRate := float64(perClass[replayreport.ClassOtherLoggedOut]+perClass[replayreport.ClassLoggedIn]) / plan.Duration().Seconds()
	if ordinaryRate > rate/4 {
		t.Fatalf("precondition: ordinary clients send %.1f/s of %.1f/s: the crawler should dominate the range", ordinaryRate, rate)
	}
	t.Logf("replaying %d requests (%d crawler, %d other logged-out, %d logged-in) at %.1f/s; backend %d workers x %s, queue %d",
		len(plan.Shots), perClass[replayreport.ClassCrawler], perClass[replayreport.ClassOtherLoggedOut], perClass[replayreport.ClassLoggedIn], rate, stackWorkers, service, stackQueue)

	// The range is one the simulation recorded as saturated: every worker
	// busy from before it until after it, inside a failing stretch. (Its
	// clients mostly still got answers, queued for seconds: the recorded
	// failures there are a handful of late answers, logged below; the
	// replay's stack, sized to answer half the replayed rate behind a 2 s
	// client timeout, fails far more of them. The check is of saturation,
	// not of its recorded failure share.)
	truth := recordedTruth(t)
	sat, _ := time.Parse(time.RFC3339Nano, truth.Phases.Saturation)
	end, _ := time.Parse(time.RFC3339Nano, truth.Phases.End)
	inStretch := false
	for _, st := range truth.FailingStretches {
		from, _ := time.Parse(time.RFC3339Nano, st.From)
		to, _ := time.Parse(time.RFC3339Nano, st.To)
		inStretch = inStretch || (!from.After(rangeFrom) && !to.Before(rangeTo))
	}
	if sat.IsZero() || sat.After(rangeFrom) || end.Before(rangeTo) || !inStretch {
		t.Fatalf("precondition: the simulation should record [%s, %s) as saturated and failing: phases %+v, stretches %+v", rangeFrom, rangeTo, truth.Phases, truth.FailingStretches)
	}
	recordedFailed := 0
	for _, sh := range plan.Shots {
		if sh.Request.Status >= 500 || sh.Request.Duration > incident.site.ClientTimeoutS {
			recordedFailed++
		}
	}
	t.Logf("recorded: saturated from %s; %d of %d requests of the range failed (5xx or answered after %g s)", truth.Phases.Saturation, recordedFailed, len(plan.Shots), incident.site.ClientTimeoutS)

	// Both stacks at once, one site each in one Caddy: each replay mostly
	// waits (two minutes at 10x are 12 s), and the sites share no handler,
	// zone or backend. The rule is scaled to the replay's speed.
	scaled, err := ScaleRule(prop.Caddyfile, testSpeed)
	if err != nil {
		t.Fatal(err)
	}
	noRule, withRule := &stackRun{be: startBackend(t, stackWorkers, stackQueue, service)}, &stackRun{be: startBackend(t, stackWorkers, stackQueue, service)}
	sites, logs, stop := startCaddy(t, caddySite{"", noRule.be.addr}, caddySite{indent(scaled), withRule.be.addr})
	noRule.site, withRule.site = sites[0], sites[1]
	var replays sync.WaitGroup
	for _, r := range []*stackRun{noRule, withRule} {
		replays.Go(func() { r.res, r.err = Run(ctx, plan, testOptions(r.site)) })
	}
	replays.Wait()
	stop()

	t.Run("without the rule the backend saturates", func(t *testing.T) {
		be, site, res, err := noRule.be, noRule.site, noRule.res, noRule.err
		if err != nil {
			t.Fatal(err)
		}
		rep := NewReport(ReportInput{Plan: plan, Options: testOptions(site), Result: res, Backtest: prop.Backtest})
		all := rep.Classes["all"]
		t.Logf("lag: worst %.0f ms, median %.1f, p99 %.1f, over bound %d", rep.Generator.WorstLagMS, rep.Generator.MedianLagMS, rep.Generator.P99LagMS, rep.Generator.OverMaxLag)
		t.Logf("no rule: %+v; backend served %d, overflow %d, busy max %d", all, be.served.Load(), be.overflow.Load(), be.busyMax.Load())
		if !rep.Generator.Valid {
			t.Fatalf("the run should be valid: %s", rep.Generator.Invalid)
		}
		if got := be.busyMax.Load(); got != stackWorkers {
			t.Errorf("every worker should have been busy at once: %d of %d", got, stackWorkers)
		}
		if all.RateLimited != 0 {
			t.Errorf("no rule, yet %d 429s", all.RateLimited)
		}
		// Saturation as the simulation recorded it: clients failed (time outs,
		// late answers, 5xx), ordinary clients among them.
		failed := all.Timeout + all.LateTotal() + all.ProxyErrors
		if failed < all.Sent/5 {
			t.Errorf("the saturated stack should fail clients: %d of %d failed (timeouts %d, late %d, 5xx %d)", failed, all.Sent, all.Timeout, all.LateTotal(), all.ProxyErrors)
		}
		if all.Timeout == 0 {
			t.Errorf("clients should time out behind the full queue")
		}
		other := rep.Classes[replayreport.ClassOtherLoggedOut.String()]
		if other.FailedShare < 0.2 {
			t.Errorf("ordinary clients should suffer too: failed share %.2f", other.FailedShare)
		}
		if rep.Backtest == nil || rep.Backtest.Agree {
			t.Errorf("without the rule the replay must disagree with the rule's backtest (crawler refused 0%% vs %.0f%%)", 100*prop.Backtest.CrawlerRefusedShare)
		}
	})

	t.Run("with the scaled rule the crawler gets 429s", func(t *testing.T) {
		site, accessLog, res, err := withRule.site, logs[1], withRule.res, withRule.err
		if err != nil {
			t.Fatal(err)
		}
		rep := NewReport(ReportInput{Plan: plan, Options: testOptions(site), Result: res, Backtest: prop.Backtest, RuleName: "test"})
		if !rep.Generator.Valid {
			t.Fatalf("the run should be valid: %s", rep.Generator.Invalid)
		}
		for _, row := range rep.Backtest.Rows {
			t.Logf("%s: backtest refused %.1f%% (%d of %d), replay %.1f%% (%d of %d), %+.1f points, replay failed %.1f%%", row.Class,
				100*row.BacktestRefusedShare, row.BacktestRefused, row.BacktestRequests, 100*row.ReplayRefusedShare, row.ReplayRefused, row.ReplayJudged,
				row.DifferencePoints, 100*row.ReplayFailedShare)
			if row.DifferencePoints > replayreport.AgreementPoints || row.DifferencePoints < -replayreport.AgreementPoints {
				t.Errorf("%s: replay and backtest disagree by %.1f points", row.Class, row.DifferencePoints)
			}
			if row.BacktestRequests != row.ReplayJudged {
				t.Errorf("%s: the backtest counted %d requests, the replay judged %d", row.Class, row.BacktestRequests, row.ReplayJudged)
			}
		}
		if !rep.Backtest.Agree {
			t.Errorf("disagreements: %v", rep.Backtest.Disagreements)
		}
		// The ordinary clients are compared too, not only the crawler.
		var compared []string
		for _, row := range rep.Backtest.Rows {
			compared = append(compared, row.Class)
		}
		if !slices.Equal(compared, []string{replayreport.ClassCrawler.String(), replayreport.ClassOtherLoggedOut.String(), replayreport.ClassLoggedIn.String()}) {
			t.Errorf("classes compared with the backtest: %q, want all three", compared)
		}
		crawler := rep.Classes[replayreport.ClassCrawler.String()]
		if crawler.RefusedShare < 0.9 {
			t.Errorf("the crawler should be refused: %.2f", crawler.RefusedShare)
		}
		for _, c := range []replayreport.Class{replayreport.ClassOtherLoggedOut, replayreport.ClassLoggedIn} {
			s := rep.Classes[c.String()]
			if s.Judged() > 0 && float64(s.Goodput) < 0.95*float64(s.Judged()-s.AnsweredIn(300, 499)) {
				t.Errorf("%s should keep its goodput: %d 2xx of %d (%+v)", c, s.Goodput, s.Judged(), s.Counts)
			}
		}
		// Caddy's own access log, read as analyze reads one, agrees too.
		logged, refused := caddyLogged(t, accessLog, plan)
		share := float64(refused) / float64(logged)
		t.Logf("Caddy's access log: crawler fingerprint %d requests, %d refused (%.1f%%); backtest %.1f%%", logged, refused, 100*share, 100*prop.Backtest.CrawlerRefusedShare)
		if logged != perClass[replayreport.ClassCrawler] {
			t.Errorf("Caddy logged %d requests of the crawler's fingerprint, the replay sent %d", logged, perClass[replayreport.ClassCrawler])
		}
		if d := 100 * (share - prop.Backtest.CrawlerRefusedShare); d > replayreport.AgreementPoints || d < -replayreport.AgreementPoints {
			t.Errorf("Caddy's log and the backtest disagree by %.1f points", d)
		}
		if res.Sources != plan.ClientsByPlan-res.MergedSources && res.Sources < plan.ClientsByPlan*9/10 {
			t.Errorf("clients should keep their own addresses: %d sources for %d clients", res.Sources, plan.ClientsByPlan)
		}
	})
}

// stackRun is one replay of TestStackCrawlerIncident: its backend, its
// site and what the replay returned.
type stackRun struct {
	be   *backend
	site *url.URL
	res  *Result
	err  error
}

// recordedTruth reads the simulated incident's truth.json.
func recordedTruth(t *testing.T) simulate.Truth {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(incident.dir, "bundle", "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var truth simulate.Truth
	if err := json.Unmarshal(data, &truth); err != nil {
		t.Fatalf("truth.json: %v", err)
	}
	return truth
}

// indent puts a block one tab in, inside the site block.
func indent(s string) string {
	return "\t" + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n\t")
}

// caddyLogged reads Caddy's access log and counts the requests of the
// crawler's fingerprint and the 429s among them. Caddy logs each client's
// own loopback address: a different address per recorded client.
func caddyLogged(t *testing.T, path string, plan *Plan) (requests, refused int) {
	t.Helper()
	crawler := map[request.ClusterKey]bool{}
	for _, k := range plan.CrawlerKeys {
		crawler[k] = true
	}
	var keys request.Keyer
	var skips sources.Skips
	_, err := accesslog.Read(context.Background(), []string{path}, accesslog.Options{LoggedInCookie: plan.LoggedInCookie}, &skips, func(batch []sources.Request) error {
		for i := range batch {
			if crawler[keys.Key(&batch[i])] {
				requests++
				if batch[i].Status == 429 {
					refused++
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if requests == 0 {
		t.Fatalf("Caddy's access log %s holds no request of the crawler's fingerprint", path)
	}
	return requests, refused
}

// hungListener accepts connections and never answers: a server that has
// stopped answering.
func hungListener(t *testing.T) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

// TestOpenLoopInFlight: when the server stops answering, an open-loop
// generator keeps sending, so the requests in flight grow to about rate x
// timeout; a closed-loop one would stall at its worker count.
func TestOpenLoopInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a simulated incident")
	}
	a := crawlerIncident(t)
	const speed = 40
	plan, err := NewPlan(context.Background(), a.Loaded.Requests.Read, PlanOptions{From: rangeFrom, To: rangeFrom.Add(2 * time.Minute), Speed: speed,
		Findings: a.Findings, Site: incident.site, MaxRequests: 100000})
	if err != nil {
		t.Fatal(err)
	}
	target := hungListener(t)
	opt := Options{Target: target, Loopback: true, ClientTimeout: time.Second, LateWindow: 200 * time.Millisecond, MaxLag: testMaxLag}
	res, err := Run(context.Background(), plan, opt)
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(ReportInput{Plan: plan, Options: opt, Result: res})
	all := rep.Classes["all"]
	bound := rep.Generator.InFlightBound
	rate := float64(len(plan.Shots)) / plan.Duration().Seconds()
	t.Logf("%d requests at %.0f/s into a server that never answers: in flight at most %d, bound (rate x timeout) %d, open %d, worst lag %.1f ms",
		len(plan.Shots), rate, res.InFlightHigh, bound, res.OpenHigh, rep.Generator.WorstLagMS)
	if all.Timeout != all.Sent || all.Sent != len(plan.Shots) {
		t.Errorf("every request should time out: %+v", all.Counts)
	}
	if float64(bound) < 0.5*rate*opt.ClientTimeout.Seconds() {
		t.Fatalf("the bound %d should be about rate x timeout (%.0f)", bound, rate*opt.ClientTimeout.Seconds())
	}
	// A generator that stalled sends the stalled requests together: they can
	// add up to rate x lag to the schedule's own bound.
	slack := int(rate*res.WorstLag.Seconds()) + bound/20 + 2
	if res.InFlightHigh < bound*85/100 || res.InFlightHigh > bound+slack {
		t.Errorf("in flight at most %d, want about rate x timeout = %d (up to %d more after a stall of %s)", res.InFlightHigh, bound, slack, res.WorstLag)
	}
	if res.OpenHigh <= res.InFlightHigh {
		t.Errorf("connections stay open through the late window: open %d, in flight %d", res.OpenHigh, res.InFlightHigh)
	}
}

// TestStarvedGeneratorInvalid: a generator that cannot keep its schedule
// (one processor shared with busy goroutines, thousands of requests due at
// once) must mark its run invalid rather than report the server.
func TestStarvedGeneratorInvalid(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a simulated incident")
	}
	a := crawlerIncident(t)
	plan, err := NewPlan(context.Background(), a.Loaded.Requests.Read, PlanOptions{From: rangeFrom, To: rangeTo, Speed: 2000,
		Findings: a.Findings, Site: incident.site, MaxRequests: 100000})
	if err != nil {
		t.Fatal(err)
	}
	target := hungListener(t)
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	stopSpin := make(chan struct{})
	var spinners sync.WaitGroup
	for range 8 {
		spinners.Add(1)
		go func() {
			defer spinners.Done()
			for x := 0; ; x++ {
				select {
				case <-stopSpin:
					return
				default:
				}
				for i := 0; i < 1e5; i++ {
					x ^= i
				}
			}
		}()
	}
	opt := Options{Target: target, Loopback: true, ClientTimeout: 200 * time.Millisecond, LateWindow: 50 * time.Millisecond, MaxLag: 100 * time.Millisecond}
	res, err := Run(context.Background(), plan, opt)
	close(stopSpin)
	spinners.Wait()
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(ReportInput{Plan: plan, Options: opt, Result: res})
	t.Logf("%d requests in %s on one processor: worst lag %.0f ms", len(plan.Shots), plan.Duration(), rep.Generator.WorstLagMS)
	if rep.Generator.Valid {
		t.Errorf("a starved generator (worst lag %.0f ms, bound 100 ms) must mark its run invalid", rep.Generator.WorstLagMS)
	}
	if rep.Generator.Invalid == "" {
		t.Errorf("an invalid run must say why (its reports print it at the top)")
	}
	js, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Schema    string `json:"schema"`
		Generator struct {
			Valid   bool    `json:"valid"`
			Invalid string  `json:"invalid_reason"`
			Lag     float64 `json:"worst_lag_ms"`
		} `json:"generator"`
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back.Schema != replayreport.Schema || back.Generator.Valid || back.Generator.Invalid == "" || back.Generator.Lag <= 100 {
		t.Errorf("replay.json must carry the verdict: %+v", back)
	}
}
