package scan

import (
	"sort"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
)

// Measure is one site-wide quantity of the window against its baseline: the
// table a reader checks when a scan stays quiet ("was it close?").
type Measure struct {
	// Name says what is measured, with its unit.
	Name string `json:"name"`
	// NameText is Name as said by the catalog.
	NameText prose.Text `json:"-"`
	Observed float64    `json:"observed"`
	Baseline Baseline   `json:"baseline"`
	Score    float64    `json:"score"`
	// Anomalous is true when the measure alone passed every gate.
	Anomalous bool `json:"anomalous"`
}

// How each measure is judged (see the package doc). Volumes are per hour of
// window and scale with Config.Since.
var (
	// A fingerprint: requests, distinct addresses or networks, at least 3x.
	clusterMeasure = measure{count: true, relFloor: 0.1, ratio: 3}
	// A path class rising without a fingerprint to blame.
	classMeasure = measure{count: true, relFloor: 0.1, ratio: 3}
	// Requests of people: twice the usual is news.
	surgeMeasure = measure{count: true, relFloor: 0.1, ratio: 2}
	// Failed responses: three times the usual, ten an hour at least.
	errorMeasure = measure{count: true, relFloor: 0.1, ratio: 3}
	// PHP latency over successes, seconds: twice the usual and a quarter of
	// a second more at least.
	latencyMeasure = measure{relFloor: 0.25, absFloor: 0.05, ratio: 2, minExcess: 0.25}
	// Minutes with every worker busy: three more than usual at least.
	saturatedMeasure = measure{relFloor: 0.25, absFloor: 1, ratio: 2, minExcess: 3}
	// The listen queue's peak: more waiting than there are workers.
	queueMeasure = measure{relFloor: 0.25, absFloor: 1, ratio: 5}
	// Mean CPU in percent: 20 points above the usual at least.
	cpuMeasure = measure{relFloor: 0.1, absFloor: 3, ratio: 1.5, minExcess: 20}
)

// Volume floors per hour of window.
const (
	// minClusterPerHour: a fingerprint needs this many extra requests an hour.
	minClusterPerHour = 60
	// minClusterShare: and this share of the window's requests (detect's own
	// minimum for a crawler).
	minClusterShare = 0.02
	// minClassShare: a path class needs this share of the window's requests.
	minClassShare = 0.05
	// minSurgePerHour: a surge needs this many extra requests an hour.
	minSurgePerHour = 120
	// minFailedPerHour: failed responses need this many extra an hour, and
	// minFailedShare of the window's requests.
	minFailedPerHour = 10
	minFailedShare   = 0.01
	// criticalFailedShare: more failed than this share of requests is critical.
	criticalFailedShare = 0.05
	// minLatencySamples: fewer PHP successes in a slot and its percentiles
	// say nothing.
	minLatencySamples = 50
	minLatencySlot    = 20
	// criticalSaturatedMinutes: every worker busy this long is critical.
	criticalSaturatedMinutes = 10
	// standOutZ: when the scan dates an anomaly its baseline already judged,
	// the first minute this many Poisson deviations above the usual
	// (detect.RiseLevel) is its start; detect's riseZ is 5.
	standOutZ = 3
)

// judge scores one scan.
type judge struct {
	cfg     Config
	site    sources.Site
	recent  *Profile
	base    []*Profile
	traffic *detect.Traffic
	res     *detect.Result
	// readings are how each of the window's fingerprints read it, as detect
	// measures it (detect.Evidence.WindowReadings): automation is judged on
	// them.
	readings map[request.ClusterKey]detect.Reading
	hours    float64
	// seasonal is false when too few baseline slots are covered.
	seasonal bool

	anomalies []*Anomaly
	measures  []Measure
	notes     []sources.QualityNote
}

func (j *judge) run() {
	j.hours = j.cfg.Since.Hours()
	if j.seasonal {
		auto, humans := j.clusters()
		j.surge(auto, humans)
		j.classes()
		j.errors()
		j.latency()
		j.saturation()
	}
	j.findings()
	j.escalate()
	j.dropIdleChanges()
	sort.SliceStable(j.anomalies, func(a, b int) bool {
		x, y := j.anomalies[a], j.anomalies[b]
		if SeverityRank(x.Severity) != SeverityRank(y.Severity) {
			return SeverityRank(x.Severity) > SeverityRank(y.Severity)
		}
		return x.Score > y.Score
	})
}

// baselineOf collects one value per covered slot (ok false skips the slot).
func (j *judge) baselineOf(f func(*Profile) (float64, bool)) Baseline {
	var xs []float64
	for _, p := range j.base {
		if v, ok := f(p); ok {
			xs = append(xs, v)
		}
	}
	return robust(xs)
}

// measureSite records a site-wide measure and reports whether it rose.
func (j *judge) measureSite(name prose.Text, o float64, b Baseline, m measure) bool {
	return j.measureSiteAt(name, o, o, b, m)
}

// measureSiteAt records a measure shown as o but judged on g (a conservative
// estimate of it).
func (j *judge) measureSiteAt(name prose.Text, o, g float64, b Baseline, m measure) bool {
	up := m.rises(g, b, j.cfg.Z)
	j.measures = append(j.measures, Measure{Name: name.String(), NameText: name, Observed: round(o, 3), Baseline: b, Score: round(m.score(g, b), 1), Anomalous: up})
	return up
}

func (j *judge) find(kind detect.Kind, key string) *Anomaly {
	for _, a := range j.anomalies {
		if a.Kind == kind && a.Key == key {
			return a
		}
	}
	return nil
}

// escalate makes a crawler critical when the site fails in the same window:
// it is then the likely trigger, not a curiosity.
func (j *judge) escalate() {
	failing := false
	for _, a := range j.anomalies {
		switch a.Kind {
		case KindErrorRate, KindSaturation, detect.KindHealthcheckStarved, detect.KindIdlePinning:
			failing = failing || a.Severity == SeverityCritical
		}
	}
	if !failing {
		return
	}
	for _, a := range j.anomalies {
		if a.Kind == detect.KindCrawlerBurst && a.Severity == SeverityWarning {
			a.Severity = SeverityCritical
		}
	}
}

// dropIdleChanges removes config_change anomalies when nothing alarming
// remains: a change explains a problem, and with none it is not news.
func (j *judge) dropIdleChanges() {
	for _, a := range j.anomalies {
		if a.Kind != detect.KindConfigChange && a.Alarming() {
			return
		}
	}
	kept := j.anomalies[:0]
	for _, a := range j.anomalies {
		if a.Kind != detect.KindConfigChange {
			kept = append(kept, a)
		}
	}
	j.anomalies = kept
}

func (j *judge) note(severity sources.Severity, t prose.Text) {
	j.notes = append(j.notes, sources.Note("scan", severity, t))
}

// span names the window in the site's zone ("between 02:00 and 03:00").
func (j *judge) span() prose.Text {
	w := j.cfg.Window(j.recent.To)
	return Messages.Say("span", fromTo{hm(w.From, j.cfg.Loc), hm(w.To, j.cfg.Loc)})
}

// fromTo is a stretch's two ends, printed.
type fromTo struct{ From, To string }

// firstMinute is the first minute of w whose counts satisfy cond (w.From if none).
func firstMinute(t *detect.Traffic, w Range, cond func(*detect.Minute) bool) time.Time {
	for m := w.From.Truncate(time.Minute); m.Before(w.To); m = m.Add(time.Minute) {
		if mm := t.Minute(m); mm != nil && cond(mm) {
			return m.UTC()
		}
	}
	return w.From
}
