// Package evidence is what one analysis reads, said as types: the evidence
// files it is given (Inputs), and that evidence read into memory with what
// reading it cost and covered (Loaded). Package ingest fills a Loaded; detect,
// report and scan read one.
//
// It is a leaf of the sources side so that the packages reading a Loaded do
// not link what loading takes: Loaded.Metrics is a metrics.Querier, not
// Prometheus' TSDB, and nothing here parses a Caddyfile.
package evidence
