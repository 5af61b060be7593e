package rules

import (
	"fmt"
	"strings"
	"time"
)

// What deploying the block takes, stated once: the header of rules.caddy
// prints these, and PlaceInCaddyfile and the tests follow the same steps.
const (
	// Module is the Caddy module the block needs, at the version the zones
	// were written and validated for.
	Module = "github.com/mholt/caddy-ratelimit@v0.1.0"
	// BuildCommand builds Caddy with it: stock Caddy rejects the block with
	// "unrecognized directive: rate_limit".
	BuildCommand = "xcaddy build --with " + Module
	// OrderOption goes in the Caddyfile's global options. caddy-ratelimit
	// v0.1.0 registers rate_limit "before basic_auth" (its caddyfile.go),
	// which Caddy's directive order puts after rewrite, uri and try_files:
	// in a site that rewrites /w/* at its top level the zones would see the
	// rewritten path, and the path matchers, written for the URLs in the
	// access log, would miss. Before rewrite, the zones see the request as
	// the client sent it (and as Caddy logs it) whatever the site rewrites.
	OrderOption = "order rate_limit before rewrite"
)

// deployHeader is the comment rules.caddy opens with: what the block needs,
// where it goes, how to check it, and what it would have refused. It holds
// no text from the logs: zone names are [a-z0-9_] (zoneNameOK) and every
// other value is a number or a time.
func deployHeader(p *Proposal, from, to time.Time) string {
	var b strings.Builder
	line := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		if s == "" {
			b.WriteString("#\n")
			return
		}
		b.WriteString("# " + s + "\n")
	}
	line("Rate limits proposed by aftermath for the incident of %s to %s (UTC).", from.UTC().Format("2006-01-02 15:04"), to.UTC().Format("2006-01-02 15:04"))
	line("")
	for _, l := range DeploySteps() {
		line("%s", l)
	}
	line("")
	line("What it would have refused, replaying the recorded requests (backtest):")
	for _, r := range p.Rules {
		line("  zone %s (%d requests per %s, %s):", r.Name, r.Events, r.Window, keyText(r.Key))
		backtestLines(line, r.Backtest)
	}
	if len(p.Rules) > 1 && p.Backtest != nil {
		line("  all zones together:")
		backtestLines(line, *p.Backtest)
	}
	line("Each zone's conditions, sizing and arithmetic: report.json (rules[].why).")
	return b.String()
}

// DeploySteps are the lines that say what deploying a rate_limit block takes:
// the module and how to build Caddy with it, the global order option, where
// the block goes, and how to check it before a reload. rules.caddy's header
// and the postmortem's rule blocks both print them, so they cannot drift.
func DeploySteps() []string {
	return []string{
		"1. Needs the caddy-ratelimit module, version v0.1.0 (stock Caddy rejects this",
		"   block: \"unrecognized directive: rate_limit\"). Build Caddy with it:",
		fmt.Sprintf("     %s", BuildCommand),
		"   and check that it is in: caddy list-modules | grep http.handlers.rate_limit",
		"2. Add to the global options block at the very top of the Caddyfile (create",
		"   the block if there is none):",
		"     {",
		fmt.Sprintf("         %s", OrderOption),
		"     }",
		"   The module orders rate_limit before basic_auth, which runs after rewrite,",
		"   uri and try_files: without this line a site that rewrites /w/* would hand",
		"   the zones the rewritten path, and the path matchers below would miss.",
		"3. Paste the rate_limit block below inside the site block of the site the",
		"   logs came from (the one with php_fastcgi or reverse_proxy), at its top",
		"   level, not inside a handle or route block.",
		"4. Check before reloading, then reload:",
		"     caddy validate --config Caddyfile",
		"     caddy adapt --config Caddyfile | grep -o '\"handler\":\"rate_limit\"'",
		"     caddy reload --config Caddyfile",
		"   (aftermath rules --caddyfile Caddyfile does steps 2 and 3 in a copy, checks",
		"   it with Caddy's own adapter and prints the diff.)",
	}
}

func keyText(key string) string {
	if key == "{client_ip}" {
		return "one bucket per client address"
	}
	return "one bucket for all clients"
}

// backtestLines prints one backtest as header lines.
func backtestLines(line func(string, ...any), bt Backtest) {
	first := "never"
	if !bt.FirstRefusal.IsZero() {
		first = "from " + bt.FirstRefusal.UTC().Format("15:04:05") + " UTC"
	}
	line("    crawler: %s of %s requests refused (%s), %s", fmtInt(bt.CrawlerRefused), fmtInt(bt.CrawlerRequests), pct(bt.CrawlerRefusedShare), first)
	addresses := "addresses"
	if bt.FingerprintReadersRefused == 1 {
		addresses = "address"
	}
	line("    readers who share the crawler's fingerprint: %s of %s requests refused (%s %s)",
		fmtInt(bt.FingerprintReaderRefused), fmtInt(bt.FingerprintReaderRequests), fmtInt(bt.FingerprintReadersRefused), addresses)
	line("    other logged-out requests (the readers' logged-out ones included): %s of %s refused (%s)",
		fmtInt(bt.OtherLoggedOutRefused), fmtInt(bt.OtherLoggedOutRequests), pct(bt.OtherLoggedOutRefusedShare))
	line("    logged-in requests: %s of %s refused", fmtInt(bt.LoggedInRefused), fmtInt(bt.LoggedInRequests))
	line("    ordinary requests before the incident (baseline): %s of %s refused", fmtInt(bt.BaselineRefused), fmtInt(bt.BaselineRequests))
}

func pct(share float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", 100*share), "0"), ".") + "%"
}
