package rules

import (
	"fmt"
	"maps"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// TestOrdinaryAgentMemo: observeOrdinary remembers what it derived from an
// agent (ordinaryAgent), and must count exactly as deriving it for every
// request does. The agents below are all of one length and differ only in
// their version, and there are more of them than the memo has slots, so
// slots are shared: a memo that took a slot's agent for another of the same
// length (or did not compare them at all) would count one version's
// requests under another's. Each crawler has its own token, so a memo shared
// between crawlers would answer one with the other's versions.
func TestOrdinaryAgentMemo(t *testing.T) {
	var agents []string
	for v := 100; v < 100+3*request.AddressMemoSlots; v++ {
		agents = append(agents, fmt.Sprintf("Mozilla/5.0 (X11) Chrome/%d.0 Safari/537.36", v))
		agents = append(agents, fmt.Sprintf("Mozilla/5.0 (X11) Gecko Firefox/%d.0", v))
	}
	newEvidence := func() *crawlerEvidence {
		return &crawlerEvidence{Ordinary: map[string]*[8]int{}, OrdinaryVer: map[string]map[string]*[8]int{}, OrdinaryAllVer: map[string]*[8]int{}}
	}
	tokens := []string{"Chrome/", "Firefox/"}
	memo := []*crawlerEvidence{newEvidence(), newEvidence()}
	// The reference derives every request's version and counts it with
	// versionCounts, as observeOrdinary did before it remembered agents.
	want := []map[string]*[8]int{{}, {}}
	wantAll := make([][8]int, len(tokens))
	// Three rounds, in another order each: agents come back after others
	// took their slots.
	for round := range 3 {
		for i := range agents {
			ua := agents[(i*(2*round+1))%len(agents)]
			r := &sources.Request{UserAgent: ua, SecChUa: true}
			for j, token := range tokens {
				memo[j].observeOrdinary(r, "", false, token)
				mask := 0
				held, ver := tokenVersion(ua, token)
				if held {
					mask |= condUA
				}
				versionCounts(want[j], ver)[mask]++
				wantAll[j][mask]++
			}
		}
	}
	for j, token := range tokens {
		if len(want[j]) != maxVersionKeys {
			t.Fatalf("%s: %d versions: the bound on versions is not reached", token, len(want[j]))
		}
		same := maps.EqualFunc(memo[j].OrdinaryAllVer, want[j], func(a, b *[8]int) bool { return *a == *b })
		if !same {
			t.Errorf("%s: the counts by version differ from deriving every request's", token)
		}
		if memo[j].OrdinaryAll != wantAll[j] {
			t.Errorf("%s: OrdinaryAll %v, want %v", token, memo[j].OrdinaryAll, wantAll[j])
		}
	}
}

// TestCrawlerFinder: the profile pass finds a request's crawler by its
// language first (crawlerFinder), and must find the one crawlerIndex finds
// for every request. An actor joined over several fingerprints
// (crawlerRef.members) has requests in its members' languages too, none
// among them included: a finder that knew only the largest fingerprint's
// language would miss them.
func TestCrawlerFinder(t *testing.T) {
	refs := []crawlerRef{
		{key: request.ClusterKey{UA: "Chrome", Lang: "zh-cn", LoggedIn: sources.LoggedInNo, NoClientHints: true}},
		{key: request.ClusterKey{UA: "Safari", Lang: "ko-kr", LoggedIn: sources.LoggedInNo}, members: []request.ClusterKey{
			{UA: "Safari", Lang: "ko-kr", LoggedIn: sources.LoggedInNo},
			{UA: "Firefox", Lang: "ja", LoggedIn: sources.LoggedInNo},
			{UA: "Firefox", Lang: "", LoggedIn: sources.LoggedInNo},
		}},
	}
	f := newCrawlerFinder(refs)
	found := map[int]int{}
	for _, ua := range []string{uaChrome, uaSafari, uaFirefox} {
		for _, lang := range []string{"zh-cn", "ko-kr", "ja", "", "de"} {
			for _, login := range []sources.LoggedIn{sources.LoggedInNo, sources.LoggedInYes} {
				for _, hints := range []bool{false, true} {
					r := &sources.Request{UserAgent: ua, Lang: lang, LoggedIn: login, TLS: true, SecChUa: hints}
					want := crawlerIndex(refs, request.Key(r))
					if got := f.index(r); got != want {
						t.Errorf("%.30s, %q, %v, hints %v: crawler %d, want %d", ua, lang, login, hints, got, want)
					}
					found[want]++
				}
			}
		}
	}
	if found[0] == 0 || found[1] < 3 {
		t.Errorf("found %v: the requests do not reach every crawler and member", found)
	}
}
