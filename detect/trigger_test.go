package detect

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/failure"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestContextReason: a trigger starts at most TriggerLead before the onset,
// no later than ConsequenceLag after clients began to be failed, and
// accounts for a material share of the PHP time added there; the boundaries
// are where the obvious answer (the earliest rise, or the biggest one inside
// the outage) goes wrong.
func TestContextReason(t *testing.T) {
	for _, tt := range []struct {
		name    string
		w       triggerWeight
		context string
	}{
		{"a crawl that took the workers minutes before", triggerWeight{lead: 2 * time.Minute, addedShare: 0.93, measured: true}, ""},
		{"a crawl that rose inside the incident", triggerWeight{lead: -3 * time.Minute, addedShare: 0.6, measured: true}, ""},
		{"a feed bot 25 minutes before with 0.2% of the PHP time", triggerWeight{lead: 25 * time.Minute, addedShare: 0.002, measured: true}, "0.2% of the PHP time added"},
		{"office-hours clients four hours before", triggerWeight{lead: 4 * time.Hour, addedShare: 0.5, measured: true}, "before the incident's onset"},
		{"just past the allowance", triggerWeight{lead: TriggerLead + time.Minute, addedShare: 1, measured: true}, "more than the 30 min"},
		{"PHP time not measured: judged by time alone", triggerWeight{lead: 10 * time.Minute}, ""},
		{"users retrying six minutes into the failing, with 30% of the PHP time added", triggerWeight{lead: -7 * time.Minute, failingFor: 6 * time.Minute, addedShare: 0.3, measured: true}, "consequence of the outage"},
		{"a crawl found a minute after the first failures (minutes by arrival)", triggerWeight{lead: -time.Minute, failingFor: time.Minute, addedShare: 0.8, measured: true}, ""},
		{"just past the lag", triggerWeight{lead: -3 * time.Minute, failingFor: ConsequenceLag + time.Minute, addedShare: 0.8, measured: true}, "after clients began to be failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.w.contextReason()
			if (tt.context == "") != (got == "") || !strings.Contains(got, tt.context) {
				t.Errorf("contextReason = %q, want one containing %q", got, tt.context)
			}
		})
	}
}

// TestMinorBotBeforeStall: a database stall in a pool cut from 32 to 16
// workers a quarter of an hour earlier, with a feed bot (0.2% of PHP time)
// that rose before it and a heavy scraper running steadily. Neither client is
// the trigger, and the bot's early start does not become the onset the change
// is judged against: the change made before the stall is linked, not
// dismissed as made after the onset.
func TestMinorBotBeforeStall(t *testing.T) {
	t.Parallel()
	res, truth := simulateBundle(t, simulate.Options{Scenario: "heavy-scraper-among-bots", Seed: 1})
	if truth.Trigger == nil || Kind(truth.Trigger.Kind) == KindCrawlerBurst {
		t.Fatalf("scenario truth changed: trigger %+v", truth.Trigger)
	}
	for _, f := range res.Findings {
		if f.Kind == KindCrawlerBurst && f.Role != RoleContext {
			t.Errorf("%s (%s) has role %q, want context: %s", f.ID, f.Fingerprint.UserAgent, f.Role, f.Summary)
		}
	}
	// The change made before the stall is linked: package configchange's
	// TestMinorBotBeforeStallLinksTheChange.
}

// TestCrawlerBurstLeadsIntoIncident: a crawler that walked the site at a low
// rate all night and burst into a 20-minute outage 13 hours later is the
// trigger from its burst, not from its first stray rise.
func TestCrawlerBurstLeadsIntoIncident(t *testing.T) {
	res, truth := simulateBundle(t, simulate.Options{Scenario: "long-window-blip", Seed: 1})
	c := first(res.Findings, KindCrawlerBurst)
	if c == nil || truth.Trigger == nil {
		t.Fatalf("no crawler finding (truth trigger %+v)", truth.Trigger)
	}
	if c.Role != RoleTrigger {
		t.Errorf("crawler role %q, want trigger: %s", c.Role, c.Summary)
	}
	if d := c.Start.Sub(mustTime(t, truth.Trigger.Onset)); d < -2*time.Minute || d > 2*time.Minute {
		t.Errorf("crawler onset %v, truth %s: more than 2 minutes apart", c.Start, truth.Trigger.Onset)
	}
}

// TestEarlyMinorBotIsContext: a feed bot rises 25 minutes before a stall
// (within the allowance) but does 0.1% of the PHP time the stall added: it is
// context, not the trigger, however first it came. A crawl of slow tools that
// rose two minutes before the same stall is the trigger.
func TestEarlyMinorBotIsContext(t *testing.T) {
	from, to := t0, t0.Add(4*time.Hour)
	stall := t0.Add(3 * time.Hour)
	bot := shape{ua: "FeedFetcher/2.1 (+https://feeds.example.org/bot)", lang: "", ips: fewIPs, status: 200, origin: sources.OriginUpstream, dur: 0.002, paths: []string{"/feed/atom"}}
	crawl := shape{ua: chrome121, lang: "zh-cn", loggedIn: sources.LoggedInNo, ips: spreadIPs, status: 200, origin: sources.OriginUpstream, dur: 4,
		paths: []string{"/w/index.php?title=X&action=history", "/w/Special:WhatLinksHere/X"}}
	for _, withCrawl := range []bool{false, true} {
		tr := NewTraffic(sources.Site{ClientTimeoutS: 10}, from, to)
		feed(tr, readers, from.Add(-3*time.Hour), 3*time.Hour+3*time.Hour, 6*60*20) // 20 a minute until the stall
		feed(tr, bot, from.Add(-3*time.Hour), 3*time.Hour+3*time.Hour-25*time.Minute, 5*60+35)
		feed(tr, bot, stall.Add(-25*time.Minute), 45*time.Minute, 45*80)
		wedged(tr, stall, 20*time.Minute, 20*20, 30) // the stall: every reader waits 30 s
		if withCrawl {
			feed(tr, crawl, stall.Add(-2*time.Minute), 25*time.Minute, 25*150)
		}
		ev := &Evidence{From: from, To: to, Traffic: tr, Loc: time.UTC}
		fs, check, err := crawlerDetector{}.Detect(context.Background(), ev, nil)
		if err != nil {
			t.Fatal(err)
		}
		roles := map[string]Role{}
		for _, f := range fs {
			roles[f.Cluster.UA] = f.Role
			if f.Cluster.UA != "Chrome" && FactMap(f.Facts)["php_added_share"] >= MaterialPHPShare {
				t.Errorf("the feed bot's php_added_share %v: want well under %v", FactMap(f.Facts)["php_added_share"], MaterialPHPShare)
			}
		}
		var botRole, crawlRole Role
		for ua, r := range roles {
			if ua == "Chrome" {
				crawlRole = r
			} else {
				botRole = r
			}
		}
		if botRole != RoleContext {
			t.Errorf("crawl %v: feed bot role %q, want context (findings %d, check %q)", withCrawl, botRole, len(fs), check.Reason)
		}
		if withCrawl && crawlRole != RoleTrigger {
			t.Errorf("the crawl that took the workers has role %q, want trigger", crawlRole)
		}
	}
}

// TestStrayFailureIsNotTheFailing: one request answered after its client
// left, six minutes before the outage (a stray slow page), is an edge of the
// failing stretch: the stretch starts there, as the truth's does. A crawl
// found rising three minutes after that one answer and three minutes before
// readers failed in numbers is the outage's trigger, not a consequence of a
// single failure nobody could react to; users retrying five minutes into the
// clear failing are still one (crawler-backlog-wedge seed 11 called its
// crawler a consequence of one slow request).
func TestStrayFailureIsNotTheFailing(t *testing.T) {
	from, to := t0, t0.Add(4*time.Hour)
	stall := t0.Add(3 * time.Hour)
	crawl := shape{ua: chrome121, lang: "zh-cn", loggedIn: sources.LoggedInNo, ips: spreadIPs, status: 200, origin: sources.OriginUpstream, dur: 4,
		paths: []string{"/w/index.php?title=X&action=history", "/w/Special:WhatLinksHere/X"}}
	for _, c := range []struct {
		rise time.Time
		want Role
	}{{stall.Add(-2 * time.Minute), RoleTrigger}, {stall.Add(5 * time.Minute), RoleContext}} {
		tr := NewTraffic(sources.Site{ClientTimeoutS: 10}, from, to)
		feed(tr, readers, from.Add(-3*time.Hour), 6*time.Hour, 6*60*20) // 20 a minute until the stall
		wedged(tr, stall.Add(-6*time.Minute), time.Second, 1, 30)       // the stray slow page
		wedged(tr, stall, 20*time.Minute, 20*20, 30)                    // readers fail in numbers
		feed(tr, crawl, c.rise, 25*time.Minute, 25*150)
		ev := &Evidence{From: from, To: to, Traffic: tr, Loc: time.UTC}
		inc := ev.incidents().WorstIncident()
		if inc == nil || !inc.Start.Equal(stall.Add(-6*time.Minute)) {
			t.Fatalf("incident %+v: want a stretch from the stray failure at %s", inc, stall.Add(-6*time.Minute))
		}
		fs, check, err := crawlerDetector{}.Detect(context.Background(), ev, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != 1 {
			t.Fatalf("crawl from %s: %d crawler findings, want 1: %s", c.rise, len(fs), check.Reason)
		}
		if fs[0].Role != c.want {
			t.Errorf("crawl from %s (failures clear from %s, one stray at %s): role %q, want %q: %s",
				c.rise, stall, stall.Add(-6*time.Minute), fs[0].Role, c.want, fs[0].Summary)
		}
	}
}

// TestRiseThroughCountedMinutes: a crawler walks the site at 40 requests a
// minute from 00:30 and bursts to 400 a minute at 02:55, into a failing
// stretch from 03:00. A full pull says it rose into the incident with its
// burst, at 02:55. A pushdown read its lines only from 02:20 on (its family
// not pulled), and the hour before the lead (01:30-02:30) is mostly minutes
// only counted. Reading them as quiet, the obvious answer, puts a rise
// from nothing at 02:30, the lead's edge. They held 60 requests a minute
// against the others' usual 20: the walk's 40 is there, and the burst at
// 02:55 stands, its start marked estimated.
func TestRiseThroughCountedMinutes(t *testing.T) {
	from, to := t0, t0.Add(4*time.Hour)
	site := sources.Site{ClientTimeoutS: 10}
	crawl := shape{ua: chrome121, lang: "zh-cn", loggedIn: sources.LoggedInNo, ips: spreadIPs, status: 200, origin: sources.OriginUpstream, dur: 4,
		paths: []string{"/w/index.php?title=X&action=history", "/w/Special:WhatLinksHere/X"}}
	countedFrom, countedTo := t0.Add(30*time.Minute), t0.Add(140*time.Minute)
	burst := t0.Add(175 * time.Minute)
	var lines requestLog
	feed(&lines, readers, from.Add(-time.Hour), 5*time.Hour, 5*60*20)
	feed(&lines, crawl, countedFrom, burst.Sub(countedFrom), int(burst.Sub(countedFrom).Minutes())*40)
	feed(&lines, crawl, burst, 20*time.Minute, 20*400)
	feed(&lines, down, t0.Add(3*time.Hour), 20*time.Minute, 20*200)
	build := func(pushdown bool) *Traffic {
		if !pushdown {
			return lines.traffic(site, from, to, nil)
		}
		return lines.traffic(site, from, to, func(r *sources.Request) bool { return !r.Time.Before(countedFrom) && r.Time.Before(countedTo) })
	}
	full, pushed := oneCrawler(t, build(false), from, to), oneCrawler(t, build(true), from, to)
	if !full.Start.Equal(burst) || len(full.Estimated) != 0 {
		t.Errorf("full pull: crawler starts %s (estimated %+v), want its burst at %s, measured", full.Start, full.Estimated, burst)
	}
	if !pushed.Start.Equal(full.Start) {
		t.Errorf("pushdown: crawler starts %s, full pull %s (counted minutes read as quiet put it about %s)", pushed.Start, full.Start, t0.Add(150*time.Minute))
	}
	if !slices.ContainsFunc(pushed.Estimated, func(e Estimate) bool { return slices.Contains(e.Figures, "start") }) {
		t.Errorf("pushdown: the start is not marked estimated: %+v", pushed.Estimated)
	}
}

// requestLog keeps the requests fed to it, to be read or counted.
type requestLog []sources.Request

func (l *requestLog) Observe(r *sources.Request) { *l = append(*l, *r) }

// traffic aggregates the log as a pushdown would: the requests counted
// says were only counted (per minute, status, origin and lateness, as
// Loki counts them), the others read. counted nil reads every request.
func (l requestLog) traffic(site sources.Site, from, to time.Time, counted func(*sources.Request) bool) *Traffic {
	tr := NewTraffic(site, from, to)
	rows := map[bundle.MinuteStatus]bundle.MinuteStatus{}
	for i := range l {
		r := &l[i]
		if counted == nil || !counted(r) {
			tr.Observe(r)
			continue
		}
		k := bundle.MinuteStatus{Minute: r.Time.Truncate(time.Minute), Status: r.Status, Origin: r.Origin, Late: failure.Late(r.Duration, site.ClientTimeoutS)}
		row := rows[k]
		if row.Requests == 0 {
			row = k
		}
		row.Requests++
		if r.Origin == sources.OriginUpstream {
			row.PHPSeconds += r.Duration
		}
		rows[k] = row
	}
	var out []bundle.MinuteStatus
	for _, row := range rows {
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Minute.Before(out[j].Minute) })
	tr.AddMinuteStatus(out)
	return tr
}

// oneCrawler runs crawler_burst over tr's window from..to with the hour
// before as baseline, and fails unless it finds exactly one crawler.
func oneCrawler(t *testing.T, tr *Traffic, from, to time.Time) *Finding {
	t.Helper()
	fs, check := crawlersOf(t, tr, from, to)
	if len(fs) != 1 {
		t.Fatalf("%d crawler findings, want 1: %s", len(fs), check.Reason)
	}
	return &fs[0]
}

// crawlersOf runs the crawler detector over [from, to) of tr, with the hour
// before as its baseline.
func crawlersOf(t *testing.T, tr *Traffic, from, to time.Time) ([]Finding, Check) {
	t.Helper()
	ev := &Evidence{From: from, To: to, BaselineFrom: from.Add(-time.Hour), BaselineTo: from, Traffic: tr, Loc: time.UTC}
	fs, check, err := crawlerDetector{}.Detect(context.Background(), ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fs, check
}

// observeInOrder observes rs in time order, as the access log holds them.
func observeInOrder(tr *Traffic, rs []sources.Request) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Time.Before(rs[j].Time) })
	for i := range rs {
		tr.Observe(&rs[i])
	}
}

// nthAddr is the n-th of many distinct addresses in 10.0.0.0/8.
func nthAddr(n int) netip.Addr {
	return netip.MustParseAddr(fmt.Sprintf("10.%d.%d.%d", n/62500, n/250%250, n%250+1))
}
