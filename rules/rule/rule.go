// Package rule holds what a proposed rate-limit rule is, as the report and
// the scan show it: the zone (Rule), its backtest (Backtest), the config
// advice beside it (Recommendation) and the steps deploying a block takes
// (DeploySteps). It is a leaf: package rules, which generates and validates
// rules against Caddy, produces these values, and package report renders them
// without linking Caddy.
package rule

import (
	"time"

	"github.com/aftermath-forensics/aftermath/prose"
)

// Rule is one generated rate_limit zone with what it would have done. Its
// Caddyfile is a complete rate_limit block holding this zone alone; the
// Proposal's Caddyfile holds every zone in one block.
type Rule struct {
	// Name is the zone's name, e.g. "tools_chrome_zh_cn".
	Name string `json:"name"`
	// Caddyfile is the snippet to paste into a site block, formatted as caddy fmt does.
	Caddyfile string `json:"caddyfile"`
	// Why explains the match and the sizing arithmetic in one paragraph.
	Why string `json:"why,omitempty"`
	// WhyText is Why as said by a catalog, for the report to say in its
	// language; a rule read back from report.json has none and reads as Why.
	WhyText prose.Text `json:"-"`
	// Finding is the id of the finding the rule answers.
	Finding string `json:"finding,omitempty"`
	// Key is the zone's key as written in the Caddyfile: a static string (one
	// bucket for every client) or "{client_ip}" (one bucket per client).
	Key string `json:"key,omitempty"`
	// Window is the sliding window, as written in the Caddyfile ("10m").
	Window string `json:"window,omitempty"`
	// Events is how many requests the zone admits per window.
	Events   int      `json:"events,omitempty"`
	Backtest Backtest `json:"backtest"`
}

// Backtest is the replay of the recorded requests through the rule (design.md,
// Rules): what it would have refused, split by class. Counts cover the incident
// window unless their name says baseline. Requests for the proxy's own health
// URI are left out: Caddy's active checks do not pass through the site's
// handlers. Requests refused with 429 never reach PHP, so a refused client's
// later behaviour (retries) is not modelled: the replay keeps the recorded
// arrivals.
type Backtest struct {
	// CrawlerRequests counts requests of the crawler's fingerprint (detect.Key
	// equal to the finding's cluster) in the window, less those of the readers
	// who share the fingerprint (below); CrawlerRefused those the zone
	// refused, CrawlerRefusedShare their share (0-1).
	CrawlerRequests     int     `json:"crawler_requests"`
	CrawlerRefused      int     `json:"crawler_refused"`
	CrawlerRefusedShare float64 `json:"crawler_refused_share"`
	// CrawlerGoalMissed is set when the rule refuses less than CrawlerGoal of
	// its crawler's requests, the share the rules aim at, and no size the
	// ordinary clients allow reached it: the rule is proposed as it stands
	// (it still refuses most of the crawler) and its Why says how much of the
	// crawler passes. Both are absent when the goal is met.
	CrawlerGoalMissed bool    `json:"crawler_goal_missed,omitempty"`
	CrawlerGoal       float64 `json:"crawler_goal,omitempty"`
	// CrawlerPHPRequests counts the crawler's requests that reached PHP (answered
	// by PHP, or 504 at the proxy while still queued in php-fpm, where they ran
	// later anyway); CrawlerPHPRefused those the zone would have stopped.
	CrawlerPHPRequests int `json:"crawler_php_requests"`
	CrawlerPHPRefused  int `json:"crawler_php_refused"`
	// CrawlerPHPSecondsSaved is the PHP worker time, in seconds, that the
	// crawler's refused requests would not have used; PHPSecondsSaved the same
	// for every refused request. PHPSecondsBasis says how a request's worker time
	// was estimated (a logged duration includes the time queued in php-fpm).
	CrawlerPHPSecondsSaved float64 `json:"crawler_php_seconds_saved"`
	PHPSecondsSaved        float64 `json:"php_seconds_saved"`
	PHPSecondsBasis        string  `json:"php_seconds_basis,omitempty"`
	// LoggedInRequests and LoggedInRefused count requests that carried the
	// site's logged-in cookie.
	LoggedInRequests int `json:"logged_in_requests"`
	LoggedInRefused  int `json:"logged_in_refused"`
	// OtherLoggedOutRequests counts every other request (not the crawler's
	// fingerprint, or a reader who shares it; not logged in);
	// OtherLoggedOutRefused the collateral among them.
	OtherLoggedOutRequests     int     `json:"other_logged_out_requests"`
	OtherLoggedOutRefused      int     `json:"other_logged_out_refused"`
	OtherLoggedOutRefusedShare float64 `json:"other_logged_out_refused_share"`
	// OtherLoggedOutGoalMissed is set when the rule refuses OtherLoggedOutGoal
	// or more of the other logged-out requests, the share the rules aim
	// under, and neither a size that still refuses most of the crawler nor a
	// condition the logs measured spared them: the rule is proposed as it
	// stands and its Why says so with the numbers. Both are absent when the
	// goal is met.
	OtherLoggedOutGoalMissed bool    `json:"other_logged_out_goal_missed,omitempty"`
	OtherLoggedOutGoal       float64 `json:"other_logged_out_goal,omitempty"`
	// LoginUnknownRequests and LoginUnknownRefused count the part of the other
	// logged-out requests whose Cookie was present but unreadable (REDACTED in the
	// log): they may be logged in.
	LoginUnknownRequests int `json:"login_unknown_requests,omitempty"`
	LoginUnknownRefused  int `json:"login_unknown_refused,omitempty"`
	// LegitimateClientsRefused counts distinct client addresses, other than the
	// crawler's fingerprint, that would have seen at least one 429.
	LegitimateClientsRefused int `json:"legitimate_clients_refused"`
	// FingerprintReaderRequests counts the requests, of any fingerprint a
	// zone answers, from addresses that behaved like people rather than like
	// the crawler (they fetched page assets, or read several pages over
	// minutes at a reader's pace): readers who share the crawler's
	// fingerprint. They are ordinary traffic, counted in the logged-in and
	// other logged-out figures above, and apart here; FingerprintReaderRefused
	// is the collateral among them, FingerprintReaderRefusedShare its share
	// and FingerprintReadersRefused the addresses refused at least once.
	FingerprintReaderRequests     int     `json:"fingerprint_reader_requests"`
	FingerprintReaderRefused      int     `json:"fingerprint_reader_refused"`
	FingerprintReaderRefusedShare float64 `json:"fingerprint_reader_refused_share"`
	FingerprintReadersRefused     int     `json:"fingerprint_readers_refused"`
	// BaselineFrom and BaselineTo bound the baseline period replayed on its own.
	BaselineFrom time.Time `json:"baseline_from,omitzero"`
	BaselineTo   time.Time `json:"baseline_to,omitzero"`
	// BaselineRequests counts the ordinary requests of the baseline period
	// (everything but the crawler's fingerprint) and BaselineRefused those the
	// rule would have refused there: a rule is only proposed when this is 0.
	BaselineRequests int `json:"baseline_requests"`
	BaselineRefused  int `json:"baseline_refused"`
	// BaselineCrawlerRequests and BaselineCrawlerRefused count the crawler's own
	// fingerprint in the baseline period: a crawler that was already present at
	// a lower rate is refused there too, which is intended.
	BaselineCrawlerRequests int `json:"baseline_crawler_requests"`
	BaselineCrawlerRefused  int `json:"baseline_crawler_refused"`
	// FirstRefusal is when the zone would first have refused a request in the window.
	FirstRefusal time.Time `json:"first_refusal,omitzero"`
}

// Recommendation is config advice with its arithmetic in Why.
type Recommendation struct {
	Target string `json:"target"` // "php-fpm", "caddy"
	Key    string `json:"key"`    // "listen.backlog"
	Value  string `json:"value"`  // "64"
	Why    string `json:"why"`
	// WhyText is Why as said by a catalog, for the report to say in its
	// language.
	WhyText prose.Text `json:"-"`
	// ValueText is Value as said by a catalog when it is words, not a
	// number or a setting's own text.
	ValueText prose.Text `json:"-"`
}
