// Package timechart draws the inline SVG time charts of aftermath's HTML
// pages: the postmortem's report.html (package report) and the replay's
// replay.html (package report/replayview) share it, so both read alike: the same
// geometry, colours, axes, legend and label rules.
//
// A chart is drawn from numbers and from its caller's own words only: no text
// from a log line ever enters it (a crawler's fingerprint belongs in the
// figure's caption, which html/template escapes), and every text it does hold
// is escaped anyway.
package timechart

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
)

// Geometry of every chart, in SVG user units (the page scales them). Each
// chart is drawn twice: wide for a laptop, and narrow for a phone, where the
// same 12-unit labels would shrink below 10 px if the wide one were scaled
// down to the screen. The page shows one of them (style.html.tmpl).
const (
	wideWidth   = 960.0
	narrowWidth = 360.0
	height      = 250.0
	padL        = 64.0
	padR        = 16.0
	padTop      = 40.0 // the legend's row above the plot
	padB        = 44.0 // two lines under the axis: the time, and the date where it changes
	legendRow   = 18.0 // the height of one more legend row, when the legend wraps
	// wideTicks and narrowTicks bound the time labels of each width.
	wideTicks   = 10
	narrowTicks = 4
)

// Text sizes in SVG user units, and the narrowest width a page lets a chart
// shrink to (the CSS min-width of svg.chart, below which it scrolls): 12 units
// at 860 px wide still render at 10.75 px on a phone.
const (
	fontSize   = 12.0
	MinWidthPx = 860
	labelGap   = 4.0 // the least room between two labels
)

// NarrowBelowPx is the page width under which the narrow drawing is shown:
// there the wide one would need MinWidthPx and scroll.
const NarrowBelowPx = MinWidthPx + 60

// PageFuncs are the template functions of a page that holds these charts
// (style.html.tmpl reads them): the legend's swatch is the charts' shading
// and the page's narrowest width the one their label sizes were chosen for,
// one definition each.
func PageFuncs() template.FuncMap {
	return template.FuncMap{
		"shade":         func() string { return ColourShade },
		"chartMinPx":    func() int { return MinWidthPx },
		"narrowBelowPx": func() int { return NarrowBelowPx },
	}
}

// Colours: failures in warm colours on top of the green of answered
// requests; what the server never answered in dark greys.
const (
	ColourOK        = "#43a047"
	ColourLate      = "#ffb300"
	Colour4xx       = "#8d6e63"
	Colour429       = "#7e57c2"
	Colour502       = "#ef6c00"
	Colour503       = "#d32f2f"
	Colour504       = "#6a1b9a"
	Colour5xx       = "#ad1457"
	ColourTimeout   = "#455a64"
	ColourTransport = "#212121"
	ColourStopped   = "#bdbdbd"
	ColourLine      = "#1565c0"
	ColourRef       = "#616161"
	ColourShade     = "#fde4e4"
	ColourNoData    = "#e0e0e0"
	ColourMoment    = "#9e9e9e"
	ColourQueue     = "#00838f"
	ColourCPU       = "#5d4037"
	ColourCrawler   = "#c62828"
	ColourBaseline  = "#2e7d32"
)

// Labels says how a chart writes its axes' words, in its page's language.
type Labels struct {
	// Number writes a value of the vertical axis.
	Number func(float64) string
	// Date writes the date under the first time label and under every time
	// that starts a new local day.
	Date func(time.Time) string
	// Loc is the zone of the time axis.
	Loc *time.Location
}

// Point is a time and a value: a line's or an area's sample, drawn at the
// middle of its bucket.
type Point struct {
	T time.Time
	V float64
}

// Moment is a numbered instant marked on the chart (a timeline row).
type Moment struct {
	At    time.Time
	Index int
}

// Chart draws one time chart. Its drawing calls are kept and played at each
// width when Finish draws it.
type Chart struct {
	title    string
	ops      []func(*canvas)
	l        Labels
	from, to time.Time
	// bucket is how much time one sample covers (a minute in the
	// postmortem; one replay second of incident time in a replay).
	bucket time.Duration
	yMax   float64
	yStep  float64
	legend [][2]string // colour, label; a colour starting with "-" is drawn dashed
}

// New starts a chart of [from, to] whose samples each cover bucket and whose
// values reach yMax; title is its accessible name.
func New(l Labels, from, to time.Time, bucket time.Duration, yMax float64, title string) *Chart {
	c := &Chart{l: l, from: from, to: to, bucket: bucket}
	if c.bucket <= 0 {
		c.bucket = time.Minute
	}
	c.yStep, c.yMax = yScale(yMax)
	c.title = title
	return c
}

// canvas is a Chart being drawn at one width.
type canvas struct {
	*Chart
	b             strings.Builder
	width, height float64
	padT          float64 // the plot's top: below the legend's rows
	maxTicks      int64
	legendRows    [][][2]string
}

func (c *canvas) printf(format string, args ...any) {
	fmt.Fprintf(&c.b, format, args...)
}

func (c *canvas) markerRowTop() float64 { return c.padT + 13 }

// start opens the SVG; class names the drawing ("chart" the wide one,
// "chart narrow" the phone's).
func (c *canvas) start(class string) {
	c.printf(`<svg class="%s" viewBox="0 0 %s %s" role="img" aria-label="%s" preserveAspectRatio="xMidYMid meet">`,
		class, f1(c.width), f1(c.height), html.EscapeString(c.title))
	c.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="#ffffff" stroke="#bdbdbd"/>`, f1(padL), f1(c.padT), f1(c.width-padL-padR), f1(c.height-c.padT-padB))
}

// x maps a time to the horizontal axis.
func (c *canvas) x(t time.Time) float64 {
	span := c.to.Sub(c.from).Seconds()
	if span <= 0 {
		return padL
	}
	v := padL + (c.width-padL-padR)*t.Sub(c.from).Seconds()/span
	return math.Max(padL, math.Min(c.width-padR, v))
}

// y maps a value to the vertical axis.
func (c *canvas) y(v float64) float64 {
	if c.yMax <= 0 || math.IsNaN(v) {
		return c.height - padB
	}
	v = math.Max(0, math.Min(v, c.yMax))
	return c.height - padB - (c.height-c.padT-padB)*v/c.yMax
}

// Shade marks a stretch of time (the failing stretch, the seconds a replay's
// generator fell behind).
func (c *Chart) Shade(from, to time.Time, label string) {
	c.ops = append(c.ops, func(k *canvas) { k.shade(from, to, label) })
}

func (c *canvas) shade(from, to time.Time, label string) {
	if !to.After(from) || !to.After(c.from) || !from.Before(c.to) {
		return
	}
	x0, x1 := c.x(from), c.x(to)
	c.printf(`<rect class="window" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
		f1(x0), f1(c.padT), f1(math.Max(1, x1-x0)), f1(c.height-c.padT-padB), ColourShade, html.EscapeString(label))
}

// NoData covers [from, to) with a grey band: minutes its source has no
// evidence for. Drawn over the data, it hides what a line drawn across the
// stretch would suggest; the label is its tooltip.
func (c *Chart) NoData(from, to time.Time, label string) {
	c.ops = append(c.ops, func(k *canvas) { k.noData(from, to, label) })
}

func (c *canvas) noData(from, to time.Time, label string) {
	if !to.After(from) || !to.After(c.from) || !from.Before(c.to) {
		return
	}
	x0, x1 := c.x(later(from, c.from)), c.x(earlier(to, c.to))
	c.printf(`<rect class="nodata" x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.85"><title>%s</title></rect>`,
		f1(x0), f1(c.padT), f1(math.Max(1, x1-x0)), f1(c.height-c.padT-padB), ColourNoData, html.EscapeString(label))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Axes draws the grid, the value labels and the time labels.
func (c *Chart) Axes() {
	c.ops = append(c.ops, func(k *canvas) { k.axes() })
}

func (c *canvas) axes() {
	for i := 0; float64(i)*c.yStep <= c.yMax*1.0001; i++ {
		v := float64(i) * c.yStep
		y := c.y(v)
		c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e0e0e0"/>`, f1(padL), f1(y), f1(c.width-padR), f1(y))
		c.printf(`<text class="ylab" x="%s" y="%s" text-anchor="end">%s</text>`, f1(padL-6), f1(y+4), html.EscapeString(c.l.Number(v)))
	}
	step := tickStep(c.to.Sub(c.from), c.bucket, c.maxTicks)
	clock := "15:04"
	if step < time.Minute {
		clock = "15:04:05"
	}
	lastDay := ""
	for t := firstTick(c.from, step, c.l.Loc); !t.After(c.to); t = t.Add(step) {
		x := c.x(t)
		c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#9e9e9e"/>`, f1(x), f1(c.height-padB), f1(x), f1(c.height-padB+4))
		c.label("xlab", x, c.height-padB+20, t.In(c.l.Loc).Format(clock))
		// The date under the first time and under every time that starts a
		// new local day, so a window across midnight says which day each
		// hour belongs to.
		if day := c.l.Date(t); day != lastDay {
			c.label("xdate", x, c.height-padB+36, day)
			lastDay = day
		}
	}
}

// label writes one centred axis label, kept inside the chart's width.
func (c *canvas) label(class string, x, y float64, text string) {
	half := textWidth(text) / 2
	x = math.Max(half, math.Min(c.width-half, x))
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

// Moments marks numbered instants (the timeline's rows). Rows close in time
// would print their numbers on top of each other: their lines stay, and the
// labels that would touch are merged into one ("4-6", "3, 7") over the group.
func (c *Chart) Moments(ms []Moment) {
	c.ops = append(c.ops, func(k *canvas) { k.moments(ms) })
}

func (c *canvas) moments(ms []Moment) {
	type mark struct {
		x   float64
		idx int
	}
	var marks []mark
	for _, m := range ms {
		if m.At.Before(c.from) || m.At.After(c.to) {
			continue
		}
		x := c.x(m.At)
		c.printf(`<line class="moment" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-dasharray="3 3"/>`, f1(x), f1(c.padT), f1(x), f1(c.height-padB), ColourMoment)
		marks = append(marks, mark{x, m.Index})
	}
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].x < marks[j].x })
	type group struct {
		xs   []float64
		idxs []int
	}
	span := func(g group) (left, right float64) {
		mid := (g.xs[0] + g.xs[len(g.xs)-1]) / 2
		half := textWidth(indexList(g.idxs)) / 2
		mid = math.Max(padL+half, math.Min(c.width-padR-half, mid))
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
		c.printf(`<text class="mk" x="%s" y="%s" text-anchor="middle">%s</text>`, f1((left+right)/2), f1(c.markerRowTop()), html.EscapeString(indexList(g.idxs)))
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

// Stack draws stacked step areas, one per layer, bottom first: layer li's
// value at times[i] is layers[li][i], over one bucket from times[i].
func (c *Chart) Stack(times []time.Time, layers [][]float64, colours []string) {
	c.ops = append(c.ops, func(k *canvas) { k.stack(times, layers, colours) })
}

func (c *canvas) stack(times []time.Time, layers [][]float64, colours []string) {
	base := make([]float64, len(times))
	for li, vals := range layers {
		var top, bottom []string
		for i, t := range times {
			x0, x1 := c.x(t), c.x(t.Add(c.bucket))
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

// Line draws values at the middle of their bucket.
func (c *Chart) Line(ps []Point, colour string, dashed bool) {
	c.ops = append(c.ops, func(k *canvas) { k.line(ps, colour, dashed) })
}

func (c *canvas) line(ps []Point, colour string, dashed bool) {
	if len(ps) == 0 {
		return
	}
	var d []string
	for _, p := range ps {
		d = append(d, pt(c.x(p.T.Add(c.bucket/2)), c.y(p.V)))
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

// Area fills under a line (lightly) and draws it.
func (c *Chart) Area(ps []Point, colour string) {
	c.ops = append(c.ops, func(k *canvas) { k.area(ps, colour) })
}

func (c *canvas) area(ps []Point, colour string) {
	if len(ps) == 0 {
		return
	}
	var d []string
	for _, p := range ps {
		d = append(d, pt(c.x(p.T.Add(c.bucket/2)), c.y(p.V)))
	}
	first, last := ps[0].T.Add(c.bucket/2), ps[len(ps)-1].T.Add(c.bucket/2)
	c.printf(`<path class="fill" d="M%s L%s L%sZ" fill="%s" fill-opacity="0.18" stroke="none"/>`,
		pt(c.x(first), c.y(0)), strings.Join(d, " L"), pt(c.x(last), c.y(0)), colour)
	c.line(ps, colour, false)
}

// HLine draws a constant reference line, dashed.
func (c *Chart) HLine(v float64, colour string) {
	c.ops = append(c.ops, func(k *canvas) { k.hLine(v, colour) })
}

func (c *canvas) hLine(v float64, colour string) {
	y := c.y(v)
	c.printf(`<path class="ref" d="M%s L%s" fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="6 4"/>`, pt(padL, y), pt(c.width-padR, y), colour)
}

// Key adds a legend entry; a colour written "-#rrggbb" is shown dashed.
func (c *Chart) Key(colour, label string) { c.legend = append(c.legend, [2]string{colour, label}) }

// Finish draws the chart twice, wide and narrow (the page shows the one
// that fits its width), each with its legend, and closes them.
func (c *Chart) Finish() template.HTML {
	wide := c.draw("chart", wideWidth, wideTicks)
	narrow := c.draw("chart narrow", narrowWidth, narrowTicks)
	// Safe: built from numbers, colours and escaped words.
	return template.HTML(wide + "\n" + narrow)
}

// draw plays the chart's calls at one width: the legend wraps into as many
// rows as it needs (the plot starts below them) and the time axis carries at
// most maxTicks labels.
func (c *Chart) draw(class string, width float64, maxTicks int64) string {
	k := &canvas{Chart: c, width: width, height: height, padT: padTop, maxTicks: maxTicks}
	var row [][2]string
	x := padL
	for _, l := range c.legend {
		w := 24 + textWidth(l[1]) + 18
		if len(row) > 0 && x+w-18 > width-padR {
			k.legendRows = append(k.legendRows, row)
			row, x = nil, padL
		}
		row = append(row, l)
		x += w
	}
	if len(row) > 0 {
		k.legendRows = append(k.legendRows, row)
	}
	if n := len(k.legendRows); n > 1 {
		k.padT += legendRow * float64(n-1)
		k.height += legendRow * float64(n-1)
	}
	k.start(class)
	for _, op := range c.ops {
		op(k)
	}
	k.legendDraw()
	k.b.WriteString(`</svg>`)
	return k.b.String()
}

// legendDraw writes the legend's rows above the plot.
func (c *canvas) legendDraw() {
	for r, row := range c.legendRows {
		dy := legendRow * float64(r)
		x := padL
		for _, l := range row {
			colour, dashed := strings.CutPrefix(l[0], "-")
			// The first row's y as the single row always had it ("10", not "10.0").
			y := func(v float64) string { return strconv.FormatFloat(v+dy, 'f', -1, 64) }
			if dashed {
				c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2" stroke-dasharray="4 3"/>`, f1(x), y(16), f1(x+18), y(16), colour)
			} else {
				c.printf(`<rect x="%s" y="%s" width="18" height="12" fill="%s"/>`, f1(x), y(10), colour)
			}
			c.printf(`<text class="lg" x="%s" y="%s">%s</text>`, f1(x+24), y(20), html.EscapeString(l[1]))
			x += 24 + textWidth(l[1]) + 18
		}
	}
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

// tickSteps are the time-label intervals, finest first.
var tickSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// tickStep picks a time-label interval that gives at most about maxTicks
// labels, never finer than one bucket (a label between two samples says
// nothing).
func tickStep(span, bucket time.Duration, maxTicks int64) time.Duration {
	for _, step := range tickSteps {
		if step >= bucket && int64(span/step) <= maxTicks {
			return step
		}
	}
	return 24 * time.Hour
}

// firstTick is the first local time at or after from that is a multiple of step.
func firstTick(from time.Time, step time.Duration, loc *time.Location) time.Time {
	if step < time.Minute {
		// Zones differ from UTC by whole minutes: a multiple of a step under
		// a minute is one in every zone.
		t := from.Truncate(step)
		if t.Before(from) {
			t = t.Add(step)
		}
		return t
	}
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
