package detect

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

var t0 = time.Date(2026, 10, 2, 17, 0, 0, 0, time.UTC) // 02:00 KST

// grid builds a series every 15 s over [from, from+d) with value f(offset).
func grid(from time.Time, d time.Duration, f func(time.Duration) float64) []metrics.Point {
	var ps []metrics.Point
	for off := time.Duration(0); off < d; off += 15 * time.Second {
		ps = append(ps, metrics.Point{T: from.Add(off), V: f(off)})
	}
	return ps
}

func constant(v float64) func(time.Duration) float64 { return func(time.Duration) float64 { return v } }

// between3 is v during [a, b) of the offset and base elsewhere.
func during(a, b time.Duration, v, base float64) func(time.Duration) float64 {
	return func(off time.Duration) float64 {
		if off >= a && off < b {
			return v
		}
		return base
	}
}

func TestDetectorsWithoutEvidence(t *testing.T) {
	ev := &Evidence{From: t0, To: t0.Add(time.Hour)}
	res, err := Run(context.Background(), ev, Detectors())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) != 0 {
		t.Fatalf("findings without evidence: %+v", res.Findings)
	}
	for _, c := range res.Checks {
		if c.Outcome != OutcomeCouldNotRun || c.Reason == "" {
			t.Errorf("check %s = %s (%q), want could_not_run with a reason", c.Name, c.Outcome, c.Reason)
		}
	}
	if len(res.DataQuality) != len(res.Checks) {
		t.Errorf("%d data-quality notes for %d checks that could not run", len(res.DataQuality), len(res.Checks))
	}
}

// poolEvidence is a 2-hour span: an hour of baseline, then the window.
func poolEvidence(p *Pool) *Evidence {
	p.Step = 15 * time.Second
	return &Evidence{From: t0, To: t0.Add(time.Hour), BaselineFrom: t0.Add(-time.Hour), BaselineTo: t0, Pool: p, Loc: time.UTC,
		Site: sources.Site{Workers: 16}}
}

func TestMetricDetectors(t *testing.T) {
	span := 2 * time.Hour
	from := t0.Add(-time.Hour)
	busy := during(80*time.Minute, 100*time.Minute, 16, 6)
	tests := []struct {
		name     string
		pool     *Pool
		detector Detector
		want     bool
		facts    map[string]float64
		reason   string
	}{
		{"saturated and CPU-bound", &Pool{Active: grid(from, span, busy), Total: grid(from, span, constant(16)),
			CPU: grid(from, span, during(80*time.Minute, 100*time.Minute, 99, 30)), Accepted: grid(from, span, constant(53))},
			saturationDetector{}, true, map[string]float64{"workers": 16, "cpu_bound": 1, "saturated_seconds": 1200}, ""},
		{"saturated, CPU idle", &Pool{Active: grid(from, span, busy), Total: grid(from, span, constant(16)),
			CPU: grid(from, span, constant(12))}, saturationDetector{}, true, map[string]float64{"cpu_bound": 0}, ""},
		{"busy for one scrape only", &Pool{Active: grid(from, span, during(80*time.Minute, 80*time.Minute+15*time.Second, 16, 6)),
			Total: grid(from, span, constant(16))}, saturationDetector{}, false, nil, "under 1m0s"},
		{"no active series", &Pool{Total: grid(from, span, constant(16))}, saturationDetector{}, false, nil, "phpfpm_active_processes"},
		{"queue at its cap", &Pool{Queue: grid(from, span, during(85*time.Minute, 95*time.Minute, 4096, 0)),
			Backlog: grid(from, span, constant(4096)), Accepted: grid(from, span, constant(53))},
			queueDetector{}, true, map[string]float64{"queue_peak": 4096, "backlog": 4096, "reached_cap": 1, "est_wait_at_peak_s": 77.3}, ""},
		{"usual small queue", &Pool{Queue: grid(from, span, constant(3)), Backlog: grid(from, span, constant(511))},
			queueDetector{}, false, nil, "peaked at 3"},
		{"pinning needs CPU", &Pool{Queue: grid(from, span, constant(100)), Active: grid(from, span, constant(16))}, pinningDetector{}, false, nil, "no CPU series"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := poolEvidence(tt.pool)
			fs, check, err := tt.detector.Detect(context.Background(), ev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if (len(fs) > 0) != tt.want {
				t.Fatalf("findings %+v, check %+v; want found=%v", fs, check, tt.want)
			}
			for k, v := range tt.facts {
				if got := FactMap(fs[0].Facts)[k]; got != v {
					t.Errorf("fact %s = %v, want %v (%s)", k, got, v, fs[0].Summary)
				}
			}
			if tt.reason != "" && !strings.Contains(check.Reason, tt.reason) {
				t.Errorf("reason %q does not mention %q", check.Reason, tt.reason)
			}
		})
	}
}

// reqs adds n requests spread over [at, at+d) with the given shape.
type shape struct {
	ua, lang string
	loggedIn sources.LoggedIn
	paths    []string
	ips      func(i int) string
	status   int
	origin   sources.Origin
	dur      float64
}

func feed(tr interface{ Observe(*sources.Request) }, s shape, at time.Time, d time.Duration, n int) {
	for i := 0; i < n; i++ {
		p := s.paths[i%len(s.paths)]
		path, query, _ := strings.Cut(p, "?")
		tr.Observe(&sources.Request{
			Time: at.Add(time.Duration(i) * d / time.Duration(n)), ClientIP: netip.MustParseAddr(s.ips(i)), Method: "GET",
			Path: path, Query: query, Status: s.status, Duration: s.dur, UserAgent: s.ua, Lang: s.lang,
			LoggedIn: s.loggedIn, Origin: s.origin, TLS: true, SecChUa: !strings.Contains(s.ua, "Chrome/121"),
		})
	}
}

func spreadIPs(i int) string { return fmt.Sprintf("10.%d.%d.7", i/250%250, i%250) }
func fewIPs(i int) string    { return fmt.Sprintf("192.0.2.%d", i%40) }

const (
	chrome121 = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"
	chrome125 = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36"
	firefox   = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
)

func TestCrawlerVersusFlashCrowd(t *testing.T) {
	readers := shape{ua: chrome125, lang: "ko-kr", loggedIn: sources.LoggedInNo, ips: fewIPs, status: 200, origin: sources.OriginUpstream, dur: 0.1,
		paths: []string{"/w/A", "/static/skin.css", "/static/wiki.js", "/w/B"}}
	tools := []string{"/w/index.php?title=X&action=edit", "/w/Special:WhatLinksHere/X", "/w/index.php?title=Y&action=history"}
	tests := []struct {
		name  string
		burst shape
		want  bool
	}{
		{"distributed crawler", shape{ua: chrome121, lang: "zh-cn", loggedIn: sources.LoggedInNo, ips: spreadIPs, status: 200,
			origin: sources.OriginUpstream, dur: 0.3, paths: tools}, true},
		{"crawler in another language and browser", shape{ua: firefox, lang: "ru-ru", loggedIn: sources.LoggedInNo, ips: spreadIPs, status: 200,
			origin: sources.OriginUpstream, dur: 0.3, paths: []string{"/wiki/Special:Contributions/Z", "/w/index.php?title=Z&action=info"}}, true},
		{"flash crowd on one article", shape{ua: firefox, lang: "en-us", loggedIn: sources.LoggedInNo, ips: spreadIPs, status: 200,
			origin: sources.OriginStatic, dur: 0.01, paths: []string{"/w/News", "/static/skin.css", "/static/wiki.js", "/static/logo.png"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTraffic(sources.Site{}, t0, t0.Add(time.Hour))
			feed(tr, readers, t0.Add(-3*time.Hour), 4*time.Hour, 24000)
			// The burst's own fingerprint exists at a low rate before.
			feed(tr, tt.burst, t0.Add(-3*time.Hour), 3*time.Hour, 90)
			feed(tr, tt.burst, t0.Add(15*time.Minute), 30*time.Minute, 6000)
			ev := &Evidence{From: t0, To: t0.Add(time.Hour), Traffic: tr, Loc: time.UTC}
			fs, check, err := crawlerDetector{}.Detect(context.Background(), ev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if (len(fs) > 0) != tt.want {
				t.Fatalf("found %d crawler findings, want %v; check %+v", len(fs), tt.want, check)
			}
			if !tt.want {
				if !strings.Contains(check.Reason, "surge") {
					t.Errorf("a legitimate surge should be named as one: %q", check.Reason)
				}
				return
			}
			f := fs[0]
			if FactMap(f.Facts)["distinct_ips"] != 6000 || FactMap(f.Facts)["requests_per_ip_median"] != 1 || FactMap(f.Facts)["spread"] != 1 {
				t.Errorf("facts %v", f.Facts)
			}
			if d := f.Start.Sub(t0.Add(15 * time.Minute)); d < -2*time.Minute || d > 2*time.Minute {
				t.Errorf("onset %v, want 00:15 ± 2 min", f.Start)
			}
			if FactMap(f.Facts)["baseline_per_10m"] > 10 || FactMap(f.Facts)["peak_per_10m"] < 1900 {
				t.Errorf("baseline %v peak %v per 10 min", FactMap(f.Facts)["baseline_per_10m"], FactMap(f.Facts)["peak_per_10m"])
			}
		})
	}
}

func TestSilentWedgeIsNotStarvation(t *testing.T) {
	from := t0.Add(-time.Hour)
	p := &Pool{Queue: grid(from, 2*time.Hour, during(80*time.Minute, 100*time.Minute, 3000, 0)), Accepted: grid(from, 2*time.Hour, constant(21))}
	ev := poolEvidence(p)
	ev.Site.HealthTimeoutS = 10 // configured, but no read_timeout: a queued check waits and passes
	ev.Traffic = NewTraffic(ev.Site, ev.From, ev.To)
	fs, check, err := healthcheckDetector{}.Detect(context.Background(), ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 0 {
		t.Fatalf("healthcheck_starved without any 503 or failed check: %+v", fs)
	}
	for _, want := range []string{"silent", "read_timeout", "143 s"} {
		if !strings.Contains(check.Reason, want) {
			t.Errorf("reason %q does not mention %q", check.Reason, want)
		}
	}
}

// health_timeout_s is stated only when a timeout applies to the queued
// check: checks that timed out with no timeout known (no read_timeout, no
// health_timeout) leave it absent rather than a measured-looking 0, and the
// explanation names no timeout; a read_timeout is stated as the limit.
func TestHealthTimeoutStatedOnlyWhenOneApplies(t *testing.T) {
	for _, tc := range []struct {
		name        string
		readTimeout float64
		want        Maybe[float64]
	}{
		{"no timeout known", 0, Maybe[float64]{}},
		{"read_timeout", 10, Some(10.0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := t0.Add(-time.Hour)
			p := &Pool{Queue: grid(from, 2*time.Hour, during(80*time.Minute, 100*time.Minute, 3000, 0)), Accepted: grid(from, 2*time.Hour, constant(21))}
			ev := poolEvidence(p)
			ev.Site.ReadTimeoutS = tc.readTimeout
			ev.HealthLogGiven = true
			for i := range 5 {
				ev.Health = append(ev.Health, sources.HealthEvent{Time: t0.Add(time.Duration(25+i) * time.Minute), Upstream: "php:9000",
					Kind: sources.HealthFailed, Error: "context deadline exceeded"})
			}
			fs, check, err := healthcheckDetector{}.Detect(context.Background(), ev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) != 1 {
				t.Fatalf("no healthcheck_starved from checks that timed out: %+v", check)
			}
			facts := FactsOf[HealthcheckFacts](&fs[0])
			if facts.HealthTimeoutS != tc.want {
				t.Errorf("health_timeout_s = %+v, want %+v", facts.HealthTimeoutS, tc.want)
			}
			if _, stated := FactMap(fs[0].Facts)["health_timeout_s"]; stated != tc.want.OK {
				t.Errorf("health_timeout_s stated %v, want %v", stated, tc.want.OK)
			}
			if s, _ := CheckTimeout(ev.Site, fs); s != tc.want.V {
				t.Errorf("CheckTimeout = %v, want %v", s, tc.want.V)
			}
		})
	}
}

func TestIdlePinning(t *testing.T) {
	from := t0.Add(-time.Hour)
	p := &Pool{Queue: grid(from, 2*time.Hour, during(70*time.Minute, 100*time.Minute, 200, 0)),
		Active: grid(from, 2*time.Hour, during(60*time.Minute, 100*time.Minute, 16, 1)),
		CPU:    grid(from, 2*time.Hour, constant(4)), Total: grid(from, 2*time.Hour, constant(16))}
	ev := poolEvidence(p)
	ev.Traffic = NewTraffic(ev.Site, ev.From, ev.To)
	normal := shape{ua: firefox, ips: fewIPs, status: 200, origin: sources.OriginUpstream, dur: 0.2, paths: []string{"/w/A"}}
	feed(ev.Traffic, normal, from, time.Hour, 3000)
	stalled := normal
	stalled.dur, stalled.status = 300, 200 // freed by a 300 s idle timeout
	feed(ev.Traffic, stalled, t0.Add(10*time.Minute), 30*time.Minute, 200)
	fs, check, err := pinningDetector{}.Detect(context.Background(), ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 {
		t.Fatalf("no idle_pinning: %+v", check)
	}
	if got := FactMap(fs[0].Facts)["timeout_s"]; got < 270 || got > 330 {
		t.Errorf("timeout_s = %v, want about 300", got)
	}
}

func TestUpstreamErrors(t *testing.T) {
	good := shape{ua: firefox, ips: fewIPs, status: 200, origin: sources.OriginUpstream, dur: 0.1, paths: []string{"/w/A"}}
	bad := good
	bad.status = 502
	tests := []struct {
		name        string
		failures    int           // 502s over the failing stretch
		at, d       time.Duration // the failing stretch, from the window's start
		start, end  time.Duration // the finding's stretch, from the window's start
		goodputMin  float64
		summaryHave string
	}{
		{"sharp burst", 600, 20 * time.Minute, 10 * time.Minute, 20 * time.Minute, 30 * time.Minute, 20, "PHP goodput (ordinary clients' answers in time) was 20 a minute at its lowest (usually 20)"},
		// 2 a minute never passes the per-minute level (3 above a usual 0), but
		// 120 over the hour against 0 expected does: the stretch is then the
		// minutes with failures, and goodput is what they saw.
		{"excess spread thin", 120, 0, time.Hour, 0, time.Hour, 20, "PHP goodput (ordinary clients' answers in time) was 20 a minute at its lowest (usually 20)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTraffic(sources.Site{}, t0, t0.Add(time.Hour))
			feed(tr, good, t0.Add(-time.Hour), 2*time.Hour, 2400) // 20 a minute
			// Logged from a second into the stretch: a 502 logged at its
			// first instant arrived (log time minus duration) in the minute
			// before, and by arrival that minute failed a reader too.
			feed(tr, bad, t0.Add(tt.at+time.Second), tt.d-time.Second, tt.failures)
			ev := &Evidence{From: t0, To: t0.Add(time.Hour), BaselineFrom: t0.Add(-time.Hour), BaselineTo: t0, Traffic: tr, Loc: time.UTC}
			fs, check, err := errorsDetector{}.Detect(context.Background(), ev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) != 1 {
				t.Fatalf("no upstream_errors: %+v", check)
			}
			f := fs[0]
			if !f.Start.Equal(t0.Add(tt.start)) || !f.End.Equal(t0.Add(tt.end)) {
				t.Errorf("stretch [%v, %v), want [%v, %v)", f.Start, f.End, t0.Add(tt.start), t0.Add(tt.end))
			}
			if f.Start.Before(ev.From) || f.End.After(ev.To) || !f.End.After(f.Start) {
				t.Errorf("stretch [%v, %v) outside the window [%v, %v)", f.Start, f.End, ev.From, ev.To)
			}
			if got := FactMap(f.Facts)["goodput_min_per_min"]; got != tt.goodputMin {
				t.Errorf("goodput_min_per_min = %v, want %v", got, tt.goodputMin)
			}
			if FactMap(f.Facts)["failed_total"] != float64(tt.failures) {
				t.Errorf("failed_total = %v, want %d", FactMap(f.Facts)["failed_total"], tt.failures)
			}
			if !strings.Contains(f.Summary, tt.summaryHave) || strings.Contains(f.Summary, "00:00") || strings.Contains(f.Summary, "goodput was 0 ") {
				t.Errorf("summary %q", f.Summary)
			}
		})
	}
}
