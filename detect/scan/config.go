package scan

import (
	"fmt"
	"time"
)

// Config is how a scan judges a window. The zero value of every field means its
// default; Defaults fills them in.
type Config struct {
	// Since is the length of the recent window: a scan at Now judges
	// [Now-Since, Now). Default 1h; at most 24h (the baseline is the same
	// hours of previous days).
	Since time.Duration
	// Baseline is how far back the seasonal baseline reaches, in whole days.
	// Default 7 days. From 14 days on, only the same weekday is compared.
	Baseline time.Duration
	// Lookback is the stretch before the window that the detectors of
	// package detect compare with (their "hours before"). Default 3h; at
	// least 1h.
	Lookback time.Duration
	// MinBaselineDays is the fewest covered baseline slots for a seasonal
	// comparison. Default 3.
	MinBaselineDays int
	// Z is the score (excess over the median in units of the baseline's
	// spread) an anomaly needs. Default 6.
	Z float64
	// Loc is the site's time zone: "the same hour on previous days" is taken
	// on its clock. Default UTC.
	Loc *time.Location
}

// Defaults of Config.
const (
	DefaultSince           = time.Hour
	DefaultBaseline        = 7 * 24 * time.Hour
	DefaultLookback        = 3 * time.Hour
	DefaultMinBaselineDays = 3
	DefaultZ               = 6.0
)

const day = 24 * time.Hour

// Defaults returns c with every zero field set to its default.
func (c Config) Defaults() Config {
	if c.Since == 0 {
		c.Since = DefaultSince
	}
	if c.Baseline == 0 {
		c.Baseline = DefaultBaseline
	}
	if c.Lookback == 0 {
		c.Lookback = DefaultLookback
	}
	if c.MinBaselineDays == 0 {
		c.MinBaselineDays = DefaultMinBaselineDays
	}
	if c.Z == 0 {
		c.Z = DefaultZ
	}
	if c.Loc == nil {
		c.Loc = time.UTC
	}
	return c
}

// Validate reports a configuration no scan can run with.
func (c Config) Validate() error {
	switch {
	case c.Since <= 0 || c.Since > day:
		return fmt.Errorf("scan: window %s: want more than 0 and at most 24h (the baseline is the same hours of previous days)", c.Since)
	case c.Since%time.Minute != 0:
		return fmt.Errorf("scan: window %s: want whole minutes", c.Since)
	case c.Baseline < day:
		return fmt.Errorf("scan: baseline %s: want at least one day (24h)", c.Baseline)
	case c.Lookback < time.Hour:
		// detect trusts at least an hour before the window as its baseline;
		// with less it falls back to the whole data span.
		return fmt.Errorf("scan: lookback %s: want at least 1h", c.Lookback)
	case c.MinBaselineDays < 1 || c.Z <= 0:
		return fmt.Errorf("scan: minimum baseline days %d and score %g must be positive", c.MinBaselineDays, c.Z)
	}
	return nil
}

// Range is a half-open time range [From, To).
type Range struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Window is the recent window a scan at now judges.
func (c Config) Window(now time.Time) Range {
	return Range{From: now.Add(-c.Since), To: now}
}

// observed is what a scan's detect.Traffic must see: the window and, before
// it, the detectors' lookback.
func (c Config) observed(now time.Time) Range {
	return Range{From: now.Add(-c.Since - c.Lookback), To: now}
}

// SameWeekday reports whether the baseline compares only the same weekday:
// when it spans at least two weeks, so that at least two such days exist.
func (c Config) SameWeekday() bool { return c.Baseline >= 14*day }

// Slots are the baseline slots of a scan at now, most recent first: the same
// clock hours on each previous day (or the same weekday, see SameWeekday) in
// c.Loc, back to c.Baseline.
func (c Config) Slots(now time.Time) []Range {
	days := int(c.Baseline / day)
	step := 1
	if c.SameWeekday() {
		step = 7
	}
	local := now.In(c.Loc)
	var out []Range
	for k := step; k <= days; k += step {
		to := local.AddDate(0, 0, -k).UTC()
		out = append(out, Range{From: to.Add(-c.Since), To: to})
	}
	return out
}
