package detect

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// TestCrawlerClientsPerSlash64: an IPv6 crawler that draws a new address
// for every request inside 40 /64s is 6,000 addresses but 40 hosts; the
// obvious count (addresses) calls it a crawler of thousands. One spread
// over 6,000 /64s, an address each, is 6,000 clients; an IPv4 and IPv6 mix
// counts each family in its unit. distinct_ips stays the addresses (what a
// per-address limit sees), clients and client_ipv6_prefix_bits say the
// hosts and their unit; an IPv4 crawler states no IPv6 unit.
func TestCrawlerClientsPerSlash64(t *testing.T) {
	readers := shape{ua: chrome125, lang: "ko-kr", loggedIn: sources.LoggedInNo, ips: fewIPs, status: 200, origin: sources.OriginUpstream, dur: 0.1,
		paths: []string{"/w/A", "/static/skin.css", "/static/wiki.js", "/w/B"}}
	tools := []string{"/w/index.php?title=X&action=edit", "/w/Special:WhatLinksHere/X", "/w/index.php?title=Y&action=history"}
	tests := []struct {
		name    string
		ips     func(i int) string
		clients int
		words   string
	}{
		{"rotating inside 40 /64s", func(i int) string { return fmt.Sprintf("2001:db8:%x::%x:7", i%40, i/40+1) },
			40, "40 clients (6,000 addresses, each IPv6 /64 counted as one client)"},
		{"an address in each of 6,000 /64s", func(i int) string { return fmt.Sprintf("2001:db8:%x:%x::7", i/250, i%250) },
			6000, "6,000 addresses"},
		{"IPv4 addresses and rotating IPv6", func(i int) string {
			if i%2 == 0 {
				return spreadIPs(i / 2)
			}
			return fmt.Sprintf("2001:db8:%x::%x:7", i%20, i/20+1)
		}, 3000 + 10, "3,010 clients (6,000 addresses"},
		{"IPv4 only", spreadIPs, 6000, "6,000 addresses"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crawl := shape{ua: chrome121, lang: "zh-cn", loggedIn: sources.LoggedInNo, ips: tt.ips, status: 200,
				origin: sources.OriginUpstream, dur: 0.3, paths: tools}
			tr := NewTraffic(sources.Site{}, t0, t0.Add(time.Hour))
			feed(tr, readers, t0.Add(-3*time.Hour), 4*time.Hour, 24000)
			feed(tr, crawl, t0.Add(15*time.Minute), 30*time.Minute, 6000)
			ev := &Evidence{From: t0, To: t0.Add(time.Hour), Traffic: tr, Loc: time.UTC}
			fs, check, err := crawlerDetector{}.Detect(context.Background(), ev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) != 1 {
				t.Fatalf("%d crawler findings, want 1: %s", len(fs), check.Reason)
			}
			f := fs[0]
			facts := FactsOf[CrawlerBurstFacts](&f)
			wantV6 := Some(request.ClientIPv6Bits)
			if tt.name == "IPv4 only" {
				wantV6 = Maybe[int]{}
			}
			if facts.DistinctIPs != 6000 || facts.Clients != tt.clients || facts.ClientIPv6PrefixBits != wantV6 {
				t.Errorf("%d addresses, %d clients (IPv6 per %+v); want 6000 addresses, %d clients (IPv6 per %+v)",
					facts.DistinctIPs, facts.Clients, facts.ClientIPv6PrefixBits, tt.clients, wantV6)
			}
			if !strings.Contains(f.Summary, tt.words) {
				t.Errorf("summary %q does not say %q", f.Summary, tt.words)
			}
		})
	}
}

// TestNetworksOfInAnyOrder: a crawl's addresses come out of a map in no
// order, and one /24 or /64 is counted once however its addresses are
// spread through it: IPv4 addresses taken round-robin over 30 /24s, the
// same addresses again IPv4-mapped (the same clients), and IPv6 ones
// rotating inside 40 /64s, interleaved. Counting where a network differs
// from the address before, unsorted, counts nearly every address; the
// counts here are those of the sets ClientOf and Prefix make.
func TestNetworksOfInAnyOrder(t *testing.T) {
	var addrs []netip.Addr
	for i := range 3000 {
		j := i / 3
		switch i % 3 {
		case 0:
			addrs = append(addrs, netip.MustParseAddr(fmt.Sprintf("198.51.%d.%d", j%30, j/30+1)))
		case 1:
			addrs = append(addrs, netip.MustParseAddr(fmt.Sprintf("::ffff:198.51.%d.%d", j%30, j/30+1)))
		default:
			addrs = append(addrs, netip.MustParseAddr(fmt.Sprintf("2001:db8:%x::%x:7", i%40, i/40+1)))
		}
	}
	clients, prefixes := map[netip.Prefix]bool{}, map[netip.Prefix]bool{}
	for _, a := range addrs {
		clients[request.ClientOf(a)], prefixes[request.Prefix(a)] = true, true
	}
	got := networksOf(slices.Values(addrs), len(addrs))
	want := networks{v4: 2000, v6: 1000, clients: len(clients), prefixes4: 30, prefixes6: 40}
	if got != want || got.prefixes() != len(prefixes) {
		t.Errorf("networks %+v (%d prefixes), want %+v (%d)", got, got.prefixes(), want, len(prefixes))
	}
	if got.clients != 1000+40 {
		t.Errorf("%d clients, want 1,040: the mapped addresses are the plain ones' clients", got.clients)
	}
	if none := networksOf(slices.Values([]netip.Addr(nil)), 0); none != (networks{}) {
		t.Errorf("networks of no addresses %+v", none)
	}
}
