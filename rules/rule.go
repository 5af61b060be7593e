// Package rules turns findings into Caddy rate_limit rules for
// github.com/mholt/caddy-ratelimit v0.1.0, backtests each rule on the recorded
// traffic, validates it with Caddy's own adapter, and computes config advice
// (listen.backlog, pm.max_children, health checks) from the queueing numbers.
package rules

import "time"

// Rule is one generated rate_limit snippet with what it would have done.
type Rule struct {
	// Name is the zone's name, e.g. "page_tools".
	Name string `json:"name"`
	// Caddyfile is the snippet to paste into a site block, formatted as caddy fmt does.
	Caddyfile string `json:"caddyfile"`
	// Why explains the sizing arithmetic in one paragraph.
	Why string `json:"why,omitempty"`
	// Finding is the id of the finding the rule answers.
	Finding  string   `json:"finding,omitempty"`
	Backtest Backtest `json:"backtest"`
}

// Backtest is the replay of the recorded requests through the rule (design.md,
// Rules): what it would have refused, split by class.
type Backtest struct {
	CrawlerRequests            int       `json:"crawler_requests"`
	CrawlerRefused             int       `json:"crawler_refused"`
	CrawlerRefusedShare        float64   `json:"crawler_refused_share"`
	CrawlerPHPSecondsSaved     float64   `json:"crawler_php_seconds_saved"`
	LoggedInRequests           int       `json:"logged_in_requests"`
	LoggedInRefused            int       `json:"logged_in_refused"`
	OtherLoggedOutRequests     int       `json:"other_logged_out_requests"`
	OtherLoggedOutRefused      int       `json:"other_logged_out_refused"`
	OtherLoggedOutRefusedShare float64   `json:"other_logged_out_refused_share"`
	LegitimateClientsRefused   int       `json:"legitimate_clients_refused"`
	BaselineRequests           int       `json:"baseline_requests"`
	BaselineRefused            int       `json:"baseline_refused"`
	FirstRefusal               time.Time `json:"first_refusal,omitzero"`
}

// Recommendation is config advice with its arithmetic in Why.
type Recommendation struct {
	Target string `json:"target"` // "php-fpm", "caddy"
	Key    string `json:"key"`    // "listen.backlog"
	Value  string `json:"value"`  // "64"
	Why    string `json:"why"`
}
