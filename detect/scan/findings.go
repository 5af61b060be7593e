package scan

import (
	"math"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
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
			a.summarize(Messages.Say("summary.joined", struct{ First, Then prose.Text }{textOf(a.SummaryText, a.Summary), textOf(f.SummaryText, f.Summary)}))
			a.Joined = append(a.Joined, f.Facts)
			if a.Fingerprint == nil {
				a.Fingerprint = f.Fingerprint
			}
			continue
		}
		a := &Anomaly{Kind: fk.kind, Severity: sev, Key: key, Start: f.Start,
			Findings: []string{f.ID}, Fingerprint: f.Fingerprint, Facts: f.Facts}
		if key != "" {
			a.KeyText = detect.SayKey(*f.Cluster)
		}
		a.measured(fk.Metric)
		a.summarize(textOf(f.SummaryText, f.Summary))
		if why.String() != "" {
			a.summarize(Messages.Say("summary.joined", struct{ First, Then prose.Text }{a.SummaryText, why}))
		}
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
func (j *judge) findingSeverity(f *detect.Finding, sev Severity) (Severity, prose.Text) {
	floor := func(v, min float64, what string) (Severity, prose.Text) {
		if v < min {
			return SeverityInfo, Messages.Say("finding.floor", struct {
				Min  float64
				What string
			}{min, what})
		}
		return sev, prose.Text{}
	}
	switch f.Kind {
	case detect.KindCrawlerBurst:
		return floor(float64(detect.FactsOf[detect.CrawlerBurstFacts](f).Requests), minClusterPerHour*j.hours, "requests")
	case detect.KindUpstreamErrors:
		ef := detect.FactsOf[detect.UpstreamErrorsFacts](f)
		if float64(ef.Proxy[503]) >= minFailedPerHour*j.hours || share(ef.FailedTotal, j.recent.Lines) >= criticalFailedShare {
			sev = SeverityCritical
		}
		return floor(float64(ef.FailedTotal), math.Max(minFailedPerHour*j.hours, minFailedShare*float64(j.recent.Lines)), "failed")
	case detect.KindClientAbandonedWork:
		return floor(float64(detect.FactsOf[detect.AbandonedWorkFacts](f).Requests), minFailedPerHour*j.hours, "abandoned")
	case detect.KindSelfAmplification:
		return floor(float64(detect.FactsOf[detect.SelfAmplificationFacts](f).SelfCalls), minFailedPerHour*j.hours, "self_calls")
	case detect.KindWorkerSaturation:
		busy := detect.FactsOf[detect.WorkerSaturationFacts](f).SaturatedSeconds
		if busy >= criticalSaturatedMinutes*60 {
			sev = SeverityCritical
		}
		return floor(busy, saturatedMeasure.minExcess*60, "busy_seconds")
	case detect.KindListenQueueOverflow:
		if detect.FactsOf[detect.ListenQueueFacts](f).ReachedCap.V {
			sev = SeverityCritical
		}
	}
	return sev, prose.Text{}
}
