package configchange

import (
	"bufio"
	"context"
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/changes"
	"github.com/aftermath-forensics/aftermath/sources/configrepo"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

var updateConfigChange = flag.Bool("update-configchange", false, "rewrite detect/configchange/testdata/configchange golden files")

var ccKST = time.FixedZone("KST", 9*3600)

func ccAt(day, hour, min int) time.Time { return time.Date(2026, 10, day, hour, min, 0, 0, ccKST) }

// The reference incident (postmortem-2026-10-03): 16 workers at 0.3 s per
// request, a 10 s effective health timeout, onset at 02:26; the queue passed
// 511 at 02:23 and reached its cap of 4,096 at 02:30.
var ccOnset = ccAt(3, 2, 26)

func ccQueue(points ...any) []QueuePoint {
	var q []QueuePoint
	for i := 0; i < len(points); i += 2 {
		q = append(q, QueuePoint{T: points[i].(time.Time), Depth: float64(points[i+1].(int))})
	}
	return q
}

var ccRefQueue = ccQueue(
	ccAt(3, 2, 10), 0, ccAt(3, 2, 15), 3, ccAt(3, 2, 20), 120, ccAt(3, 2, 22), 400,
	ccAt(3, 2, 23), 690, ccAt(3, 2, 24), 1785, ccAt(3, 2, 27), 3300, ccAt(3, 2, 30), 4096,
	ccAt(3, 2, 40), 4096, ccAt(3, 3, 10), 200,
)

// ccFixedQueue is crawler-backlog-fixed: the backlog of 64 fills and overflows.
var ccFixedQueue = ccQueue(ccAt(3, 2, 10), 0, ccAt(3, 2, 20), 40, ccAt(3, 2, 24), 64, ccAt(3, 2, 40), 64, ccAt(3, 3, 10), 3)

// ccQuietQueue never passed 511.
var ccQuietQueue = ccQueue(ccAt(3, 2, 10), 0, ccAt(3, 2, 20), 120, ccAt(3, 2, 25), 300, ccAt(3, 3, 0), 10)

func ccFacts(queue []QueuePoint) QueueFacts {
	return QueueFacts{Workers: 16, ServiceTimeS: 0.3, HealthTimeoutS: 10, Onset: ccOnset, Queue: queue, Loc: ccKST}
}

func ccFindings(kinds ...detect.Kind) []detect.Finding {
	var fs []detect.Finding
	for _, k := range kinds {
		fs = append(fs, detect.Finding{Kind: k, Start: ccOnset, End: ccOnset.Add(44 * time.Minute)})
	}
	return fs
}

var ccIncidentKinds = []detect.Kind{detect.KindCrawlerBurst, detect.KindWorkerSaturation, detect.KindListenQueueOverflow, detect.KindHealthcheckStarved,
	detect.KindUpstreamErrors, detect.KindClientAbandonedWork}

const ccCommit = "9d78ccbea301e57b510ff3f93c1312f5e6a9a843"

var (
	ccBacklogUp = sources.Change{Time: ccAt(2, 23, 48), Source: "git", Ref: ccCommit, File: "php/8.3/fpm/pool.d/www.conf",
		Key: "listen.backlog", Old: "511", New: "4096", Note: "Bump PHP to 8.3", Author: "ops"}
	ccCSS = sources.Change{Time: ccAt(2, 15, 2), Source: "git", Ref: "0c55aa1f00d1e0d1e0d1e0d1e0d1e0d1e0d1e0d1",
		File: "skins/site.css", Note: "Darker links"}
	ccPassword = sources.Change{Time: ccAt(1, 10, 0), Source: "git", Ref: "7e57c0de7e57c0de7e57c0de7e57c0de7e57c0de",
		File: "secrets.env", Key: "env.DB_PASSWORD", Old: "REDACTED", New: "REDACTED", Note: "Rotate the database password"}
	ccReadme = sources.Change{Time: ccAt(2, 9, 0), Source: "git", Ref: "aaaabbbbccccddddeeeeffff0000111122223333",
		File: "README.md", Note: "Docs"}
	// The rate-limit matcher edit of 30 September: it changed what link_walk
	// matches, so it may let the crawler through; weaker than the backlog.
	ccZoneMatch = sources.Change{Time: ccAt(30, 11, 0).AddDate(0, -1, 0), Source: "git", Ref: "1111222233334444555566667777888899990000",
		File: "Caddyfile", Key: "rate_limit.zone.link_walk.match.query", Old: "", New: "title=Special:WhatLinksHere*"}
)

func ccWith(c sources.Change, f func(*sources.Change)) sources.Change { f(&c); return c }

func TestRankChanges(t *testing.T) {
	tests := []struct {
		name     string
		changes  []sources.Change
		findings []detect.Finding
		facts    QueueFacts
		// want: the key and role of each finding in rank order.
		want       []string
		outcome    detect.Outcome
		reasonHas  []string
		summaryHas []string // of the first finding
		facts0     map[string]float64
		absent     []string // facts of the first finding that must not be stated
		// summaryLacks are words the first finding's summary must not say.
		summaryLacks []string
	}{
		{
			name:     "reference: the backlog ranks first with its arithmetic",
			changes:  []sources.Change{ccPassword, ccReadme, ccCSS, ccBacklogUp, ccZoneMatch},
			findings: ccFindings(ccIncidentKinds...),
			// A clients' timeout is known too: the health timeout is the
			// limit, and the only one stated.
			facts:   func() QueueFacts { q := ccFacts(ccRefQueue); q.ClientTimeoutS = 30; return q }(),
			want:    []string{"listen.backlog enabler", "rate_limit.zone.link_walk.match.query candidate"},
			outcome: detect.OutcomeFound,
			reasonHas: []string{"linked: listen.backlog 511 -> 4096 (commit 9d78ccb", "skins/site.css (commit 0c55aa1): a file change",
				"env.DB_PASSWORD REDACTED -> REDACTED (commit 7e57c0d): no known failure mechanism", "README.md"},
			summaryHas: []string{
				"listen.backlog 511 -> 4096 (commit 9d78ccb, 23:48 the day before).",
				"With 16 workers at 0.3 s per request, a full queue now holds 77 s of work against a 10 s health timeout (it held 9.6 s before)",
				"the queue passed 511 at 02:23 and reached 4,096 at 02:30",
				"healthcheck_starved, client_abandoned_work",
			},
			facts0: map[string]float64{"old_value": 511, "new_value": 4096, "wait_before_s": 9.58, "wait_after_s": 76.8,
				"health_timeout_s": 10, "queue_passed_old_cap": 1, "hours_before_onset": 2.63, "risk_direction": 1, "linked": 1},
			absent: []string{"client_timeout_s"},
		},
		{
			// A change log written by a person: "4,096" is the same 4,096 a
			// pool file writes, with the same arithmetic and facts.
			name:       "a value grouped by thousands reads as the number",
			changes:    []sources.Change{ccWith(ccBacklogUp, func(c *sources.Change) { c.New = "4,096" })},
			findings:   ccFindings(ccIncidentKinds...),
			facts:      ccFacts(ccRefQueue),
			want:       []string{"listen.backlog enabler"},
			outcome:    detect.OutcomeFound,
			summaryHas: []string{"a full queue now holds 77 s of work against a 10 s health timeout (it held 9.6 s before)", "reached 4,096 at 02:30"},
			facts0:     map[string]float64{"old_value": 511, "new_value": 4096, "wait_after_s": 76.8, "risk_direction": 1},
		},
		{
			// php-fpm refuses "4k" in a pool file: reading it as 4,096 (or
			// 4,000) would blame the change with arithmetic on a guess.
			name:       "a unit on a count is no number: no arithmetic, direction unknown",
			changes:    []sources.Change{ccWith(ccBacklogUp, func(c *sources.Change) { c.New = "4k" })},
			findings:   ccFindings(ccIncidentKinds...),
			facts:      ccFacts(ccRefQueue),
			want:       []string{"listen.backlog candidate"},
			outcome:    detect.OutcomeFound,
			summaryHas: []string{"The values are not numbers: no arithmetic.", "Which way this change moved the risk is not known"},
			facts0:     map[string]float64{"old_value": 511, "risk_direction": 0},
			absent:     []string{"new_value", "wait_after_s"},
		},
		{
			// No timeout can fail a queued check (the silent wedge): the wait
			// is held against the clients' timeout, and the facts say so;
			// no health timeout of 0 is made up.
			name:       "no health timeout: the client timeout is the limit, and stated as such",
			changes:    []sources.Change{ccBacklogUp},
			findings:   ccFindings(ccIncidentKinds...),
			facts:      QueueFacts{Workers: 16, ServiceTimeS: 0.3, ClientTimeoutS: 10, Onset: ccOnset, Queue: ccRefQueue, Loc: ccKST},
			want:       []string{"listen.backlog enabler"},
			outcome:    detect.OutcomeFound,
			summaryHas: []string{"a full queue now holds 77 s of work against a 10 s client timeout (it held 9.6 s before)"},
			facts0:     map[string]float64{"client_timeout_s": 10, "wait_after_s": 76.8},
			absent:     []string{"health_timeout_s"},
		},
		{
			name:       "no timeout known at all: no limit is stated",
			changes:    []sources.Change{ccBacklogUp},
			findings:   ccFindings(ccIncidentKinds...),
			facts:      QueueFacts{Workers: 16, ServiceTimeS: 0.3, Onset: ccOnset, Queue: ccRefQueue, Loc: ccKST},
			want:       []string{"listen.backlog enabler"},
			outcome:    detect.OutcomeFound,
			summaryHas: []string{"a full queue now holds 77 s of work (it held 9.6 s before)"},
			facts0:     map[string]float64{"wait_before_s": 9.58, "wait_after_s": 76.8},
			absent:     []string{"health_timeout_s", "client_timeout_s"},
		},
		{
			name:      "fixed: 4096 -> 64 lowers the risk",
			changes:   []sources.Change{ccWith(ccBacklogUp, func(c *sources.Change) { c.Old, c.New, c.Note = "4096", "64", "Cap the queue" }), ccCSS},
			findings:  ccFindings(detect.KindCrawlerBurst, detect.KindWorkerSaturation, detect.KindListenQueueOverflow, detect.KindUpstreamErrors),
			facts:     ccFacts(ccFixedQueue),
			want:      []string{"listen.backlog mitigation"},
			outcome:   detect.OutcomeFound,
			reasonHas: []string{"no change explains the incident", "lowers the risk: listen.backlog 4096 -> 64"},
			summaryHas: []string{"lowers the risk", "a full queue now holds 1.2 s of work against a 10 s health timeout (it held 77 s before)", "not an enabler",
				"The health check can no longer starve behind a full queue"},
			facts0: map[string]float64{"risk_direction": -1, "linked": 0, "wait_after_s": 1.2},
		},
		{
			// No timeout applies to a queued check: the fix's claim is about
			// the clients. A full queue of 64 at 3.2 s a request still holds
			// 13 s, past their 10 s: "the health check can no longer starve"
			// would be the obvious, wrong sentence.
			name:     "fixed against the clients' timeout: clients at the back still give up",
			changes:  []sources.Change{ccWith(ccBacklogUp, func(c *sources.Change) { c.Old, c.New, c.Note = "4096", "64", "Cap the queue" })},
			findings: ccFindings(detect.KindCrawlerBurst, detect.KindWorkerSaturation, detect.KindListenQueueOverflow, detect.KindUpstreamErrors),
			facts:    QueueFacts{Workers: 16, ServiceTimeS: 3.217, ClientTimeoutS: 10, Onset: ccOnset, Queue: ccFixedQueue, Loc: ccKST},
			want:     []string{"listen.backlog mitigation"},
			outcome:  detect.OutcomeFound,
			summaryHas: []string{"a full queue now holds 13 s of work against a 10 s client timeout",
				"A full queue still outlasts the clients' 10 s timeout, so clients at its back still give up before PHP answers; only overflow past 64 now fails fast at the proxy."},
			summaryLacks: []string{"health check"},
			facts0:       map[string]float64{"client_timeout_s": 10, "wait_after_s": 12.87},
			absent:       []string{"health_timeout_s"},
		},
		{
			name:         "fixed within the clients' timeout",
			changes:      []sources.Change{ccWith(ccBacklogUp, func(c *sources.Change) { c.Old, c.New, c.Note = "4096", "64", "Cap the queue" })},
			findings:     ccFindings(detect.KindCrawlerBurst, detect.KindWorkerSaturation, detect.KindListenQueueOverflow, detect.KindUpstreamErrors),
			facts:        QueueFacts{Workers: 16, ServiceTimeS: 0.3, ClientTimeoutS: 10, Onset: ccOnset, Queue: ccFixedQueue, Loc: ccKST},
			want:         []string{"listen.backlog mitigation"},
			outcome:      detect.OutcomeFound,
			summaryHas:   []string{"A full queue now drains within the clients' 10 s timeout; overflow now fails fast at the proxy."},
			summaryLacks: []string{"health check"},
		},
		{
			name:       "queue never passed the old cap: not linked",
			changes:    []sources.Change{ccBacklogUp, ccCSS},
			findings:   ccFindings(ccIncidentKinds...),
			facts:      ccFacts(ccQuietQueue),
			want:       []string{"listen.backlog ruled_out"},
			outcome:    detect.OutcomeFound,
			reasonHas:  []string{"no change explains the incident", "never passed the old cap of 511"},
			summaryHas: []string{"is not what enabled the incident", "peaked at 300"},
			facts0:     map[string]float64{"queue_passed_old_cap": 0, "linked": 0},
		},
		{
			name:      "a change after the onset is not the trigger",
			changes:   []sources.Change{ccWith(ccBacklogUp, func(c *sources.Change) { c.Time = ccAt(3, 2, 40) }), ccCSS},
			findings:  ccFindings(ccIncidentKinds...),
			facts:     ccFacts(ccRefQueue),
			outcome:   detect.OutcomeNotInteresting,
			reasonHas: []string{"no change explains the incident", "made 14 min after the onset: it cannot have caused the incident"},
		},
		{
			name:       "the fix after the onset is recognised as the fix",
			changes:    []sources.Change{ccBacklogUp, ccWith(ccBacklogUp, func(c *sources.Change) { c.Time, c.Old, c.New, c.Ref = ccAt(3, 7, 7), "4096", "64", "deploy-42" })},
			findings:   ccFindings(ccIncidentKinds...),
			facts:      ccFacts(ccRefQueue),
			want:       []string{"listen.backlog enabler", "listen.backlog mitigation"},
			outcome:    detect.OutcomeFound,
			reasonHas:  []string{"linked: listen.backlog 511 -> 4096", "lowers the risk: listen.backlog 4096 -> 64 (deploy-42)"},
			summaryHas: []string{"77 s"},
		},
		{
			name: "seen only in metrics: still found, weaker",
			changes: []sources.Change{ccWith(ccBacklogUp, func(c *sources.Change) {
				c.Source, c.Ref, c.File, c.Note = "metrics", `phpfpm_listen_queue_length{instance="web1"}`, "", ""
			})},
			findings:   ccFindings(ccIncidentKinds...),
			facts:      ccFacts(ccRefQueue),
			want:       []string{"listen.backlog enabler"},
			outcome:    detect.OutcomeFound,
			summaryHas: []string{"Seen only in metrics", "77 s"},
			facts0:     map[string]float64{"metrics_only": 1},
		},
		{
			name:      "no relevant change: nobody is blamed",
			changes:   []sources.Change{ccReadme, ccCSS, ccPassword},
			findings:  ccFindings(ccIncidentKinds...),
			facts:     ccFacts(ccRefQueue),
			outcome:   detect.OutcomeNotInteresting,
			reasonHas: []string{"no change explains the incident", "reviewed and not linked (3)"},
		},
		{
			name:      "a line removed that set the default: nothing changed",
			changes:   []sources.Change{ccWith(ccBacklogUp, func(c *sources.Change) { c.New = "" })},
			findings:  ccFindings(ccIncidentKinds...),
			facts:     ccFacts(ccRefQueue),
			outcome:   detect.OutcomeNotInteresting,
			reasonHas: []string{"no change explains the incident", "did not change (an absent listen.backlog means 511)"},
		},
		{
			name:      "no changes at all",
			findings:  ccFindings(ccIncidentKinds...),
			facts:     ccFacts(ccRefQueue),
			outcome:   detect.OutcomeNotInteresting,
			reasonHas: []string{"no change to review"},
		},
		{
			name:      "failure mode absent: not linked",
			changes:   []sources.Change{ccBacklogUp},
			findings:  ccFindings(detect.KindCrawlerBurst, detect.KindSelfAmplification),
			facts:     ccFacts(nil),
			outcome:   detect.OutcomeNotInteresting,
			reasonHas: []string{"none of the findings its failure mode would produce"},
		},
		{
			name: "fewer workers just before the onset, no crawler: the trigger",
			changes: []sources.Change{{Time: ccAt(3, 2, 0), Source: "git", Ref: "abcdef0123456789abcdef0123456789abcdef01",
				File: "www.conf", Key: "pm.max_children", Old: "32", New: "16"}},
			findings:   ccFindings(detect.KindWorkerSaturation, detect.KindHealthcheckStarved),
			facts:      QueueFacts{Workers: 16, ServiceTimeS: 0.3, HealthTimeoutS: 10, Backlog: 511, Onset: ccOnset, Loc: ccKST, PeakPHPPerS: 80, PeakAt: ccOnset},
			want:       []string{"pm.max_children trigger"},
			outcome:    detect.OutcomeFound,
			summaryHas: []string{"80 requests a second needed PHP at 0.3 s each: 24 busy workers, against 32 before the change and 16 after it", "the old pool of 32 would have held this load, the new 16 could not"},
			facts0:     map[string]float64{"workers_needed": 24, "peak_php_per_s": 80, "old_pool_held": 1},
		},
		{
			// The load that filled the pool is named beside the cut: a
			// demand for PHP eight times its usual is the trigger.
			name: "fewer workers, filled by a rise of demand",
			changes: []sources.Change{{Time: ccAt(3, 2, 0), Source: "git", Ref: "abcdef0123456789abcdef0123456789abcdef01",
				File: "www.conf", Key: "pm.max_children", Old: "32", New: "16"}},
			findings:   ccFindings(detect.KindWorkerSaturation, detect.KindHealthcheckStarved),
			facts:      QueueFacts{Workers: 16, ServiceTimeS: 0.3, HealthTimeoutS: 10, Backlog: 511, Onset: ccOnset, Loc: ccKST, PeakPHPPerS: 80, PeakAt: ccOnset, UsualPHPPerS: 10},
			want:       []string{"pm.max_children trigger"},
			outcome:    detect.OutcomeFound,
			summaryHas: []string{"The load that filled the pool was demand for PHP rising from a usual 10 requests a second", "to 80: the trigger, and the cut is what let it fail"},
			facts0:     map[string]float64{"usual_php_per_s": 10, "workers_needed": 24},
		},
		{
			// The obvious story, a surge, is wrong when demand is what it
			// always is at that hour: the ordinary load filled the pool.
			name: "fewer workers, filled by the ordinary load",
			changes: []sources.Change{{Time: ccAt(3, 2, 0), Source: "git", Ref: "abcdef0123456789abcdef0123456789abcdef01",
				File: "www.conf", Key: "pm.max_children", Old: "32", New: "16"}},
			findings:   ccFindings(detect.KindWorkerSaturation, detect.KindHealthcheckStarved),
			facts:      QueueFacts{Workers: 16, ServiceTimeS: 0.3, HealthTimeoutS: 10, Backlog: 511, Onset: ccOnset, Loc: ccKST, PeakPHPPerS: 80, PeakAt: ccOnset, UsualPHPPerS: 70},
			want:       []string{"pm.max_children trigger"},
			outcome:    detect.OutcomeFound,
			summaryHas: []string{"Demand for PHP did not rise (a usual 70 requests a second", "the ordinary load filled the smaller pool"},
			facts0:     map[string]float64{"usual_php_per_s": 70},
		},
		{
			// A trigger found elsewhere (a slowdown) is the load named.
			name: "fewer workers, filled by a slowdown found as the trigger",
			changes: []sources.Change{{Time: ccAt(3, 2, 0), Source: "git", Ref: "abcdef0123456789abcdef0123456789abcdef01",
				File: "www.conf", Key: "pm.max_children", Old: "32", New: "16"}},
			findings:   ccFindings(detect.KindWorkerSaturation, detect.KindHealthcheckStarved),
			facts:      QueueFacts{Workers: 16, ServiceTimeS: 0.3, HealthTimeoutS: 10, Backlog: 511, Onset: ccOnset, Loc: ccKST, PeakPHPPerS: 80, PeakAt: ccOnset, UsualPHPPerS: 75, LoadTrigger: "service_time_regression-1"},
			want:       []string{"pm.max_children trigger"},
			outcome:    detect.OutcomeFound,
			summaryHas: []string{"The load that filled the pool: service_time_regression-1, the trigger; the cut is what let it fail."},
		},
		{
			// Both pools overrun: the cut made it worse, it did not enable
			// what the old pool could not have held either.
			name: "fewer workers, but the load overran the old pool too",
			changes: []sources.Change{{Time: ccAt(3, 2, 0), Source: "git", Ref: "abcdef0123456789abcdef0123456789abcdef01",
				File: "www.conf", Key: "pm.max_children", Old: "32", New: "16"}},
			findings:   ccFindings(detect.KindWorkerSaturation, detect.KindHealthcheckStarved),
			facts:      QueueFacts{Workers: 16, ServiceTimeS: 0.3, HealthTimeoutS: 10, Backlog: 511, Onset: ccOnset, Loc: ccKST, PeakPHPPerS: 200, PeakAt: ccOnset},
			want:       []string{"pm.max_children trigger"},
			outcome:    detect.OutcomeFound,
			summaryHas: []string{"60 busy workers", "the old pool of 32 would not have held it either"},
			facts0:     map[string]float64{"workers_needed": 60, "old_pool_held": 0},
		},
		{
			// The load never needed more than the new pool: the cut is
			// ruled out whatever the two full-queue waits say.
			name: "fewer workers, within the new pool: ruled out",
			changes: []sources.Change{{Time: ccAt(3, 2, 0), Source: "git", Ref: "abcdef0123456789abcdef0123456789abcdef01",
				File: "www.conf", Key: "pm.max_children", Old: "32", New: "16"}},
			findings:  ccFindings(detect.KindWorkerSaturation, detect.KindHealthcheckStarved),
			facts:     QueueFacts{Workers: 16, ServiceTimeS: 0.3, HealthTimeoutS: 10, Backlog: 511, Onset: ccOnset, Loc: ccKST, PeakPHPPerS: 20, PeakAt: ccOnset},
			want:      []string{"pm.max_children ruled_out"},
			outcome:   detect.OutcomeFound,
			reasonHas: []string{"6 workers busy", "played no part"},
		},
		{
			name: "a shorter read timeout the check now fails under",
			changes: []sources.Change{{Time: ccAt(2, 18, 0), Source: "git", Ref: "abcdef0123456789abcdef0123456789abcdef02",
				File: "Caddyfile", Key: "php_fastcgi.read_timeout", Old: "30s", New: "10s"}},
			findings:   ccFindings(detect.KindCrawlerBurst, detect.KindHealthcheckStarved),
			facts:      QueueFacts{Workers: 16, ServiceTimeS: 0.3, HealthTimeoutS: 10, QueuePeak: 1000, Onset: ccOnset, Loc: ccKST},
			want:       []string{"php_fastcgi.read_timeout enabler"},
			outcome:    detect.OutcomeFound,
			summaryHas: []string{"At its peak of 1,000 the queue held 19 s of work", "would have survived under the old timeout"},
		},
		{
			name: "read timeout removed: the silent wedge",
			changes: []sources.Change{{Time: ccAt(2, 18, 0), Source: "git", Ref: "abcdef0123456789abcdef0123456789abcdef04",
				File: "Caddyfile", Key: "php_fastcgi.read_timeout", Old: "10s"}},
			findings:   ccFindings(detect.KindCrawlerBurst, detect.KindClientAbandonedWork),
			facts:      QueueFacts{Workers: 16, ServiceTimeS: 0.3, QueuePeak: 3073, Onset: ccOnset, Loc: ccKST},
			want:       []string{"php_fastcgi.read_timeout enabler"},
			outcome:    detect.OutcomeFound,
			summaryHas: []string{"10s -> (none)", "silent wedge", "found: client_abandoned_work"},
		},
		{
			name: "a rate-limit zone removed: one finding for the zone",
			changes: []sources.Change{
				{Time: ccAt(2, 12, 0), Source: "git", Ref: "abcdef0123456789abcdef0123456789abcdef03", File: "Caddyfile", Key: "rate_limit.zone.page_tools.events", Old: "150"},
				{Time: ccAt(2, 12, 0), Source: "git", Ref: "abcdef0123456789abcdef0123456789abcdef03", File: "Caddyfile", Key: "rate_limit.zone.page_tools", Old: "on"},
				{Time: ccAt(2, 12, 0), Source: "git", Ref: "abcdef0123456789abcdef0123456789abcdef03", File: "Caddyfile", Key: "rate_limit.zone.page_tools.window", Old: "10m"},
			},
			findings:   ccFindings(ccIncidentKinds...),
			facts:      ccFacts(ccRefQueue),
			want:       []string{"rate_limit.zone.page_tools enabler"},
			outcome:    detect.OutcomeFound,
			summaryHas: []string{"rate_limit.zone.page_tools on -> (none)", "lets a crawler through", "Made together with: rate_limit.zone.page_tools.events 150 -> (none)"},
		},
		{
			name: "superseded before the onset",
			changes: []sources.Change{ccBacklogUp,
				ccWith(ccBacklogUp, func(c *sources.Change) { c.Time, c.Old, c.New = ccAt(3, 1, 0), "4096", "511" })},
			findings:  ccFindings(ccIncidentKinds...),
			facts:     ccFacts(ccQuietQueue),
			want:      []string{"listen.backlog mitigation"},
			outcome:   detect.OutcomeFound,
			reasonHas: []string{"superseded by 4096 -> 511"},
		},
		{
			name:       "workers and service time unknown: linked, the arithmetic said missing",
			changes:    []sources.Change{ccBacklogUp},
			findings:   ccFindings(ccIncidentKinds...),
			facts:      QueueFacts{Onset: ccOnset, Queue: ccRefQueue, Loc: ccKST},
			want:       []string{"listen.backlog enabler"},
			outcome:    detect.OutcomeFound,
			summaryHas: []string{"could not be computed", "the queue passed 511 at 02:23"},
		},
	}
	// A deploy log entry with no file or setting: new code, 25 minutes
	// before a service-time rise that no traffic change explains.
	release := sources.Change{Time: ccOnset.Add(-25 * time.Minute), Source: "changes.yaml", Ref: "deploy-118",
		Note: "Release 4.2: new search backend\n\nSwitches search to the new index service."}
	tests = append(tests, []struct {
		name         string
		changes      []sources.Change
		findings     []detect.Finding
		facts        QueueFacts
		want         []string
		outcome      detect.Outcome
		reasonHas    []string
		summaryHas   []string
		facts0       map[string]float64
		absent       []string
		summaryLacks []string
	}{
		{
			name:     "a deploy without a setting before a service-time rise is named by its subject, a candidate",
			changes:  []sources.Change{ccCSS, release},
			findings: ccFindings(detect.KindServiceTimeRegression, detect.KindWorkerSaturation, detect.KindUpstreamErrors),
			facts:    ccFacts(ccQuietQueue),
			want:     []string{" candidate"},
			outcome:  detect.OutcomeFound,
			reasonHas: []string{`no change explains the incident`,
				`deployed just before the onset, changing no known setting (a candidate the logs cannot judge): "Release 4.2: new search backend" (deploy-118)`,
				"skins/site.css (commit 0c55aa1): a file change"},
			summaryHas: []string{`Deploy "Release 4.2: new search backend" (deploy-118, 02:01, 25 min before the onset) changed no setting`,
				"service_time_regression", "cannot judge"},
			facts0: map[string]float64{"hours_before_onset": 0.42},
		},
		{
			name:      "a crawler explains the onset: the deploy is only reviewed",
			changes:   []sources.Change{release},
			findings:  ccFindings(ccIncidentKinds...),
			facts:     ccFacts(ccQuietQueue),
			outcome:   detect.OutcomeNotInteresting,
			reasonHas: []string{`deploy "Release 4.2: new search backend" (deploy-118): a deploy that changed no setting`},
		},
		{
			name:      "a deploy three hours before the onset is only reviewed",
			changes:   []sources.Change{ccWith(release, func(c *sources.Change) { c.Time = ccOnset.Add(-3 * time.Hour) })},
			findings:  ccFindings(detect.KindServiceTimeRegression, detect.KindWorkerSaturation, detect.KindUpstreamErrors),
			facts:     ccFacts(ccQuietQueue),
			outcome:   detect.OutcomeNotInteresting,
			reasonHas: []string{`deploy "Release 4.2: new search backend" (deploy-118): a deploy`},
		},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, check := RankChanges(tt.changes, tt.findings, tt.facts)
			var roles []string
			for _, f := range got {
				roles = append(roles, f.Change.Key+" "+string(f.Role))
				if f.Kind != detect.KindConfigChange || f.Change == nil || f.Confidence < 0 || f.Confidence > 1 || f.Summary == "" {
					t.Errorf("malformed finding %+v", f)
				}
			}
			if strings.Join(roles, ", ") != strings.Join(tt.want, ", ") {
				t.Errorf("findings [%s], want [%s]\nreason: %s", strings.Join(roles, ", "), strings.Join(tt.want, ", "), check.Reason)
			}
			if check.Outcome != tt.outcome || check.Name != detect.KindConfigChange || len(check.Findings) != len(got) {
				t.Errorf("check %+v, want outcome %s listing %d findings", check, tt.outcome, len(got))
			}
			for _, s := range tt.reasonHas {
				if !strings.Contains(check.Reason, s) {
					t.Errorf("reason lacks %q:\n%s", s, check.Reason)
				}
			}
			if len(got) == 0 {
				return
			}
			for _, s := range tt.summaryHas {
				if !strings.Contains(got[0].Summary, s) {
					t.Errorf("summary lacks %q:\n%s", s, got[0].Summary)
				}
			}
			for _, s := range tt.summaryLacks {
				if strings.Contains(got[0].Summary, s) {
					t.Errorf("summary says %q:\n%s", s, got[0].Summary)
				}
			}
			for k, v := range tt.facts0 {
				if g, ok := FactMap(got[0].Facts)[k]; !ok || math.Abs(g-v) > 0.01 {
					t.Errorf("fact %s = %v (present %v), want %v", k, g, ok, v)
				}
			}
			for _, k := range tt.absent {
				if g, ok := FactMap(got[0].Facts)[k]; ok {
					t.Errorf("fact %s = %v stated, want it absent (not measured)", k, g)
				}
			}
		})
	}
}

// TestRankChangesOrdering checks that the ranking follows the evidence: the
// same change scores lower seen only in metrics, and lower further from the
// onset; a change closer to the onset ranks above an older one.
func TestRankChangesOrdering(t *testing.T) {
	conf := func(c sources.Change) float64 {
		fs, _ := RankChanges([]sources.Change{c}, ccFindings(ccIncidentKinds...), ccFacts(ccRefQueue))
		if len(fs) != 1 {
			t.Fatalf("no finding for %+v", c)
		}
		return fs[0].Confidence
	}
	git := conf(ccBacklogUp)
	both := conf(ccWith(ccBacklogUp, func(c *sources.Change) { c.Source = "git+metrics" }))
	metrics := conf(ccWith(ccBacklogUp, func(c *sources.Change) { c.Source = "metrics" }))
	older := conf(ccWith(ccBacklogUp, func(c *sources.Change) { c.Time = ccOnset.Add(-70 * time.Hour) }))
	if !(git >= 0.9 && both == git && metrics < git && older < git) {
		t.Errorf("confidence git %.2f, git+metrics %.2f, metrics only %.2f, 70 h before %.2f: want git >= 0.9 = git+metrics > the others", git, both, metrics, older)
	}
}

// TestRankChangesGolden pins the reference explanation, word for word.
func TestRankChangesGolden(t *testing.T) {
	fs, check := RankChanges([]sources.Change{ccPassword, ccReadme, ccCSS, ccBacklogUp, ccZoneMatch},
		ccFindings(ccIncidentKinds...), ccFacts(ccRefQueue))
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.ID + " " + string(f.Role) + " " + strconv.FormatFloat(f.Confidence, 'f', 2, 64) + "\n" + f.Summary + "\n\n")
	}
	b.WriteString("check: " + string(check.Outcome) + "\n" + check.Reason + "\n")
	golden := filepath.Join("testdata", "configchange", "reference.golden")
	if *updateConfigChange {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update-configchange to create it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("explanation changed; got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// ccGitRepo builds a real repository with the git CLI, commits at fixed dates.
type ccGitRepo struct {
	t   *testing.T
	dir string
	env []string
}

func newCCGitRepo(t *testing.T) *ccGitRepo {
	t.Helper()
	testenv.Program(t, "git", "apt-get install git")
	home := t.TempDir()
	r := &ccGitRepo{t: t, dir: t.TempDir(), env: append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+filepath.Join(home, "gitconfig"), "GIT_AUTHOR_NAME=Ops", "GIT_AUTHOR_EMAIL=ops@wiki.test",
		"GIT_COMMITTER_NAME=Ops", "GIT_COMMITTER_EMAIL=ops@wiki.test")}
	r.run(time.Time{}, "init", "-q", "-b", "main")
	return r
}

func (r *ccGitRepo) run(when time.Time, args ...string) {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = r.dir, r.env
	if !when.IsZero() {
		d := when.Format(time.RFC3339)
		cmd.Env = append(append([]string(nil), r.env...), "GIT_AUTHOR_DATE="+d, "GIT_COMMITTER_DATE="+d)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func (r *ccGitRepo) commit(when time.Time, msg string, files map[string]string) {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.run(time.Time{}, "add", "-A")
	r.run(when, "commit", "-q", "-m", msg)
}

// TestRankChangesFromRepositories runs the whole path: git history read by
// sources/changes, merged with metric steps, ranked against the findings.
func TestRankChangesFromRepositories(t *testing.T) {
	pool := "[www]\nlisten = 127.0.0.1:9000\nlisten.backlog = 511\npm = static\npm.max_children = 16\n"
	window := func() (time.Time, time.Time) { return ccOnset.Add(-72 * time.Hour), ccOnset }

	t.Run("no relevant change: the check says so", func(t *testing.T) {
		r := newCCGitRepo(t)
		r.commit(ccOnset.Add(-100*time.Hour), "Pool", map[string]string{"www.conf": pool})
		r.commit(ccOnset.Add(-30*time.Hour), "Docs", map[string]string{"README.md": "deploy notes\n"})
		r.commit(ccOnset.Add(-3*time.Hour), "Darker links", map[string]string{"skins/site.css": "a { color: #123 }\n"})
		r.commit(ccOnset.Add(-2*time.Hour), "Rotate", map[string]string{"secrets.env": "DB_PASSWORD=s3cret\n"})
		since, until := window()
		cs, _, err := configrepo.FromGit(context.Background(), r.dir, since, until)
		if err != nil {
			t.Fatal(err)
		}
		fs, check := RankChanges(changes.Merge(cs), ccFindings(ccIncidentKinds...), ccFacts(ccRefQueue))
		if len(fs) != 0 || !strings.HasPrefix(check.Reason, "no change explains the incident") ||
			!strings.Contains(check.Reason, "README.md") || !strings.Contains(check.Reason, "env.DB_PASSWORD") {
			t.Errorf("findings %v, reason %q: want none, and the three commits listed as reviewed", fs, check.Reason)
		}
	})

	t.Run("commit and metric step merged, dated by the metric", func(t *testing.T) {
		r := newCCGitRepo(t)
		r.commit(ccOnset.Add(-100*time.Hour), "Pool", map[string]string{"www.conf": pool})
		r.commit(ccAt(2, 23, 40), "Bump PHP to 8.3", map[string]string{"www.conf": strings.Replace(pool, "= 511", "= 4096", 1)})
		r.commit(ccAt(2, 23, 41), "Darker links", map[string]string{"skins/site.css": "a { color: #123 }\n"})
		since, until := window()
		cs, _, err := configrepo.FromGit(context.Background(), r.dir, since, until)
		if err != nil {
			t.Fatal(err)
		}
		var qlen []changes.Point
		for m := 0; m < 40; m++ {
			ts := ccAt(2, 23, 30).Add(time.Duration(m) * time.Minute)
			v := 511.0
			if !ts.Before(ccAt(2, 23, 48)) {
				v = 4096
			}
			qlen = append(qlen, changes.Point{T: ts, V: v})
		}
		steps := changes.FromMetrics([]changes.Series{{Labels: `{instance="web1:9180"}`, Points: qlen}}, nil, nil)
		fs, check := RankChanges(changes.Merge(cs, steps), ccFindings(ccIncidentKinds...), ccFacts(ccRefQueue))
		if len(fs) != 1 || fs[0].Change.Source != "git+metrics" || !fs[0].Change.Time.Equal(ccAt(2, 23, 48)) {
			t.Fatalf("findings %+v\nreason %s", fs, check.Reason)
		}
		if s := fs[0].Summary; !strings.Contains(s, "23:48 the day before") || !strings.Contains(s, "The metric confirms when it took effect") {
			t.Errorf("summary %q", s)
		}
	})
}

// TestRankChangesLab runs the real lab recording: its config repository and
// its php-fpm metrics. The lab scaled the reference down to 4 workers and
// kept the backlog raise 511 -> 4096, but its queue peaked at 357 (max_listen_queue
// 361): it never passed 511, so a cap of 511 would have held the same queue.
// The commit must be found and named, and cleared by the numbers rather than
// blamed.
func TestRankChangesLab(t *testing.T) {
	base := testenv.LabIncident(t, "")
	repos, err := bundle.UnpackConfigArchives([]string{filepath.Join(base, "changes", "config.tar.gz")}, t.TempDir())
	if err != nil || len(repos) != 1 {
		t.Fatalf("the lab's config.tar.gz: repositories %v, %v", repos, err)
	}
	onset := time.Date(2026, 11, 29, 15, 37, 10, 0, time.UTC) // truth.json phases.onset
	cs, notes, err := configrepo.FromGit(context.Background(), repos[0], onset.Add(-72*time.Hour), onset)
	if err != nil {
		t.Fatal(err)
	}
	series := ccReadOpenMetrics(t, filepath.Join(base, "metrics", "prometheus.om.gz"),
		"phpfpm_listen_queue", "phpfpm_listen_queue_length", "phpfpm_total_processes", "phpfpm_start_since")
	steps := changes.FromMetrics(series["phpfpm_listen_queue_length"], series["phpfpm_total_processes"], series["phpfpm_start_since"])
	var queue []QueuePoint
	for _, s := range series["phpfpm_listen_queue"] {
		for _, p := range s.Points {
			queue = append(queue, QueuePoint{T: p.T, Depth: p.V})
		}
	}
	q := QueueFacts{
		Workers: 4, // bundle.yaml site.workers
		// Page tools cost 100-300 ms (lab README); the arithmetic below does not
		// depend on it, since the queue never reached the old cap.
		ServiceTimeS:   0.2,
		HealthTimeoutS: 10, // php_fastcgi read_timeout 10s
		ClientTimeoutS: 10,
		Onset:          onset,
		Queue:          queue,
		Loc:            ccKST,
	}
	fs, check := RankChanges(changes.Merge(cs, steps), ccFindings(ccIncidentKinds...), q)
	if len(notes) != 0 {
		t.Errorf("notes %v", notes)
	}
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want the backlog change:\n%+v\n%s", len(fs), fs, check.Reason)
	}
	f := fs[0]
	if f.Change.Ref != "9d78ccbea301e57b510ff3f93c1312f5e6a9a843" || f.Change.Key != "listen.backlog" || f.Change.Old != "511" || f.Change.New != "4096" {
		t.Errorf("change %+v, want the truth commit's listen.backlog 511 -> 4096", f.Change)
	}
	if f.Role != detect.RoleRuledOut || FactMap(f.Facts)["queue_passed_old_cap"] != 0 || FactMap(f.Facts)["queue_peak"] != 357 {
		t.Errorf("role %s facts %v: want ruled_out with queue_peak 357, never past 511", f.Role, f.Facts)
	}
	for _, s := range []string{"19:20 the day before", "never passed the old cap of 511", "already unsafe: with 4 workers at 0.2 s per request a full queue of 511 held 26 s of work against the 10 s health timeout (one of 4096 now holds 205 s)"} {
		if !strings.Contains(f.Summary, s) {
			t.Errorf("summary lacks %q:\n%s", s, f.Summary)
		}
	}
	if !strings.HasPrefix(check.Reason, "no change explains the incident") {
		t.Errorf("reason %q", check.Reason)
	}
	t.Logf("%s\n%s", f.Summary, check.Reason)
}

// ccReadOpenMetrics reads the named series from an OpenMetrics text file
// with timestamps (name{labels} value unix_seconds), by name then label set.
func ccReadOpenMetrics(t *testing.T, path string, names ...string) map[string][]changes.Series {
	t.Helper()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	idx := map[string]int{}
	out := map[string][]changes.Series{}
	sc := bufio.NewScanner(testenv.OpenGzip(t, path))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			continue
		}
		name, labels, _ := strings.Cut(fields[0], "{")
		if !want[name] {
			continue
		}
		v, err1 := strconv.ParseFloat(fields[1], 64)
		ts, err2 := strconv.ParseFloat(fields[2], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: bad sample %q", path, line)
		}
		key := name + "{" + labels
		i, ok := idx[key]
		if !ok {
			i = len(out[name])
			idx[key] = i
			out[name] = append(out[name], changes.Series{Labels: "{" + labels})
		}
		sec, frac := math.Modf(ts)
		out[name][i].Points = append(out[name][i].Points, changes.Point{T: time.Unix(int64(sec), int64(frac*1e9)), V: v})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// One timeout a queued check is held to, for every consumer: the finding's
// when healthcheck_starved states one; else the FastCGI read_timeout; else
// none, even with a health_timeout configured (Caddy's FastCGI transport
// ignores it once connected, so it is not the obvious answer).
func TestCheckTimeout(t *testing.T) {
	hc := detect.Finding{ID: "healthcheck_starved-1", Kind: detect.KindHealthcheckStarved,
		Facts: MustParseFacts(detect.KindHealthcheckStarved, map[string]float64{"health_timeout_s": 10})}
	for _, tc := range []struct {
		name     string
		site     sources.Site
		findings []detect.Finding
		want     float64
		fromHC   bool
	}{
		{"finding", sources.Site{HealthTimeoutS: 10}, []detect.Finding{hc}, 10, true},
		{"read_timeout", sources.Site{ReadTimeoutS: 20, HealthTimeoutS: 5}, nil, 20, false},
		{"health_timeout ignored", sources.Site{HealthTimeoutS: 5}, nil, 0, false},
		{"nothing known", sources.Site{}, nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, f := detect.CheckTimeout(tc.site, tc.findings)
			if got != tc.want || (f != nil) != tc.fromHC {
				t.Errorf("CheckTimeout = %v (finding %v), want %v (from the finding: %v)", got, f, tc.want, tc.fromHC)
			}
		})
	}
	// healthcheck_starved's own reading: a health_timeout applies once checks
	// were seen timing out or the proxy marked PHP down.
	if got, _ := QueuedCheckTimeout(sources.Site{HealthTimeoutS: 5}, true, false); got != 5 {
		t.Errorf("with checks timing out: %v, want the health_timeout 5", got)
	}
}
