package scan

import (
	"embed"
	"time"

	"github.com/aftermath-forensics/aftermath/prose"
)

// proseFiles are the scan's sentences (anomaly summaries, the measures'
// names, the verdict's reasons and its data-quality notes), one file per
// language: prose/en.tmpl and prose/ko.tmpl.
//
//go:embed prose/*.tmpl
var proseFiles embed.FS

// Messages are the scan's sentences in every language. scan.json keeps their
// English; scan.md says them in the report's language.
var Messages = prose.MustParse(proseFiles, "prose", prose.Langs)

// Names of the measures and metrics the scan computes itself (Measure.Name,
// Anomaly.Metric); a finding's anomaly takes its kind's (detect.ScanMeasure).
var (
	metricPeak10      = Messages.Say("metric.peak_per_10m", nil)
	metricFailed      = Messages.Say("metric.failed", nil)
	metricFailedAll   = Messages.Say("metric.failed_all", nil)
	metricProxy503    = Messages.Say("metric.proxy_503", nil)
	metricLatencyP95  = Messages.Say("metric.latency_p95", nil)
	metricLatencyP50  = Messages.Say("metric.latency_p50", nil)
	metricSaturated   = Messages.Say("metric.saturated_minutes", nil)
	metricQueuePeak   = Messages.Say("metric.queue_peak", nil)
	metricCPUMean     = Messages.Say("metric.cpu_mean", nil)
	metricHumans      = Messages.Say("metric.human_requests", nil)
	metricClients     = Messages.Say("metric.client_requests", nil)
	methodEveryDay    = Messages.Say("baseline.every_day", nil)
	methodSameWeekday = Messages.Say("baseline.same_weekday", nil)
)

// classMetric names the requests of a path class in the window.
func classMetric(class string) prose.Text { return Messages.Say("metric.class_requests", class) }

// hm prints a local clock time as the scan's sentences carry it ("02:00"):
// the same digits in every language.
func hm(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format("15:04")
}

// textOf is t, or s said plainly when t has no message behind it (a
// finding read back without its catalog).
func textOf(t prose.Text, s string) prose.Text {
	if c, _, _ := t.Message(); c == nil {
		return prose.Plainly(s)
	}
	return t
}
