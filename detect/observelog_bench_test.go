package detect

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchref"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
)

// The benchmarks of this file run Observe's parts over a log given in
// OBSERVE_LOG (make bench's 256 MB one, say: its window is 02:00-03:00 on
// 2026-10-03), read once before the clock starts. The generated log of
// BenchmarkObserve is small enough that its targets repeat more than a real
// one's, which hides what a target seen once costs.

// observeLogRequests reads OBSERVE_LOG, or skips the benchmark.
func observeLogRequests(b *testing.B) []sources.Request {
	name := os.Getenv("OBSERVE_LOG")
	if name == "" {
		b.Skip("OBSERVE_LOG names no log")
	}
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var reqs []sources.Request
	if _, err := accesslog.ReadReader(context.Background(), name, f, accesslog.Options{LoggedInCookie: "wikiUserID="}, nil,
		func(batch []sources.Request) error { reqs = append(reqs, batch...); return nil }); err != nil {
		b.Fatal(err)
	}
	return reqs
}

// BenchmarkObserveLog is Observe over the log, with analyze's window of
// the benchmark log.
func BenchmarkObserveLog(b *testing.B) {
	reqs := observeLogRequests(b)
	site := sources.Site{ClientTimeoutS: 10, HealthURI: "/healthz.php"}
	from, to := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC), time.Date(2026, 10, 3, 3, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := benchref.CPUTime()
	for b.Loop() {
		tr := NewTraffic(site, from, to)
		for i := range reqs {
			tr.Observe(&reqs[i])
		}
	}
	reportPerRequest(b, benchref.CPUTime()-cpu0, len(reqs))
}

// BenchmarkTemplateLog is the route table's template of every request,
// without the memo of targets in front of it.
func BenchmarkTemplateLog(b *testing.B) {
	reqs := observeLogRequests(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := benchref.CPUTime()
	for b.Loop() {
		tab := newRouteTable()
		for i := range reqs {
			tab.template(reqs[i].Path, reqs[i].Query)
		}
	}
	reportPerRequest(b, benchref.CPUTime()-cpu0, len(reqs))
}

// BenchmarkClassifyLog is the path class of every request, without the
// memo of targets in front of it.
func BenchmarkClassifyLog(b *testing.B) {
	reqs := observeLogRequests(b)
	var scratch []byte
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := benchref.CPUTime()
	for b.Loop() {
		for i := range reqs {
			request.ClassifyPathScratch(reqs[i].Path, reqs[i].Query, "/healthz.php", &scratch)
		}
	}
	reportPerRequest(b, benchref.CPUTime()-cpu0, len(reqs))
}

// BenchmarkTemplateMatcherLog is what the rules' profile pass asks of a
// TemplateMatcher (rules' costlyRoutes): the request's route among the
// expensive ones of the log's crawler, for every request not an asset or a
// health check.
func BenchmarkTemplateMatcherLog(b *testing.B) {
	reqs := observeLogRequests(b)
	var asked []sources.Request
	for _, r := range reqs {
		if c := request.ClassifyPath(r.Path, r.Query, "/healthz.php"); c != request.ClassAsset && c != request.ClassHealth {
			asked = append(asked, r)
		}
	}
	templates := []string{"/w/Special:WhatLinksHere/{slug}", "/index.php?title", "/index.php?action=history&title"}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := benchref.CPUTime()
	for b.Loop() {
		m := NewTemplateMatcher(templates)
		for i := range asked {
			m.Match(asked[i].Path, asked[i].Query)
		}
	}
	reportPerRequest(b, benchref.CPUTime()-cpu0, len(asked))
}
