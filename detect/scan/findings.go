package scan

import (
	"fmt"
	"math"

	"github.com/aftermath-forensics/aftermath/detect"
)

// scanMeasure is a kind's registered scan measure with its anomaly kind and
// severity resolved.
type scanMeasure struct {
	detect.ScanMeasure
	kind     detect.Kind
	severity Severity
}

// findingKind says what anomaly a detector's finding becomes, and how it is
// measured when no seasonal anomaly of its concern exists (the kind's spec).
func findingKind(kind detect.Kind) scanMeasure {
	spec, _ := detect.SpecOf(kind)
	m := scanMeasure{ScanMeasure: spec.Scan, kind: spec.Scan.Anomaly, severity: spec.Scan.Severity}
	if m.kind == "" {
		m.kind = kind
	}
	if m.severity == "" {
		m.severity = SeverityWarning
	}
	return m
}

// findings turns the detectors' findings into anomalies, joining those of a
// concern the seasonal comparison already raised.
func (j *judge) findings() {
	for i := range j.res.Findings {
		f := &j.res.Findings[i]
		fk := findingKind(f.Kind)
		key := ""
		if f.Kind == detect.KindCrawlerBurst && f.Cluster != nil {
			key = f.Cluster.String()
		}
		sev, why := j.findingSeverity(f, fk.severity)
		if a := j.find(fk.kind, key); a != nil {
			a.Findings = append(a.Findings, f.ID)
			if f.Start.Before(a.Start) {
				a.Start = f.Start
			}
			if SeverityRank(sev) > SeverityRank(a.Severity) {
				a.Severity = sev
			}
			a.Summary += " " + f.Summary
			a.Joined = append(a.Joined, f.Facts)
			if a.Fingerprint == nil {
				a.Fingerprint = f.Fingerprint
			}
			continue
		}
		a := &Anomaly{Kind: fk.kind, Severity: sev, Key: key, Start: f.Start, Metric: fk.Metric,
			Summary: f.Summary + why, Findings: []string{f.ID}, Fingerprint: f.Fingerprint, Facts: f.Facts}
		if fk.Observed != nil {
			a.Observed = fk.Observed(f)
		}
		if fk.Baseline == nil {
			// The detector measured against no baseline: claim none, and no
			// score computed from a made-up usual 0.
			a.NoBaseline = true
		} else {
			a.Baseline = fk.Baseline(f)
			if fk.Observed != nil {
				a.Score = round(measure{count: true}.score(a.Observed, Baseline{Median: a.Baseline, N: 1}), 1)
			}
		}
		j.anomalies = append(j.anomalies, a)
	}
}

// findingSeverity applies the scan's volume floors and critical rules to a
// finding: the detectors judge relative rises only, and a scan that runs every
// hour must not alarm on six slow requests.
func (j *judge) findingSeverity(f *detect.Finding, sev Severity) (Severity, string) {
	floor := func(v, min float64, what string) (Severity, string) {
		if v < min {
			return SeverityInfo, fmt.Sprintf(" (Below the scan's floor of %s %s: noted, not alarming.)", num(min), what)
		}
		return sev, ""
	}
	switch f.Kind {
	case detect.KindCrawlerBurst:
		return floor(float64(detect.FactsOf[detect.CrawlerBurstFacts](f).Requests), minClusterPerHour*j.hours, "requests")
	case detect.KindUpstreamErrors:
		ef := detect.FactsOf[detect.UpstreamErrorsFacts](f)
		if float64(ef.Proxy[503]) >= minFailedPerHour*j.hours || share(ef.FailedTotal, j.recent.Lines) >= criticalFailedShare {
			sev = SeverityCritical
		}
		return floor(float64(ef.FailedTotal), math.Max(minFailedPerHour*j.hours, minFailedShare*float64(j.recent.Lines)), "failed responses")
	case detect.KindClientAbandonedWork:
		return floor(float64(detect.FactsOf[detect.AbandonedWorkFacts](f).Requests), minFailedPerHour*j.hours, "abandoned requests")
	case detect.KindSelfAmplification:
		return floor(float64(detect.FactsOf[detect.SelfAmplificationFacts](f).SelfCalls), minFailedPerHour*j.hours, "self calls")
	case detect.KindWorkerSaturation:
		busy := detect.FactsOf[detect.WorkerSaturationFacts](f).SaturatedSeconds
		if busy >= criticalSaturatedMinutes*60 {
			sev = SeverityCritical
		}
		return floor(busy, saturatedMeasure.minExcess*60, "busy seconds")
	case detect.KindListenQueueOverflow:
		if detect.FactsOf[detect.ListenQueueFacts](f).ReachedCap.V {
			sev = SeverityCritical
		}
	}
	return sev, ""
}
