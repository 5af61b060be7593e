package ingest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/metrics/promstore"
)

// poolFamilies are the php-fpm metric names whose samples make the metrics'
// coverage: the pool's state is known where any of them was scraped.
var poolFamilies = []string{
	"phpfpm_active_processes", "phpfpm_total_processes", "phpfpm_listen_queue", "phpfpm_listen_queue_length",
	"phpfpm_max_listen_queue", "phpfpm_max_children_reached", "phpfpm_accepted_connections",
}

// cpuFamilies are the metric names the CPU series is read from.
var cpuFamilies = []string{"aws_ec2_cpuutilization_average", "node_cpu_seconds_total"}

// truncationReasons are the access-log skip reasons that say an input was cut
// short: its evidence ends before its writer stopped.
var truncationReasons = []string{accesslog.ReasonTruncatedGzip, accesslog.ReasonCorruptGzip, accesslog.ReasonTruncatedLine}

// truncatedFiles names the files skips says were cut short, from the
// "file:line" locations kept for the truncation reasons.
func truncatedFiles(skips *sources.Skips) []string {
	var out []string
	for _, r := range truncationReasons {
		for _, loc := range skips.Examples(r) {
			if i := strings.LastIndexByte(loc, ':'); i > 0 {
				loc = loc[:i]
			}
			label := loc + " (" + r + ")"
			if !slices.Contains(out, label) {
				out = append(out, label)
			}
		}
	}
	return out
}

// failedPulls names the access-log files of a fetched bundle whose pull (or
// the per-minute counts choosing what to pull) failed or was not made over
// part of [from, to): what was read of them is less than Loki holds, so the
// counts the report shows are partial, which it says at the top with the
// other files cut short.
func failedPulls(queries []bundle.Query, from, to time.Time) []string {
	var out []string
	for _, q := range queries {
		if !strings.HasPrefix(q.File, bundle.AccessDir+"/") || !q.HasFailed() || !q.From.Before(to) || !q.To.After(from) {
			continue
		}
		label := q.File + " (its fetch failed: the totals count only what was fetched)"
		if !slices.Contains(out, label) {
			out = append(out, label)
		}
	}
	return out
}

// cutTail marks the stretch from the last evidence to the window's end as
// uncovered when an input was cut short: the log is known to end early
// there, so its silence is missing evidence whatever the rate around it
// (which, at an incident's onset, climbs too steeply to judge a silence by).
func cutTail(c *sources.Coverage, to time.Time) {
	if c.Last == nil || to.Sub(*c.Last) < sources.MinGap {
		return
	}
	for _, u := range c.Uncovered {
		if u.Kind == sources.StretchTail {
			return
		}
	}
	c.Uncovered = append(c.Uncovered, sources.Stretch{From: *c.Last, To: to, Kind: sources.StretchTail})
}

// measureCoverage fills l.Coverage for every source and adds a data_quality
// warning for each one that leaves part of the window unknown.
func measureCoverage(l *evidence.Loaded, in evidence.Inputs, access *sources.CoverageMeter, truncated []string, store *promstore.Store) {
	from, to := l.From, l.To
	var cov []sources.Coverage
	failed := failedPulls(in.Manifest.Queries, from, to)
	if len(in.Access) == 0 && in.MinuteStatus == "" && len(failed) == 0 {
		cov = append(cov, sources.Coverage{Source: evidence.CoverageAccess, State: sources.CoverageNotGiven, Uncovered: []sources.Stretch{}})
	} else {
		// A pull that failed before writing anything is not a log not
		// given: measured, it covers nothing.
		c := access.Measure(evidence.CoverageAccess, from, to, 0, false)
		c.AttributeGaps(accessInputs(l, in), time.Minute)
		c.Truncated = append(truncated, failed...)
		if len(truncated) > 0 {
			cutTail(&c, to)
		}
		if len(truncated) > 0 && c.State == sources.CoverageComplete {
			c.State = sources.CoverageIncomplete
		}
		cov = append(cov, c)
	}
	for _, src := range []struct {
		name     string
		families []string
	}{{evidence.CoverageMetrics, poolFamilies}, {evidence.CoverageCPU, cpuFamilies}} {
		switch {
		case len(in.Metrics) == 0:
			cov = append(cov, sources.Coverage{Source: src.name, State: sources.CoverageNotGiven, Uncovered: []sources.Stretch{}})
		case store == nil:
			cov = append(cov, sources.Coverage{Source: src.name, State: sources.CoverageNone, Uncovered: []sources.Stretch{}})
		default:
			c := store.Coverage(src.name, from, to, src.families...)
			if c.State == sources.CoverageNotGiven && src.name == evidence.CoverageMetrics {
				// Metrics were given, but none of the pool's.
				c.State = sources.CoverageNone
			}
			cov = append(cov, c)
		}
	}
	cov = append(cov, eventCoverage(evidence.CoverageCaddy, l.HealthLogGiven, from, to, func(yield func(time.Time)) {
		for _, e := range l.Health {
			yield(e.Time)
		}
	}))
	cov = append(cov, eventCoverage(evidence.CoverageFPM, l.FPMLogGiven, from, to, func(yield func(time.Time)) {
		for _, e := range l.FPM {
			yield(e.Time)
		}
	}))
	l.Coverage = cov
	for _, c := range cov {
		if c.Complete() {
			continue
		}
		if c.Source == evidence.CoverageCPU && c.State == sources.CoverageNotGiven {
			continue
		}
		said := coverageSaid(c, from, to, l.Loc)
		if c.State == sources.CoverageNone && store != nil && (c.Source == evidence.CoverageMetrics || c.Source == evidence.CoverageCPU) {
			said.Outside, said.HasOutside = outsideWindow(store, c.Source), true
		}
		sayNote(l, c.Source, sources.SeverityWarning, Messages.Say("coverage", said))
	}
}

// accessInputs lists the access logs read, each with its own span, and
// the files beside them that were not read.
func accessInputs(l *evidence.Loaded, in evidence.Inputs) []sources.InputSpan {
	var out []sources.InputSpan
	for _, a := range l.Access.Inputs {
		s := sources.InputSpan{Name: in.Name(a.Name), Requests: a.Requests, Duplicates: a.Duplicates + a.Repeated, SkippedLines: a.Skipped, Cut: a.Cut}
		if !a.SpanFirst.IsZero() {
			first, last := a.SpanFirst.UTC(), a.SpanLast.UTC()
			s.First, s.Last = &first, &last
		}
		out = append(out, s)
	}
	for _, p := range in.AccessSkipped {
		out = append(out, sources.InputSpan{Name: in.Name(p), NotRead: "its name is not an access log's"})
	}
	return out
}

// outsideWindow names the series of a metrics source that were read but
// fall outside the window, with their span: a series misread (seconds for
// milliseconds, another day) is named, not silently absent.
func outsideWindow(store *promstore.Store, source string) prose.Text {
	names := poolFamilies
	if source == evidence.CoverageCPU {
		names = cpuFamilies
	}
	type series struct {
		Name    string
		Samples int64
	}
	var read []series
	for _, n := range names {
		if k := store.Samples(n); k > 0 {
			read = append(read, series{n, k})
		}
	}
	if len(read) == 0 {
		return Messages.Say("coverage.no_series", nil)
	}
	first, last := store.Range()
	return Messages.Say("coverage.outside", struct {
		Read        []series
		First, Last string
	}{read, first.Format(time.RFC3339), last.Format(time.RFC3339)})
}

// coverageNote is what the note of a source's coverage says: its stretches
// without evidence (Parts), what cut it short, and for metrics read but
// outside the window, which series (Outside). Times arrive printed.
type coverageNote struct {
	Source, From, To string
	None             bool
	Parts            []prose.Text
	Truncated, Last  string
	Outside          prose.Text
	HasOutside       bool
}

// coverageSaid says what a source leaves unknown, in the words the report
// puts first.
func coverageSaid(c sources.Coverage, from, to time.Time, loc *time.Location) coverageNote {
	if loc == nil {
		loc = time.UTC
	}
	at := func(t time.Time) string { return t.In(loc).Format("2006-01-02 15:04:05 MST") }
	n := coverageNote{Source: c.Source, From: at(from), To: at(to), None: c.State == sources.CoverageNone}
	if n.None {
		return n
	}
	type stretch struct {
		At, From, To, SpanText string
		Span                   time.Duration
		Expected               float64
		After, Before          string
	}
	for _, u := range c.Uncovered {
		d := u.To.Sub(u.From)
		st := stretch{From: at(u.From), To: at(u.To), SpanText: roundMinutes(d), Span: roundedSpan(d), Expected: u.Expected, After: u.After, Before: u.Before}
		switch u.Kind {
		case sources.StretchTail:
			st.At = at(u.From)
			n.Parts = append(n.Parts, Messages.Say("coverage.tail", st))
		case sources.StretchHead:
			st.At = at(u.To)
			n.Parts = append(n.Parts, Messages.Say("coverage.head", st))
		default:
			n.Parts = append(n.Parts, Messages.Say("coverage.gap", st))
		}
	}
	if len(c.Truncated) > 0 {
		n.Truncated = strings.Join(c.Truncated, ", ")
		if c.Last != nil {
			n.Last = at(*c.Last)
		}
	}
	return n
}

// roundedSpan is the span roundMinutes prints, as a duration.
func roundedSpan(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(time.Minute)
}

func roundMinutes(d time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Second).String()
	}
	m := int(d.Round(time.Minute) / time.Minute)
	if m < 120 {
		return fmt.Sprintf("%d min", m)
	}
	return fmt.Sprintf("%dh%02d", m/60, m%60)
}

// eventCoverage is the span of an event log's lines inside the window: such
// a log writes only when something happens, so its silences are not gaps.
func eventCoverage(source string, given bool, from, to time.Time, times func(func(time.Time))) sources.Coverage {
	c := sources.Coverage{Source: source, State: sources.CoverageNotGiven, Uncovered: []sources.Stretch{}}
	if !given {
		return c
	}
	c.State = sources.CoverageEvents
	var first, last time.Time
	times(func(t time.Time) {
		if t.Before(from) || !t.Before(to) {
			return
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	})
	if !first.IsZero() {
		first, last = first.UTC(), last.UTC()
		c.First, c.Last = &first, &last
	}
	return c
}
