// Package duration is the one grammar for lengths of time written by people:
// command-line flags (--since 2h, --baseline 7d), aftermath.yaml, and the
// values of configuration changes (a php-fpm or Caddy timeout). It is Go's
// time.ParseDuration with two more units, d (24 h) and w (7 d), because
// baselines and retention are counted in days and weeks.
//
// It lives on the sources side, beside the other readers of evidence and
// configuration, so that sources, detect and cmd all use it without the
// sources layer importing detect.
package duration

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

const (
	// Day and Week are the units d and w: calendar-free, 24 h and 7*24 h (a
	// day with a daylight-saving change is not 24 h of wall clock; a baseline
	// measured in elapsed time does not care).
	Day  = 24 * time.Hour
	Week = 7 * Day
)

// ErrNoUnit is returned for a bare number other than 0: its unit would be a
// guess (seconds? minutes?), so the caller says which one it means.
var ErrNoUnit = errors.New("no unit")

// example ends the errors about the grammar itself: what a duration looks like.
const example = "write e.g. 90s, 1h30m, 7d (days) or 2w (weeks)"

// Parse reads a duration: an optional sign, then one or more decimal numbers
// each followed by a unit, ns, us (or µs), ms, s, m, h, d or w, as in "90s",
// "1h30m", "7d", "2w", "1.5d" or "1w2d"; or "0". Errors quote the input.
func Parse(s string) (time.Duration, error) {
	in := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("duration %q: empty", in)
	}
	if s == "0" || s == "+0" || s == "-0" {
		return 0, nil
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("duration %q has %w: write e.g. %ss, %sm or %sd", in, ErrNoUnit, s, s, s)
	}
	// Rewrite each d or w term as hours and let the standard library do the
	// rest, so that everything else means exactly what Go says it means.
	var b strings.Builder
	rest := s
	if rest[0] == '+' || rest[0] == '-' {
		b.WriteByte(rest[0])
		rest = rest[1:]
	}
	if rest == "" {
		return 0, fmt.Errorf("duration %q: no number", in)
	}
	for rest != "" {
		n := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if n == 0 {
			return 0, fmt.Errorf("duration %q: want a number before %q: %s", in, rest, example)
		}
		if n < 0 {
			return 0, fmt.Errorf("duration %q: %q has no unit: %s", in, rest, example)
		}
		num := rest[:n]
		rest = rest[n:]
		u := strings.IndexFunc(rest, func(r rune) bool { return r >= '0' && r <= '9' || r == '.' })
		if u < 0 {
			u = len(rest)
		}
		unit := rest[:u]
		rest = rest[u:]
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return 0, fmt.Errorf("duration %q: bad number %q", in, num)
		}
		switch unit {
		case "d", "w":
			hours := v * 24
			if unit == "w" {
				hours *= 7
			}
			b.WriteString(strconv.FormatFloat(hours, 'f', -1, 64))
			b.WriteString("h")
		case "ns", "us", "µs", "μs", "ms", "s", "m", "h":
			b.WriteString(num)
			b.WriteString(unit)
		default:
			return 0, fmt.Errorf("duration %q: unknown unit %q (units: ns, us, ms, s, m, h, d, w): %s", in, unit, example)
		}
	}
	d, err := time.ParseDuration(b.String())
	if err != nil {
		// The terms were checked above: what is left is a length Go cannot
		// hold (more than about 292 years).
		return 0, fmt.Errorf("duration %q: too long (at most about 15,000 weeks)", in)
	}
	return d, nil
}

// Format writes d as Parse reads it: whole days as "7d" or "14d" (days, not
// weeks: baselines are thought of in days), anything else as Go writes it
// ("36h0m0s", "1h30m0s", "90ms"); zero as "0" (which flag help texts take as
// "no default" and leave out).
func Format(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	if d%Day == 0 {
		return strconv.FormatInt(int64(d/Day), 10) + "d"
	}
	return d.String()
}

// Value is a time.Duration that command-line flags (pflag.Value) and YAML
// read with Parse. Convert a *time.Duration to use it for a flag:
//
//	fl.Var((*duration.Value)(&f.since), "since", "...")
type Value time.Duration

// Set parses s (pflag.Value).
func (v *Value) Set(s string) error {
	d, err := Parse(s)
	if err != nil {
		return err
	}
	*v = Value(d)
	return nil
}

// String formats the value (pflag.Value).
func (v *Value) String() string { return Format(time.Duration(*v)) }

// Type names the flag's argument in help texts (pflag.Value).
func (v *Value) Type() string { return "duration" }
