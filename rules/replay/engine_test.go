package replay

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/rules/replay/replayreport"
	"github.com/aftermath-forensics/aftermath/sources"
)

// rawServer accepts connections and hands each, after its request line and
// headers were read, to handle.
func rawServer(t *testing.T, handle func(c net.Conn, req *http.Request)) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					c.Close()
					return
				}
				handle(c, req)
			}()
		}
	}()
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

func onePlan(reqs ...sources.Request) *Plan {
	p := &Plan{Speed: 1, From: time.Unix(0, 0), To: time.Unix(1, 0), LoggedInCookie: "wikiUserID="}
	for i, r := range reqs {
		if r.Path == "" {
			r.Path = "/w/index.php"
		}
		if !r.ClientIP.IsValid() {
			r.ClientIP = netip.MustParseAddr("203.0.113.7")
		}
		p.Shots = append(p.Shots, Shot{Offset: time.Duration(i) * time.Millisecond, Request: r, Class: replayreport.ClassOtherLoggedOut})
	}
	return p
}

func runOne(t *testing.T, target *url.URL, o Options) replayreport.Counts {
	t.Helper()
	o.Target = target
	if o.ClientTimeout == 0 {
		o.ClientTimeout = 300 * time.Millisecond
	}
	if o.LateWindow == 0 {
		o.LateWindow = time.Second
	}
	o.MaxLag = time.Second
	res, err := Run(context.Background(), onePlan(sources.Request{}), o)
	if err != nil {
		t.Fatal(err)
	}
	return res.Classes[replayreport.ClassOtherLoggedOut]
}

// TestOutcomes: each failure keeps its own name, and the obvious reading is
// wrong twice: a 200 after the client's timeout is late, not goodput, and a
// 503 is the server's answer, not a transport error.
func TestOutcomes(t *testing.T) {
	answer := func(status int, after time.Duration) func(net.Conn, *http.Request) {
		return func(c net.Conn, _ *http.Request) {
			time.Sleep(after)
			resp := &http.Response{StatusCode: status, ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}, Body: http.NoBody, ContentLength: 0, Close: true}
			resp.Write(c)
			c.Close()
		}
	}
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	refusedURL := &url.URL{Scheme: "http", Host: closed.Addr().String()}
	closed.Close()
	cases := []struct {
		name   string
		target *url.URL
		check  func(c replayreport.Counts) bool
	}{
		{"200 in time is goodput", rawServer(t, answer(200, 0)), func(c replayreport.Counts) bool { return c.Goodput() == 1 }},
		{"200 after the timeout is late", rawServer(t, answer(200, 450*time.Millisecond)), func(c replayreport.Counts) bool { return c.Late[200] == 1 && c.Goodput() == 0 }},
		{"503 is an answer", rawServer(t, answer(503, 0)), func(c replayreport.Counts) bool { return c.Answered[503] == 1 && c.ProxyErrors() == 1 && c.EOF == 0 }},
		{"429 is a refusal", rawServer(t, answer(429, 0)), func(c replayreport.Counts) bool { return c.RateLimited() == 1 }},
		{"silence is a timeout", rawServer(t, func(c net.Conn, _ *http.Request) { time.Sleep(3 * time.Second); c.Close() }), func(c replayreport.Counts) bool { return c.Timeout == 1 }},
		{"a close is EOF", rawServer(t, func(c net.Conn, _ *http.Request) { c.Close() }), func(c replayreport.Counts) bool { return c.EOF == 1 }},
		{"a reset is a reset", rawServer(t, func(c net.Conn, _ *http.Request) {
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}), func(c replayreport.Counts) bool { return c.Reset == 1 }},
		{"nothing listening is refused", refusedURL, func(c replayreport.Counts) bool { return c.Refused == 1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := runOne(t, tc.target, Options{Loopback: true})
			if c.Sent != 1 || !tc.check(c) {
				t.Errorf("got %+v", c)
			}
		})
	}
}

// TestRequestAsRecorded: the target sees the recorded method, path and
// query byte for byte, the Host, the headers the matchers read, a
// placeholder cookie for the logged-in (never the REDACTED value as a
// session), and each client from its own loopback address.
func TestRequestAsRecorded(t *testing.T) {
	var mu sync.Mutex
	got := map[string]*http.Request{}
	remote := map[string]string{}
	target := rawServer(t, func(c net.Conn, r *http.Request) {
		mu.Lock()
		got[r.Header.Get("User-Agent")] = r
		remote[r.Header.Get("User-Agent")] = c.RemoteAddr().String()
		mu.Unlock()
		(&http.Response{StatusCode: 200, ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}, Body: http.NoBody, Close: true}).Write(c)
		c.Close()
	})
	a := sources.Request{Method: "GET", Host: "wiki.example.org", Path: "/w/index.php", Query: "title=Special:WhatLinksHere/%E4%B8%AD&limit=500",
		UserAgent: "crawler-a", Lang: "zh-cn", ClientIP: netip.MustParseAddr("198.51.100.23"), LoggedIn: sources.LoggedInNo}
	b := sources.Request{Method: "POST", Host: "wiki.example.org", Path: "/w/Special:Search%20x", UserAgent: "editor-b",
		ClientIP: netip.MustParseAddr("198.51.100.24"), LoggedIn: sources.LoggedInYes, HasCookie: true}
	c := sources.Request{Method: "GET", Host: "wiki.example.org", Path: "/wiki/Main_Page", UserAgent: "reader-c",
		ClientIP: netip.MustParseAddr("192.0.2.9"), LoggedIn: sources.LoggedInUnknown, HasCookie: true}
	p := onePlan(a, b, c)
	res, err := Run(context.Background(), p, Options{Target: target, Loopback: true, ClientTimeout: time.Second, LateWindow: time.Second, MaxLag: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Classes[replayreport.ClassOtherLoggedOut].Goodput() != 3 {
		t.Fatalf("%+v", res.Classes[replayreport.ClassOtherLoggedOut])
	}
	ra, rb, rc := got["crawler-a"], got["editor-b"], got["reader-c"]
	if ra.RequestURI != "/w/index.php?title=Special:WhatLinksHere/%E4%B8%AD&limit=500" || ra.Host != "wiki.example.org" || ra.Header.Get("Accept-Language") != "zh-cn" {
		t.Errorf("a: %s %q host %q lang %q", ra.Method, ra.RequestURI, ra.Host, ra.Header.Get("Accept-Language"))
	}
	if ra.Header.Get("Cookie") != "" || ra.Header.Get("X-Forwarded-For") != "" {
		t.Errorf("a: cookie %q, forwarded %q", ra.Header.Get("Cookie"), ra.Header.Get("X-Forwarded-For"))
	}
	if rb.Method != "POST" || rb.RequestURI != "/w/Special:Search%20x" || !strings.Contains(rb.Header.Get("Cookie"), "wikiUserID=") {
		t.Errorf("b: %s %q cookie %q", rb.Method, rb.RequestURI, rb.Header.Get("Cookie"))
	}
	if strings.Contains(rc.Header.Get("Cookie"), "wikiUserID=") {
		t.Errorf("c: an unreadable cookie must not become a session: %q", rc.Header.Get("Cookie"))
	}
	ha, _, _ := net.SplitHostPort(remote["crawler-a"])
	hb, _, _ := net.SplitHostPort(remote["editor-b"])
	hc, _, _ := net.SplitHostPort(remote["reader-c"])
	pa, pb, pc := netip.MustParseAddr(ha), netip.MustParseAddr(hb), netip.MustParseAddr(hc)
	if pa == pb || !pa.IsLoopback() || netip.PrefixFrom(pa, 24).Masked() != netip.PrefixFrom(pb, 24).Masked() || netip.PrefixFrom(pa, 24).Masked() == netip.PrefixFrom(pc, 24).Masked() {
		t.Errorf("sources: a %s, b %s (same /24 recorded), c %s (another /24)", pa, pb, pc)
	}

	// Off loopback the address travels in the named header.
	res, err = Run(context.Background(), onePlan(a), Options{Target: target, ForwardedHeader: "X-Real-Client", ClientTimeout: time.Second, LateWindow: time.Second, MaxLag: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if h := got["crawler-a"].Header.Get("X-Real-Client"); h != "198.51.100.23" {
		t.Errorf("forwarded header %q", h)
	}
}

// TestInterrupt: Ctrl-C stops the run; what was in flight is counted as
// stopped (not the server's doing), the rest as unsent, and the report is
// still whole.
func TestInterrupt(t *testing.T) {
	target := hungListener(t)
	p := onePlan()
	for i := range 100 {
		p.Shots = append(p.Shots, Shot{Offset: time.Duration(i) * 20 * time.Millisecond, Request: sources.Request{Path: "/", ClientIP: netip.MustParseAddr("192.0.2.1")}, Class: replayreport.ClassCrawler})
	}
	p.To = p.From.Add(2 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	opt := Options{Target: target, Loopback: true, ClientTimeout: 10 * time.Second, LateWindow: time.Second, MaxLag: time.Second}
	res, err := Run(ctx, p, opt)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Classes[replayreport.ClassCrawler]
	if res.Stopped != "interrupted" || res.Unsent == 0 || c.Stopped == 0 || c.Timeout != 0 || c.Stopped+res.Unsent != 100 {
		t.Errorf("stopped %q, unsent %d, %+v", res.Stopped, res.Unsent, c)
	}
	rep := NewReport(ReportInput{Plan: p, Options: opt, Result: res})
	if rep.Stopped == "" || rep.Unsent == 0 {
		t.Errorf("the report must say the run stopped early: stopped %q, unsent %d", rep.Stopped, rep.Unsent)
	}
}

func TestLoopbackSources(t *testing.T) {
	l := newLoopbackSources()
	a := l.source(netip.MustParseAddr("203.0.113.5"))
	b := l.source(netip.MustParseAddr("203.0.113.6"))
	c := l.source(netip.MustParseAddr("198.51.100.5"))
	d := l.source(netip.MustParseAddr("2001:db8:1:2::5"))
	e := l.source(netip.MustParseAddr("2001:db8:1:2::6"))
	z := l.source(netip.MustParseAddr("203.0.113.0"))
	if a == b || a.As4()[3] != 5 || b.As4()[3] != 6 || netip.PrefixFrom(a, 24).Masked() != netip.PrefixFrom(b, 24).Masked() {
		t.Errorf("one /24: %s %s", a, b)
	}
	if netip.PrefixFrom(a, 24).Masked() == netip.PrefixFrom(c, 24).Masked() {
		t.Errorf("two /24s share one: %s %s", a, c)
	}
	if netip.PrefixFrom(d, 24).Masked() != netip.PrefixFrom(e, 24).Masked() || d == e {
		t.Errorf("one /64: %s %s", d, e)
	}
	for _, s := range []netip.Addr{a, b, c, d, e, z} {
		if !s.Is4() || s.As4()[0] != 127 || s.As4()[1] == 0 || s.As4()[3] == 0 || s.As4()[3] == 255 {
			t.Errorf("%s is not a usable loopback source outside 127.0.0.0/24", s)
		}
	}
	if l.source(netip.MustParseAddr("203.0.113.5")) != a {
		t.Errorf("a client keeps its address")
	}
	if l.Merged != 0 || l.distinct() != 6 {
		t.Errorf("merged %d, distinct %d", l.Merged, l.distinct())
	}
	// .1 and .0 of one /24: .0 moves to .1 and shares it, which is counted.
	l.source(netip.MustParseAddr("203.0.113.1"))
	if l.Merged != 1 {
		t.Errorf("a shared source must be counted: merged %d", l.Merged)
	}
}
