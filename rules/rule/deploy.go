package rule

import (
	"embed"
	"strings"

	"github.com/aftermath-forensics/aftermath/prose"
)

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
func DeploySteps() []string { return DeployStepsIn(prose.EN) }

// DeployStepsIn are DeploySteps in lang (prose/<lang>.tmpl); an unknown
// language says them in English.
func DeployStepsIn(lang string) []string {
	steps := Messages.Say("deploy.steps", struct{ Build, Order string }{BuildCommand, OrderOption})
	s, err := steps.InPlain(lang)
	if err != nil {
		s = steps.String()
	}
	return strings.Split(s, "\n")
}

// proseFiles are the steps in every language.
//
//go:embed prose/*.tmpl
var proseFiles embed.FS

// Messages are what deploying a block takes, in every language.
var Messages = prose.MustParse(proseFiles, "prose", prose.Langs)
