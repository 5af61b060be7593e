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
// Said with SayLater, so that every command does not parse the scan's catalog
// as the program starts.
var (
	metricPeak10      = Messages.SayLater("metric.peak_per_10m", nil)
	metricFailed      = Messages.SayLater("metric.failed", nil)
	metricFailedAll   = Messages.SayLater("metric.failed_all", nil)
	metricProxy503    = Messages.SayLater("metric.proxy_503", nil)
	metricLatencyP95  = Messages.SayLater("metric.latency_p95", nil)
	metricLatencyP50  = Messages.SayLater("metric.latency_p50", nil)
	metricSaturated   = Messages.SayLater("metric.saturated_minutes", nil)
	metricQueuePeak   = Messages.SayLater("metric.queue_peak", nil)
	metricCPUMean     = Messages.SayLater("metric.cpu_mean", nil)
	metricHumans      = Messages.SayLater("metric.human_requests", nil)
	metricClients     = Messages.SayLater("metric.client_requests", nil)
	methodEveryDay    = Messages.SayLater("baseline.every_day", nil)
	methodSameWeekday = Messages.SayLater("baseline.same_weekday", nil)
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
