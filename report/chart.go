package report

import (
	"html/template"
	"math"
	"strconv"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report/timechart"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

// chartView is one inline SVG chart of report.html, drawn by package
// timechart from numbers and this package's own words only: a crawler's
// fingerprint goes in Caption, which html/template escapes.
type chartView struct {
	ID      string
	Title   string
	Caption string
	SVG     template.HTML
}

// charts draws every chart the evidence allows.
func charts(r *Report, v *view, p printer) []chartView {
	w := wordTable(p, p.say("chart.words", nil))
	from := r.Window.From.Truncate(time.Minute)
	to := r.Window.To
	if !to.After(from) {
		return nil
	}
	var out []chartView
	labels := timechart.Labels{Number: p.n, Date: p.date, Loc: p.loc}
	newChart := func(yMax float64, title string) *timechart.Chart {
		return timechart.New(labels, from, to, time.Minute, yMax, title)
	}
	moments := make([]timechart.Moment, len(v.Timeline))
	for i, row := range v.Timeline {
		moments[i] = timechart.Moment{At: row.at, Index: row.Index}
	}
	failing := detect.First(r.Findings, detect.KindUpstreamErrors) != nil
	decorate := func(c *timechart.Chart) {
		if failing {
			c.Shade(r.Impact.Start, r.Impact.End, w["window"])
		}
		c.Axes()
	}
	// Minutes a chart's source has no evidence for are drawn as no data,
	// never as a quiet zero or a line across them.
	finish := func(c *timechart.Chart, source string) template.HTML {
		gaps := uncoveredOf(r, source)
		for _, g := range gaps {
			c.NoData(g.From, g.To, w["nodata"])
		}
		if len(gaps) > 0 {
			c.Key(timechart.ColourNoData, w["nodata"])
		}
		c.Moments(moments)
		return c.Finish()
	}

	if ms := r.Evidence.Minutes; len(ms) > 0 {
		// Requests by status, stacked.
		type layer struct {
			key, colour string
			get         func(m *MinuteRow) float64
		}
		layers := []layer{
			{"ok", timechart.ColourOK, func(m *MinuteRow) float64 {
				return math.Max(0, float64(classCount(m.Status, 2)+classCount(m.Status, 3)-m.Late))
			}},
			{"late", timechart.ColourLate, func(m *MinuteRow) float64 { return float64(m.Late) }},
			{"4xx", timechart.Colour4xx, func(m *MinuteRow) float64 { return float64(classCount(m.Status, 4) - m.Status["429"]) }},
			{"429", timechart.Colour429, func(m *MinuteRow) float64 { return float64(m.Status["429"]) }},
			{"502", timechart.Colour502, func(m *MinuteRow) float64 { return float64(m.Status["502"]) }},
			{"503", timechart.Colour503, func(m *MinuteRow) float64 { return float64(m.Status["503"]) }},
			{"504", timechart.Colour504, func(m *MinuteRow) float64 { return float64(m.Status["504"]) }},
			{"5xx", timechart.Colour5xx, func(m *MinuteRow) float64 {
				return float64(classCount(m.Status, 5) - m.Status["502"] - m.Status["503"] - m.Status["504"])
			}},
		}
		times := make([]time.Time, len(ms))
		for i := range ms {
			times[i] = ms[i].Time
		}
		var vals [][]float64
		var colours []string
		var keys []layer
		peak := 0.0
		for _, l := range layers {
			vs := make([]float64, len(ms))
			any := false
			for i := range ms {
				vs[i] = l.get(&ms[i])
				any = any || vs[i] > 0
			}
			if any {
				vals, colours, keys = append(vals, vs), append(colours, l.colour), append(keys, l)
			}
		}
		for i := range ms {
			peak = math.Max(peak, float64(ms[i].Requests))
		}
		c := newChart(peak, w["status"])
		decorate(c)
		c.Stack(times, vals, colours)
		for _, k := range keys {
			c.Key(k.colour, w[k.key])
		}
		out = append(out, chartView{ID: "chart-status", Title: w["status"], Caption: w["status_cap"], SVG: finish(c, evidence.CoverageAccess)})

		// Ordinary clients' goodput against its usual level, the crawlers'
		// own answers in time apart: the text's goodput is the ordinary one.
		good := make([]timechart.Point, len(ms))
		theirs := make([]timechart.Point, len(ms))
		gmax, anyTheirs := 0.0, false
		for i := range ms {
			good[i] = timechart.Point{T: ms[i].Time, V: float64(ms[i].Goodput)}
			theirs[i] = timechart.Point{T: ms[i].Time, V: float64(ms[i].CrawlerGoodput)}
			gmax = math.Max(gmax, math.Max(good[i].V, theirs[i].V))
			anyTheirs = anyTheirs || ms[i].CrawlerGoodput > 0
		}
		// The usual and the lowest goodput are upstream_errors' numbers, the
		// ones the text states: the chart's key repeats them, never
		// recomputes them from the minutes.
		ef := detect.FactsOf[detect.UpstreamErrorsFacts](detect.First(r.Findings, detect.KindUpstreamErrors))
		usual, lowest := ef.GoodputUsualPerMin.V, ef.GoodputMinPerMin
		c = newChart(math.Max(gmax, usual), w["goodput"])
		decorate(c)
		c.Area(good, timechart.ColourLine)
		c.Key(timechart.ColourLine, w["good"])
		if anyTheirs {
			c.Line(theirs, timechart.ColourCrawler, false)
			c.Key(timechart.ColourCrawler, w["crawler_good"])
		}
		if usual > 0 {
			c.HLine(usual, timechart.ColourRef)
			c.Key("-"+timechart.ColourRef, w["usual"]+" "+p.n(usual))
		}
		if lowest.OK {
			c.Key(timechart.ColourLine, w["lowest"]+" "+p.n(float64(lowest.V)))
		}
		out = append(out, chartView{ID: "chart-goodput", Title: w["goodput"], Caption: w["goodput_cap"], SVG: finish(c, evidence.CoverageAccess)})
	}

	if act := r.Evidence.series(SeriesActive); act != nil && len(act.Points) > 0 {
		tot := r.Evidence.series(SeriesTotal)
		ymax := act.Max
		if tot != nil {
			ymax = math.Max(ymax, tot.Max)
		}
		c := newChart(ymax, w["workers"])
		decorate(c)
		c.Area(chartPoints(act.Points), timechart.ColourLine)
		c.Key(timechart.ColourLine, w["active"])
		if tot != nil {
			c.Line(chartPoints(tot.Points), timechart.ColourRef, true)
			c.Key("-"+timechart.ColourRef, w["total"])
		}
		out = append(out, chartView{ID: "chart-workers", Title: w["workers"], Caption: w["workers_cap"], SVG: finish(c, evidence.CoverageMetrics)})
	}

	if q := r.Evidence.series(SeriesQueue); q != nil && len(q.Points) > 0 {
		bl := r.Evidence.series(SeriesBacklog)
		ymax := q.Max
		showCap := bl != nil && bl.Max > 0 && bl.Max <= 3*math.Max(q.Max, 1)
		if showCap {
			ymax = math.Max(ymax, bl.Max)
		}
		c := newChart(ymax, w["queue"])
		decorate(c)
		c.Area(chartPoints(q.Points), timechart.ColourQueue)
		c.Key(timechart.ColourQueue, w["depth"]+", "+w["peak"]+" "+p.n(q.Max))
		switch {
		case showCap:
			c.Line(chartPoints(bl.Points), timechart.ColourRef, true)
			c.Key("-"+timechart.ColourRef, w["backlog"]+" "+p.n(bl.Max))
		case bl != nil && bl.Max > 0:
			c.Key("-"+timechart.ColourRef, w["cap_off"]+": "+p.n(bl.Max))
		}
		out = append(out, chartView{ID: "chart-queue", Title: w["queue"], Caption: w["queue_cap"], SVG: finish(c, evidence.CoverageMetrics)})
	}

	if cpu := r.Evidence.series(SeriesCPU); cpu != nil && len(cpu.Points) > 0 {
		c := newChart(100, w["cpu"])
		decorate(c)
		c.Area(chartPoints(cpu.Points), timechart.ColourCPU)
		c.Key(timechart.ColourCPU, w["cpu_l"])
		out = append(out, chartView{ID: "chart-cpu", Title: w["cpu"], Caption: w["cpu_cap"], SVG: finish(c, evidence.CoverageCPU)})
	}

	for i, cr := range r.Evidence.Crawlers {
		ymax := cr.BaselinePerMin
		for _, pt := range cr.Points {
			ymax = math.Max(ymax, pt.V)
		}
		c := newChart(ymax, w["crawler"])
		decorate(c)
		c.Area(chartPoints(cr.Points), timechart.ColourCrawler)
		c.Key(timechart.ColourCrawler, w["reqs"])
		c.HLine(cr.BaselinePerMin, timechart.ColourBaseline)
		c.Key("-"+timechart.ColourBaseline, w["baseline"]+" "+p.n(cr.BaselinePerMin))
		out = append(out, chartView{ID: "chart-crawler-" + strconv.Itoa(i+1), Title: w["crawler"],
			Caption: p.say("chart.crawler_caption", p.text(cr.FingerprintText, cr.Fingerprint)+" ("+cr.Finding+")"), SVG: finish(c, evidence.CoverageAccess)})
	}
	return out
}

// uncoveredOf is the stretches of the window source has no evidence for:
// the access log's through detect.Unlogged (the story's one reading of it),
// the others' from their coverage.
func uncoveredOf(r *Report, source string) []sources.Stretch {
	if source == evidence.CoverageAccess {
		return detect.Unlogged(r.Coverage, r.Window.From, r.Window.To)
	}
	for _, c := range r.Coverage {
		if c.Source == source && (c.State == sources.CoverageIncomplete || c.State == sources.CoverageComplete) {
			return c.Uncovered
		}
	}
	return nil
}

// classCount sums the statuses of one hundred (2 for 2xx).
func classCount(m map[string]int, hundred int) int {
	n := 0
	for s, c := range m {
		if code, err := strconv.Atoi(s); err == nil && code/100 == hundred {
			n += c
		}
	}
	return n
}

// chartPoints carries a series' points to the chart.
func chartPoints(ps []Point) []timechart.Point {
	out := make([]timechart.Point, len(ps))
	for i, p := range ps {
		out[i] = timechart.Point(p)
	}
	return out
}
