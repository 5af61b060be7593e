package rules

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
)

func sampleOf(values func(i int) string, n int) *valueSample {
	s := &valueSample{}
	for i := range n {
		s.add(values(i))
	}
	return s
}

func hex32(i int) string {
	return fmt.Sprintf("%016x%016x", uint64(i)*0x9e3779b97f4a7c15, uint64(i+7)*0xbf58476d1ce4e5b9)
}

var searchWords = []string{"caddy", "php fpm", "backlog", "wordpress cache", "listen queue", "rate limit", "502 bad gateway", "nginx vs caddy"}

func words(i int) string { return searchWords[i%len(searchWords)] + fmt.Sprint(" ", i%13) }

// TestValuePattern: a pattern is proposed only where the crawler's values
// have a shape the ordinary ones lack, and the data is enough to say so.
func TestValuePattern(t *testing.T) {
	tests := []struct {
		name                string
		crawler, ordinary   *valueSample
		want                string // "" for none: query key=* stands
		crawlerN, ordinaryN int
	}{
		{"hex tokens where readers type words", sampleOf(hex32, 500), sampleOf(func(i int) string {
			if i == 0 {
				return hex32(9999) // one reader pasted a token: under maxMisses
			}
			return words(i)
		}, 300), `^[0-9a-f]{32}$`, 0, 0},
		// replytocom ids: readers' are numbers too; a pattern would hold them all.
		{"numbers where readers send numbers", sampleOf(func(i int) string { return fmt.Sprint(4000 + i%900) }, 500),
			sampleOf(func(i int) string { return fmt.Sprint(4000 + i%300) }, 80), "", 0, 0},
		{"words where readers type words", sampleOf(words, 500), sampleOf(words, 300), "", 0, 0},
		{"no ordinary request carries the key", sampleOf(hex32, 500), nil, "", 0, 0},
		{"too few crawler requests to call it a shape", sampleOf(hex32, 40), sampleOf(words, 300), "", 0, 0},
		{"too few distinct values: a list, not a shape", sampleOf(func(i int) string { return hex32(i % 5) }, 500), sampleOf(words, 300), "", 0, 0},
		{"Han search spam where readers write Hangul and English", sampleOf(func(i int) string { return fmt.Sprintf("澳门 博彩 %d 官网", i) }, 500),
			sampleOf(func(i int) string { return []string{"카디 설정", "php 오류", "caddy"}[i%3] }, 300), `\p{Han}`, 0, 0},
		{"a shared prefix", sampleOf(func(i int) string { return fmt.Sprintf("seo-buy cheap %d!", i) }, 500), sampleOf(words, 300), `^seo-buy`, 0, 0},
		// A value is the client's text: braces (a Caddyfile placeholder)
		// never enter a pattern as a literal.
		{"a shared prefix with a placeholder in it", sampleOf(func(i int) string { return fmt.Sprintf("{$SECRET} %d!", i) }, 500), sampleOf(words, 300), "", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why, ok := valuePattern("s", tt.crawler, tt.ordinary)
			if got != tt.want || ok != (tt.want != "") {
				t.Fatalf("pattern %q (%v), want %q", got, ok, tt.want)
			}
			if ok && !strings.Contains(why.String(), got) {
				t.Errorf("why %q does not name the pattern", why)
			}
		})
	}
}

// TestValuePatternRule: a crawler walks WordPress search with tokens for
// terms while readers search words. With its values sampled, the zone
// matches the crawler's shape with vars_regexp, Caddy's adapter takes it, and
// the backtest (Caddy's own matchers) refuses the crawl and no reader's
// search. When the crawler searches words like the readers, nothing tells
// them apart and the zone stays `query s=*`.
func TestValuePatternRule(t *testing.T) {
	if testing.Short() {
		t.Skip("hand-built recording in -short mode")
	}
	crawler := reader{ua: "Mozilla/5.0 (compatible; Crawly/1.0)"}
	for _, tc := range []struct {
		name    string
		term    func(rng *rand.Rand) string
		pattern bool
	}{
		{"tokens for terms", func(rng *rand.Rand) string { return hex32(rng.IntN(1 << 30)) }, true},
		{"words like the readers'", func(rng *rand.Rand) string { return strings.ReplaceAll(words(rng.IntN(1000)), " ", "+") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 9))
			base := time.Date(2026, 10, 2, 22, 0, 0, 0, time.UTC)
			from, to := base.Add(2*time.Hour), base.Add(3*time.Hour)
			onset, end := from.Add(10*time.Minute), from.Add(40*time.Minute)
			var hits []hit
			readers := []reader{{uaChrome, "ko-KR,ko;q=0.9", true, ""}, {uaSafari, "en-US,en;q=0.9", false, ""}, {uaFirefox, "en-US,en;q=0.5", false, ""}}
			for i := range 3 * 60 * 40 {
				rd := readers[i%len(readers)]
				h := hit{at: base.Add(time.Duration(rng.Int64N(int64(3 * time.Hour)))), dur: 0.05, ip: fmt.Sprintf("211.36.%d.%d", rng.IntN(200), 1+rng.IntN(250)),
					ua: rd.ua, lang: rd.lang, hints: rd.hints, tls: true, upstream: true, uri: fmt.Sprintf("/2026/10/post-%d/", rng.IntN(300))}
				if rng.IntN(100) < 4 {
					h.uri, h.dur = "/?s="+strings.ReplaceAll(words(rng.IntN(1000)), " ", "+"), 0.6
				}
				hits = append(hits, h)
			}
			for range 30 * 150 {
				hits = append(hits, hit{at: onset.Add(time.Duration(rng.Int64N(int64(end.Sub(onset))))), dur: 0.6,
					ip: fmt.Sprintf("%d.%d.%d.%d", 1+rng.IntN(220), rng.IntN(256), rng.IntN(256), 1+rng.IntN(250)), ua: crawler.ua, tls: true, upstream: true,
					uri: "/?s=" + tc.term(rng)})
			}
			f := crawlerFinding(t, crawler, onset, end)
			f.Routes = []detect.RouteCost{{Template: "/?s", Requests: 4500, Expensive: true}}
			site := siteFacts
			site.LoggedInCookie = "wordpress_logged_in_"
			p, err := Propose(context.Background(), Input{Findings: []detect.Finding{f}, Access: []string{writeLog(t, t.TempDir(), hits)}, Site: site, From: from, To: to})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Rules) != 1 {
				t.Fatalf("%d rules; notes %v", len(p.Rules), p.DataQuality)
			}
			r := p.Rules[0]
			if err := Validate(p.Caddyfile); err != nil {
				t.Fatalf("Caddy rejects the rule: %v\n%s", err, p.Caddyfile)
			}
			regexpLine := "vars_regexp {http.request.uri.query.s} `^[0-9a-f]{32}$`"
			if got := strings.Contains(r.Caddyfile, regexpLine); got != tc.pattern {
				t.Errorf("vars_regexp on s: %v, want %v\n%s", got, tc.pattern, r.Caddyfile)
			}
			if got := strings.Contains(r.Caddyfile, "query s=*"); got == tc.pattern {
				t.Errorf("query s=*: %v, want %v\n%s", got, !tc.pattern, r.Caddyfile)
			}
			bt := r.Backtest
			if bt.CrawlerRefusedShare < 0.9 {
				t.Errorf("refused %.1f%% of the crawler, want >= 90%%", 100*bt.CrawlerRefusedShare)
			}
			if tc.pattern {
				if !strings.Contains(r.Why, "matches query key s only where its value matches ^[0-9a-f]{32}$") {
					t.Errorf("Why does not say why the values: %s", r.Why)
				}
				// Every reader's search is outside the zone: nothing of theirs
				// can be refused, whatever the budget.
				if bt.OtherLoggedOutRefused != 0 || bt.BaselineRefused != 0 {
					t.Errorf("refused %d ordinary requests (%d in the baseline)", bt.OtherLoggedOutRefused, bt.BaselineRefused)
				}
			}
		})
	}
}

// TestValuePatternMatchers: value patterns go through Caddy's adapter
// unchanged and its vars_regexp matcher reads the key's values as the
// profile did (percent-decoded, '+' a blank, repeated keys joined by ','):
// what the generator counted is what the zone matches, a request without
// the key included.
func TestValuePatternMatchers(t *testing.T) {
	tests := []struct {
		pattern     string
		match, miss []string // raw query strings
	}{
		{`^[0-9a-f]{32}$`, []string{"s=" + hex32(1), "p=2&s=" + hex32(2)},
			[]string{"s=caddy", "", "p=" + hex32(1), "s=" + hex32(1) + "&s=" + hex32(2), "s=" + hex32(1)[:31]}},
		{`\p{Han}`, []string{"s=%E6%BE%B3%E9%97%A8", "s=x&s=%E5%8D%9A"}, []string{"s=%EC%B9%B4%EB%94%94", "s=caddy", ""}},
		{`^seo-buy`, []string{"s=seo-buy+cheap", "s=seo-buy%20x", "s=seo%2Dbuy"}, []string{"s=x+seo-buy", "s=seo%2buy", "q=seo-buy"}},
	}
	var zones []Zone
	for i, tt := range tests {
		zones = append(zones, Zone{Name: fmt.Sprintf("z%d", i), Window: time.Minute, Events: 1, Targets: []Target{{QueryKey: "s", ValueRegexp: tt.pattern}}})
	}
	m := caddyMatchers(t, zones)
	filter := newLineFilter(zones)
	for i, tt := range tests {
		for _, q := range append(slices.Clone(tt.match), tt.miss...) {
			mask, err := m.match(&sources.Request{Method: "GET", Path: "/", Query: q, Status: 200})
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Contains(tt.match, q)
			if got := mask&(1<<i) != 0; got != want {
				t.Errorf("%s on ?%s: matched %v, want %v", tt.pattern, q, got, want)
			}
			// The generator's reading of the value agrees with Caddy's.
			if got := regexp.MustCompile(tt.pattern).MatchString(queryValue(q, "s")); got != want {
				t.Errorf("%s on queryValue(?%s) = %q: %v, Caddy %v", tt.pattern, q, queryValue(q, "s"), got, want)
			}
			if want && !filter.queryMayMatch([]byte(q)) {
				t.Errorf("the line filter drops ?%s, which %s matches", q, tt.pattern)
			}
		}
	}
	for _, bad := range []string{"{$HOME}", "a{path}", `\p{Han}{$X}`, "{re.x.1}"} {
		if q, err := quoteRegexp(bad); err == nil {
			t.Errorf("quoteRegexp(%q) = %s, want refused", bad, q)
		}
	}
}

// TestValueShapesAgreeWithRegexp: the shapes a pattern is counted by say
// what its regular expression says, value by value, on values a client
// could send (any bytes, any script, any length).
func TestValueShapesAgreeWithRegexp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("09af AFgz_-.,%+{}澳门카디Жا\xff")
	var vals []string
	for range 3000 {
		n := rng.IntN(40)
		var b strings.Builder
		for range n {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		vals = append(vals, b.String(), hex32(rng.IntN(100))[:rng.IntN(33)])
	}
	var cands []candidate
	for i := range asciiClasses {
		cands = append(cands, classCandidate(i, 0, 0), classCandidate(i, 5, 5), classCandidate(i, 3, 17), classCandidate(i, 32, 32))
	}
	for i := range scripts {
		cands = append(cands, scriptCandidate(i))
	}
	matched := 0
	for _, c := range cands {
		re := regexp.MustCompile(c.pattern)
		for _, v := range vals {
			got, want := c.byShape(shapeOf(v)), re.MatchString(v)
			if got != want {
				t.Fatalf("%s on %q: by shape %v, by regexp %v", c.pattern, v, got, want)
			}
			if want {
				matched++
			}
		}
	}
	if matched < len(vals) {
		t.Errorf("only %d matches over %d candidates and %d values: the values do not exercise the shapes", matched, len(cands), len(vals))
	}
}
