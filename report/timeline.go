package report

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
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
	EventConfigChange  = "config_change"
	EventDeploy        = "deploy"
)

// maxDeploys bounds the changes shown after the enabling one: a busy
// configuration repository must not drown the timeline.
const maxDeploys = 5

// deployHorizon is how long after the window a change still counts as the
// response to the incident (the reference's fix came four hours later).
const deployHorizon = 24 * time.Hour

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
	if f := firstKind(r.Findings, detect.KindUpstreamErrors); f != nil && !f.Start.IsZero() {
		day = f.Start
	}
	var cs []candidate
	add := func(f *detect.Finding, t time.Time, event, topic string, prio int, text func(p printer) string) {
		if t.IsZero() {
			return
		}
		ph := say(loc, day, text)
		cs = append(cs, candidate{m: Moment{Time: t, Text: ph.in(LangEN), Finding: f.ID, Event: event, texts: ph}, topic: topic, prio: prio})
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		if spec, ok := detect.SpecOf(f.Kind); ok && spec.Moments != nil {
			for _, m := range spec.Moments(f, story{r}) {
				add(f, m.Time, m.Event, m.Topic, m.Prio, func(p printer) string { return m.Text(phraser{p}) })
			}
			continue
		}
		switch f.Kind {
		case detect.KindConfigChange:
			if f.Change == nil {
				continue
			}
			c := *f.Change
			switch f.Role {
			case detect.RoleMitigation:
				add(f, c.Time, EventDeploy, "change:"+c.Key, 1, func(p printer) string {
					if p.ko {
						return changeText(p, c) + ". 위험을 낮춤"
					}
					return changeText(p, c) + "; it lowers the risk"
				})
				continue
			case detect.RoleRuledOut:
				add(f, c.Time, EventConfigChange, "change:"+c.Key, 2, func(p printer) string {
					if p.ko {
						return changeText(p, c) + ". 수치로 보아 원인이 아님"
					}
					return changeText(p, c) + "; the numbers rule it out as a cause"
				})
				continue
			}
			add(f, c.Time, EventConfigChange, "change:"+c.Key, 0, func(p printer) string { return changeText(p, c) })
			n := 0
			for _, d := range r.Changes {
				if n == maxDeploys || d.Time.After(r.Window.To.Add(deployHorizon)) {
					break
				}
				if !d.Time.After(c.Time) || sameChange(d, c) {
					continue
				}
				n++
				add(f, d.Time, EventDeploy, "change:"+d.Key, 0, func(p printer) string { return changeText(p, d) })
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

// crowd names a crawler cluster in prose, as the crawler_burst detector does.
func crowd(p printer, f *detect.Finding) string { return detect.Crowd(phraser{p}, f) }

func sameChange(a, b sources.Change) bool {
	return a.Time.Equal(b.Time) && a.Key == b.Key && a.Ref == b.Ref && a.New == b.New
}

// changeText describes a configuration change: "listen.backlog changed from
// 511 to 4,096 (php/pool.conf, 9d78ccb: PHP 8.3)".
func changeText(p printer, c sources.Change) string {
	var s string
	switch {
	case c.Key != "" && p.ko:
		s = c.Key + " 변경: " + value(c.Old) + " → " + value(c.New)
	case c.Key != "":
		s = c.Key + " changed from " + value(c.Old) + " to " + value(c.New)
	case p.ko:
		s = "설정 변경"
	default:
		s = "configuration changed"
	}
	return s + changeDetail(c)
}

// changeDetail is " (file, ref: first line of the note)", or "".
func changeDetail(c sources.Change) string {
	var detail []string
	if c.File != "" {
		detail = append(detail, c.File)
	}
	if c.Ref != "" {
		detail = append(detail, shortRef(c.Ref))
	}
	d := strings.Join(detail, ", ")
	if note := firstLine(c.Note, 80); note != "" {
		if d != "" {
			d += ": "
		}
		d += note
	}
	if d == "" {
		return ""
	}
	return " (" + d + ")"
}

// value prints a setting's value: whole numbers grouped like every other
// number of the report ("4,096"), anything else as it is; "-" when empty.
func value(s string) string {
	if s == "" {
		return "-"
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && strings.Trim(s, "0123456789") == "" {
		return detect.FormatInt(n)
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortRef abbreviates a commit hash as git does; other references stay whole.
func shortRef(ref string) string {
	if len(ref) == 40 && strings.Trim(ref, "0123456789abcdef") == "" {
		return ref[:7]
	}
	return ref
}

// firstLine returns the first line of s, cut to at most n runes.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(s)
	if rs := []rune(s); len(rs) > n {
		s = string(rs[:n-1]) + "…"
	}
	return s
}
