// Package sources holds the evidence types every reader produces (requests,
// changes, data-quality notes) and, in its sub-packages, the readers themselves:
// Caddy access logs, OpenMetrics, change logs, evidence bundles, the ingestion of
// one analysis's files (ingest) and the incident simulator that writes bundles.
// Nothing here imports detect, rules or report.
package sources
