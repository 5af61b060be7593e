package report

import (
	"sort"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/configchange"
	"github.com/aftermath-forensics/aftermath/sources"
)

// Timeline events (Moment.Event).
const (
	EventBurstOnset    = detect.EventBurstOnset
	EventBurstEnd      = detect.EventBurstEnd
	EventSaturation    = detect.EventSaturation
	EventSelfCall      = detect.EventSelfCall
	EventQueueOldCap   = detect.EventQueueOldCap
	EventQueuePeak     = detect.EventQueuePeak
	EventQueueCap      = detect.EventQueueCap
	EventQueueDeep     = detect.EventQueueDeep
	EventHealthStarved = detect.EventHealthStarved
	EventFailuresStart = detect.EventFailuresStart
	EventFailurePeak   = detect.EventFailurePeak
	EventLastFailure   = detect.EventLastFailure
	EventPinning       = detect.EventPinning
	EventConfigChange  = configchange.EventConfigChange
	EventDeploy        = configchange.EventDeploy
)

// candidate is a moment before de-duplication: two candidates in the same
// minute with the same topic say the same thing, and the lower prio wins.
type candidate struct {
	m     Moment
	topic string
	prio  int
}

// assembleTimeline collects the key moments from the findings and the
// per-minute evidence. Every moment comes from a finding (Moment.Finding) and
// from numbers that finding or the evidence holds; nothing is added by hand.
func assembleTimeline(r *Report, loc *time.Location) []Moment {
	day := r.Window.From
	if f := detect.First(r.Findings, detect.KindUpstreamErrors); f != nil && !f.Start.IsZero() {
		day = f.Start
	}
	var cs []candidate
	// A crawl "dies down" only where the access log, its one evidence,
	// goes on showing it: at the edge of minutes without lines its end is
	// unknown, and the failing stretch's own moment says where the log stops.
	unlogged := detect.Unlogged(r.Coverage, r.Window.From, r.Window.To)
	add := func(f *detect.Finding, t time.Time, event detect.Event, topic string, prio int, text func(p printer) string) {
		if t.IsZero() || event == EventBurstEnd && detect.EndsAtUnlogged(unlogged, t) {
			return
		}
		ph := r.say(loc, day, text)
		cs = append(cs, candidate{m: Moment{Time: t, Text: ph.in(LangEN), Finding: f.ID, Event: event, texts: ph}, topic: topic, prio: prio})
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		if spec, ok := detect.SpecOf(f.Kind); ok && spec.Moments != nil {
			for _, m := range spec.Moments(f, story{r}) {
				add(f, m.Time, m.Event, m.Topic, m.Prio, func(p printer) string { return m.Text(phraser{p, spec.Messages}) })
			}
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		mi, mj := cs[i].m.Time.Truncate(time.Minute), cs[j].m.Time.Truncate(time.Minute)
		if !mi.Equal(mj) {
			return mi.Before(mj)
		}
		if cs[i].topic != cs[j].topic {
			return cs[i].topic < cs[j].topic
		}
		return cs[i].prio < cs[j].prio
	})
	var out []Moment
	for i, c := range cs {
		if i > 0 && c.topic == cs[i-1].topic && c.m.Time.Truncate(time.Minute).Equal(cs[i-1].m.Time.Truncate(time.Minute)) {
			continue
		}
		out = append(out, c.m)
	}
	sort.SliceStable(out, func(i, j int) bool {
		mi, mj := out[i].Time.Truncate(time.Minute), out[j].Time.Truncate(time.Minute)
		if !mi.Equal(mj) {
			return mi.Before(mj)
		}
		return detect.EventOrder(out[i].Event) < detect.EventOrder(out[j].Event)
	})
	return out
}

// changeText describes a configuration change as the config_change detector does.
func changeText(p printer, c sources.Change) string {
	return configchange.ChangeText(phraser{p, nil}, c)
}

// crowd names a crawler cluster in prose, as the crawler_burst detector does.
func crowd(p printer, f *detect.Finding) string { return detect.Crowd(phraser{p, nil}, f) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
