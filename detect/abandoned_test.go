package detect

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// TestClientLeftIsAbandonedWork: a Caddy line with status 0 (499 where
// Caddy names it) is a client that closed the connection before PHP
// answered, at any time, not a quiet answer of no status. The obvious
// reading files it with the static answers and counts nothing abandoned;
// PHP ran on for nobody, so it is abandoned work beside the late 504s.
func TestClientLeftIsAbandonedWork(t *testing.T) {
	ev := &Evidence{From: t0, To: t0.Add(2 * time.Hour), Loc: time.UTC, Site: sources.Site{Workers: 16, ClientTimeoutS: 10}}
	ev.Traffic = NewTraffic(ev.Site, ev.From, ev.To)
	ok := shape{ua: firefox, ips: spreadIPs, status: 200, origin: sources.OriginUpstream, dur: 0.2, paths: []string{"/w/A", "/w/B"}}
	feed(ev.Traffic, ok, t0, 2*time.Hour, 2400)
	incident := t0.Add(60 * time.Minute)
	late := shape{ua: firefox, ips: spreadIPs, status: 504, origin: sources.OriginProxy, dur: 10.01, paths: []string{"/w/A"}}
	feed(ev.Traffic, late, incident, 20*time.Minute, 200)
	// Clients that gave up before Caddy's read timeout: logged as 0, at
	// 3 to 6 s, and as 499 by a Caddy that names it.
	left := shape{ua: firefox, ips: spreadIPs, status: 0, origin: sources.OriginStatic, dur: 4, paths: []string{"/w/B"}}
	feed(ev.Traffic, left, incident, 20*time.Minute, 120)
	named := shape{ua: firefox, ips: spreadIPs, status: statusClientClosed, origin: sources.OriginStatic, dur: 6, paths: []string{"/w/A"}}
	feed(ev.Traffic, named, incident, 20*time.Minute, 30)
	fs, check, err := abandonedDetector{}.Detect(context.Background(), ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 {
		t.Fatalf("findings %+v, check %+v: want one client_abandoned_work", fs, check)
	}
	facts := FactsOf[AbandonedWorkFacts](&fs[0])
	if facts.Requests != 350 || facts.ClientLeft != Some(150) {
		t.Errorf("requests %d, client_left %+v: want 350 abandoned, 150 of them left before PHP answered", facts.Requests, facts.ClientLeft)
	}
	if !strings.Contains(fs[0].Summary, "150 of them closed the connection before PHP answered") {
		t.Errorf("summary %q does not say the clients that left", fs[0].Summary)
	}
}
