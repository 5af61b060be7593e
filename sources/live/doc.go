// Package live reads aftermath.yaml and turns live sources (Loki, Prometheus,
// CloudWatch) into an evidence bundle, the same directory `analyze --bundle`
// reads: `aftermath fetch` writes one on disk, `analyze --config --since` writes
// one in a temporary directory and analyzes it exactly as it would a bundle.
//
// # What a fetch writes
//
//	bundle.yaml                window, baseline, time zone, site facts, and one
//	                           record per query: its range, what it returned,
//	                           whether it was complete, its requests and bytes
//	access/loki.log.gz         the access-log lines exactly as Loki returns them
//	access/loki-families.log.gz (pushdown only) the lines of the client
//	                           families pulled across the range, in the
//	                           minutes access/loki.log.gz does not hold
//	access/loki-pass<n>.log.gz (pushdown only) the lines of a second pass
//	access/minute-counts.csv   (pushdown only) lines and failed lines per minute,
//	                           counted inside Loki, and which minutes were pulled
//	access/minute-status.csv   (pushdown only) for the minutes not pulled, lines
//	                           per status, origin (PHP, proxy, static) and
//	                           lateness with PHP's seconds, counted inside Loki
//	logs/<name>.log            other logs from Loki (loki.logs), e.g. Caddy's own
//	metrics/prometheus.om.gz   Prometheus series as scraped (raw samples)
//	metrics/cloudwatch.om.gz   CloudWatch series in OpenMetrics form
//	changes/*.yaml             copies of the configured change logs
//
// Data is fetched for the window and, before it, the baseline (Config.Baseline,
// 3h by default): the detectors compare the window with the hours just before it.
//
// # Pushdown
//
// A window longer than Config.PushdownAfter (3h by default) may not be pulled
// raw. First Loki counts every line per minute with no parser (the very lines
// a pull asks for), and its index says what a line weighs (index/stats, no
// line read): a cost model (pullcost.go) estimates from them what a full pull
// and a pushdown would pull and make Loki read, and a window whose minutes
// mostly stand out by their volume is pulled whole, checked against those
// counts, with no query that parses a line. Otherwise Loki counts the lines
// that failed per minute, with no parser either (a line filter on the raw
// JSON, failedLineFilter, exact as the detectors count them, package
// failure: 429 and 5xx, or slower than the clients' timeout when the site
// says what it is), and the model runs again: a window whose minutes mostly
// stand out by their volume or their failed lines is pulled whole too.
// Otherwise the minutes that stand
// out are flagged, and raw lines are pulled for the flagged minutes (plus a
// margin) and a sample of the baseline (three stretches of ten minutes): the
// rest of the baseline is counted like any other minute, so the cost grows
// with what stood out, not with the window or the baseline. The detectors
// take a client's usual rate from the minutes read whole when its lines were
// not all read, and mark that figure estimated. A minute stands out when its count is at least
// Factor times the median of the unflagged minutes in the three hours before
// it and more than three Poisson deviations above it (failure.Excess, the
// detectors' own test), so a quiet site does not flag a minute for two lines.
//
// A client that rises slowly (a crawler walking for hours before it bursts)
// never makes a minute stand out among everyone's lines. So Loki counts
// lines per minute and client family (a coarse agent and the first two
// letters of Accept-Language, computed with | json and | label_format: a few
// dozen series), in the one metric query whose sum is every line's count
// per minute, and a family that stands out against its own past in a
// 10-minute stretch, with a fifth of that stretch's lines, is pulled across
// the whole range (access/loki-families.log.gz, in spans of about one page
// each, for the minutes not pulled whole: those are pulled with the stream
// selector alone, no parser, and hold the families' lines): its addresses,
// start and rule backtest are those of a full pull. Loki runs a parser only
// where a count needs one, behind line filters where a query can be
// narrowed (the families' agent tokens and languages, a failed status, PHP's
// response headers): raw minutes are pulled with the selector alone, and
// a second pass tells the families' lines it already holds by their
// headers on the client (familyOf, the detectors' bundle.ClientFamily). A client whose family was
// not pulled is read only in the minutes pulled: the report marks its
// addresses, requests and start as estimated (lower bounds) next to them.
//
// Loki counts a failed line by when it was logged; the detectors place it
// when its request arrived (its duration earlier). The lines read are placed
// by arrival wherever their minute was; only the counted lines stay at their
// log minute. So an analysis of a pushed-down bundle makes a second pass
// (SecondPass) when a failing stretch's edge, or the start of a crawler
// whose lines were not all read, lies next to counted minutes: it pulls those
// minutes and looks again, at most MaxSecondPasses times, each pulling at most
// 120 minutes within 30 minutes of an edge (bundle.yaml's pushdown section
// and report.json's evidence.pushdown say so).
//
// The per-minute counts and what was pulled go to access/minute-counts.csv so
// the analysis can say what it did not read; bundle.yaml records the cost of
// each phase, and its pushdown section the lines, bytes and requests pulled
// against the bytes of a full pull (the lines times the index's mean line,
// or Loki's bytes_over_time where the index knows no line), with the cost
// model's estimates, made again once the families are known. The count per
// family is grouped by status, origin marks and lateness too (a label from
// Loki's float template functions): its groups check the failed lines per
// minute and give, for the lines not pulled, their count per minute and
// status, by origin and lateness; one more metric query (an unwrap needs its
// own range aggregation), asked over the stretches of minutes not pulled
// only, sums PHP's durations, late and all, grouped alike
// (access/minute-status.csv): the analysis adds them to its per-minute
// counts, so the impact, the per-minute series and PHP's time cover the
// whole window as a full pull would; fingerprints, addresses and latencies
// come from the lines pulled. The raw pulls are checked against the
// per-minute counts Loki already made, not counted again.
//
// # Completeness
//
// Nothing incomplete passes as complete: a failed, truncated or interrupted
// query keeps what it fetched, is recorded in bundle.yaml with complete:
// false and a note, and gives a "warning" or "error" data-quality note
// (Fetch returns them; ManifestNotes derives them again from bundle.yaml, so
// an analysis of the bundle alone reports them too).
//
// # Secrets
//
// aftermath.yaml never holds a secret: a password, token or key written in it
// is refused with an error naming the line. Secrets come from the environment
// (the LOKI_* variables logcli reads; PROMETHEUS_USERNAME, PROMETHEUS_PASSWORD,
// PROMETHEUS_BEARER_TOKEN; the AWS credential chain) or from files named by
// *_file keys. They travel only in request headers: bundle.yaml, notes, errors
// and progress never contain them.
package live
