// Package rules turns findings into Caddy rate_limit rules for
// github.com/mholt/caddy-ratelimit v0.1.0, backtests each rule on the recorded
// traffic, validates it with Caddy's own adapter, and computes config advice
// (listen.backlog, pm.max_children, health checks) from the queueing numbers.
//
// The stages are kept apart so that each can be checked on its own:
//
//   - profile.go reads the access logs once and learns what the crawler of each
//     crawler_burst finding walked, and what ordinary clients do with the same tools;
//   - generate.go turns that into a Zone model (matchers, key), with no Caddyfile
//     syntax in it, and drops every log-derived value that is not provably inert;
//   - caddyfile.go prints zones as a rate_limit block, quoting every token, and
//     formats it as `caddy fmt` does;
//   - validate.go adapts the block with Caddy's real Caddyfile adapter and checks
//     that the JSON Caddy would run is exactly the model (nothing dropped, nothing
//     added); the backtest then uses the matchers Caddy itself built from it;
//   - backtest.go sizes each zone from the baseline and replays the recorded
//     requests, in arrival order, through the module's sliding-window ring buffer;
//   - tighten.go resizes a zone toward the goals its backtest measures (at
//     least 95% of its crawler refused, under 0.5% of the other logged-out
//     requests), narrow.go leaves out the tools that bring more ordinary
//     clients than crawler into a zone that still misses the second, and a
//     rule that misses it all the same says so;
//   - advice.go states the php-fpm and Caddy settings with their arithmetic.
//
// What a rule is, as the report shows it (Rule, Backtest, Recommendation,
// the deploy steps), is the leaf package rule.
package rules

import "github.com/aftermath-forensics/aftermath/rules/rule"

// The rule, its backtest and the config advice are defined in the leaf
// package rule, so that the report shows them without linking Caddy; rules
// produces them under these names.
type (
	Rule           = rule.Rule
	Backtest       = rule.Backtest
	Recommendation = rule.Recommendation
)
