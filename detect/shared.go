package detect

import (
	"math"
	"time"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// What package detect shares with detectors registered from outside it (the
// config-change analysis, package configchange): the numbers, times and
// series helpers its own detectors use, so that one reading of each stays
// defined here.

// MinServiceSamples is the fewest PHP times a service-time median rests on.
const MinServiceSamples = minServiceSamples

// ArrivalsFlat is the most arrivals may grow over their usual level and still
// count as flat (a load that did not rise).
const ArrivalsFlat = arrivalsFlat

// ChangedValues names the setting a change sets as the config-change
// analysis's mechanism table knows it ("listen.backlog"; "" for one it does
// not know) and reads its old and new values as numbers the way the ranking
// does; ok is false when either is not a number. Package configchange sets
// it when it registers config_change; until then no setting is known, as no
// config_change finding exists to read.
var ChangedValues = func(c sources.Change) (setting string, old, nw float64, ok bool) { return "", 0, 0, false }

// FoundIncidents are the evidence's incidents (when clients were failed),
// found on first use (Evidence.Incidents).
func (ev *Evidence) FoundIncidents() *Incidents { return ev.incidents() }

// PHPServiceTimes are PHP's own times per request logged in [from, to),
// only in minutes without a listen queue when queueFree.
func (ev *Evidence) PHPServiceTimes(from, to time.Time, queueFree bool) Histogram {
	return ev.phpServiceTimes(from, to, queueFree)
}

// ServiceTime is the mean PHP time per request during the incident.
func ServiceTime(ev *Evidence, prior []Finding) float64 { return serviceTime(ev, prior) }

// PoolSize is the php-fpm workers that served the site.
func PoolSize(ev *Evidence) int { return poolSize(ev) }

// SpecRole is the usual role of kind, "" when it is not registered.
func SpecRole(kind Kind) Role { return specRole(kind) }

// First returns the first finding of kind, or nil.
func First(fs []Finding, kind Kind) *Finding { return first(fs, kind) }

// JoinKinds joins kind names with sep.
func JoinKinds(kinds []Kind, sep string) string { return joinKinds(kinds, sep) }

// Later is the later of two times.
func Later(a, b time.Time) time.Time { return later(a, b) }

// Between are the points of ps in [from, to].
func Between(ps []metrics.Point, from, to time.Time) []metrics.Point { return between(ps, from, to) }

// MeanBetween is the mean of ps's values in [from, to); NaN if none.
func MeanBetween(ps []metrics.Point, from, to time.Time) float64 { return meanBetween(ps, from, to) }

// Peak is the highest point of ps.
func Peak(ps []metrics.Point) metrics.Point { return peak(ps) }

// RollingMax is the most of perMinute's counts in size consecutive minutes
// of [from, to), and where they start.
func RollingMax(perMinute map[int64]int, from, to time.Time, size int) (int, time.Time) {
	return rollingMax(perMinute, from, to, size)
}

// Round rounds v to digits decimals.
func Round(v float64, digits int) float64 { return round(v, digits) }

// ClampUnit keeps v within [0, 1].
func ClampUnit(v float64) float64 { return clampUnit(v) }

func clampUnit(v float64) float64 { return math.Max(0, math.Min(1, v)) }

// ChangeWhen says when a change was made relative to the onset's day, and
// SpanText a span of time, as the config-change analysis says them.
func ChangeWhen(t, onset time.Time, loc *time.Location) prose.Text { return changeWhen(t, onset, loc) }
func SpanText(d time.Duration) string                              { return spanText(d) }
