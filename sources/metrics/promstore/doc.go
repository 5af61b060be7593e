// Package promstore loads time-stamped OpenMetrics and Prometheus text
// exposition (plain or gzip) into Prometheus' own TSDB and answers PromQL with
// Prometheus' own engine, so the queries a detector runs against a live
// Prometheus run unchanged against an evidence bundle.
//
// A Store is an empty TSDB in a temporary directory (no WAL, no compaction,
// removed by Close). Load files into it with LoadFile or LoadReader, then query
// it with Query and QueryRange (it is a metrics.Querier).
//
// It is the one package that links Prometheus' TSDB (and, through its
// configuration package, the remote-write clients of AWS, Azure and Google):
// the loaders (ingest) and the tests that query recorded samples import it;
// detect, report and scan see only metrics.Querier.
package promstore
