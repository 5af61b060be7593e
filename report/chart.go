package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
)

// chartView is one inline SVG chart of report.html. The SVG is drawn here from
// numbers and from this package's own words only: no text from a log line ever
// enters it (a crawler's fingerprint goes in Caption, which html/template
// escapes), and every text it does hold is escaped anyway.
type chartView struct {
	ID      string
	Title   string
	Caption string
	SVG     template.HTML
}

// Geometry of every chart, in SVG user units (the page scales them).
const (
	chartW = 960.0
	chartH = 250.0
	padL   = 64.0
	padR   = 16.0
	padT   = 40.0
	padB   = 44.0 // two lines under the axis: the time, and the date where it changes
)

// Text sizes in SVG user units, and the narrowest width the page lets a chart
// shrink to (the CSS min-width of svg.chart, below which it scrolls): 12 units
// at 860 px wide still render at 10.75 px on a phone.
const (
	fontSize     = 12.0
	chartMinPx   = 860
	labelGap     = 4.0 // the least room between two labels
	markerRowTop = padT + 13
)

// Colours: failures in warm colours on top of the green of answered requests.
const (
	colOK       = "#43a047"
	colLate     = "#ffb300"
	col4xx      = "#8d6e63"
	col429      = "#7e57c2"
	col502      = "#ef6c00"
	col503      = "#d32f2f"
	col504      = "#6a1b9a"
	col5xx      = "#ad1457"
	colLine     = "#1565c0"
	colRef      = "#616161"
	colShade    = "#fde4e4"
	colMoment   = "#9e9e9e"
	colQueue    = "#00838f"
	colCPU      = "#5d4037"
	colCrawler  = "#c62828"
	colBaseline = "#2e7d32"
)

// chartWords are the charts' own words, per language.
var chartWords = map[string]map[string]string{
	LangEN: {
		"status": "Requests by status per minute", "status_cap": "From the access log. Late: successes logged after the clients' timeout, read by nobody.",
		"ok": "answered in time", "late": "late", "4xx": "4xx", "429": "429", "502": "502", "503": "503", "504": "504", "5xx": "other 5xx",
		"goodput": "Goodput: successes PHP answered in time, per minute", "goodput_cap": "From the access log. Dashed: the usual goodput before the window.",
		"good": "goodput", "usual": "usual",
		"workers": "php-fpm workers busy", "workers_cap": "Highest value of each minute.", "active": "active", "total": "total",
		"queue": "php-fpm listen queue", "queue_cap": "Highest value of each minute; dashed: the backlog cap.", "depth": "queued", "backlog": "cap",
		"cap_off": "cap off scale",
		"cpu":     "CPU %", "cpu_cap": "Mean of each minute.", "cpu_l": "CPU",
		"crawler": "Crawler cluster per minute against its baseline", "crawler_cap": "Cluster: ",
		"reqs": "requests", "baseline": "baseline",
		"window": "failing stretch",
	},
	LangKO: {
		"status": "분당 상태별 요청", "status_cap": "접근 로그에서 셈. 늦은 응답: 이용자가 기다리는 시간보다 늦게 기록되어 아무도 받지 못한 성공 응답.",
		"ok": "제때 응답", "late": "늦은 응답", "4xx": "4xx", "429": "429", "502": "502", "503": "503", "504": "504", "5xx": "그 밖의 5xx",
		"goodput": "분당 goodput: PHP가 제때 돌려준 성공 응답", "goodput_cap": "접근 로그에서 셈. 점선: 분석 구간 전의 평소 값.",
		"good": "goodput", "usual": "평소",
		"workers": "점유된 php-fpm 워커", "workers_cap": "1분마다 가장 큰 값.", "active": "점유", "total": "전체",
		"queue": "php-fpm 대기열", "queue_cap": "1분마다 가장 큰 값. 점선: 대기열 상한.", "depth": "대기", "backlog": "상한",
		"cap_off": "상한은 그래프 밖",
		"cpu":     "CPU %", "cpu_cap": "1분 평균.", "cpu_l": "CPU",
		"crawler": "분당 크롤러 요청과 평소 값", "crawler_cap": "클러스터: ",
		"reqs": "요청", "baseline": "평소",
		"window": "실패 구간",
	},
}

// svgChart draws one time chart.
type svgChart struct {
	b        strings.Builder
	p        printer
	from, to time.Time
	yMax     float64
	yStep    float64
	legend   [][2]string // colour, label; a colour starting with "-" is drawn dashed
}

func newChart(p printer, from, to time.Time, yMax float64, title string) *svgChart {
	c := &svgChart{p: p, from: from, to: to}
	c.yStep, c.yMax = yScale(yMax)
	c.printf(`<svg class="chart" viewBox="0 0 %s %s" role="img" aria-label="%s" preserveAspectRatio="xMidYMid meet">`,
		f1(chartW), f1(chartH), html.EscapeString(title))
	c.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="#ffffff" stroke="#bdbdbd"/>`, f1(padL), f1(padT), f1(chartW-padL-padR), f1(chartH-padT-padB))
	return c
}

func (c *svgChart) printf(format string, args ...any) {
	fmt.Fprintf(&c.b, format, args...)
}

// x maps a time to the horizontal axis.
func (c *svgChart) x(t time.Time) float64 {
	span := c.to.Sub(c.from).Seconds()
	if span <= 0 {
		return padL
	}
	v := padL + (chartW-padL-padR)*t.Sub(c.from).Seconds()/span
	return math.Max(padL, math.Min(chartW-padR, v))
}

// y maps a value to the vertical axis.
func (c *svgChart) y(v float64) float64 {
	if c.yMax <= 0 || math.IsNaN(v) {
		return chartH - padB
	}
	v = math.Max(0, math.Min(v, c.yMax))
	return chartH - padB - (chartH-padT-padB)*v/c.yMax
}

// shade marks the failing stretch.
func (c *svgChart) shade(from, to time.Time, label string) {
	if !to.After(from) || !to.After(c.from) || !from.Before(c.to) {
		return
	}
	x0, x1 := c.x(from), c.x(to)
	c.printf(`<rect class="window" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
		f1(x0), f1(padT), f1(math.Max(1, x1-x0)), f1(chartH-padT-padB), colShade, html.EscapeString(label))
}

// axes draws the grid, the value labels and the time labels.
func (c *svgChart) axes() {
	for i := 0; float64(i)*c.yStep <= c.yMax*1.0001; i++ {
		v := float64(i) * c.yStep
		y := c.y(v)
		c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e0e0e0"/>`, f1(padL), f1(y), f1(chartW-padR), f1(y))
		c.printf(`<text class="ylab" x="%s" y="%s" text-anchor="end">%s</text>`, f1(padL-6), f1(y+4), html.EscapeString(c.p.n(v)))
	}
	step := tickStep(c.to.Sub(c.from))
	lastDay := ""
	for t := firstTick(c.from, step, c.p.loc); !t.After(c.to); t = t.Add(step) {
		x := c.x(t)
		c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#9e9e9e"/>`, f1(x), f1(chartH-padB), f1(x), f1(chartH-padB+4))
		c.label("xlab", x, chartH-padB+20, c.p.hm(t))
		// The date under the first time and under every time that starts a
		// new local day, so a window across midnight says which day each
		// hour belongs to.
		if day := c.p.date(t); day != lastDay {
			c.label("xdate", x, chartH-padB+36, day)
			lastDay = day
		}
	}
}

// label writes one centred axis label, kept inside the chart's width.
func (c *svgChart) label(class string, x, y float64, text string) {
	half := textWidth(text) / 2
	x = math.Max(half, math.Min(chartW-half, x))
	c.printf(`<text class="%s" x="%s" y="%s" text-anchor="middle">%s</text>`, class, f1(x), f1(y), html.EscapeString(text))
}

// textWidth estimates the width of a label in user units: wide (CJK) runes
// take about a full em, others a little over half of one.
func textWidth(s string) float64 {
	w := 0.0
	for _, r := range s {
		if r >= 0x1100 {
			w += fontSize
		} else {
			w += 0.62 * fontSize
		}
	}
	return w
}

// moments marks the timeline rows with their numbers. Rows close in time
// would print their numbers on top of each other: their lines stay, and the
// labels that would touch are merged into one ("4-6", "3, 7") over the group.
func (c *svgChart) moments(rows []rowView) {
	type mark struct {
		x   float64
		idx int
	}
	var marks []mark
	for _, r := range rows {
		if r.at.Before(c.from) || r.at.After(c.to) {
			continue
		}
		x := c.x(r.at)
		c.printf(`<line class="moment" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-dasharray="3 3"/>`, f1(x), f1(padT), f1(x), f1(chartH-padB), colMoment)
		marks = append(marks, mark{x, r.Index})
	}
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].x < marks[j].x })
	type group struct {
		xs   []float64
		idxs []int
	}
	span := func(g group) (left, right float64) {
		mid := (g.xs[0] + g.xs[len(g.xs)-1]) / 2
		half := textWidth(indexList(g.idxs)) / 2
		mid = math.Max(padL+half, math.Min(chartW-padR-half, mid))
		return mid - half, mid + half
	}
	var groups []group
	for _, m := range marks {
		groups = append(groups, group{xs: []float64{m.x}, idxs: []int{m.idx}})
		// Merge backwards while the newest label touches the one before it.
		for len(groups) > 1 {
			a, b := groups[len(groups)-2], groups[len(groups)-1]
			_, aRight := span(a)
			bLeft, _ := span(b)
			if bLeft >= aRight+labelGap {
				break
			}
			groups = append(groups[:len(groups)-2], group{xs: append(a.xs, b.xs...), idxs: append(a.idxs, b.idxs...)})
		}
	}
	for _, g := range groups {
		left, right := span(g)
		c.printf(`<text class="mk" x="%s" y="%s" text-anchor="middle">%s</text>`, f1((left+right)/2), f1(markerRowTop), html.EscapeString(indexList(g.idxs)))
	}
}

// indexList names a group of timeline rows: "4" , "4-6" for a run, "3, 7".
func indexList(idxs []int) string {
	sorted := slices.Clone(idxs)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	if len(sorted) > 2 && sorted[len(sorted)-1]-sorted[0] == len(sorted)-1 {
		return strconv.Itoa(sorted[0]) + "-" + strconv.Itoa(sorted[len(sorted)-1])
	}
	parts := make([]string, len(sorted))
	for i, v := range sorted {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ", ")
}

// stack draws stacked step areas, one per layer, bottom first.
func (c *svgChart) stack(times []time.Time, layers [][]float64, colours []string) {
	base := make([]float64, len(times))
	for li, vals := range layers {
		var top, bottom []string
		for i, t := range times {
			x0, x1 := c.x(t), c.x(t.Add(time.Minute))
			hi := base[i] + vals[i]
			top = append(top, pt(x0, c.y(hi)), pt(x1, c.y(hi)))
			bottom = append(bottom, pt(x0, c.y(base[i])), pt(x1, c.y(base[i])))
		}
		for i, j := 0, len(bottom)-1; i < j; i, j = i+1, j-1 {
			bottom[i], bottom[j] = bottom[j], bottom[i]
		}
		c.printf(`<path class="data" d="M%sZ" fill="%s" stroke="none"/>`, strings.Join(append(top, bottom...), " L"), colours[li])
		for i := range base {
			base[i] += vals[i]
		}
	}
}

// line draws values at the middle of their minute.
func (c *svgChart) line(ps []Point, colour string, dashed bool) {
	if len(ps) == 0 {
		return
	}
	var d []string
	for _, p := range ps {
		d = append(d, pt(c.x(p.T.Add(30*time.Second)), c.y(p.V)))
	}
	if len(d) == 1 {
		d = append(d, d[0])
	}
	dash := ""
	if dashed {
		dash = ` stroke-dasharray="6 4"`
	}
	c.printf(`<path class="data" d="M%s" fill="none" stroke="%s" stroke-width="2"%s/>`, strings.Join(d, " L"), colour, dash)
}

// area fills under a line (lightly) and draws it.
func (c *svgChart) area(ps []Point, colour string) {
	if len(ps) == 0 {
		return
	}
	var d []string
	for _, p := range ps {
		d = append(d, pt(c.x(p.T.Add(30*time.Second)), c.y(p.V)))
	}
	first, last := ps[0].T.Add(30*time.Second), ps[len(ps)-1].T.Add(30*time.Second)
	c.printf(`<path class="fill" d="M%s L%s L%sZ" fill="%s" fill-opacity="0.18" stroke="none"/>`,
		pt(c.x(first), c.y(0)), strings.Join(d, " L"), pt(c.x(last), c.y(0)), colour)
	c.line(ps, colour, false)
}

// hline draws a constant reference line.
func (c *svgChart) hline(v float64, colour string) {
	y := c.y(v)
	c.printf(`<path class="ref" d="M%s L%s" fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="6 4"/>`, pt(padL, y), pt(chartW-padR, y), colour)
}

func (c *svgChart) key(colour, label string) { c.legend = append(c.legend, [2]string{colour, label}) }

// finish draws the legend and closes the SVG.
func (c *svgChart) finish() template.HTML {
	x := padL
	for _, l := range c.legend {
		colour, dashed := strings.CutPrefix(l[0], "-")
		if dashed {
			c.printf(`<line x1="%s" y1="16" x2="%s" y2="16" stroke="%s" stroke-width="2" stroke-dasharray="4 3"/>`, f1(x), f1(x+18), colour)
		} else {
			c.printf(`<rect x="%s" y="10" width="18" height="12" fill="%s"/>`, f1(x), colour)
		}
		c.printf(`<text class="lg" x="%s" y="20">%s</text>`, f1(x+24), html.EscapeString(l[1]))
		x += 24 + textWidth(l[1]) + 18
	}
	c.b.WriteString(`</svg>`)
	// Safe: built above from numbers, colours and escaped words of this package.
	return template.HTML(c.b.String())
}

// charts draws every chart the evidence allows.
func charts(r *Report, v *view, p printer) []chartView {
	w := chartWords[p.lang]
	from := r.Window.From.Truncate(time.Minute)
	to := r.Window.To
	if !to.After(from) {
		return nil
	}
	var out []chartView
	failing := firstKind(r.Findings, detect.KindUpstreamErrors) != nil
	decorate := func(c *svgChart) {
		if failing {
			c.shade(r.Impact.Start, r.Impact.End, w["window"])
		}
		c.axes()
	}
	finish := func(c *svgChart) template.HTML {
		c.moments(v.Timeline)
		return c.finish()
	}

	if ms := r.Evidence.Minutes; len(ms) > 0 {
		// Requests by status, stacked.
		type layer struct {
			key, colour string
			get         func(m *MinuteRow) float64
		}
		layers := []layer{
			{"ok", colOK, func(m *MinuteRow) float64 {
				return math.Max(0, float64(classCount(m.Status, 2)+classCount(m.Status, 3)-m.Late))
			}},
			{"late", colLate, func(m *MinuteRow) float64 { return float64(m.Late) }},
			{"4xx", col4xx, func(m *MinuteRow) float64 { return float64(classCount(m.Status, 4) - m.Status["429"]) }},
			{"429", col429, func(m *MinuteRow) float64 { return float64(m.Status["429"]) }},
			{"502", col502, func(m *MinuteRow) float64 { return float64(m.Status["502"]) }},
			{"503", col503, func(m *MinuteRow) float64 { return float64(m.Status["503"]) }},
			{"504", col504, func(m *MinuteRow) float64 { return float64(m.Status["504"]) }},
			{"5xx", col5xx, func(m *MinuteRow) float64 {
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
		c := newChart(p, from, to, peak, w["status"])
		decorate(c)
		c.stack(times, vals, colours)
		for _, k := range keys {
			c.key(k.colour, w[k.key])
		}
		out = append(out, chartView{ID: "chart-status", Title: w["status"], Caption: w["status_cap"], SVG: finish(c)})

		// Goodput against its usual level.
		good := make([]Point, len(ms))
		gmax := 0.0
		for i := range ms {
			good[i] = Point{T: ms[i].Time, V: float64(ms[i].Goodput)}
			gmax = math.Max(gmax, good[i].V)
		}
		usual := 0.0
		if f := firstKind(r.Findings, detect.KindUpstreamErrors); f != nil {
			usual = detect.FactsOf[detect.UpstreamErrorsFacts](f).GoodputUsualPerMin.V
		}
		c = newChart(p, from, to, math.Max(gmax, usual), w["goodput"])
		decorate(c)
		c.area(good, colLine)
		c.key(colLine, w["good"])
		if usual > 0 {
			c.hline(usual, colRef)
			c.key("-"+colRef, w["usual"]+" "+p.n(usual))
		}
		out = append(out, chartView{ID: "chart-goodput", Title: w["goodput"], Caption: w["goodput_cap"], SVG: finish(c)})
	}

	if act := r.Evidence.series(SeriesActive); act != nil && len(act.Points) > 0 {
		tot := r.Evidence.series(SeriesTotal)
		ymax := act.Max
		if tot != nil {
			ymax = math.Max(ymax, tot.Max)
		}
		c := newChart(p, from, to, ymax, w["workers"])
		decorate(c)
		c.area(act.Points, colLine)
		c.key(colLine, w["active"])
		if tot != nil {
			c.line(tot.Points, colRef, true)
			c.key("-"+colRef, w["total"])
		}
		out = append(out, chartView{ID: "chart-workers", Title: w["workers"], Caption: w["workers_cap"], SVG: finish(c)})
	}

	if q := r.Evidence.series(SeriesQueue); q != nil && len(q.Points) > 0 {
		bl := r.Evidence.series(SeriesBacklog)
		ymax := q.Max
		showCap := bl != nil && bl.Max > 0 && bl.Max <= 3*math.Max(q.Max, 1)
		if showCap {
			ymax = math.Max(ymax, bl.Max)
		}
		c := newChart(p, from, to, ymax, w["queue"])
		decorate(c)
		c.area(q.Points, colQueue)
		c.key(colQueue, w["depth"])
		switch {
		case showCap:
			c.line(bl.Points, colRef, true)
			c.key("-"+colRef, w["backlog"]+" "+p.n(bl.Max))
		case bl != nil && bl.Max > 0:
			c.key("-"+colRef, w["cap_off"]+": "+p.n(bl.Max))
		}
		out = append(out, chartView{ID: "chart-queue", Title: w["queue"], Caption: w["queue_cap"], SVG: finish(c)})
	}

	if cpu := r.Evidence.series(SeriesCPU); cpu != nil && len(cpu.Points) > 0 {
		c := newChart(p, from, to, 100, w["cpu"])
		decorate(c)
		c.area(cpu.Points, colCPU)
		c.key(colCPU, w["cpu_l"])
		out = append(out, chartView{ID: "chart-cpu", Title: w["cpu"], Caption: w["cpu_cap"], SVG: finish(c)})
	}

	for i, cr := range r.Evidence.Crawlers {
		ymax := cr.BaselinePerMin
		for _, pt := range cr.Points {
			ymax = math.Max(ymax, pt.V)
		}
		c := newChart(p, from, to, ymax, w["crawler"])
		decorate(c)
		c.area(cr.Points, colCrawler)
		c.key(colCrawler, w["reqs"])
		c.hline(cr.BaselinePerMin, colBaseline)
		c.key("-"+colBaseline, w["baseline"]+" "+p.n(cr.BaselinePerMin))
		out = append(out, chartView{ID: "chart-crawler-" + strconv.Itoa(i+1), Title: w["crawler"],
			Caption: w["crawler_cap"] + cr.Fingerprint + " (" + cr.Finding + ")", SVG: finish(c)})
	}
	return out
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

// yScale picks the grid step, 1, 2 or 5 times a power of ten, that cuts v
// into at most five bands, and the top of the axis: v rounded up to a step.
// Grid lines then fall on round numbers.
func yScale(v float64) (step, top float64) {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0.25, 1
	}
	exp := math.Pow(10, math.Floor(math.Log10(v/5)))
	step = 10 * exp
	for _, m := range []float64{1, 2, 5} {
		if m*exp >= v/5 {
			step = m * exp
			break
		}
	}
	if step < 1 && v >= 1 {
		step = 1
	}
	return step, step * math.Ceil(v/step-1e-9)
}

// tickStep picks a time-label interval that gives at most about ten labels.
func tickStep(span time.Duration) time.Duration {
	for _, m := range []int{1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440} {
		step := time.Duration(m) * time.Minute
		if span/step <= 10 {
			return step
		}
	}
	return 24 * time.Hour
}

// firstTick is the first local time at or after from that is a multiple of step.
func firstTick(from time.Time, step time.Duration, loc *time.Location) time.Time {
	t := from.In(loc).Truncate(time.Minute)
	if t.Before(from) {
		t = t.Add(time.Minute)
	}
	mins := int64(step / time.Minute)
	for i := int64(0); i < mins && i < 1440; i++ {
		lt := t.In(loc)
		if int64(lt.Hour()*60+lt.Minute())%mins == 0 {
			return t
		}
		t = t.Add(time.Minute)
	}
	return t
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func pt(x, y float64) string { return f1(x) + "," + f1(y) }
