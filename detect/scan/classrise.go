package scan

import (
	"math"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/prose"
)

// KindRequestRate is a rise of uncacheable requests (tools, special pages,
// API) that no single fingerprint explains. An anomaly kind beyond the
// finding kinds of package detect, in their namespace.
const KindRequestRate detect.Kind = "request_rate"

func init() {
	registerConcern(Concern{Kind: KindRequestRate, NewFacts: func() detect.Facts { return &RequestRateFacts{} }})
}

// RequestRateFacts are the numbers behind a request_rate beside its observed
// and usual counts.
type RequestRateFacts struct {
	// BaselineSlots counts the baseline's covered slots.
	BaselineSlots int `json:"baseline_slots"`
}

// FindingKind implements detect.Facts.
func (*RequestRateFacts) FindingKind() detect.Kind { return KindRequestRate }

// classes flags uncacheable requests that rose while no fingerprint explains
// it (a crawler rotating user agents and languages stays under every
// fingerprint's floor but not under its path class's).
func (j *judge) classes() {
	for _, a := range j.anomalies {
		if a.Kind == detect.KindCrawlerBurst {
			return
		}
	}
	m := classMeasure
	m.minExcess = math.Max(minClusterPerHour*j.hours, minClassShare*float64(j.recent.Requests))
	for _, class := range []request.PathClass{request.ClassTool, request.ClassSpecial, request.ClassAPI} {
		o := float64(j.recent.Classes[class])
		b := j.baselineOf(func(p *Profile) (float64, bool) { return float64(p.Classes[class]), true })
		if !m.rises(o, b, j.cfg.Z) {
			continue
		}
		a := &Anomaly{
			Kind: KindRequestRate, Severity: SeverityWarning, Key: string(class), Start: j.cfg.Window(j.recent.To).From,
			Observed: o, Baseline: b.Median, Score: round(m.score(o, b), 1),
			Facts: &RequestRateFacts{BaselineSlots: b.N},
		}
		a.measured(classMetric(string(class)))
		a.summarize(Messages.Say("request_rate.summary", struct {
			Span            prose.Text
			Class           string
			Observed, Usual float64
			Days            int
		}{j.span(), string(class), o, b.Median, b.N}))
		j.anomalies = append(j.anomalies, a)
	}
}
