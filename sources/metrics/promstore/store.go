package promstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/metrics"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/tsdb"
)

// Engine limits. They match a stock Prometheus, except the timeout.
const (
	// MaxSamples is the most samples one query may hold in memory at once
	// (Prometheus' --query.max-samples default): a day at a 15 s step is
	// 5,760 points a series, so this allows thousands of series.
	MaxSamples = 50_000_000
	// QueryTimeout bounds one query's evaluation.
	QueryTimeout = 2 * time.Minute
	// LookbackDelta is how far back an instant selector looks for a sample
	// (Prometheus' default).
	LookbackDelta = 5 * time.Minute
	// subqueryStep is the step of a subquery written without one
	// (Prometheus' default global evaluation_interval).
	subqueryStep = time.Minute
)

// maxSpan is how far apart in time two samples of a Store may be. The head of
// Prometheus' TSDB only accepts samples newer than (newest - chunk range / 2),
// and a file grouped by metric family goes back to the beginning of its window
// at every family: the chunk range is set to twice maxSpan so that any order
// of samples within maxSpan loads, and the out-of-order window to maxSpan so a
// series split over several files loads too.
const maxSpan = 100 * 365 * 24 * time.Hour

// Store holds loaded series and queries them. Load* calls are serialized;
// queries may run concurrently with each other and with loads (a query sees
// the files, or segments of a file, committed before it started).
type Store struct {
	dir    string
	db     *tsdb.DB
	engine *promql.Engine

	// loadMu serializes loads and guards the series caches.
	loadMu sync.Mutex
	// byText maps a series as written in a file (name and labels, exactly as
	// the bytes appear) to its state; byLabels maps the canonical label
	// string, so that differently written forms of a series share one state.
	byText   map[string]*seriesState
	byLabels map[string]*seriesState
	gen      uint64 // incremented per load, to count the series of one load
	// families holds each metric name's coverage and scrape interval.
	families map[string]*family

	mu       sync.RWMutex // guards the fields below
	closed   bool
	min, max int64 // span of stored samples, ms; valid when hasData
	hasData  bool
}

// seriesState is what the loader remembers of one series between samples.
type seriesState struct {
	lset  labels.Labels
	name  string // the metric name (__name__)
	ref   uint64 // storage.SeriesRef, 0 until the first append
	has   bool   // a sample was stored
	lastT int64  // newest stored sample
	lastV float64
	gen   uint64 // last load that stored a sample of it
}

var errClosed = errors.New("metrics: store is closed")

// Open returns an empty Store backed by a TSDB in a new temporary directory.
// Close removes the directory.
func Open() (*Store, error) {
	dir, err := os.MkdirTemp("", "aftermath-metrics-")
	if err != nil {
		return nil, fmt.Errorf("metrics: temporary TSDB directory: %w", err)
	}
	opts := tsdb.DefaultOptions()
	opts.WALSegmentSize = -1 // no WAL: the store is rebuilt from files every run
	opts.NoLockfile = true
	opts.RetentionDuration = 0
	chunkRange := 2 * maxSpan.Milliseconds()
	opts.MinBlockDuration = chunkRange
	opts.MaxBlockDuration = chunkRange
	opts.OutOfOrderTimeWindow = maxSpan.Milliseconds()
	opts.EnableOverlappingCompaction = false
	db, err := tsdb.Open(dir, nil, nil, opts, nil)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("metrics: open TSDB in %s: %w", dir, err)
	}
	// Nothing is ever compacted into blocks: all data stays in the head
	// (chunks memory-mapped from the temporary directory).
	db.DisableCompactions()
	engine := promql.NewEngine(promql.EngineOpts{
		MaxSamples:               MaxSamples,
		Timeout:                  QueryTimeout,
		LookbackDelta:            LookbackDelta,
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		NoStepSubqueryIntervalFn: func(int64) int64 { return subqueryStep.Milliseconds() },
	})
	return &Store{
		dir:      dir,
		db:       db,
		engine:   engine,
		byText:   map[string]*seriesState{},
		byLabels: map[string]*seriesState{},
		families: map[string]*family{},
	}, nil
}

// Close releases the TSDB and removes its temporary directory. It waits for
// running loads and queries. Calling Close twice is harmless.
func (s *Store) Close() error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.db.Close()
	if rmErr := os.RemoveAll(s.dir); rmErr != nil {
		err = errors.Join(err, rmErr)
	}
	if err != nil {
		return fmt.Errorf("metrics: close: %w", err)
	}
	return nil
}

// Range returns the time span of the stored samples (zero times if none).
func (s *Store) Range() (min, max time.Time) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.hasData {
		return time.Time{}, time.Time{}
	}
	return msTime(s.min), msTime(s.max)
}

// extend widens the stored span by a load's span.
func (s *Store) extend(min, max int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.hasData || min < s.min {
		s.min = min
	}
	if !s.hasData || max > s.max {
		s.max = max
	}
	s.hasData = true
}

// QueryRange evaluates q from start to end every step. Errors name the query.
func (s *Store) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]metrics.Series, error) {
	if step <= 0 {
		return nil, fmt.Errorf("promql %q: step %v must be positive", q, step)
	}
	if end.Before(start) {
		return nil, fmt.Errorf("promql %q: end %s before start %s", q, end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	return s.exec(ctx, q, func() (promql.Query, error) {
		return s.engine.NewRangeQuery(ctx, s.db, queryOpts(), q, start, end, step)
	})
}

// Query evaluates q at one instant. Errors name the query.
func (s *Store) Query(ctx context.Context, q string, at time.Time) ([]metrics.Series, error) {
	return s.exec(ctx, q, func() (promql.Query, error) {
		return s.engine.NewInstantQuery(ctx, s.db, queryOpts(), q, at)
	})
}

func queryOpts() promql.QueryOpts {
	return promql.NewPrometheusQueryOpts(false, LookbackDelta, nil)
}

func (s *Store) exec(ctx context.Context, q string, newQuery func() (promql.Query, error)) ([]metrics.Series, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("promql %q: %w", q, errClosed)
	}
	qry, err := newQuery()
	if err != nil {
		return nil, fmt.Errorf("promql %q: %w", q, err)
	}
	// The result's memory goes back to the engine's pools on Close: convert
	// it first.
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("promql %q: %w", q, res.Err)
	}
	out, err := convert(res.Value)
	if err != nil {
		return nil, fmt.Errorf("promql %q: %w", q, err)
	}
	return out, nil
}

// convert turns a promql value into Series sorted by their label string.
// Native histogram points cannot come from text exposition and are dropped.
func convert(v parser.Value) ([]metrics.Series, error) {
	type keyed struct {
		key string
		s   metrics.Series
	}
	var all []keyed
	add := func(lset labels.Labels, pts []metrics.Point) {
		all = append(all, keyed{key: lset.String(), s: metrics.Series{Labels: lset.Map(), Points: pts}})
	}
	switch v := v.(type) {
	case promql.Matrix:
		for _, ser := range v {
			pts := make([]metrics.Point, len(ser.Floats))
			for i, p := range ser.Floats {
				pts[i] = metrics.Point{T: msTime(p.T), V: p.F}
			}
			add(ser.Metric, pts)
		}
	case promql.Vector:
		for _, smp := range v {
			if smp.H != nil {
				continue
			}
			add(smp.Metric, []metrics.Point{{T: msTime(smp.T), V: smp.F}})
		}
	case promql.Scalar:
		add(labels.EmptyLabels(), []metrics.Point{{T: msTime(v.T), V: v.V}})
	default:
		return nil, fmt.Errorf("result of type %s is not supported", v.Type())
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].key < all[j].key })
	out := make([]metrics.Series, len(all))
	for i := range all {
		out[i] = all[i].s
	}
	return out, nil
}

// msTime converts Prometheus milliseconds to a UTC time.
func msTime(ms int64) time.Time {
	return time.UnixMilli(ms).UTC()
}

var _ metrics.Querier = (*Store)(nil)
