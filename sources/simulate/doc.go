// Package simulate writes evidence bundles of incidents that never happened: a
// deterministic (by seed) discrete-event simulation of Caddy 2.11 in front of
// php-fpm, driven open-loop by readers, editors, search bots, a distributed
// crawler and flash crowds, that writes what the real stack would have left
// behind: Caddy's JSON access log, Caddy's own log (health checker, error log),
// php-fpm's log, php-fpm/Caddy/node/CloudWatch metrics as OpenMetrics (and,
// for a scenario with a ProcessModel, php-fpm's per-process series as
// php-fpm_exporter and process-exporter scrape them), a git
// repository of the site's configuration, changes.yaml, bundle.yaml, and the
// ground truth (truth.json, truth-requests.csv.gz) that no detector reads.
//
// The mechanism follows what design.md ("What Caddy 2.11 really logs") verified
// on a real stack, not intuition:
//   - php-fpm accepts from one FIFO listen queue of at most listen.backlog
//     connections; beyond it the kernel drops SYNs, Caddy's dial retransmits
//     once and times out after 3 s (502), and the health check's own connect is
//     dropped the same way;
//   - Caddy's active health check waits in that same queue. In Caddy 2.11 only
//     the FastCGI transport's read_timeout can fail a connected check
//     (health_timeout does not cut it short); a scenario can instead have a
//     proxy that honours health_timeout while the check is queued
//     (Scenario.HealthTimeoutQueued, crawler-backlog). Failures accumulate until
//     health_fails, the upstream is marked down and Caddy answers 503 itself
//     until one check gets through. Either way a check cut at 10 s keeps the
//     queue near 10 s of work: it cannot fill a deep backlog;
//   - a request whose read_timeout expires is logged as 504, but php-fpm still
//     runs it later; a client that gives up does not cancel its FastCGI request:
//     PHP runs it and Caddy logs PHP's status with the full duration (no 499);
//   - Special:NewItem calls the site's own api.php through Caddy, holding its
//     worker while the call waits in the same queue (up to MediaWiki's 25 s).
//
// Beyond the reference crawl, a scenario can run WordPress instead of
// MediaWiki (paths, cookies, page cache, configuration), add clients with
// schedules of their own (API and sync clients, feed bots, a heavy scraper),
// pin php-fpm workers with idle connections that never reach Caddy, change
// pm.max_children by a graceful reload, and start its evidence at the window
// (no baseline). truth.json then names the trigger, the failing stretches
// (by arrival, as an analysis sees them in the access log) and the clients
// that are only context.
//
// Nothing is held per request beyond the requests in flight: arrivals are
// generated incrementally from an event heap and every line is written when the
// response completes, so memory stays flat however many lines Scale asks for.
package simulate
