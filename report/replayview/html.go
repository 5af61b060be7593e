package replayview

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report/timechart"
	"github.com/aftermath-forensics/aftermath/rules/replay/replayreport"
	"github.com/aftermath-forensics/aftermath/templates"
)

const (
	htmlTemplate  = "replay.html.tmpl"
	styleTemplate = "style.html.tmpl"
)

// secondRowsUpTo is the longest replay charted per second: past it (ten
// minutes), a second's column would be under two pixels wide, and the
// charts go per minute.
const secondRowsUpTo = 600

// htmlView is what replay.html.tmpl shows. Every string in it is text:
// html/template escapes it, so a fingerprint or a target from the command
// line stays text. Only the charts' SVG is HTML, drawn by timechart from
// numbers and this file's words.
type htmlView struct {
	Title    string
	Valid    string
	Invalid  string
	Stopped  string
	Facts    []string
	Backtest *replayreport.Comparison
	// BacktestRows are Backtest's rows as the table shows them.
	BacktestRows []htmlCompareRow
	Agreement    string
	Classes      []htmlClassRow
	Statuses     string
	Generator    [][2]string
	Charts       []htmlChart
	ChartNote    string
	ShadeNote    string
	Notes        []string
	Minutes      []htmlMinuteRow
}

type htmlCompareRow struct {
	Class, Backtest, Replay, Difference, Failed string
	Disagrees                                   bool
}

type htmlClassRow struct {
	Class                                                                         string
	Sent, Goodput, OtherInTime, RateLimited, Proxy, Late, Timeout, Refused, Reset int
	EOF, OtherError, Stopped                                                      int
}

type htmlMinuteRow struct {
	Start, IncidentTime                      string
	InFlight, Goodput, Crawler429, Others429 int
	Proxy, Late, Timeout, Transport          int
	WorstLag                                 string
}

type htmlChart struct {
	ID, Title, Caption string
	SVG                template.HTML
}

// HTML renders replay.html: one self-contained page in the postmortem's
// style (inline CSS and SVG charts, no script, nothing fetched).
func HTML(r *replayreport.Report) ([]byte, error) {
	v := htmlViewOf(r)
	t, err := template.New(htmlTemplate).Funcs(timechart.PageFuncs()).ParseFS(templates.FS, htmlTemplate, styleTemplate)
	if err != nil {
		return nil, fmt.Errorf("replay report: template %s: %w", htmlTemplate, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("replay report: template %s: %w", htmlTemplate, err)
	}
	return buf.Bytes(), nil
}

func htmlViewOf(r *replayreport.Report) *htmlView {
	utc := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }
	v := &htmlView{Title: fmt.Sprintf("Replay of %s to %s at %s", utc(r.Window.From), utc(r.Window.To), r.Target)}
	g := r.Generator
	if g.Valid {
		v.Valid = fmt.Sprintf("Valid run: the generator's worst scheduling lag was %.1f ms (bound %.0f ms).", g.WorstLagMS, g.MaxLagMS)
	} else {
		v.Invalid = "INVALID RUN: " + g.Invalid + "."
		v.Title = "INVALID RUN: " + v.Title
	}
	if r.Stopped != "" {
		v.Stopped = fmt.Sprintf("Stopped early (%s): %s scheduled requests were never sent; requests in flight then are counted as stopped, not as the server's.", r.Stopped, num(r.Unsent))
	}
	open := fmt.Sprintf("Open loop: %s requests, each sent at its recorded arrival", num(r.Scheduled))
	if r.Speed != 1 {
		open += fmt.Sprintf(" compressed %gx (one replay second is %g incident seconds)", r.Speed, r.Speed)
	}
	v.Facts = append(v.Facts, open+", on its own goroutine, whatever was still in flight.")
	if r.Only != "" {
		v.Facts = append(v.Facts, fmt.Sprintf("Only %s requests were sent (%s others left out).", r.Only, num(r.ExcludedByOnly)))
	}
	v.Facts = append(v.Facts, "Clients: "+r.Addressing+".",
		fmt.Sprintf("Client timeout %g s: an answer after it is late (it reached nobody); the replay watched %g s more for late answers.", r.ClientTimeoutS, r.LateWindowS),
		"Crawler fingerprint: "+strings.Join(r.CrawlerFingerprints, "; ")+".")
	if r.HealthChecksLeftOut > 0 {
		v.Facts = append(v.Facts, fmt.Sprintf("%s requests for the health URI were left out: the staging proxy runs its own checks.", num(r.HealthChecksLeftOut)))
	}
	if r.OverRequestLimit > 0 {
		v.Facts = append(v.Facts, fmt.Sprintf("Bounded: %s requests beyond --max-requests were not scheduled.", num(r.OverRequestLimit)))
	}

	if c := r.Backtest; c != nil {
		v.Backtest = c
		for _, row := range c.Rows {
			v.BacktestRows = append(v.BacktestRows, htmlCompareRow{Class: row.Class,
				Backtest:   fmt.Sprintf("%.1f%% (%s of %s)", 100*row.BacktestRefusedShare, num(row.BacktestRefused), num(row.BacktestRequests)),
				Replay:     fmt.Sprintf("%.1f%% (%s of %s)", 100*row.ReplayRefusedShare, num(row.ReplayRefused), num(row.ReplayJudged)),
				Difference: fmt.Sprintf("%+.1f points", row.DifferencePoints), Failed: fmt.Sprintf("%.1f%%", 100*row.ReplayFailedShare),
				Disagrees: math.Abs(row.DifferencePoints) > replayreport.AgreementPoints})
		}
		if len(c.Disagreements) == 0 {
			v.Agreement = fmt.Sprintf("The replay agrees with the backtest within %.0f points for every class.", replayreport.AgreementPoints)
		}
	}

	for _, name := range []string{replayreport.ClassCrawler.String(), replayreport.ClassOtherLoggedOut.String(), replayreport.ClassLoggedIn.String(), "all"} {
		s := r.Classes[name]
		if s == nil {
			continue
		}
		v.Classes = append(v.Classes, htmlClassRow{Class: name, Sent: s.Sent, Goodput: s.Goodput, OtherInTime: otherInTime(s.Answered), RateLimited: s.RateLimited,
			Proxy: s.ProxyErrors, Late: s.LateTotal(), Timeout: s.Timeout, Refused: s.Refused, Reset: s.Reset, EOF: s.EOF, OtherError: s.OtherError, Stopped: s.Stopped})
	}
	if all := r.Classes["all"]; all != nil {
		v.Statuses = statusText(all.Answered)
	}

	e := r.Environment
	v.Generator = [][2]string{
		{"Worst scheduling lag", fmt.Sprintf("%.1f ms at %.1f s (bound %.0f ms)", g.WorstLagMS, g.WorstLagAtS, g.MaxLagMS)},
		{"Median / 99th percentile lag", fmt.Sprintf("%.1f ms / %.1f ms", g.MedianLagMS, g.P99LagMS)},
		{"Requests later than the bound", num(g.OverMaxLag)},
		{"In flight at most (clients still waiting)", num(g.InFlightHigh)},
		{"The schedule's ceiling (busiest client-timeout-long stretch)", num(g.InFlightBound)},
		{"Connections open at most", num(g.OpenHigh)},
		{"Environment", fmt.Sprintf("%s %s/%s, %d CPUs, GOMAXPROCS %d", e.GoVersion, e.GOOS, e.GOARCH, e.NumCPU, e.GOMAXPROCS)},
	}
	for _, k := range sortedKeys(g.ErrorSamples) {
		v.Generator = append(v.Generator, [2]string{"First " + k, g.ErrorSamples[k]})
	}

	for _, row := range r.Minutes {
		m := htmlMinuteRow{Start: strconv.FormatFloat(row.Start, 'f', 0, 64), IncidentTime: row.IncidentTime.Format("15:04:05Z"), InFlight: row.InFlightHigh, Goodput: row.Goodput,
			WorstLag: fmt.Sprintf("%.1f ms", row.WorstLagMS)}
		for name, s := range row.Classes {
			if name == replayreport.ClassCrawler.String() {
				m.Crawler429 += s.RateLimited
			} else {
				m.Others429 += s.RateLimited
			}
			m.Proxy += s.ProxyErrors
			m.Late += s.LateTotal()
			m.Timeout += s.Timeout
			m.Transport += s.Refused + s.Reset + s.EOF + s.OtherError
		}
		v.Minutes = append(v.Minutes, m)
	}
	v.Notes = r.Notes
	charts(r, v)
	return v
}

// charts draws the outcome of each class, the goodput, the in-flight count
// and the generator's lag over incident time.
func charts(r *replayreport.Report, v *htmlView) {
	rows, unit := r.Seconds, "second"
	if len(rows) > secondRowsUpTo {
		rows, unit = r.Minutes, "minute"
	}
	if len(rows) == 0 {
		return
	}
	step := time.Second
	if unit == "minute" {
		step = time.Minute
	}
	// A replay second covers Speed seconds of the incident: the axis is the
	// incident's time, so the charts line up with the postmortem's.
	bucket := time.Duration(float64(step) * r.Speed)
	from := r.Window.From.UTC()
	to := from.Add(time.Duration(len(rows)) * bucket)
	labels := timechart.Labels{Number: chartNumber, Date: func(t time.Time) string { return t.UTC().Format("2 January") }, Loc: time.UTC}
	per := "per replay " + unit
	v.ChartNote = fmt.Sprintf("Each column is one replay %s (%s of the incident); the time axis is the incident's (UTC). Requests are counted in the %s they were scheduled, goodput in the %s it completed. "+
		"Answered in time: any answer within the client's timeout but a 429 or a 5xx; late: an answer after it, of any status; connection error: refused, reset, EOF or other.",
		unit, bucket, unit, unit)
	behind := func(c *timechart.Chart) {
		for _, row := range rows {
			if row.WorstLagMS > r.Generator.MaxLagMS {
				c.Shade(row.IncidentTime, row.IncidentTime.Add(bucket), "generator behind schedule")
			}
		}
		c.Axes()
	}
	for _, row := range rows {
		if row.WorstLagMS > r.Generator.MaxLagMS {
			v.ShadeNote = fmt.Sprintf("the generator fell more than %.0f ms behind its schedule", r.Generator.MaxLagMS)
		}
	}

	type layer struct {
		label, colour string
		get           func(s *replayreport.ClassSummary) int
	}
	layers := []layer{
		{"answered in time", timechart.ColourOK, func(s *replayreport.ClassSummary) int { return s.AnsweredIn(100, 499) - s.Answered[429] }},
		{"429", timechart.Colour429, func(s *replayreport.ClassSummary) int { return s.Answered[429] }},
		{"5xx", timechart.Colour503, func(s *replayreport.ClassSummary) int { return s.AnsweredIn(500, 599) }},
		{"late", timechart.ColourLate, func(s *replayreport.ClassSummary) int { return s.LateTotal() }},
		{"timeout", timechart.ColourTimeout, func(s *replayreport.ClassSummary) int { return s.Timeout }},
		{"connection error", timechart.ColourTransport, func(s *replayreport.ClassSummary) int { return s.Refused + s.Reset + s.EOF + s.OtherError }},
		{"stopped", timechart.ColourStopped, func(s *replayreport.ClassSummary) int { return s.Stopped }},
	}
	times := make([]time.Time, len(rows))
	for i, row := range rows {
		times[i] = row.IncidentTime
	}
	classTitle := map[string]string{replayreport.ClassCrawler.String(): "Crawler", replayreport.ClassOtherLoggedOut.String(): "Other logged-out clients", replayreport.ClassLoggedIn.String(): "Logged-in clients"}
	classCaption := map[string]string{replayreport.ClassCrawler.String(): "Requests of the crawler's fingerprint: ",
		replayreport.ClassOtherLoggedOut.String(): "Requests not recorded as logged in, outside the crawler's fingerprint.",
		replayreport.ClassLoggedIn.String():       "Requests recorded as logged in (sent with a placeholder cookie that matches the site's pattern)."}
	for _, name := range []string{replayreport.ClassCrawler.String(), replayreport.ClassOtherLoggedOut.String(), replayreport.ClassLoggedIn.String()} {
		if s := r.Classes[name]; s == nil || s.Sent == 0 {
			continue
		}
		var vals [][]float64
		var colours, keys []string
		peak := 0.0
		for _, l := range layers {
			vs := make([]float64, len(rows))
			any := false
			for i, row := range rows {
				if s := row.Classes[name]; s != nil {
					vs[i] = float64(l.get(s))
				}
				any = any || vs[i] > 0
			}
			if any {
				vals, colours, keys = append(vals, vs), append(colours, l.colour), append(keys, l.label)
			}
		}
		for _, row := range rows {
			if s := row.Classes[name]; s != nil {
				peak = math.Max(peak, float64(s.Sent))
			}
		}
		title := classTitle[name] + ": what came back, " + per
		c := timechart.New(labels, from, to, bucket, peak, title)
		behind(c)
		c.Stack(times, vals, colours)
		for i, k := range keys {
			c.Key(colours[i], k)
		}
		caption := classCaption[name]
		if name == replayreport.ClassCrawler.String() {
			caption += strings.Join(r.CrawlerFingerprints, "; ") + "."
		}
		v.Charts = append(v.Charts, htmlChart{ID: "chart-" + strings.ReplaceAll(name, "_", "-"), Title: title, Caption: caption, SVG: c.Finish()})
	}

	// area charts one figure of every row as an area in colour, its top at
	// least floor (a bound drawn on it stays in view).
	area := func(title, colour, key string, floor float64, value func(replayreport.SeriesRow) float64) *timechart.Chart {
		pts := make([]timechart.Point, len(rows))
		top := floor
		for i, row := range rows {
			pts[i] = timechart.Point{T: row.IncidentTime, V: value(row)}
			top = math.Max(top, pts[i].V)
		}
		c := timechart.New(labels, from, to, bucket, top, title)
		behind(c)
		c.Area(pts, colour)
		c.Key(colour, key)
		return c
	}

	title := "Goodput: 2xx answers in time, " + per
	c := area(title, timechart.ColourLine, "goodput", 0, func(row replayreport.SeriesRow) float64 { return float64(row.Goodput) })
	v.Charts = append(v.Charts, htmlChart{ID: "chart-goodput", Title: title, Caption: "Every class, counted when the answer completed.", SVG: c.Finish()})

	title = "Requests in flight (clients still waiting), highest " + per
	c = area(title, timechart.ColourQueue, "in flight", float64(r.Generator.InFlightBound), func(row replayreport.SeriesRow) float64 { return float64(row.InFlightHigh) })
	c.HLine(float64(r.Generator.InFlightBound), timechart.ColourRef)
	c.Key("-"+timechart.ColourRef, "schedule's ceiling "+num(r.Generator.InFlightBound))
	v.Charts = append(v.Charts, htmlChart{ID: "chart-in-flight", Title: title,
		Caption: "Open loop: a request is sent at its instant whatever is still waiting, so against a server that stops answering this climbs to the ceiling (rate x client timeout).", SVG: c.Finish()})

	title = "The generator's worst scheduling lag (ms), " + per
	c = area(title, timechart.ColourCPU, "worst lag", r.Generator.MaxLagMS, func(row replayreport.SeriesRow) float64 { return row.WorstLagMS })
	c.HLine(r.Generator.MaxLagMS, timechart.ColourCrawler)
	c.Key("-"+timechart.ColourCrawler, fmt.Sprintf("bound %s ms", chartNumber(r.Generator.MaxLagMS)))
	v.Charts = append(v.Charts, htmlChart{ID: "chart-lag", Title: title,
		Caption: "How late the generator sent a request after its scheduled instant. Past the bound the run measured the generator, not the server, and is marked invalid.", SVG: c.Finish()})
}

// chartNumber writes an axis value: whole numbers grouped by thousands, a
// fraction (an almost empty chart's quarter steps) as it is.
func chartNumber(v float64) string {
	if v == math.Trunc(v) {
		return detect.FormatInt(int64(v))
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func num(n int) string { return detect.FormatInt(int64(n)) }
