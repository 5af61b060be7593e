// Package scan is the scheduled, speak-only-when-wrong side of aftermath: it
// judges a recent window (the last hour, say) against the same hours of the
// previous days, takes what the incident detectors of package detect found
// over the window, and turns both into anomalies with a kind, a severity, the
// observed value, the baseline value and a score.
//
// The scan does not compose the pipeline: package analysis loads its
// evidence (analysis.LoadScans) and runs the detectors on each window
// (analysis.Scan) between the scan's readying of it (Set.Window, which also
// guards each detector: Window.Guard) and its judging (Set.Judge).
//
// # Seasonal baseline
//
// Traffic has a daily rhythm (03:00 is not 21:00) and a weekly one (Saturday is
// not Tuesday), so a window is never compared with the hours just before it
// but with the same clock hours on previous days: for a scan at Now with
// Config.Since = 1h and Config.Baseline = 7d, the baseline is the seven slots
// [Now-1h-k days, Now-k days) for k = 1..7, in the site's time zone (a DST
// change keeps the clock hour). When the baseline spans two weeks or more only
// the same weekday is used (k = 7, 14, ...), so Saturdays are compared with
// Saturdays. Slots the evidence does not cover (before the logs begin) are
// left out (when bundle.yaml records which ranges a fetch pulled in full, a
// slot outside them is left out too); with fewer than Config.MinBaselineDays
// covered slots the seasonal comparison is skipped and data_quality says so
// (the detectors still run).
//
// # Robust statistics
//
// Each measure is one number per slot (requests of a fingerprint, distinct
// addresses, failed responses, the 95th percentile of PHP successes, minutes
// with every worker busy, the listen queue's peak, mean CPU). The baseline is
// the median of the slots and its spread the median absolute deviation (MAD,
// scaled to a standard deviation), so one bad day among seven moves neither.
// The spread is never taken below counting noise (the square root of the
// median, Poisson) nor below a share of the median (drift that a week of
// slots cannot show), so a flat baseline does not turn a wobble into a
// headline. The score is the excess over the median in units of that spread.
// An anomaly needs all three: a score of at least Config.Z, a ratio of at least
// the measure's rise ratio, and an excess above the measure's minimum volume
// (60 requests an hour, 10 failed responses an hour, 3 busy minutes...), so
// tiny numbers never alarm however large their ratio. Latency percentiles of
// the window are judged on the low end of their confidence interval (order
// statistics: a quiet hour's p95 rests on a dozen requests), so a few slow
// edits do not pass for PHP slowing down.
//
// # Kinds and severities
//
// A fingerprint (detect.ClusterKey: user-agent family, language, logged in,
// client hints) that rose is judged as the crawler detector judges it: a
// client that fetches no assets and walks uncacheable tools, a declared bot,
// or a forged browser is automated, and its rise is a crawler_burst (warning;
// critical when the site is failing in the same window). A rise that behaves
// like people (assets after pages, cacheable articles) is one site-wide surge
// of severity info: a flash crowd is news, not an attack. Failed responses are
// error_rate (critical when the proxy answered 503 itself or more than 5% of
// requests failed), slow PHP successes latency, busy workers, a deep queue or
// a hot CPU saturation. Findings of the detectors join the anomaly of their
// concern (upstream_errors joins error_rate; worker_saturation and
// listen_queue_overflow join saturation; crawler_burst joins the fingerprint's
// crawler_burst) or stand as anomalies of their own kind
// (healthcheck_starved, idle_pinning: critical; client_abandoned_work,
// self_amplification: warning; config_change: info). Info-only scans count as
// quiet.
//
// # Memory and reading
//
// A Collector reads the access log once for any number of scans (one from the
// CLI, a whole schedule in a replay): every request lands in the slots that
// hold it (per fingerprint: requests, distinct addresses and prefixes; per
// class; statuses; a fixed-size latency histogram) and in the detect.Traffic of
// the scans whose window or lookback holds it. Memory grows with slots,
// fingerprints and distinct clients, never with lines. Metric slots are
// aggregated with PromQL over the same Querier the detectors use, so a live
// Prometheus answers them unchanged.
package scan
