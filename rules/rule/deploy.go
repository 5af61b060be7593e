package rule

import "fmt"

// What deploying the block takes, stated once: the header of rules.caddy
// prints these, and rules.PlaceInCaddyfile and the tests follow the same steps.
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
