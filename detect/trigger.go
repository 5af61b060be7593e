package detect

import (
	"fmt"
	"math"
	"time"
)

// What makes a rise the incident's trigger rather than context. Both are
// judged against the worst incident's onset (incident.go: when clients started
// to be failed or the pool saturated), never against the earliest finding.
const (
	// TriggerLead is the longest a rise may start before the onset and
	// still be its trigger: a crawl fills the workers within minutes, so a
	// rise half an hour or more earlier that the site absorbed did not by
	// itself start the failing (office-hours clients, a bot that rose at
	// night). Rises inside the incident are judged by weight alone.
	TriggerLead = 30 * time.Minute
	// MaterialPHPShare is the smallest share of the PHP time added at the
	// onset that a trigger must account for: a client using less than a
	// fifth of it could not have taken the workers, however early it came.
	MaterialPHPShare = 0.2
	// ConsequenceLag is how long after clients began to be failed a rise
	// may start and still be the failing's trigger: the minute a rise is
	// found in and the minute failures are, each by arrival, can differ by
	// a minute either way. A rise that starts later came after the failures
	// it would explain: users retrying and reloading, monitors probing, all
	// effects of the outage.
	ConsequenceLag = 2 * time.Minute
	// onsetSpan is how long after the onset the added PHP time is summed:
	// long enough that requests stalled at the onset have been answered
	// (PHP time is counted when PHP answers), short enough to stay the
	// onset's and not the whole outage's.
	onsetSpan = 15 * time.Minute
)

// triggerWeight is how a client's rise relates to the incident's onset.
type triggerWeight struct {
	onset time.Time
	// lead is how long the rise started before the onset (negative: after).
	lead time.Duration
	// addedShare is the client's share of the PHP time added at the onset
	// over the baseline's rate; measured is false when PHP time did not
	// rise at all.
	addedShare float64
	measured   bool
	// failingFor is how long clients had been failed when the rise began
	// (zero or negative: not yet).
	failingFor time.Duration
}

// weighRise measures a client's rise that started at start against the worst
// incident; ok is false when there is no incident to weigh it against.
func (ev *Evidence) weighRise(c *Cluster, start time.Time) (triggerWeight, bool) {
	inc := ev.incidents().WorstIncident()
	if inc == nil || inc.Onset.IsZero() || ev.Traffic == nil {
		return triggerWeight{}, false
	}
	w := triggerWeight{onset: inc.Onset, lead: inc.Onset.Sub(start)}
	// Failures began at the first clear minute: an edge minute before it
	// (one stray slow request) is nothing a crowd could be reacting to.
	if from := inc.ClientsFailedFrom(); !from.IsZero() {
		w.failingFor = start.Sub(from)
	}
	from := inc.Onset.Unix() / 60
	to := min(inc.Onset.Add(onsetSpan).Unix(), ev.To.Unix()) / 60
	if to <= from {
		to = from + 1
	}
	span := float64(to - from)
	var total, own float64
	for m := from; m < to; m++ {
		if mm := ev.Traffic.minutes[m]; mm != nil {
			total += mm.PHPSeconds
		}
		own += c.phpSecondsIn(m)
	}
	added, ownAdded := total, own
	if bFrom, bTo, none := ev.baselineRange(); !none {
		var bTotal, bOwn float64
		bf, bt := bFrom.Unix()/60, bTo.Unix()/60
		// A client whose lines were read only in some minutes (a pushdown's
		// sample) is averaged over those.
		whole, read := ev.Traffic.readWhole(c), 0
		for m := bf; m < bt; m++ {
			if mm := ev.Traffic.minutes[m]; mm != nil {
				bTotal += mm.PHPSeconds
			}
			if whole || ev.Traffic.readMinute(m) {
				bOwn += c.phpSecondsIn(m)
				read++
			}
		}
		if n := float64(bt - bf); n > 0 {
			added -= bTotal / n * span
		}
		if read > 0 {
			ownAdded -= bOwn / float64(read) * span
		}
	}
	// When PHP time did not rise at the onset (nothing answered: a wedge
	// logs its answers later), the weight cannot be judged, and the rise
	// is judged by its time alone rather than by a share of nothing.
	if added > 0 {
		w.addedShare = max(0, ownAdded) / added
		w.measured = true
	}
	w.addedShare = min(1, w.addedShare)
	return w, true
}

// contextReason says why a rise is context rather than the trigger, or ""
// when it can be the trigger: it started at most TriggerLead before the
// onset (or during the incident, but no later than ConsequenceLag after
// clients began to be failed: a later rise is an effect) and accounts for a
// material share of the PHP time added at the onset.
func (w triggerWeight) contextReason() string {
	switch {
	case w.failingFor > ConsequenceLag:
		return fmt.Sprintf("it rose %s after clients began to be failed, so it is a consequence of the outage (users retrying and reloading, monitors probing), not its cause: a trigger rises before the failures it explains", spanText(w.failingFor))
	case w.lead > TriggerLead:
		return fmt.Sprintf("it started %s before the incident's onset, more than the %s a trigger may lead it by", spanText(w.lead), spanText(TriggerLead))
	case w.measured && w.addedShare < MaterialPHPShare:
		share := pct(w.addedShare)
		if w.addedShare < 0.01 {
			share = fmt.Sprintf("%.1f%%", w.addedShare*100)
		}
		return fmt.Sprintf("it accounts for %s of the PHP time added at the onset, under the %s a trigger must", share, pct(MaterialPHPShare))
	}
	return ""
}

// judgeTrigger keeps a would-be trigger finding of client c a trigger only
// when its time and weight say it can be one; else it becomes context, and
// its summary says why. Facts: onset_lead_s (seconds the rise started before
// the onset, negative after), php_added_share, and consequence_after_s when
// it rose after clients began to be failed (a consequence).
func (ev *Evidence) judgeTrigger(f *Finding, c *Cluster) {
	w, ok := ev.weighRise(c, f.Start)
	if !ok {
		return
	}
	facts := FactsOf[CrawlerBurstFacts](f)
	facts.OnsetLeadS = Some(w.lead.Seconds())
	if w.measured {
		facts.PHPAddedShare = Some(round(w.addedShare, 3))
	}
	if why := w.contextReason(); why != "" {
		f.Role = RoleContext
		f.Summary += " Context, not the trigger: " + why + "."
	}
	if w.failingFor > ConsequenceLag {
		facts.ConsequenceAfterS = Some(w.failingFor.Seconds())
	}
}

// riseIntoIncident finds, for a client that first rose more than TriggerLead
// before the incident's onset, a second rise leading into the incident: a
// crawler walking the site at a low rate all night that bursts just before
// the onset rose, for this incident, when it burst. The rate before is its
// own over the hour before the lead; the burst must clear it as riseOf's
// rise clears the baseline. ok is false when there is no such rise (the
// client ran steadily into the incident: its early start stands), or when
// no minute of that stretch was read to judge by. from10 is the rate before
// (per 10 minutes), the level the second rise started from. estimated is
// true when minutes a pushdown only counted took part (rateAround) or left
// it unjudged.
func riseIntoIncident(c *Cluster, crawlerPerMinute map[int64]int, ev *Evidence, firstRise time.Time) (start time.Time, from10 float64, ok, estimated bool) {
	inc := ev.incidents().WorstIncident()
	if inc == nil || inc.Onset.IsZero() || !firstRise.Before(inc.Onset.Add(-TriggerLead)) {
		return time.Time{}, 0, false, false
	}
	leadFrom := inc.Onset.Add(-TriggerLead)
	to := inc.Onset.Add(onsetSpan)
	if to.After(ev.To) {
		to = ev.To
	}
	perMinute, estimated, known := ev.rateAround(c, crawlerPerMinute, leadFrom.Add(-time.Hour), to)
	if !known {
		return time.Time{}, 0, false, true
	}
	before := max(0, baselinePer10(perMinute, leadFrom.Add(-time.Hour), leadFrom))
	peak, _ := rollingMax(perMinute, leadFrom, to, 10)
	if !poissonExcess(float64(peak), before, riseRatio, riseZ) {
		return time.Time{}, 0, false, estimated
	}
	if m, ok := SustainedOnset(perMinute, RiseLevel(before/10, riseZ), leadFrom.Unix()/60, to.Unix()/60); ok {
		return time.Unix(m*60, 0).UTC(), before, true, estimated
	}
	return time.Time{}, 0, false, estimated
}

// rateAround is c's requests per arrival minute over [from, to) (of
// crawlerPerMinute, its readers left out), as riseIntoIncident weighs its
// rise. A minute a pushdown only counted is not
// a quiet one: when c's lines were not all read, that minute holds c's
// requests unnamed among the counts. They are taken as what the minute
// counted beyond the other clients' usual minute (the median, over the
// minutes of [from, to) that were read, of every arrival but the
// crawler's), and
// estimated is true; a minute may then come out below zero, which the sums
// of ten minutes even out. known is false when no minute of [from, to) was
// read to tell the others' usual from.
func (ev *Evidence) rateAround(c *Cluster, crawlerPerMinute map[int64]int, from, to time.Time) (perMinute map[int64]int, estimated, known bool) {
	t := ev.Traffic
	if t.readWhole(c) || !ev.countedIn(from, to) {
		return crawlerPerMinute, false, true
	}
	var others []int
	var counted []int64
	for m := from.Unix() / 60; m < (to.Unix()+59)/60; m++ {
		all := 0
		if a := t.arrivals[m]; a != nil {
			all = a.Requests
		}
		if t.readMinute(m) {
			others = append(others, all-crawlerPerMinute[m])
		} else {
			counted = append(counted, m)
		}
	}
	if len(others) == 0 {
		return nil, false, false
	}
	usual := int(math.Round(Median(others)))
	perMinute = make(map[int64]int, len(crawlerPerMinute)+len(counted))
	for m, n := range crawlerPerMinute {
		perMinute[m] = n
	}
	for _, m := range counted {
		all := 0
		if a := t.arrivals[m]; a != nil {
			all = a.Requests
		}
		perMinute[m] = all - usual
	}
	return perMinute, true, true
}
