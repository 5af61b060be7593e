// Package prometheus reads metrics from a live Prometheus (or a server that
// speaks its HTTP API: Thanos, Mimir, VictoriaMetrics) through client_golang's
// api/prometheus/v1, for two uses:
//
//   - Client implements metrics.Querier, so the detectors run the same PromQL
//     against a live server as they run offline against a bundle loaded into
//     metrics.Store. Results are converted to metrics.Series and sorted the way
//     Store sorts them, so the two answers compare point by point.
//   - Export pulls the raw series behind those queries (php-fpm, Caddy, node
//     CPU) and writes them as OpenMetrics through metrics.Writer, which is how
//     `aftermath fetch` fills a bundle's metrics/*.om.gz.
//
// # Steps and the 11,000-point limit
//
// Prometheus refuses a range query of more than 11,000 steps per series.
// Step picks a step for a window that stays under it (never below MinStep,
// about one scrape interval); Client.QueryRange splits a range query that
// would exceed it into consecutive sub-ranges on the same grid, so callers may
// ask for any step.
//
// # Warnings
//
// The API returns warnings beside a result (a federated or long-term store
// that answered only in part says so there). RangeQuery and InstantQuery
// return them with the result; the Querier methods, which cannot, keep them
// and Notes lists them as data-quality notes. Info annotations ("metric might
// not be a counter") are returned by RangeQuery and InstantQuery but are not
// notes: metrics.Store drops them too.
//
// # Live and offline differences
//
// The offline engine is the promql package this module is built with
// (Prometheus 3); the live server may be older (Debian ships 2.42). Two
// differences are known, both confined to edges; the integration test keeps
// its scrapes off the query grids (the first cannot arise) and allows the
// second exactly where it applies:
//
//   - Prometheus 3 made range selectors and the lookback window left-open: a
//     sample exactly at a range's start is left out, where Prometheus 2
//     counts it. Answers differ only when a sample's timestamp coincides to
//     the millisecond with an evaluation time minus a range; scrape
//     timestamps carry the scrape's own offset, so they rarely do.
//   - rate() and increase() over a range that reaches back before a counter's
//     first sample extrapolate towards the range start differently: 2.42
//     limits the extrapolation to the counter's zero point before comparing
//     it with 1.1 sample intervals, newer engines compare first. Only the
//     first range (e.g. minute) of each counter series differs.
//
// Credentials (password, bearer token, header values) travel only in request
// headers: Config.String and the errors never contain them.
package prometheus
