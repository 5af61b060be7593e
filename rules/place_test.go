package rules

import (
	"strings"
	"testing"
)

// testBlock is a rate_limit block as Proposal.Block holds one.
func testBlock(t *testing.T) (string, []string) {
	t.Helper()
	z := Zone{Name: "tools_zh_cn_logged_out", Window: 1e9 * 60, Events: 10,
		Targets: []Target{{Paths: []string{"/w/Special:WhatLinksHere", "/w/Special:WhatLinksHere/*"}}, {QueryKey: "action", QueryValues: []string{"edit", "history"}}},
		Cond:    Conditions{NotCookie: "wikiUserID=", Lang: "zh-cn"}}
	block, err := Caddyfile([]Zone{z})
	if err != nil {
		t.Fatal(err)
	}
	return block, []string{z.Name}
}

// A MediaWiki site that rewrites its short URLs at the top level: the case
// where caddy-ratelimit's own order (before basic_auth, after rewrite) would
// hand the zone the rewritten path.
const rewritingSite = `# the wiki
wiki.example.org {
	encode gzip
	rewrite /w/* /index.php?title={path}
	php_fastcgi unix//run/php/php8.2-fpm.sock
	file_server
}

static.example.org {
	file_server
}
`

func TestPlaceInCaddyfile(t *testing.T) {
	block, zones := testBlock(t)
	pl, err := PlaceInCaddyfile([]byte(rewritingSite), "Caddyfile", block, zones, "")
	if err != nil {
		t.Fatal(err)
	}
	if pl.Site != "wiki.example.org" || !pl.AddedOrder {
		t.Errorf("placed in %q, order added %v", pl.Site, pl.AddedOrder)
	}
	// The user's lines are all still there, in order, untouched.
	rest := pl.Caddyfile
	for _, l := range strings.SplitAfter(rewritingSite, "\n") {
		i := strings.Index(rest, l)
		if i < 0 {
			t.Fatalf("line %q lost or moved:\n%s", l, pl.Caddyfile)
		}
		rest = rest[i+len(l):]
	}
	// Caddy runs the zone before the rewrite: it sees /w/Special:... as logged.
	rl, rw := -1, -1
	for i, h := range pl.Check.Handlers {
		if h == "rate_limit" && rl < 0 {
			rl = i
		}
		if h == "rewrite" && rw < 0 {
			rw = i
		}
	}
	if rl < 0 || rw < 0 || rl > rw {
		t.Errorf("handlers %v: rate_limit must run before rewrite", pl.Check.Handlers)
	}
	diff := UnifiedDiff("Caddyfile", "Caddyfile.rate_limit", rewritingSite, pl.Caddyfile)
	for _, want := range []string{"+\t" + OrderOption, "+\trate_limit {", "+\t\tzone tools_zh_cn_logged_out {", " wiki.example.org {"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, "\n-") {
		t.Errorf("the diff removes lines:\n%s", diff)
	}

	// Following caddy-ratelimit's own order alone (no global option) in the
	// same site: Caddy accepts the file, but the zone would see the rewritten
	// path, and the check says so.
	without := strings.Replace(pl.Caddyfile, "{\n\t"+OrderOption+"\n}\n\n", "", 1)
	if without == pl.Caddyfile {
		t.Fatal("could not take the order option out again")
	}
	if _, err := CheckCaddyfile([]byte(without), "Caddyfile", zones); err == nil || !strings.Contains(err.Error(), "rewrite runs before rate_limit") {
		t.Errorf("a rate_limit after a rewrite passed the check: %v", err)
	}
}

// TestCheckCaddyfileHostless: a site without a host spreads its directives
// over the server's top-level routes; a rewrite in an earlier one still runs
// before the zones.
func TestCheckCaddyfileHostless(t *testing.T) {
	block, zones := testBlock(t)
	site := "http://:8080 {\n\trewrite /w/* /index.php?title={path}\n" + block + "\trespond 200\n}\n"
	if _, err := CheckCaddyfile([]byte(site), "Caddyfile", zones); err == nil || !strings.Contains(err.Error(), "rewrite runs before rate_limit") {
		t.Errorf("a rate_limit after a rewrite passed the check: %v", err)
	}
	check, err := CheckCaddyfile([]byte("{\n\t"+OrderOption+"\n}\n"+site), "Caddyfile", zones)
	if err != nil {
		t.Fatal(err)
	}
	if len(check.Handlers) < 3 || check.Handlers[0] != "rate_limit" {
		t.Errorf("handlers %v", check.Handlers)
	}
}

func TestPlaceInCaddyfileRefuses(t *testing.T) {
	block, zones := testBlock(t)
	for _, tc := range []struct{ name, src, site, want string }{
		{"two PHP sites and no --site", "a.example {\n\tphp_fastcgi localhost:9000\n}\nb.example {\n\tphp_fastcgi localhost:9001\n}\n", "", "name one with --site"},
		{"an unknown --site", rewritingSite, "nope.example", "no site block for"},
		{"a rate_limit already there", "a.example {\n\trate_limit {\n\t\tzone x {\n\t\t\tkey x\n\t\t\tevents 1\n\t\t\twindow 1m\n\t\t}\n\t}\n\tphp_fastcgi localhost:9000\n}\n", "", "already has a rate_limit"},
		{"an order that puts it after the rewrite", "{\n\torder rate_limit before basic_auth\n}\na.example {\n\tphp_fastcgi localhost:9000\n}\n", "", "order rate_limit before basic_auth"},
		{"not a Caddyfile", "a.example {\n\tphp_fastcgi localhost:9000\n", "", "unbalanced"},
	} {
		_, err := PlaceInCaddyfile([]byte(tc.src), "Caddyfile", block, zones, tc.site)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	// --site picks one of two PHP sites; an existing global block gets the
	// option inside it, and one that has it already is left as it is.
	two := "{\n\temail ops@example.org\n}\n\na.example {\n\tphp_fastcgi localhost:9000\n}\nb.example {\n\tphp_fastcgi localhost:9001\n}\n"
	pl, err := PlaceInCaddyfile([]byte(two), "Caddyfile", block, zones, "b.example")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(pl.Caddyfile, "{\n\t"+OrderOption+"\n\temail ops@example.org\n}\n") || pl.Site != "b.example" ||
		strings.Index(pl.Caddyfile, "rate_limit {") < strings.Index(pl.Caddyfile, "b.example {") {
		t.Errorf("placed wrongly:\n%s", pl.Caddyfile)
	}
	again, err := PlaceInCaddyfile([]byte("{\n\t"+OrderOption+"\n}\na.example {\n\tphp_fastcgi localhost:9000\n}\n"), "Caddyfile", block, zones, "")
	if err != nil {
		t.Fatal(err)
	}
	if again.AddedOrder || strings.Count(again.Caddyfile, OrderOption) != 1 {
		t.Errorf("the order option was added twice:\n%s", again.Caddyfile)
	}
}

// TestCheckCaddyfileSaysLoggedWarnings: Caddy's adapter logs some warnings (a
// deprecated option) through its process-wide logger instead of returning
// them; the check returns them with the others, so that they reach the report
// rather than stderr as a JSON line.
func TestCheckCaddyfileSaysLoggedWarnings(t *testing.T) {
	block, zones := testBlock(t)
	src := "{\n\t" + OrderOption + "\n\tservers {\n\t\tmetrics\n\t}\n}\nhttp://:8080 {\n" + block + "\trespond 200\n}\n"
	check, err := CheckCaddyfile([]byte(src), "Caddyfile", zones)
	if err != nil {
		t.Fatal(err)
	}
	deprecations := func(ws []string) (n int) {
		for _, w := range ws {
			if strings.Contains(w, "nested 'metrics' option") {
				n++
			}
		}
		return n
	}
	if n := deprecations(check.Warnings); n != 1 {
		t.Errorf("warnings %q: want Caddy's deprecation of metrics inside servers once", check.Warnings)
	}
	// The logger is Caddy's own again: a second check collects its own warning only.
	again, err := CheckCaddyfile([]byte(src), "Caddyfile", zones)
	if err != nil || deprecations(again.Warnings) != 1 {
		t.Errorf("second check: %v, warnings %q", err, again.Warnings)
	}
}
