// Package metrics loads time-stamped OpenMetrics and Prometheus text
// exposition (plain or gzip) into Prometheus' own TSDB and answers PromQL with
// Prometheus' own engine, so the queries a detector runs against a live
// Prometheus run unchanged against an evidence bundle.
//
// A Store is an empty TSDB in a temporary directory (no WAL, no compaction,
// removed by Close). Load files into it with LoadFile or LoadReader, then query
// it with Query and QueryRange. Writer writes bundles the loader reads back.
package metrics

import (
	"context"
	"time"
)

// Querier runs PromQL. Store implements it over loaded files; a client of a
// live Prometheus implements it over the HTTP API, so detectors need not know
// which one they talk to. Results are sorted by their label string; the
// engine's warnings and info annotations (e.g. "metric might not be a
// counter") are not returned.
type Querier interface {
	// QueryRange evaluates q at every step from start to end (inclusive), like
	// Prometheus' /api/v1/query_range.
	QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]Series, error)
	// Query evaluates q at one instant, like /api/v1/query. Each element of an
	// instant vector becomes a Series of one Point; a scalar becomes one
	// Series with no labels.
	Query(ctx context.Context, q string, at time.Time) ([]Series, error)
}

// Point is one value of a series at one time.
type Point struct {
	T time.Time
	V float64
}

// Series is one labelled series of a query result. Labels include __name__
// when the result keeps the metric name (a plain selector does, rate() does
// not).
type Series struct {
	Labels map[string]string
	Points []Point
}
