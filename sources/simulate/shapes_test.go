package simulate

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/valyala/fastjson"
)

var update = flag.Bool("update", false, "rewrite testdata/evidence.sha256 from this build")

// evidenceLine is what the shape checks read of one access-log line.
type evidenceLine struct {
	ts, dur  float64 // log time and duration, seconds
	status   int
	uri, ua  string
	ip       string
	php      bool // answered by PHP (X-Powered-By)
	loggedIn bool
	method   string
}

func (l evidenceLine) arrival() float64 { return l.ts - l.dur }

// evidenceHeaders are the headers an evidenceLine reads, of the request
// and of the response.
var evidenceHeaders = map[string]bool{"User-Agent": true, "Cookie": true, "X-Powered-By": true}

// readEvidence reads the access log's lines as evidenceLines, each decoded
// whole (decodeLineKeeping, which checks every field but copies only the
// evidenceHeaders) and failing on the first that is not a line; lines is
// how many the run wrote (its Summary's), the slice's size.
func readEvidence(t *testing.T, dir, loggedInCookie string, lines int64) []evidenceLine {
	t.Helper()
	path := filepath.Join(dir, "access/access.log.gz")
	out := make([]evidenceLine, 0, lines)
	var p fastjson.Parser
	n := 0
	readGz(t, path, func(raw []byte) {
		n++
		var l line
		if err := decodeLineKeeping(&p, raw, &l, evidenceHeaders); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		if l.TS == nil || l.Duration == nil || l.Request == nil {
			t.Fatalf("%s:%d: no ts, duration or request: %s", path, n, raw)
		}
		_, php := l.RespHeaders["X-Powered-By"]
		e := evidenceLine{ts: float64(*l.TS), dur: *l.Duration, status: l.Status, uri: l.Request.URI, ip: l.Request.RemoteIP,
			method: l.Request.Method, php: php}
		if ua := l.Request.Headers["User-Agent"]; len(ua) == 1 {
			e.ua = ua[0]
		}
		if c := l.Request.Headers["Cookie"]; len(c) == 1 && strings.Contains(c[0], loggedInCookie) {
			e.loggedIn = true
		}
		out = append(out, e)
	})
	return out
}

func parseRFC(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return v
}

// stretchesFromLog recomputes the failing stretches from the access log
// alone, as an analysis would: by arrival minute, a 5xx, a 429 or an answer
// after the bundle's client timeout, beyond what the log's minutes before
// the window failed.
func stretchesFromLog(lines []evidenceLine, from, to time.Time, clientTimeoutS float64) []TruthStretch {
	base := from.Unix() / 60
	for _, l := range lines {
		base = min(base, int64(math.Floor(l.arrival()/60)))
	}
	n := int(to.Unix()/60 - base)
	per, logged := make([]int32, n), make([]int32, n)
	for _, l := range lines {
		if m := int(int64(math.Floor(l.arrival()/60)) - base); m >= 0 && m < n {
			logged[m]++
		}
		if l.status >= 500 || l.status == 429 || l.dur > clientTimeoutS {
			if m := int(int64(math.Floor(l.arrival()/60)) - base); m >= 0 && m < n {
				per[m]++
			}
		}
	}
	var out []TruthStretch
	for _, fs := range failingStretches(per, logged, int(from.Unix()/60-base), n) {
		out = append(out, TruthStretch{From: rfc((base + fs[0]) * 60 * second), To: rfc((base + fs[1]) * 60 * second), Failed: fs[2]})
	}
	return out
}

// TestShapesTruthMatchesEvidence: each issue-13 scenario writes a bundle
// whose truth.json agrees with its own evidence (the failing stretches are
// where the access log shows 5xx and late answers), and whose evidence has
// the shape the scenario is about. A change to the engine that moves an
// outage, merges the blip into the outage, leaks a 5xx into the silent wedge
// or lets a MediaWiki path into the WordPress site fails here.
func TestShapesTruthMatchesEvidence(t *testing.T) {
	checks := map[string]func(t *testing.T, dir string, tr Truth, m *bundle.Manifest, lines []evidenceLine){
		"wordpress-search-crawl": checkWordPress,
		"slow-database-office":   checkSlowDatabaseOffice,
		"idle-pinning":           checkIdlePinning,
		"long-window-blip":       checkLongWindowBlip,
		"heavy-scraper-among-bots": func(t *testing.T, dir string, tr Truth, m *bundle.Manifest, lines []evidenceLine) {
			checkHeavyScraper(t, tr, m, lines)
		},
		"wedge-little-baseline":   checkWedgeLittleBaseline,
		"slow-dependency-reloads": checkReloads,
	}
	for name, check := range checks {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sum := run(t, Options{Scenario: name, Seed: 2, BaselineHours: 1, StoredGzip: true})
			b, err := bundle.Open(sum.Out)
			if err != nil {
				t.Fatal(err)
			}
			tr := readTruth(t, sum.Out)
			m := b.Manifest
			lines := readEvidence(t, sum.Out, m.Site.LoggedInCookie, sum.Lines)
			got := stretchesFromLog(lines, m.Window.From, m.Window.To, m.Site.ClientTimeoutS)
			if !slices.Equal(got, tr.FailingStretches) {
				t.Errorf("failing stretches: truth %+v, access log %+v", tr.FailingStretches, got)
			}
			if len(tr.FailingStretches) == 0 {
				t.Fatal("no failing stretch: every issue-13 scenario is an incident")
			}
			if tr.Trigger == nil || tr.Trigger.Onset == "" || tr.Trigger.Onset != tr.Phases.Onset {
				t.Errorf("trigger %+v, onset %q", tr.Trigger, tr.Phases.Onset)
			}
			// The worst stretch begins after the cause's onset, and soon.
			worst := tr.FailingStretches[0]
			for _, s := range tr.FailingStretches {
				if s.Failed > worst.Failed {
					worst = s
				}
			}
			onset, begin := parseRFC(t, tr.Phases.Onset), parseRFC(t, worst.From)
			if d := begin.Sub(onset); d < -time.Minute || d > 15*time.Minute {
				t.Errorf("the worst stretch begins %s after the onset %s", d, tr.Phases.Onset)
			}
			check(t, sum.Out, tr, &m, lines)
		})
	}
}

func checkWordPress(t *testing.T, dir string, tr Truth, m *bundle.Manifest, lines []evidenceLine) {
	c := tr.Crawler
	if c == nil || c.DistinctPrefixes64 == nil {
		t.Fatalf("want an IPv6 crawler, got %+v", c)
	}
	var crawler, crawlerPHP, posts, postsCached int
	ips, p64 := map[string]bool{}, map[string]bool{}
	for _, l := range lines {
		for _, mw := range []string{"/w/", "index.php?title=", "Special:", "/api.php"} {
			if strings.Contains(l.uri, mw) {
				t.Fatalf("a MediaWiki path on the WordPress site: %s", l.uri)
			}
		}
		if l.ua == c.Fingerprint["user_agent"] {
			crawler++
			if !strings.HasPrefix(l.uri, "/?s=") && !strings.HasPrefix(l.uri, "/wp-json/wp/v2/search?search=") &&
				!strings.Contains(l.uri, "?replytocom=") {
				t.Fatalf("crawler request outside search and reply links: %s", l.uri)
			}
			if l.status == 200 && l.php {
				crawlerPHP++
			}
			a, err := netip.ParseAddr(l.ip)
			if err != nil || !a.Is6() {
				t.Fatalf("crawler address %q is not IPv6", l.ip)
			}
			ips[l.ip] = true
			p, _ := a.Prefix(64)
			p64[p.String()] = true
			continue
		}
		if l.method == "GET" && strings.HasPrefix(l.uri, "/2026/10/") && !strings.Contains(l.uri, "?") && !l.loggedIn && l.status == 200 {
			posts++
			if !l.php {
				postsCached++
			}
		}
	}
	if crawler < 10000 || len(ips) < 2000 || len(p64) >= len(ips) || len(p64) < 1000 {
		t.Errorf("crawler: %d requests from %d addresses in %d /64s; want thousands of addresses sharing some /64s", crawler, len(ips), len(p64))
	}
	if int64(len(ips)) != c.DistinctIPs || int64(len(p64)) != *c.DistinctPrefixes64 || int64(len(p64)) != c.Clients {
		t.Errorf("truth counts %d addresses in %d /64s, %d clients; the log %d in %d", c.DistinctIPs, *c.DistinctPrefixes64, c.Clients, len(ips), len(p64))
	}
	if crawlerPHP < crawler/4 {
		t.Errorf("only %d of %d crawler requests reached PHP: its links must be uncached", crawlerPHP, crawler)
	}
	if posts < 1000 || postsCached < posts*8/10 {
		t.Errorf("logged-out post views: %d, %d from the cache; want most from the cache", posts, postsCached)
	}
	if m.Site.LoggedInCookie != "wordpress_logged_in_" {
		t.Errorf("logged-in cookie %q", m.Site.LoggedInCookie)
	}
	conf, err := os.ReadFile(filepath.Join(dir, "changes/config/Caddyfile"))
	if err != nil || !bytes.Contains(conf, []byte("/var/www/wordpress")) || bytes.Contains(conf, []byte("mediawiki")) {
		t.Errorf("Caddyfile is not WordPress's: %v\n%s", err, conf)
	}
}

// perWindow counts lines matching keep by arrival in [from, to).
func perWindow(lines []evidenceLine, from, to time.Time, keep func(evidenceLine) bool) int {
	n := 0
	for _, l := range lines {
		if a := l.arrival(); a >= float64(from.Unix()) && a < float64(to.Unix()) && keep(l) {
			n++
		}
	}
	return n
}

func checkSlowDatabaseOffice(t *testing.T, dir string, tr Truth, m *bundle.Manifest, lines []evidenceLine) {
	day := at(2026, 10, 21, 0, 0, 0)
	hm := func(h, mi int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute) }
	for _, c := range tr.Clients {
		ua := c.UserAgent
		before := perWindow(lines, hm(7, 30), hm(8, 50), func(l evidenceLine) bool { return l.ua == ua })
		after := perWindow(lines, hm(10, 0), hm(11, 20), func(l evidenceLine) bool { return l.ua == ua })
		if c.Role != "context" || after < 4*before || after < 100 {
			t.Errorf("%s: %d requests 07:30-08:50, %d 10:00-11:20: want a rise at office hours, as context", c.Name, before, after)
		}
	}
	// Arrivals do not rise at the onset (readers wait for their pages, so
	// theirs fall) while PHP's time per request does.
	all := func(evidenceLine) bool { return true }
	b, d := perWindow(lines, hm(12, 40), hm(13, 10), all), perWindow(lines, hm(13, 10), hm(13, 40), all)
	if float64(d) > 1.1*float64(b) {
		t.Errorf("arrivals %d before the stall, %d during: want no rise", b, d)
	}
	slowBefore := medianPHP(lines, hm(12, 40), hm(13, 10))
	slowDuring := medianPHP(lines, hm(13, 15), hm(13, 40))
	if slowDuring < 5*slowBefore {
		t.Errorf("PHP median duration %.2fs before, %.2fs during: want every request slower", slowBefore, slowDuring)
	}
	if tr.Pool.CPUPeakPct > 30 {
		t.Errorf("CPU peak %.0f%%: a slow database leaves the CPU idle", tr.Pool.CPUPeakPct)
	}
}

// checkReloads: arrivals, addresses and fingerprints are flat until the
// database slows, and rise only once pages fail, by reloads: some from
// fresh addresses, some from browsers the address had not used.
func checkReloads(t *testing.T, dir string, tr Truth, m *bundle.Manifest, lines []evidenceLine) {
	onset := parseRFC(t, tr.Phases.Onset)
	all := func(evidenceLine) bool { return true }
	before := perWindow(lines, onset.Add(-20*time.Minute), onset, all)
	during := perWindow(lines, onset.Add(2*time.Minute), onset.Add(22*time.Minute), all)
	if float64(during) < 1.5*float64(before) {
		t.Errorf("arrivals %d in the 20 min before the onset, %d in 20 min after it: want the reloads to add half again", before, during)
	}
	addresses := func(from, to time.Time) (ips, agents int) {
		seenIP, seenUA := map[string]bool{}, map[string]bool{}
		for _, l := range lines {
			if a := l.arrival(); a >= float64(from.Unix()) && a < float64(to.Unix()) {
				seenIP[l.ip], seenUA[l.ip+" "+l.ua] = true, true
			}
		}
		return len(seenIP), len(seenUA)
	}
	ip0, ua0 := addresses(onset.Add(-20*time.Minute), onset)
	ip1, ua1 := addresses(onset.Add(2*time.Minute), onset.Add(22*time.Minute))
	if ip1 <= ip0 || ua1-ip1 <= ua0-ip0 {
		t.Errorf("addresses %d -> %d, address-browser pairs beyond one per address %d -> %d: want both to rise with the reloads",
			ip0, ip1, ua0-ip0, ua1-ip1)
	}
	if slowBefore, slowDuring := medianPHP(lines, onset.Add(-20*time.Minute), onset), medianPHP(lines, onset, onset.Add(20*time.Minute)); slowDuring < 5*slowBefore {
		t.Errorf("PHP median duration %.2fs before, %.2fs during: want every request slower", slowBefore, slowDuring)
	}
	if tr.Trigger == nil || tr.Trigger.Kind != "service_time_regression" {
		t.Errorf("trigger %+v: the slow database, not the reloads", tr.Trigger)
	}
}

func medianPHP(lines []evidenceLine, from, to time.Time) float64 {
	var d []float64
	for _, l := range lines {
		if a := l.arrival(); l.php && l.status == 200 && a >= float64(from.Unix()) && a < float64(to.Unix()) {
			d = append(d, l.dur)
		}
	}
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}

func checkIdlePinning(t *testing.T, dir string, tr Truth, m *bundle.Manifest, lines []evidenceLine) {
	if tr.Pool.CPUPeakPct > 30 || tr.Phases.Saturation == "" || tr.Pool.QueuePeak < tr.Pool.Backlog {
		t.Errorf("want every worker busy with the CPU idle and the queue full: cpu %.0f%%, saturation %q, queue %d of %d",
			tr.Pool.CPUPeakPct, tr.Phases.Saturation, tr.Pool.QueuePeak, tr.Pool.Backlog)
	}
	// Completions (PHP's answers, by log time) collapse during the stall.
	done := func(from, to time.Time) int {
		n := 0
		for _, l := range lines {
			if l.php && l.ts >= float64(from.Unix()) && l.ts < float64(to.Unix()) {
				n++
			}
		}
		return n
	}
	before, during := done(at(2026, 10, 27, 10, 50, 0), at(2026, 10, 27, 11, 30, 0)), done(at(2026, 10, 27, 11, 35, 0), at(2026, 10, 27, 11, 50, 0))
	if float64(during)/15 > 0.2*float64(before)/40 {
		t.Errorf("PHP answered %d in the 40 min before, %d in the 15 min of the stall: want a collapse", before, during)
	}
	for _, l := range lines {
		if l.uri == "/" && l.ua == "" {
			t.Fatal("an idle pinning connection reached Caddy's access log")
		}
	}
	if len(tr.Clients) != 1 || tr.Clients[0].Role != "context" {
		t.Errorf("clients %+v: want the search bot as context", tr.Clients)
	}
}

func checkLongWindowBlip(t *testing.T, dir string, tr Truth, m *bundle.Manifest, lines []evidenceLine) {
	fs := tr.FailingStretches
	if len(fs) != 2 {
		t.Fatalf("want two separate stretches (a restart blip, then the outage), got %+v", fs)
	}
	blip, outage := fs[0], fs[1]
	restart := at(2026, 10, 29, 14, 48, 0)
	if d := parseRFC(t, blip.From).Sub(restart); d < -time.Minute || d > time.Minute || blip.Failed > 50 {
		t.Errorf("blip %+v: want a few failures at the 14:48 restart", blip)
	}
	gap := parseRFC(t, outage.From).Sub(parseRFC(t, blip.To))
	long := parseRFC(t, outage.To).Sub(parseRFC(t, outage.From))
	if gap < 2*time.Hour || long < 15*time.Minute || long > 30*time.Minute || outage.Failed < 1000 {
		t.Errorf("outage %+v: want about 20 minutes, 2.5 h after the blip (gap %s, length %s)", outage, gap, long)
	}
	if tr.ConfigChange != nil {
		t.Errorf("the PHP restart caused the blip, not the outage: config change %+v", tr.ConfigChange)
	}
}

func checkHeavyScraper(t *testing.T, tr Truth, m *bundle.Manifest, lines []evidenceLine) {
	var feed, scraper *TruthClient
	for i := range tr.Clients {
		switch tr.Clients[i].Name {
		case "feed-bot":
			feed = &tr.Clients[i]
		case "heavy-scraper":
			scraper = &tr.Clients[i]
		}
	}
	if feed == nil || scraper == nil || feed.Role != "context" || scraper.Role != "context" {
		t.Fatalf("clients %+v", tr.Clients)
	}
	if feed.PHPTimeShare < 0.0008 || feed.PHPTimeShare > 0.005 {
		t.Errorf("feed bot PHP time share %.4f, want about 0.2%%", feed.PHPTimeShare)
	}
	day := at(2026, 11, 10, 0, 0, 0)
	is := func(ua string) func(evidenceLine) bool { return func(l evidenceLine) bool { return l.ua == ua } }
	feedBefore := perWindow(lines, day.Add(13*time.Hour), day.Add(13*time.Hour+35*time.Minute), is(feed.UserAgent))
	feedAfter := perWindow(lines, day.Add(13*time.Hour+37*time.Minute), day.Add(14*time.Hour), is(feed.UserAgent))
	if float64(feedAfter)/23 < 3*float64(feedBefore+1)/35 {
		t.Errorf("feed bot: %d requests 13:00-13:35, %d 13:37-14:00: want a rise 25 minutes before the stall", feedBefore, feedAfter)
	}
	addrs := map[string]bool{}
	for _, l := range lines {
		if l.ua == scraper.UserAgent {
			addrs[l.ip] = true
		}
	}
	if len(addrs) != 1 || scraper.PHPTimeShare < 0.3 {
		t.Errorf("heavy scraper: %d addresses, %.2f of PHP time: want one heavy address", len(addrs), scraper.PHPTimeShare)
	}
	cc := tr.ConfigChange
	if cc == nil || cc.Key != "pm.max_children" || cc.Old != "32" || cc.New != "16" || m.Site.Workers != 16 {
		t.Errorf("enabling change %+v, workers %d: want pm.max_children 32 -> 16", cc, m.Site.Workers)
	}
}

// TestHeavyScraperChangeEnables: the truth says pm.max_children 32 -> 16
// enabled the outage; without that commit the same database stall fails
// (almost) nobody.
func TestHeavyScraperChangeEnables(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs of the scenario")
	}
	registry["heavy-scraper-among-bots-32"] = func() Scenario {
		sc := heavyScraperAmongBots()
		sc.Name = "heavy-scraper-among-bots-32"
		sc.commits = sc.commits[:len(sc.commits)-1]
		return sc
	}
	defer delete(registry, "heavy-scraper-among-bots-32")
	failed := func(tr Truth) int64 {
		var n int64
		for _, s := range tr.FailingStretches {
			n += s.Failed
		}
		return n
	}
	with := run(t, Options{Scenario: "heavy-scraper-among-bots", Seed: 3, BaselineHours: 0.5, StoredGzip: true}).Truth
	without := run(t, Options{Scenario: "heavy-scraper-among-bots-32", Seed: 3, BaselineHours: 0.5, StoredGzip: true}).Truth
	if failed(with) < 500 || failed(without)*20 > failed(with) || without.Phases.Saturation != "" {
		t.Errorf("with the change %d failed, without it %d (saturation %q): the change must be what let the stall fail clients",
			failed(with), failed(without), without.Phases.Saturation)
	}
}

func checkWedgeLittleBaseline(t *testing.T, dir string, tr Truth, m *bundle.Manifest, lines []evidenceLine) {
	late := 0
	for _, l := range lines {
		if l.status >= 500 {
			t.Fatalf("a %d in the silent wedge", l.status)
		}
		if l.dur > m.Site.ClientTimeoutS {
			late++
		}
	}
	if late < 1000 {
		t.Errorf("%d answers after the clients' timeout, want thousands", late)
	}
	first := lines[0].ts
	for _, l := range lines {
		first = math.Min(first, l.arrival())
	}
	if first < float64(m.Window.From.Unix()) || m.Baseline != nil {
		t.Errorf("evidence from %v, manifest baseline %+v: want nothing before the window", first, m.Baseline)
	}
	if d := parseRFC(t, tr.Phases.Onset).Sub(m.Window.From); d != 20*time.Minute {
		t.Errorf("the crawl starts %s into the bundle, want 20 minutes", d)
	}
}

// TestExistingScenariosUnchanged pins the evidence every scenario that
// predates issue 13 writes at seed 1 (access log, Caddy and php-fpm logs,
// metrics, changes.yaml, truth-requests.csv, decompressed, and the config
// repository's HEAD): new engine features must stay opt-in. truth.json is
// left out on purpose: the ground truth may gain fields. Run with -update
// after a deliberate change of the model.
func TestExistingScenariosUnchanged(t *testing.T) {
	golden := filepath.Join("testdata", "evidence.sha256")
	names := []string{"crawler-backlog", "crawler-backlog-readtimeout", "crawler-backlog-fixed", "crawler-backlog-wedge",
		"crawler-backlog-cap64", "flash-crowd", "slow-database"}
	got := make([]string, len(names))
	t.Run("runs", func(t *testing.T) {
		for i, name := range names {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				sum := seedOne(t, name)
				got[i] = name + " " + evidenceHash(t, sum.Out)
			})
		}
	})
	text := strings.Join(got, "\n") + "\n"
	if *update {
		if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != text {
		t.Errorf("evidence of existing scenarios changed:\n got:\n%s want:\n%s", text, want)
	}
}

func evidenceHash(t *testing.T, dir string) string {
	h := sha256.New()
	for _, f := range []string{"access/access.log.gz", "logs/caddy.log.gz", "metrics/phpfpm.om.gz", "metrics/caddy.om.gz",
		"metrics/cpu.om.gz", "metrics/node.om.gz", "truth-requests.csv.gz", "logs/php-fpm.log", "changes/changes.yaml"} {
		fh, err := os.Open(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = fh
		if strings.HasSuffix(f, ".gz") {
			zr, err := gzip.NewReader(fh)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			r = zr
		}
		fmt.Fprintf(h, "== %s\n", f)
		if _, err := io.Copy(h, r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		fh.Close()
	}
	head, err := exec.Command("git", "-C", filepath.Join(dir, "changes/config"), "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	h.Write(head)
	return hex.EncodeToString(h.Sum(nil))[:32]
}
