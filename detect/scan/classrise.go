package scan

import (
	"fmt"
	"math"

	"github.com/aftermath-forensics/aftermath/detect"
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
	for _, class := range []detect.PathClass{detect.ClassTool, detect.ClassSpecial, detect.ClassAPI} {
		o := float64(j.recent.Classes[class])
		b := j.baselineOf(func(p *Profile) (float64, bool) { return float64(p.Classes[class]), true })
		if !m.rises(o, b, j.cfg.Z) {
			continue
		}
		j.anomalies = append(j.anomalies, &Anomaly{
			Kind: KindRequestRate, Severity: SeverityWarning, Key: string(class), Start: j.cfg.Window(j.recent.To).From,
			Metric: string(class) + " requests in the window", Observed: o, Baseline: b.Median, Score: round(m.score(o, b), 1),
			Facts: &RequestRateFacts{BaselineSlots: b.N},
			Summary: fmt.Sprintf("Uncacheable %s requests rose to %s %s against a usual %s at this hour (median of %d days), spread over fingerprints none of which stands out on its own.",
				class, num(o), j.span(), num(b.Median), b.N),
		})
	}
}
