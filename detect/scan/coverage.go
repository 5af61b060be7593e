package scan

import (
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
)

// maxUnknownShare is the share of a window without access-log lines from
// which a scan no longer judges it: then what it saw is no more than what
// it did not, and "nothing anomalous" would be a guess about half of it.
const maxUnknownShare = 0.5

// windowCoverage is what of the window w the access log covers, measured on
// the scan's own lines per minute (t, nil when it has none) and judged
// against the site's rate in the window, as analyze measures it
// (sources.CoverageMeter): a silence too long for that rate is unknown
// (the log stopped, a pipeline lags), never quiet.
func windowCoverage(t *detect.Traffic, w Range) sources.Coverage {
	m := sources.NewCoverageMeter(time.Minute)
	if t != nil {
		for _, mm := range t.Minutes() {
			m.Observe(mm.Start, mm.Requests)
		}
	}
	c := m.Measure("access", w.From, w.To, 0, false)
	if c.State == sources.CoverageNone {
		c.Uncovered = []sources.Stretch{{From: w.From, To: w.To, Kind: sources.StretchGap}}
	}
	return c
}

// judgeable says whether a window with coverage c can be judged, and why
// not: more than maxUnknownShare of it without lines cannot be called quiet
// or anomalous as a whole. loc writes the times.
func judgeable(c sources.Coverage, w Range, loc *time.Location) (bool, prose.Text) {
	span := w.To.Sub(w.From)
	unknown := c.UncoveredDuration()
	if c.State == sources.CoverageNone {
		return false, Messages.Say("verdict.no_lines", fromTo{clock(w.From, loc), clock(w.To, loc)})
	}
	if float64(unknown) < maxUnknownShare*float64(span) {
		return true, prose.Text{}
	}
	var parts []fromTo
	for _, u := range c.Uncovered {
		parts = append(parts, fromTo{clock(u.From, loc), clock(u.To, loc)})
	}
	return false, Messages.Say("verdict.mostly_unknown", struct {
		Unknown, Span int
		Stretches     []fromTo
	}{minutes(unknown), minutes(span), parts})
}

// unknownNotes are the data_quality warnings for the window's minutes
// without lines: a missing end is named as a missing start is.
func unknownNotes(c sources.Coverage, w Range, loc *time.Location) []sources.QualityNote {
	var out []sources.QualityNote
	for _, u := range c.Uncovered {
		var msg prose.Text
		stretch := struct {
			From, To string
			Minutes  int
		}{clock(u.From, loc), clock(u.To, loc), minutes(u.To.Sub(u.From))}
		switch {
		case c.State == sources.CoverageNone:
			continue // the verdict says it
		case u.Kind == sources.StretchTail:
			msg = Messages.Say("note.tail", stretch)
		case u.Kind == sources.StretchHead:
			continue // Scan names a log that begins inside the window
		default:
			msg = Messages.Say("note.gap", stretch)
		}
		out = append(out, sources.Note("access", sources.SeverityWarning, msg))
	}
	return out
}

func clock(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format("2006-01-02 15:04 MST")
}

// minutes is d in whole minutes, as the notes say it.
func minutes(d time.Duration) int { return int(d.Round(time.Minute) / time.Minute) }
