package replay

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/rules/replay/replayreport"
	"github.com/aftermath-forensics/aftermath/sources"
)

func TestNewPlan(t *testing.T) {
	from := time.Date(2026, 10, 2, 17, 0, 0, 0, time.UTC)
	crawlerUA := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"
	req := func(endS, durS float64, path, ua, lang string, login sources.LoggedIn) sources.Request {
		return sources.Request{Time: from.Add(time.Duration(endS * float64(time.Second))), Duration: durS, Path: path, UserAgent: ua, Lang: lang,
			LoggedIn: login, ClientIP: netip.MustParseAddr("203.0.113.9"), Method: "GET", Status: 200}
	}
	reqs := []sources.Request{
		req(5, 0.1, "/w/Special:WhatLinksHere/A", crawlerUA, "zh-cn", sources.LoggedInNo),
		// Logged after the first but arrived 4 s before it: sent first.
		req(6, 5, "/w/index.php", "Mozilla/5.0 Firefox/128.0", "de", sources.LoggedInYes),
		req(7, 0.01, "/healthz.php", "", "", sources.LoggedInNo),
		req(8, 0.2, "/wiki/A", "Mozilla/5.0 Firefox/128.0", "en-us", sources.LoggedInNo),
		// Arrived before the window: its log line is inside, its request is not.
		req(1, 2, "/wiki/B", "Mozilla/5.0 Firefox/128.0", "en-us", sources.LoggedInNo),
		req(61, 0.1, "/wiki/C", "Mozilla/5.0 Firefox/128.0", "en-us", sources.LoggedInNo),
	}
	key := request.Key(&reqs[0])
	findings := []detect.Finding{{Kind: detect.KindCrawlerBurst, Cluster: &key}}
	read := func(ctx context.Context, sink func([]sources.Request) error) error { return sink(reqs) }
	site := sources.Site{HealthURI: "/healthz.php", LoggedInCookie: "wikiUserID="}
	p, err := NewPlan(context.Background(), read, PlanOptions{From: from, To: from.Add(time.Minute), Speed: 10, Findings: findings, Site: site, MaxRequests: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Shots) != 3 || p.HealthChecks != 1 {
		t.Fatalf("shots %d, health checks %d", len(p.Shots), p.HealthChecks)
	}
	if p.Shots[0].Class != replayreport.ClassLoggedIn || p.Shots[0].Offset != 100*time.Millisecond {
		t.Errorf("first: %v at %s, want the logged-in request that arrived at 1 s, sent at 0.1 s", p.Shots[0].Class, p.Shots[0].Offset)
	}
	if p.Shots[1].Class != replayreport.ClassCrawler || p.Shots[1].Offset != 490*time.Millisecond || p.Shots[2].Class != replayreport.ClassOtherLoggedOut {
		t.Errorf("then: %v at %s, %v", p.Shots[1].Class, p.Shots[1].Offset, p.Shots[2].Class)
	}
	if p.Duration() != 6*time.Second {
		t.Errorf("a minute at 10x lasts 6 s, got %s", p.Duration())
	}

	only, err := NewPlan(context.Background(), read, PlanOptions{From: from, To: from.Add(time.Minute), Speed: 1, Only: OnlyOthers, Findings: findings, Site: site, MaxRequests: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(only.Shots) != 1 || only.Excluded != 1 || only.OverLimit != 1 || only.Shots[0].Class != replayreport.ClassLoggedIn {
		t.Errorf("--only others, one request at most: %d shots, %d excluded, %d over the limit", len(only.Shots), only.Excluded, only.OverLimit)
	}
	if _, err := NewPlan(context.Background(), read, PlanOptions{From: from, To: from, Speed: 1, MaxRequests: 1}); err == nil {
		t.Errorf("an empty window must be refused")
	}
}
