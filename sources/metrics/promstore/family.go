package promstore

import (
	"slices"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// familyBucket is the resolution at which a family's coverage is kept: the
// shortest scrape interval in common use, so no scrape shares a bucket with
// the next.
const familyBucket = 5 * time.Second

// family is what the store remembers of one metric name across its series:
// when it has samples, and how far apart a series' samples are (its scrape
// interval). Memory grows with the buckets the family covers, not with samples.
type family struct {
	meter *sources.CoverageMeter
	// intervals counts the distances between consecutive samples of a
	// series, in whole seconds.
	intervals map[int64]int64
	samples   int64
}

// observeFamily records a stored sample of the family name at t (ms); prevT
// is the series' previous sample (has false when it is the first).
func (s *Store) observeFamily(name string, t, prevT int64, has bool) {
	f := s.families[name]
	if f == nil {
		f = &family{meter: sources.NewCoverageMeter(familyBucket), intervals: map[int64]int64{}}
		s.families[name] = f
	}
	f.samples++
	f.meter.Observe(msTime(t), 1)
	if has && t > prevT {
		f.intervals[(t-prevT+500)/1000]++
	}
}

// ScrapeInterval is the usual distance between two samples of one series of
// the metric name (the median over every series), or 0 when the store has no
// two samples of one of its series. A rate() over the name needs a range of a
// few of these.
func (s *Store) ScrapeInterval(name string) time.Duration {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	f := s.families[name]
	if f == nil || len(f.intervals) == 0 {
		return 0
	}
	var keys []int64
	var total int64
	for k, n := range f.intervals {
		keys = append(keys, k)
		total += n
	}
	slices.Sort(keys)
	var seen int64
	for _, k := range keys {
		seen += f.intervals[k]
		if 2*seen >= total {
			return time.Duration(k) * time.Second
		}
	}
	return time.Duration(keys[len(keys)-1]) * time.Second
}

// Samples counts the stored samples of the metric name.
func (s *Store) Samples(name string) int64 {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if f := s.families[name]; f != nil {
		return f.samples
	}
	return 0
}

// Coverage measures how much of [from, to) the samples of the metric names
// cover together, under the name source. A silence longer than a few scrape
// intervals is uncovered: a scraped series has no quiet minutes. names that
// the store never saw count as not given.
func (s *Store) Coverage(source string, from, to time.Time, names ...string) sources.Coverage {
	s.loadMu.Lock()
	meter := sources.NewCoverageMeter(familyBucket)
	interval := time.Duration(0)
	given := false
	for _, n := range names {
		f := s.families[n]
		if f == nil {
			continue
		}
		given = true
		meter.Merge(f.meter)
	}
	s.loadMu.Unlock()
	if !given {
		return sources.Coverage{Source: source, State: sources.CoverageNotGiven, Uncovered: []sources.Stretch{}}
	}
	for _, n := range names {
		if iv := s.ScrapeInterval(n); iv > interval {
			interval = iv
		}
	}
	if interval == 0 {
		interval = time.Minute
	}
	c := meter.Measure(source, from, to, 3*interval, true)
	c.Resolution = (3 * interval).Seconds()
	return c
}
