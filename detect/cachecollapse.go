package detect

import (
	"context"
	"math"
	"time"
)

// KindCacheCollapse is a cache in front of PHP that stopped answering: the
// share of requests its headers (Cache-Status, X-Cache, Age) say it
// answered fell while arrivals stayed flat, so the pages it used to answer
// reached PHP, and the pool filled. The cache emptying is what changed at
// the onset (a purge, a restart, an eviction), not the traffic and not PHP.
const KindCacheCollapse Kind = "cache_collapse"

func init() {
	Register(Spec{
		Kind: KindCacheCollapse, ReadsLines: true, New: func() Detector { return cacheCollapseDetector{} },
		NewFacts: func() Facts { return &CacheCollapseFacts{} },
		Role:     RoleTrigger,
		Scan: ScanMeasure{Metric: Messages.SayLater("cache_collapse.scan_metric", nil),
			Observed: func(f *Finding) float64 { return FactsOf[CacheCollapseFacts](f).HitRatioLowest },
			Baseline: func(f *Finding) float64 { return FactsOf[CacheCollapseFacts](f).HitRatioBefore }},
		Events: map[Event]int{EventCacheCollapse: 1},
		Explain: func(p Phraser, f *Finding, _ Story) string {
			return p.Say("cache_collapse.explain", about[CacheCollapseFacts]{f, FactsOf[CacheCollapseFacts](f)})
		},
		Moments: func(f *Finding, _ Story) []Moment {
			return []Moment{{Time: f.Start, Event: EventCacheCollapse, Topic: "cache", Text: func(p Phraser) string {
				return p.Say("cache_collapse.moment", FactsOf[CacheCollapseFacts](f))
			}}}
		},
	})
}

// EventCacheCollapse is the timeline event of the cache emptying.
const EventCacheCollapse Event = "cache_collapse"

// CacheCollapseFacts are a cache_collapse finding's numbers. Hit ratios are
// shares (0-1) of the responses whose cache headers gave a verdict.
type CacheCollapseFacts struct {
	HitRatioBefore float64 `json:"hit_ratio_before"`
	HitRatioLowest float64 `json:"hit_ratio_lowest"`
	// RecoveredAfterMin is how long the ratio took to come back within
	// cacheBackWithin of the usual; stated only when it did in the window.
	RecoveredAfterMin Maybe[float64] `json:"recovered_after_min"`
	// Arrivals a minute before the collapse and over its first
	// cacheJudgeSpan, and PHP's answers a minute likewise.
	ArrivalsPerMinBefore float64 `json:"arrivals_per_min_before"`
	ArrivalsPerMinDuring float64 `json:"arrivals_per_min_during"`
	PHPPerMinBefore      float64 `json:"php_per_min_before"`
	PHPPerMinDuring      float64 `json:"php_per_min_during"`
	// OnsetAfterS is how long after the cache emptied the incident began
	// (negative: before).
	OnsetAfterS float64 `json:"onset_after_s"`
}

func (*CacheCollapseFacts) FindingKind() Kind { return KindCacheCollapse }

const (
	// minCacheVerdicts is the fewest responses with a cache verdict a
	// minute's hit ratio is read from.
	minCacheVerdicts = 20
	// cacheUsefulRatio: a cache answering less than this share usually is
	// no cache whose loss could swamp PHP.
	cacheUsefulRatio = 0.5
	// cacheDrop is how far under its usual the ratio must fall, for
	// cacheRunMinutes running, to be a collapse and not a page mix.
	cacheDrop       = 0.25
	cacheRunMinutes = 3
	// cacheBackWithin: back within this of the usual is recovered.
	cacheBackWithin = 0.05
	// cacheJudgeSpan is what arrivals and PHP answers are compared over
	// after the collapse.
	cacheJudgeSpan = 15 * time.Minute
	// cacheOnsetWithin is how long after the collapse the incident may
	// begin and still follow from it.
	cacheOnsetWithin = 30 * time.Minute
)

type cacheCollapseDetector struct{}

func (cacheCollapseDetector) Name() Kind { return KindCacheCollapse }

func (cacheCollapseDetector) Detect(ctx context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error) {
	if ev.Traffic == nil {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("cache_collapse.no_log", nil)), nil
	}
	ratio := func(m time.Time) (float64, bool) {
		mm := ev.Traffic.Minute(m)
		if mm == nil || mm.CacheHits+mm.CacheMisses < minCacheVerdicts {
			return 0, false
		}
		return float64(mm.CacheHits) / float64(mm.CacheHits+mm.CacheMisses), true
	}
	first, _ := ev.Traffic.Span()
	dataFrom := first.Truncate(time.Minute)
	from, to := later(dataFrom, ev.From.Truncate(time.Minute)), ev.To.Truncate(time.Minute)
	bFrom, bTo, none := ev.baselineRange()
	// The usual ratio: the baseline's median minute, else the minutes of
	// the data before the candidate minute.
	usualOf := func(m time.Time) (float64, bool) {
		a, b := bFrom, bTo
		if none || !b.Before(m.Add(time.Minute)) {
			a, b = dataFrom, m
		}
		var xs []float64
		for t := a; t.Before(b); t = t.Add(time.Minute) {
			if r, ok := ratio(t); ok {
				xs = append(xs, r)
			}
		}
		if len(xs) < int(minUsableBaseline/time.Minute) {
			return 0, false
		}
		return Median(xs), true
	}
	logged := false
	for m := dataFrom; m.Before(to); m = m.Add(time.Minute) {
		if _, ok := ratio(m); ok {
			logged = true
			break
		}
	}
	if !logged {
		// Most sites log no cache header at all: there is no cache to
		// judge, which is not a gap in the evidence worth a warning.
		return nil, Because("", Messages.Say("cache_collapse.no_cache", minCacheVerdicts)), nil
	}
	low := func(m time.Time, usual float64) bool {
		r, ok := ratio(m)
		return ok && r <= usual-cacheDrop
	}
	for m := from; !m.Add(cacheRunMinutes * time.Minute).After(to); m = m.Add(time.Minute) {
		usual, ok := usualOf(m)
		if !ok || usual < cacheUsefulRatio || !low(m, usual) {
			continue
		}
		run := true
		for k := 1; k < cacheRunMinutes; k++ {
			run = run && low(m.Add(time.Duration(k)*time.Minute), usual)
		}
		if !run {
			continue
		}
		// The collapse began where the ratio first left its usual: the
		// minute before the first low one may already be falling.
		start := m
		if r, ok := ratio(m.Add(-time.Minute)); ok && r <= usual-cacheDrop/2 {
			start = m.Add(-time.Minute)
		}
		return ev.cacheCollapse(start, usual, ratio)
	}
	return nil, Because("", Messages.Say("cache_collapse.never_fell", struct {
		Drop    float64
		Minutes int
	}{cacheDrop, cacheRunMinutes})), nil
}

// cacheCollapse judges the collapse from start: arrivals flat, an incident
// after it, and says when the ratio came back.
func (ev *Evidence) cacheCollapse(start time.Time, usual float64, ratio func(time.Time) (float64, bool)) ([]Finding, Check, error) {
	to := ev.To.Truncate(time.Minute)
	lowest, lowestAt := usual, start
	var back time.Time
	for m := start; m.Before(to); m = m.Add(time.Minute) {
		r, ok := ratio(m)
		if !ok {
			continue
		}
		if r < lowest {
			lowest, lowestAt = r, m
		}
		if m.After(lowestAt) && r >= usual-cacheBackWithin {
			back = m
			break
		}
	}
	judgeTo := start.Add(cacheJudgeSpan)
	if judgeTo.After(ev.To) {
		judgeTo = ev.To
	}
	beforeFrom := start.Add(-arrivalsLookback)
	if first, _ := ev.Traffic.Span(); beforeFrom.Before(first) {
		beforeFrom = first.Truncate(time.Minute).Add(time.Minute)
	}
	arr0, arr1 := ev.arrivalsPerMinute(beforeFrom, start, true), ev.arrivalsPerMinute(start, judgeTo, false)
	if arr1 > arrivalsFlat*arr0 {
		return nil, Because("", Messages.Say("cache_collapse.arrivals_rose", struct {
			Usual, Lowest                  float64
			At                             time.Time
			ArrivalsBefore, ArrivalsDuring float64
		}{usual, lowest, start.In(ev.loc()), arr0, arr1})), nil
	}
	inc := ev.incidents().WorstIncident()
	if inc == nil || inc.Onset.Before(start.Add(-2*time.Minute)) || inc.Onset.After(start.Add(cacheOnsetWithin)) {
		return nil, Because("", Messages.Say("cache_collapse.no_incident", struct {
			Usual, Lowest float64
			At            time.Time
			Within        time.Duration
			WithinText    string
		}{usual, lowest, start.In(ev.loc()), cacheOnsetWithin, spanText(cacheOnsetWithin)})), nil
	}
	php := func(a, b time.Time) float64 {
		n, mins := 0, 0
		for m := a.Truncate(time.Minute); m.Before(b); m = m.Add(time.Minute) {
			mins++
			if mm := ev.Traffic.Minute(m); mm != nil {
				n += mm.NeededPHP()
			}
		}
		if mins == 0 {
			return 0
		}
		return float64(n) / float64(mins)
	}
	facts := &CacheCollapseFacts{HitRatioBefore: round(usual, 3), HitRatioLowest: round(lowest, 3),
		ArrivalsPerMinBefore: round(arr0, 1), ArrivalsPerMinDuring: round(arr1, 1),
		PHPPerMinBefore: round(php(beforeFrom, start), 1), PHPPerMinDuring: round(php(start, judgeTo), 1),
		OnsetAfterS: inc.Onset.Sub(start).Seconds()}
	end := inc.End
	said := cacheCollapseSummary{Start: start.In(ev.loc()), Usual: usual, Lowest: lowest, LowestAt: lowestAt.In(ev.loc()),
		ArrivalsBefore: arr0, ArrivalsDuring: arr1, PHPDuring: round(facts.PHPPerMinDuring, 0), PHPBefore: round(facts.PHPPerMinBefore, 0),
		Onset: inc.Onset.In(ev.loc())}
	if !back.IsZero() {
		facts.RecoveredAfterMin = Some(back.Sub(start).Minutes())
		said.Back, said.BackText = back.Sub(start), spanText(back.Sub(start))
		end = later(end, back)
	}
	if after := inc.Onset.Sub(start); after > 0 {
		said.OnsetAfter, said.OnsetAfterText = after, spanText(after)
	}
	conf := 0.6 + math.Min(0.3, (usual-lowest)/2)
	f := Finding{Kind: KindCacheCollapse, Role: RoleTrigger, Start: start, End: end, Confidence: round(conf, 2), Facts: facts}
	f.summarize(Messages.Say("cache_collapse.summary", said))
	return []Finding{f}, Check{}, nil
}

// onsetText says when the incident began relative to the collapse.
// cacheCollapseSummary is what a cache collapse's summary says: a zero Back
// is a ratio not back by the window's end, a zero OnsetAfter an incident
// that began with the collapse. The Texts are the English spans.
type cacheCollapseSummary struct {
	Start, LowestAt, Onset         time.Time
	Usual, Lowest                  float64
	ArrivalsBefore, ArrivalsDuring float64
	PHPDuring, PHPBefore           float64
	Back, OnsetAfter               time.Duration
	BackText, OnsetAfterText       string
}
