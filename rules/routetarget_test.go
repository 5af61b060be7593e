package rules

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// TestRouteTargets: each measured template becomes a target that real Caddy
// matchers apply to the requests under it, and not to their cheap neighbours.
func TestRouteTargets(t *testing.T) {
	tests := []struct {
		template string
		want     Target
		match    []string // request targets the zone must match
		miss     []string // and must not
	}{
		{"/?s", Target{QueryKey: "s", QueryValues: []string{"*"}},
			[]string{"/?s=caddy", "/category/news/?s=x"}, []string{"/", "/2026/10/a/"}},
		{"/{n}/{n}/{slug}/?replytocom", Target{QueryKey: "replytocom", QueryValues: []string{"*"}},
			[]string{"/2026/10/hello-world-again/?replytocom=4121"}, []string{"/2026/10/hello-world-again/"}},
		{"/wp-json/wp/v2/search?per_page&search", Target{Paths: []string{"/wp-json/wp/v2/search", "/wp-json/wp/v2/search/"}},
			[]string{"/wp-json/wp/v2/search?search=php", "/wp-json/wp/v2/search/?per_page=10&search=x"}, []string{"/wp-json/wp/v2/posts?per_page=10"}},
		{"/index.php?route=checkout&token", Target{QueryKey: "route", QueryValues: []string{"checkout"}},
			[]string{"/index.php?route=checkout&token=abc"}, []string{"/index.php?route=home"}},
		{"/node/{n}/edit", Target{Paths: []string{"/node/*/edit"}},
			[]string{"/node/12/edit"}, []string{"/node/12", "/node/12/view"}},
		{"/", Target{Paths: []string{"/"}}, []string{"/", "/?utm=x"}, []string{"/about"}},
	}
	var zones []Zone
	for i, tt := range tests {
		got, ok := routeTarget(tt.template)
		if !ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("routeTarget(%q) = %+v, %v; want %+v", tt.template, got, ok, tt.want)
			continue
		}
		zones = append(zones, Zone{Name: "z" + string(rune('a'+i)), Window: time.Minute, Events: 1, Targets: []Target{got}})
	}
	for _, bad := range []string{"/{slug}", "/?{token}", "/x y/{n}", "/a/{n}?k%7B=v"} {
		if tg, ok := routeTarget(bad); ok {
			t.Errorf("routeTarget(%q) = %+v, want refused", bad, tg)
		}
	}
	if t.Failed() {
		return
	}
	m := caddyMatchers(t, zones)
	for i, tt := range tests {
		for _, uri := range append(slices.Clone(tt.match), tt.miss...) {
			p, q, _ := strings.Cut(uri, "?")
			mask, err := m.match(&sources.Request{Method: "GET", Path: p, Query: q, Status: 200})
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Contains(tt.match, uri)
			if got := mask&(1<<i) != 0; got != want {
				t.Errorf("zone for %q on %q: matched %v, want %v", tt.template, uri, got, want)
			}
		}
	}
}

// wordPressCrawl is the simulated WordPress incident of TestWordPressRule
// and TestProfileKeepsCopiesOfBorrowedTargets (sharedInput).
var wordPressCrawl = simulate.Options{Scenario: "wordpress-search-crawl", Seed: 1, BaselineHours: 3}

// TestWordPressRule: on the simulated WordPress incident the rule matches the
// crawler's search and comment-reply templates (measured as expensive, not
// named), Caddy adapts it, and the backtest refuses the crawl and spares
// ordinary and logged-in readers.
func TestWordPressRule(t *testing.T) {
	p, err := Propose(context.Background(), sharedInput(t, wordPressCrawl))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules) == 0 {
		t.Fatalf("no rule; notes %v", p.DataQuality)
	}
	if err := Validate(p.Caddyfile); err != nil {
		t.Fatalf("Caddy rejects the rules: %v\n%s", err, p.Caddyfile)
	}
	for _, want := range []string{"query s=*", "query replytocom=*", "path /wp-json/wp/v2/search"} {
		if !strings.Contains(p.Caddyfile, want) {
			t.Errorf("rule lacks %q:\n%s", want, p.Caddyfile)
		}
	}
	bt := p.Backtest
	if bt.CrawlerRefusedShare < 0.9 {
		t.Errorf("refused %.1f%% of the crawler, want >= 90%%", 100*bt.CrawlerRefusedShare)
	}
	if bt.LoggedInRequests == 0 || bt.LoggedInRefused != 0 {
		t.Errorf("refused %d of %d logged-in requests", bt.LoggedInRefused, bt.LoggedInRequests)
	}
	if bt.OtherLoggedOutRefusedShare > 0.02 {
		t.Errorf("refused %.2f%% of other logged-out requests", 100*bt.OtherLoggedOutRefusedShare)
	}
}

// caddyMatchers are zones' matchers as Caddy's own adapter and matcher
// modules build them from the generated Caddyfile (no logged-in cookie),
// closed when t ends.
func caddyMatchers(t *testing.T, zones []Zone) *zoneMatchers {
	t.Helper()
	_, m := adaptedZoneMatchers(t, zones, "")
	return m
}

// adaptedZoneMatchers prints zones, has Caddy adapt and validate them, and
// loads their matchers with the site's logged-in cookie pattern: the adapted
// zones and the matchers, closed when t ends.
func adaptedZoneMatchers(t testing.TB, zones []Zone, cookiePattern string) (map[string]adaptedZone, *zoneMatchers) {
	t.Helper()
	snippet, err := Caddyfile(zones)
	if err != nil {
		t.Fatal(err)
	}
	adapted, err := validateZones(snippet, zones)
	if err != nil {
		t.Fatalf("%v\n%s", err, snippet)
	}
	m, err := loadMatchers(adapted, zones, cookiePattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.close)
	return adapted, m
}
