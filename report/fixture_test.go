package report

import (
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/rules/rule"
	"github.com/aftermath-forensics/aftermath/sources"
)

// The fixtures below are hand-built, so that the goldens depend on this
// package alone and not on how the detectors evolve. referenceReport models
// the incident of reference/postmortem-2026-10-03: 8,001 503s and 1,027 502s
// from 02:26 to 03:10 KST, 16 workers, the queue at 1,785 at 02:24 and at its
// 4,096 cap at 02:30, listen.backlog raised from 511 at 23:48 the day before,
// a crawler tripling from 840 to 2,490 requests per 10 minutes from 02:15.

var kst = mustZone("Asia/Seoul")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// at is a time on 3 October 2026 KST ("02:26"), or on another day ("10-02 23:48").
func at(s string) time.Time {
	layout, v := "2006-01-02 15:04", "2026-10-03 "+s
	if len(s) > 5 {
		v = "2026-" + s
	}
	t, err := time.ParseInLocation(layout, v, kst)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// minute-by-minute shape of the reference incident, indexed from 02:00.
func fail503(i int) int {
	peak := map[int]int{26: 150, 27: 420, 28: 760, 29: 1010, 30: 1300, 31: 980, 32: 640, 33: 420, 34: 300, 35: 250}
	if n, ok := peak[i]; ok {
		return n
	}
	if i >= 36 && i < 70 { // 1,771 over 34 minutes: 8,001 in all
		if i < 39 {
			return 53
		}
		return 52
	}
	return 0
}

func fail502(i int) int {
	switch {
	case i >= 30 && i < 35:
		return 100
	case i >= 35 && i < 70: // 527 over 35 minutes: 1,027 in all
		if i < 37 {
			return 16
		}
		return 15
	}
	return 0
}

func crawl(i int) int {
	if i >= 15 && i < 70 {
		return 249
	}
	return 84
}

func referenceMinutes() []MinuteRow {
	var out []MinuteRow
	for i := 0; i < 90; i++ {
		t := at("02:00").Add(time.Duration(i) * time.Minute)
		f503, f502 := fail503(i), fail502(i)
		late := 0
		if i >= 26 && i < 40 {
			late = 12
		}
		// PHP's answers in time: what the pool managed between the failures.
		ok := 250 + crawl(i) - 84
		if f503+f502 > 0 {
			ok = max(30, 150-(f503+f502)/4)
		}
		cached := 150
		st := map[string]int{"200": cached + ok + late, "404": 3}
		if f503 > 0 {
			st["503"] = f503
		}
		if f502 > 0 {
			st["502"] = f502
		}
		n := 0
		for _, c := range st {
			n += c
		}
		out = append(out, MinuteRow{Time: t, Requests: n, Status: st, ProxyMade: f503 + f502, PHP: ok + late + 3, Goodput: ok, Late: late,
			NeededPHP: ok + late + 3 + f503 + f502, FailedPHP: late + f503 + f502})
	}
	return out
}

func series(id, name, query, agg string, f func(i int) float64) SeriesRow {
	s := SeriesRow{ID: id, Name: name, Query: query, Agg: agg}
	for i := 0; i < 90; i++ {
		t, v := at("02:00").Add(time.Duration(i)*time.Minute), f(i)
		s.Points = append(s.Points, Point{T: t, V: v})
		if i == 0 || v > s.Max {
			s.Max, s.MaxAt = v, t
		}
	}
	return s
}

func queueAt(i int) float64 {
	ramp := map[int]float64{20: 40, 21: 150, 22: 300, 23: 480, 24: 1785, 25: 2600, 26: 3200, 27: 3600, 28: 3800, 29: 3950}
	switch {
	case i < 20:
		return 0
	case i < 30:
		return ramp[i]
	case i <= 40:
		return 4096
	case i < 70:
		return float64(4096 * (70 - i) / 30)
	}
	return 0
}

func referenceSeries() []SeriesRow {
	return []SeriesRow{
		series(SeriesActive, "php-fpm active", "sum(phpfpm_active_processes)", "max", func(i int) float64 {
			if i >= 20 && i < 70 {
				return 16
			}
			return 8
		}),
		series(SeriesTotal, "php-fpm total", "sum(phpfpm_total_processes)", "max", func(int) float64 { return 16 }),
		series(SeriesQueue, "listen queue", "sum(phpfpm_listen_queue)", "max", queueAt),
		series(SeriesBacklog, "backlog", "max(phpfpm_listen_queue_length)", "max", func(int) float64 { return 4096 }),
		series(SeriesHealthy, "upstreams healthy", "min(caddy_reverse_proxy_upstreams_healthy)", "min", func(i int) float64 {
			if i >= 26 && i < 70 {
				return 0
			}
			return 1
		}),
		series(SeriesCPU, "CPU %", "avg(aws_ec2_cpuutilization_average)", "mean", func(i int) float64 {
			switch {
			case i < 15:
				return 35
			case i < 20:
				return 70
			case i < 70:
				return 99
			}
			return 40
		}),
	}
}

// errorFacts computes upstream_errors' facts from the minutes, as detect does.
func errorFacts(ms []MinuteRow, from, to time.Time) map[string]float64 {
	f := map[string]float64{"goodput_usual_per_min": 250, "usual_failed_per_min": 0, "late_success": 0}
	minGood := -1
	for i := range ms {
		m := &ms[i]
		for s, n := range m.Status {
			f["status_"+s] += float64(n)
			if s == "502" || s == "503" {
				f["proxy_"+s] += float64(n)
			}
		}
		f["late_success"] += float64(m.Late)
		if n := m.failed(); !m.Time.Before(from) && m.Time.Before(to) {
			f["failed_total"] += float64(n)
			f["peak_failed_per_min"] = max(f["peak_failed_per_min"], float64(n))
			if minGood < 0 || m.Goodput < minGood {
				minGood = m.Goodput
			}
		}
	}
	f["goodput_min_per_min"] = float64(minGood)
	return f
}

const backlogCommit = "3f9c2d14e5b6a7980c1d2e3f4a5b6c7d8e9f0a1b"

func referenceReport(t testing.TB) *Report {
	t.Helper()
	ms := referenceMinutes()
	enabler := sources.Change{Time: at("10-02 23:48"), Source: "git", Ref: backlogCommit, File: "php/8.3/fpm/pool.d/www.conf",
		Key: "listen.backlog", Old: "511", New: "4096", Note: "Upgrade to PHP 8.3\n\nThe new pool template raises listen.backlog."}
	fix := sources.Change{Time: at("07:07"), Source: "changes.yaml", Ref: "infra#1058", File: "php/8.3/fpm/pool.d/www.conf",
		Key: "listen.backlog", Old: "4096", New: "64", Note: "Cap the php-fpm queue; add the page_tools limit"}
	crawler := []Point{}
	for i := 0; i < 90; i++ {
		crawler = append(crawler, Point{T: at("02:00").Add(time.Duration(i) * time.Minute), V: float64(crawl(i))})
	}
	r := &Report{
		Window: Window{From: at("02:00"), To: at("03:30"), TZ: "Asia/Seoul"},
		Findings: []detect.Finding{
			{ID: "crawler_burst-1", Kind: detect.KindCrawlerBurst, Role: detect.RoleTrigger, Start: at("02:15"), End: at("03:10"), Confidence: 0.85,
				Summary: "Chrome 120/119 / zh-cn / logged out requests rose from 840 to 2,490 per 10 minutes from 02:15, spread over 2,964 addresses in 2,871 networks (median 1 request per address).",
				Facts: detect.MustParseFacts(detect.KindCrawlerBurst, map[string]float64{"distinct_ips": 2964, "distinct_prefixes_24": 2871, "requests": 13695, "requests_per_ip_median": 1, "requests_per_ip_max": 4,
					"baseline_per_10m": 840, "peak_per_10m": 2490, "php_time_share": 0.71, "asset_share": 0, "uncacheable_share": 0.97, "spread": 1}),
				Fingerprint: &detect.Fingerprint{UserAgent: "Chrome 120/119", AcceptLanguage: "zh-cn", LoggedIn: "no",
					Paths: []string{"action=edit", "action=watch", "Special:Contributions (path)", "Special:RecentChangesLinked (path)", "Special:CiteThisPage (path)", "Special:NewItem (path)", "Special:WhatLinksHere (path)"}},
				TopPaths: []detect.PathCount{{Path: "action=edit", Requests: 3120}, {Path: "action=watch", Requests: 2210}}},
			{ID: "worker_saturation-1", Kind: detect.KindWorkerSaturation, Role: detect.RoleMechanism, Start: at("02:20"), End: at("03:10"), Confidence: 0.95,
				Summary: "All 16 php-fpm workers were busy for 50m0s between 02:20 and 03:10, CPU-bound (CPU 99%).",
				Facts:   detect.MustParseFacts(detect.KindWorkerSaturation, map[string]float64{"workers": 16, "saturated_seconds": 3000, "cpu_avg_pct": 99, "cpu_bound": 1, "completion_rate_per_s": 53.3, "service_time_s": 0.3})},
			{ID: "self_amplification-1", Kind: detect.KindSelfAmplification, Role: detect.RoleMechanism, Start: at("02:21"), End: at("03:10"), Confidence: 0.7,
				Summary: "The site called its own API 412 times from 02:21 (usually 8 in as long).",
				Facts:   detect.MustParseFacts(detect.KindSelfAmplification, map[string]float64{"self_calls": 412, "expected": 8})},
			{ID: "listen_queue_overflow-1", Kind: detect.KindListenQueueOverflow, Role: detect.RoleMechanism, Start: at("02:21"), End: at("03:08"), Confidence: 0.9,
				Summary: "php-fpm's listen queue grew from a usual 0 to 4,096 at 02:30, reaching its cap of 4,096 at 02:30.",
				Facts:   detect.MustParseFacts(detect.KindListenQueueOverflow, map[string]float64{"queue_peak": 4096, "queue_usual": 0, "backlog": 4096, "reached_cap": 1, "workers": 16, "est_wait_at_peak_s": 76.8})},
			{ID: "healthcheck_starved-1", Kind: detect.KindHealthcheckStarved, Role: detect.RoleMechanism, Start: at("02:26"), End: at("03:10"), Confidence: 0.95,
				Summary: "The health check waited in php-fpm's queue behind everyone else: about 77 s of waiting against a 10 s health timeout.",
				Facts: detect.MustParseFacts(detect.KindHealthcheckStarved, map[string]float64{"est_queue_wait_s": 76.8, "health_timeout_s": 10, "queue_peak": 4096, "backlog": 4096, "proxy_503": 8001,
					"health_check_failures": 312, "health_recoveries": 14, "unhealthy_seconds": 2400})},
			{ID: "upstream_errors-1", Kind: detect.KindUpstreamErrors, Role: detect.RoleSymptom, Start: at("02:26"), End: at("03:10"), Confidence: 0.95,
				Summary: "From 02:26 to 03:10: 8,001 × 503 (all made by Caddy), 1,027 × 502 (all made by Caddy).",
				Facts:   detect.MustParseFacts(detect.KindUpstreamErrors, errorFacts(ms, at("02:26"), at("03:10"))),
				// As detect logs them: the first failing minute, the worst (1,300 × 503,
				// 100 × 502 and 12 late), the last with a failure.
				Logged: &detect.LoggedMilestones{First: at("02:26"), Worst: at("02:30"), Last: at("03:09"), WorstFailed: 1412}},
			{ID: "client_abandoned_work-1", Kind: detect.KindClientAbandonedWork, Role: detect.RoleSymptom, Start: at("02:26"), End: at("03:10"), Confidence: 0.85,
				Summary: "2,228 requests were still queued for PHP when their clients gave up after 10 s.",
				Facts:   detect.MustParseFacts(detect.KindClientAbandonedWork, map[string]float64{"requests": 2228, "client_timeout_s": 10, "worker_seconds": 668.4})},
			{ID: "config_change-1", Kind: detect.KindConfigChange, Role: detect.RoleEnabler, Start: enabler.Time, End: enabler.Time, Confidence: 0.8,
				Summary: "listen.backlog 511 -> 4096 (commit 3f9c2d1, 23:48 the day before).",
				Facts: detect.MustParseFacts(detect.KindConfigChange, map[string]float64{"old_value": 511, "new_value": 4096, "wait_before_s": 9.6, "wait_after_s": 76.8, "health_timeout_s": 10,
					"workers": 16, "service_time_s": 0.3, "queue_passed_old_cap": 1, "queue_peak": 4096, "linked": 1}),
				Change: &enabler},
		},
		Checks: []detect.Check{
			{Name: detect.KindCrawlerBurst, Outcome: detect.OutcomeFound, Findings: []string{"crawler_burst-1"}},
			{Name: detect.KindWorkerSaturation, Outcome: detect.OutcomeFound, Findings: []string{"worker_saturation-1"}},
			{Name: detect.KindListenQueueOverflow, Outcome: detect.OutcomeFound, Findings: []string{"listen_queue_overflow-1"}},
			{Name: detect.KindHealthcheckStarved, Outcome: detect.OutcomeFound, Findings: []string{"healthcheck_starved-1"}},
			{Name: detect.KindUpstreamErrors, Outcome: detect.OutcomeFound, Findings: []string{"upstream_errors-1"}},
			{Name: detect.KindClientAbandonedWork, Outcome: detect.OutcomeFound, Findings: []string{"client_abandoned_work-1"}},
			{Name: detect.KindSelfAmplification, Outcome: detect.OutcomeFound, Findings: []string{"self_amplification-1"}},
			{Name: detect.KindIdlePinning, Outcome: detect.OutcomeNotInteresting, Reason: "CPU averaged 99% while requests queued: the workers were working"},
			{Name: detect.KindConfigChange, Outcome: detect.OutcomeFound, Findings: []string{"config_change-1"}},
		},
		Rules: []rule.Rule{{
			Name:      "page_tools",
			Finding:   "crawler_burst-1",
			Caddyfile: "rate_limit {\n\tzone page_tools {\n\t\tmatch {\n\t\t\tnot header Cookie *wikiUserID=*\n\t\t\tquery action=edit action=watch\n\t\t}\n\t\tkey static\n\t\twindow 10m\n\t\tevents 150\n\t}\n}",
			Why:       "The crawler's tools saw at most 41 logged-out requests per 10 minutes over the baseline; 150 leaves room for readers.",
			Backtest: rule.Backtest{CrawlerRequests: 13695, CrawlerRefused: 11960, CrawlerRefusedShare: 0.873, CrawlerPHPSecondsSaved: 3588,
				LoggedInRequests: 1204, OtherLoggedOutRequests: 21350, OtherLoggedOutRefused: 212, OtherLoggedOutRefusedShare: 0.0099,
				BaselineRequests: 48000, BaselineRefused: 0, FirstRefusal: at("02:17")},
		}},
		Recommendations: []rule.Recommendation{{Target: "php-fpm", Key: "listen.backlog", Value: "64",
			Why: "With 16 workers at 0.3 s a request, a full queue of 64 waits 1.2 s, under the 10 s health timeout; one of 4,096 waits 77 s."}},
		DataQuality: []sources.QualityNote{
			{Source: "access", Severity: sources.SeverityWarning, Message: "3 lines skipped: not JSON (access.log:17, access.log:18, access.log:902)"},
			{Source: "metrics", Severity: sources.SeverityInfo, Message: "node_netstat_TcpExt_ListenOverflows absent: dropped SYNs are not counted"},
		},
		Changes: []sources.Change{enabler, fix},
		Evidence: Evidence{AccessFiles: 2, Lines: 98500, Requests: 98497, SkippedLines: 3, MetricFiles: 3, MetricSamples: 412000,
			Minutes: ms, Series: referenceSeries(),
			Clusters: []ClusterRow{{Fingerprint: "Chrome / zh-cn / logged out", Requests: 13695, DistinctIPs: 2964, DistinctPrefixes: 2871, RequestsPerIPMedian: 1}},
			Crawlers: []CrawlerRow{{Finding: "crawler_burst-1", Fingerprint: "Chrome / zh-cn / logged out", BaselinePerMin: 84, Points: crawler}}},
	}
	if err := r.Assemble(); err != nil {
		t.Fatal(err)
	}
	return r
}

// hostile is what an attacker can put in a log line.
const hostile = "<script>alert(1)</script></svg><img src=x onerror=alert(2)> | `tick` {{ .Secret }} [x](javascript:alert(3))\n# heading\r\n- item ![i](http://evil.example/x.png) www.evil.example a@b.example \x1b[31mred\x1b[0m \u202eevil"

// injectionReport is referenceReport with attacker-controlled text wherever
// a log line can reach: user agents, paths, languages, fingerprints, change
// notes, data-quality messages, detector summaries, rule snippets.
func injectionReport(t testing.TB) *Report {
	t.Helper()
	r := referenceReport(t)
	for i := range r.Findings {
		f := &r.Findings[i]
		f.Summary = "summary " + hostile
		if f.Fingerprint != nil {
			f.Fingerprint.UserAgent = "Chrome " + hostile
			f.Fingerprint.AcceptLanguage = "zh-cn" + hostile
			f.Fingerprint.Paths = []string{"/w/" + hostile, hostile + "|path"}
			f.TopPaths = []detect.PathCount{{Path: hostile, Requests: 1}}
		}
		if f.Change != nil {
			c := *f.Change
			c.Note = hostile
			c.Key = "listen.backlog" + hostile
			c.Old = hostile
			f.Change = &c
		}
	}
	r.Checks[0].Reason = hostile
	r.Changes[1].Note = hostile
	r.Evidence.Clusters[0].Fingerprint = hostile
	r.Evidence.Crawlers[0].Fingerprint = hostile
	r.Rules[0].Caddyfile += "\n# " + hostile + "\n```\n" + hostile
	r.Rules[0].Why = hostile
	r.Rules[0].Name = "page_tools" + hostile
	r.Recommendations[0].Why = hostile
	r.DataQuality = append(r.DataQuality, sources.QualityNote{Source: "access" + hostile, Severity: sources.SeverityWarning, Message: hostile})
	r.Window.TZ = "Asia/Seoul"
	if err := r.Assemble(); err != nil {
		t.Fatal(err)
	}
	return r
}

// quietReport has traffic but no finding: nothing failed.
func quietReport(t testing.TB) *Report {
	t.Helper()
	var ms []MinuteRow
	for i := 0; i < 30; i++ {
		ms = append(ms, MinuteRow{Time: at("02:00").Add(time.Duration(i) * time.Minute), Requests: 400,
			Status: map[string]int{"200": 398, "404": 2}, PHP: 250, Goodput: 248, NeededPHP: 250})
	}
	ms = append(ms[:10], ms[13:]...) // a gap in the log: 02:10-02:13
	r := &Report{Window: Window{From: at("02:00"), To: at("02:30"), TZ: "Asia/Seoul"}, Evidence: Evidence{Minutes: ms}}
	if err := r.Assemble(); err != nil {
		t.Fatal(err)
	}
	return r
}
