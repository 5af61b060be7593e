// Package metrics is what the pipeline says of metric samples: a Querier
// that runs PromQL (over an evidence bundle, promstore.Store; over a live
// Prometheus, its HTTP client), the Point and Series it answers with, and a
// Writer of the text exposition a bundle keeps. It imports nothing of
// Prometheus, so that detect, report and scan, which only query, do not link
// Prometheus' TSDB: sources/metrics/promstore holds the store.
package metrics

import (
	"context"
	"time"
)

// Querier runs PromQL. promstore.Store implements it over loaded files; a client of a
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
