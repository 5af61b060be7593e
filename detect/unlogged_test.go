package detect

import (
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

// accessWithGap is an access log's coverage of [from, to) with one stretch
// without lines.
func accessWithGap(from, to time.Time, gap sources.Stretch) []sources.Coverage {
	return []sources.Coverage{{Source: evidence.CoverageAccess, State: sources.CoverageIncomplete, First: &from, Last: &to,
		Uncovered: []sources.Stretch{gap}, Resolution: 60}}
}

// Failures on both sides of a 10-minute hole in the access log are one
// stretch: a silence of the log is no pause of the failures. Read without
// the coverage, the same lines make two incidents and an end at the hole.
func TestIncidentRunsAcrossUnloggedGap(t *testing.T) {
	from, to := t0, t0.Add(90*time.Minute)
	hole := sources.Stretch{From: t0.Add(35 * time.Minute), To: t0.Add(45 * time.Minute), Kind: sources.StretchGap}
	build := func() *Traffic {
		tr := NewTraffic(sources.Site{ClientTimeoutS: 10}, from, to)
		feed(tr, readers, from.Add(-2*time.Hour), 2*time.Hour+35*time.Minute, (2*60+35)*20)
		feed(tr, readers, hole.To, 45*time.Minute, 45*20)
		feed(tr, down, t0.Add(20*time.Minute+time.Second), 15*time.Minute-time.Second, 15*200)
		feed(tr, down, hole.To.Add(time.Second), 15*time.Minute-time.Second, 15*200)
		return tr
	}
	blind := FindIncidents(&Evidence{From: from, To: to, Traffic: build(), Loc: time.UTC})
	if len(blind.List) != 2 || !blind.List[0].End.Equal(hole.From) {
		t.Fatalf("without coverage: %d incidents %+v, want two split at the hole (the case this guards)", len(blind.List), blind.List)
	}
	in := FindIncidents(&Evidence{From: from, To: to, Traffic: build(), Loc: time.UTC, Coverage: accessWithGap(from, to, hole)})
	if len(in.List) != 1 {
		t.Fatalf("%d incidents %+v, want one across the hole", len(in.List), in.List)
	}
	inc := in.List[0]
	if !inc.Start.Equal(t0.Add(20*time.Minute)) || !inc.End.Equal(t0.Add(60*time.Minute)) {
		t.Errorf("incident %v-%v, want 17:20-18:00", inc.Start, inc.End)
	}
	if len(inc.Unlogged) != 1 || inc.Unlogged[0] != hole || inc.OpenEnd != nil || inc.OpenStart != nil {
		t.Errorf("unlogged %+v, open %+v/%+v: want the hole inside and both edges seen", inc.Unlogged, inc.OpenStart, inc.OpenEnd)
	}
}

// A log that stops while clients fail leaves the end unknown; with no
// metrics nothing bounds it.
func TestIncidentEndAtLogTailIsOpen(t *testing.T) {
	from, to := t0, t0.Add(90*time.Minute)
	tail := sources.Stretch{From: t0.Add(40 * time.Minute), To: to, Kind: sources.StretchTail}
	tr := NewTraffic(sources.Site{ClientTimeoutS: 10}, from, to)
	feed(tr, readers, from.Add(-2*time.Hour), 2*time.Hour+40*time.Minute, (2*60+40)*20)
	feed(tr, down, t0.Add(20*time.Minute+time.Second), 20*time.Minute-time.Second, 20*200)
	in := FindIncidents(&Evidence{From: from, To: to, Traffic: tr, Loc: time.UTC, Coverage: accessWithGap(from, to, tail)})
	w := in.WorstIncident()
	if w == nil || w.OpenEnd == nil || w.OpenEnd.Unlogged != tail || w.OpenEnd.Bounded() {
		t.Fatalf("worst %+v: want an open, unbounded end at the log's tail", w)
	}
	if got := Unlogged(accessWithGap(from, to, tail), from, to); len(got) != 1 || got[0] != tail {
		t.Errorf("Unlogged %+v, want the tail", got)
	}
}
