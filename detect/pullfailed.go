package detect

import (
	"slices"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// A pushed-down fetch counts every minute in Loki and pulls the raw lines of
// those that stand out; when that pull fails, the counts stand in for the
// lines (Evidence.PullFailed). Requests, statuses and failures are then whole,
// but what only a line tells (addresses, routes, fingerprints) is missing
// for minutes that were not ordinary: they were to be read. A detector that
// reads lines (Spec.ReadsLines) and found nothing there has not judged the
// incident, and what it found from the minutes that did come through rests
// on fewer lines than the stretch held. Minutes counted because they did not
// stand out are no such gap: a rise would have made them stand out.

// UnreadStretch is the part of the failing stretches whose raw lines could
// not be pulled, and what it did to the checks that read lines.
type UnreadStretch struct {
	// From is the first unread minute of a failing stretch, To the end of
	// the last one.
	From, To time.Time
	// Minutes counts the unread minutes inside the failing stretches,
	// StretchMinutes all their minutes.
	Minutes, StretchMinutes int
	// Unjudged are the checks that found nothing and so could not judge;
	// Estimated the kinds whose findings rest on the minutes read only.
	Unjudged, Estimated []Kind
	// loc is the zone the messages say times in.
	loc *time.Location
}

// unreadStretch intersects ev.PullFailed with the failing stretches of
// incs; nil when no minute of a stretch is unread.
func (ev *Evidence) unreadStretch(incs *Incidents) *UnreadStretch {
	if incs == nil || len(ev.PullFailed) == 0 {
		return nil
	}
	u := UnreadStretch{loc: ev.loc()}
	for _, in := range incs.List {
		u.StretchMinutes += int(in.End.Sub(in.Start) / time.Minute)
		for _, w := range ev.PullFailed {
			from, to := later(w.From, in.Start), earlier(w.To, in.End)
			if !from.Before(to) {
				continue
			}
			u.Minutes += int(to.Sub(from) / time.Minute)
			if u.From.IsZero() || from.Before(u.From) {
				u.From = from
			}
			if to.After(u.To) {
				u.To = to
			}
		}
	}
	if u.Minutes == 0 {
		return nil
	}
	return &u
}

// judge settles what the unread minutes do to the check of kind and its
// findings fs: a detector that reads lines and found nothing could not
// judge (the check says why, and Run notes it); its findings' figures are
// estimated (EstimatePullFailed). Kinds that judge from counts or metrics
// are left alone.
func (u *UnreadStretch) judge(kind Kind, fs []Finding, check *Check) {
	if u == nil {
		return
	}
	if spec, ok := SpecOf(kind); !ok || !spec.ReadsLines {
		return
	}
	if len(fs) == 0 {
		if check.Outcome == "" || check.Outcome == OutcomeNotInteresting {
			name := check.Name
			*check = Because(OutcomeCouldNotRun, Messages.Say("check.pull_failed", u.Said()))
			check.Name = name
			u.Unjudged = append(u.Unjudged, kind)
		}
		return
	}
	for i := range fs {
		// Its stated figures (and start), but those another estimate
		// already names: one figure, one mark.
		var already []string
		for _, e := range fs[i].Estimated {
			already = append(already, e.Figures...)
		}
		stated := FactMap(fs[i].Facts)
		names, _ := FactNames(fs[i].Facts)
		var figures []string
		for _, n := range append([]string{"start"}, names...) {
			if _, ok := stated[n]; (ok || n == "start") && !slices.Contains(already, n) {
				figures = append(figures, n)
			}
		}
		if len(figures) > 0 {
			fs[i].Estimated = append(fs[i].Estimated, Estimate{Figures: figures, Reason: EstimatePullFailed})
		}
	}
	if !slices.Contains(u.Estimated, kind) {
		u.Estimated = append(u.Estimated, kind)
	}
}

// note is the data_quality warning that says the cause could not be judged
// from requests in the unread minutes (nil when no check was touched).
func (u *UnreadStretch) note() *sources.QualityNote {
	if u == nil || len(u.Unjudged)+len(u.Estimated) == 0 {
		return nil
	}
	n := sources.Note("access", sources.SeverityWarning, Messages.Say("pull_failed.cause_unjudged", u.Said()))
	return &n
}

// UnreadSaid is what the messages about unread minutes say (times in the
// evidence's zone, kinds as names).
type UnreadSaid struct {
	From, To                time.Time
	Minutes, StretchMinutes int
	Unjudged, Estimated     []string
}

// Said is u as its messages say it.
func (u *UnreadStretch) Said() UnreadSaid {
	s := UnreadSaid{From: u.From.In(u.loc), To: u.To.In(u.loc), Minutes: u.Minutes, StretchMinutes: u.StretchMinutes}
	for _, k := range u.Unjudged {
		s.Unjudged = append(s.Unjudged, string(k))
	}
	for _, k := range u.Estimated {
		s.Estimated = append(s.Estimated, string(k))
	}
	return s
}
