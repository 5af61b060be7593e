package sources

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Coverage states, as written into report.json's coverage.
const (
	// CoverageComplete: the source has evidence across the whole window.
	CoverageComplete = "complete"
	// CoverageIncomplete: some stretch of the window (its head, a gap, its
	// tail) has no evidence, or an input was cut short.
	CoverageIncomplete = "incomplete"
	// CoverageNone: the source was given but holds nothing inside the window.
	CoverageNone = "none"
	// CoverageNotGiven: the source was not given at all.
	CoverageNotGiven = "not_given"
	// CoverageEvents: a log that writes only when something happens (Caddy's
	// own log, php-fpm's log): silence between its lines is normal, so only
	// its span is shown, never a gap.
	CoverageEvents = "events"
)

// Uncovered stretch kinds.
const (
	StretchHead = "head" // from the window's start to the first evidence
	StretchGap  = "gap"  // between two pieces of evidence
	StretchTail = "tail" // from the last evidence to the window's end
)

// Stretch is part of the window a source has no evidence for.
type Stretch struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Kind is "head", "gap" or "tail".
	Kind string `json:"kind"`
	// Expected is how many pieces of evidence the stretch would have held
	// at the source's own rate in the hour on either side of it; 0 for a
	// source scraped at a fixed interval, whose every silence is a hole.
	// What makes the silence a hole, not a quiet site, is not this count
	// but how unlikely an empty stretch that long is there (see Measure).
	Expected float64 `json:"expected,omitempty"`
	// After and Before name the inputs on either side of a gap that falls
	// between two files (a rotation that lost lines): the file whose last
	// line is where the gap begins, and the file whose first line is where
	// it ends. Empty for a gap inside one input.
	After  string `json:"after,omitempty"`
	Before string `json:"before,omitempty"`
}

// InputSpan is one input of a source as it was read: a file's own span
// (the lines it shares with other inputs included), or why it was not read.
type InputSpan struct {
	Name string `json:"name"`
	// First and Last are the earliest and latest evidence in the input,
	// absent when it held none (or was not read).
	First *time.Time `json:"first,omitempty"`
	Last  *time.Time `json:"last,omitempty"`
	// Requests counts what it contributed; Duplicates what it held that
	// an earlier input (or itself, earlier) already had: counted once.
	Requests   int64 `json:"requests"`
	Duplicates int64 `json:"duplicates,omitempty"`
	// SkippedLines counts its lines that could not be used.
	SkippedLines int64 `json:"skipped_lines,omitempty"`
	// Cut says why its evidence ends before its writer stopped (a gzip
	// stream cut mid-way), "" when it does not.
	Cut string `json:"cut,omitempty"`
	// NotRead says why the input was not read at all ("" when it was).
	NotRead string `json:"not_read,omitempty"`
}

// Coverage is the time one source of evidence really covers inside the
// analysed window. Minutes a source has no evidence for are unknown, never
// quiet: a report reads its counts through this.
type Coverage struct {
	// Source is "access", "metrics" (php-fpm's series), "cpu", "caddy log" or
	// "php-fpm log".
	Source string `json:"source"`
	// State is "complete", "incomplete", "none", "not_given" or "events".
	State string `json:"state"`
	// First and Last bound the evidence inside the window, at the
	// resolution it is counted in (the start of the first minute with an
	// access-log line, the end of the last; absent when there is none).
	First *time.Time `json:"first,omitempty"`
	Last  *time.Time `json:"last,omitempty"`
	// Uncovered lists the stretches of the window without evidence, in time
	// order: a missing head, gaps, a missing tail.
	Uncovered []Stretch `json:"uncovered"`
	// Truncated names the inputs that were cut short (a gzip stream that ends
	// early, a last line cut mid-way): the evidence they hold ends before
	// their writer stopped.
	Truncated []string `json:"truncated,omitempty"`
	// Resolution is how far apart two pieces of evidence may be without a
	// gap between them, in seconds (for metrics, a few scrape intervals).
	Resolution float64 `json:"resolution_s,omitempty"`
	// Inputs lists the files the source was read from, in the order read,
	// with each one's span, and the files beside them that were not read
	// (for the access log; empty for other sources).
	Inputs []InputSpan `json:"inputs,omitempty"`
}

// Gaps returns the stretches between two pieces of evidence (Kind "gap"):
// the holes inside the covered span, each with what it was expected to
// hold and, when it falls between two files, which.
func (c Coverage) Gaps() []Stretch {
	var out []Stretch
	for _, u := range c.Uncovered {
		if u.Kind == StretchGap {
			out = append(out, u)
		}
	}
	return out
}

// AttributeGaps names, for each uncovered stretch that begins where one
// input's evidence ends and ends where another's begins (within slack), the
// two inputs: a rotation that lost the lines between two files. It also
// keeps the inputs in c.Inputs.
func (c *Coverage) AttributeGaps(inputs []InputSpan, slack time.Duration) {
	c.Inputs = inputs
	near := func(a, b time.Time) bool {
		d := a.Sub(b)
		return d > -slack && d < slack
	}
	for i := range c.Uncovered {
		u := &c.Uncovered[i]
		for _, a := range inputs {
			if a.Last == nil || !near(*a.Last, u.From) {
				continue
			}
			for _, b := range inputs {
				if b.Name == a.Name || b.First == nil || !near(*b.First, u.To) {
					continue
				}
				u.After, u.Before = a.Name, b.Name
			}
		}
	}
}

// Complete reports whether the coverage leaves nothing of the window unknown.
func (c Coverage) Complete() bool {
	return c.State == CoverageComplete || c.State == CoverageEvents || c.State == CoverageNotGiven
}

// UncoveredDuration sums the uncovered stretches.
func (c Coverage) UncoveredDuration() time.Duration {
	var d time.Duration
	for _, s := range c.Uncovered {
		d += s.To.Sub(s.From)
	}
	return d
}

// Summary says in one English sentence what the source covers; loc is the
// zone times are written in. Used for data_quality and the terminal.
func (c Coverage) Summary(loc *time.Location) string {
	at := func(t time.Time) string { return t.In(loc).Format("2006-01-02 15:04:05 MST") }
	switch c.State {
	case CoverageNotGiven:
		return c.Source + ": not given"
	case CoverageNone:
		return c.Source + ": no evidence inside the window"
	}
	if c.First == nil || c.Last == nil {
		return c.Source + ": given, no line inside the window (a log written only on events)"
	}
	s := fmt.Sprintf("%s: evidence from %s to %s", c.Source, at(*c.First), at(*c.Last))
	if c.State == CoverageEvents {
		return s + " (a log written only on events: silence between its lines is not measured)"
	}
	var parts []string
	for _, u := range c.Uncovered {
		parts = append(parts, fmt.Sprintf("%s %s to %s (%s)", u.Kind, at(u.From), at(u.To), roundDuration(u.To.Sub(u.From))))
	}
	if len(parts) > 0 {
		s += "; nothing from " + strings.Join(parts, ", ")
	}
	if len(c.Truncated) > 0 {
		s += "; cut short: " + strings.Join(c.Truncated, ", ")
	}
	return s
}

func roundDuration(d time.Duration) string {
	if d >= time.Minute {
		d = d.Round(time.Minute)
	} else {
		d = d.Round(time.Second)
	}
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// CoverageMeter measures a source's coverage from the times of its evidence,
// at a resolution of one bucket (a minute for logs, a scrape interval for
// metrics). Memory grows with buckets, not with evidence.
type CoverageMeter struct {
	bucket time.Duration
	// pages hold the counts of bucketsPerPage consecutive buckets each, by
	// bucket number >> pageShift (a floor, also before 1970). Evidence
	// comes in time order, most of it in the page of the one before (cur,
	// number curPage): a map update per access log line cost 0.8% of an
	// analysis's instructions (callgrind), and per metric sample, a file
	// being one series after another, 28% of loading a week of metrics.
	pages   map[int64]*bucketPage
	cur     *bucketPage
	curPage int64
}

// pageShift sets how many buckets a page holds: 256 are 4 hours of a log's
// minutes, 21 minutes of a family's 5-second buckets.
const (
	pageShift      = 8
	bucketsPerPage = 1 << pageShift
)

// bucketPage is the counts of bucketsPerPage consecutive buckets; a bucket
// holds evidence when its count is above 0.
type bucketPage [bucketsPerPage]int

// NewCoverageMeter counts evidence in buckets of the given width.
func NewCoverageMeter(bucket time.Duration) *CoverageMeter {
	return &CoverageMeter{bucket: bucket, pages: map[int64]*bucketPage{}}
}

// Observe records n pieces of evidence at t.
func (m *CoverageMeter) Observe(t time.Time, n int) {
	if n <= 0 {
		return
	}
	m.add(t.UnixNano()/int64(m.bucket), n)
}

// add counts n in bucket k.
func (m *CoverageMeter) add(k int64, n int) {
	if pk := k >> pageShift; m.cur == nil || pk != m.curPage {
		p := m.pages[pk]
		if p == nil {
			p = new(bucketPage)
			m.pages[pk] = p
		}
		m.cur, m.curPage = p, pk
	}
	m.cur[k&(bucketsPerPage-1)] += n
}

// count is the count of bucket k.
func (m *CoverageMeter) count(k int64) int {
	if p := m.pages[k>>pageShift]; p != nil {
		return p[k&(bucketsPerPage-1)]
	}
	return 0
}

// eachBucket calls f with every bucket that holds evidence and its count,
// pages in no order.
func (m *CoverageMeter) eachBucket(f func(k int64, n int)) {
	for pk, p := range m.pages {
		for i, n := range p {
			if n > 0 {
				f(pk<<pageShift+int64(i), n)
			}
		}
	}
}

// MinGap is the shortest stretch without evidence that can count as missing:
// shorter silences are within the jitter of how windows and logs are cut.
const MinGap = 2 * time.Minute

// surprisingSilence is how unlikely, as -ln of its chance, a silence must
// be at the source's own rate around it to count as missing: e^-20 is
// about 2e-9, so over the ten thousand minutes of a week no quiet stretch
// of an ordinary site reaches it, while a hole in a busy log does.
const surprisingSilence = 20

// neighbourhood is how far on each side of a silence the source's rate is
// read: a site's rate changes over the day (a night minute with no request
// is ordinary where a noon minute is not), so a silence is judged against
// the hours around it, not the whole window's.
const neighbourhood = time.Hour

// silenceChance is the chance that one bucket holds no evidence, judged
// from the counts of the buckets on either side of a silence (each side in
// time order). Lines arrive in clumps (a page and its assets, a client's
// burst), so lines are not a Poisson stream; the clumps nearly are. Their
// rate is the line rate over the clump size, which the counts' variance
// over their mean measures (1 for a Poisson stream), and the chance of no
// clump in a bucket is e^-(rate). The variance is taken from successive
// buckets' differences, so that a rate that climbs (an incident's onset
// beside the silence) is not read as clumping. Where more buckets around
// were observed empty than that says, the observed share is the chance.
// 1 when nothing is around.
func silenceChance(sides ...[]int) float64 {
	var n, sum, empty, sq, pairs float64
	for _, counts := range sides {
		for i, k := range counts {
			n++
			sum += float64(k)
			if k == 0 {
				empty++
			}
			if i > 0 {
				d := float64(k - counts[i-1])
				sq += d * d
				pairs++
			}
		}
	}
	if sum == 0 {
		return 1
	}
	mean := sum / n
	dispersion := 1.0
	if pairs > 0 {
		// Var(x[i+1]-x[i]) is twice the counts' variance.
		dispersion = max(1, sq/pairs/2/mean)
	}
	return max(math.Exp(-mean/dispersion), empty/n)
}

// Measure returns the coverage of [from, to). A silent stretch is uncovered
// when it is at least MinGap (and minGap) long and, at the source's own
// rate in the hour on either side of it (silenceChance), so long a silence
// has a chance below e^-surprisingSilence; with rateFree, any silence
// longer than minGap is uncovered (a series scraped at a fixed interval has
// no quiet).
func (m *CoverageMeter) Measure(source string, from, to time.Time, minGap time.Duration, rateFree bool) Coverage {
	c := Coverage{Source: source, Uncovered: []Stretch{}, Resolution: m.bucket.Seconds()}
	var keys []int64
	m.eachBucket(func(k int64, _ int) {
		if t := time.Unix(0, (k+1)*int64(m.bucket)); t.After(from) && time.Unix(0, k*int64(m.bucket)).Before(to) {
			keys = append(keys, k)
		}
	})
	if len(keys) == 0 {
		c.State = CoverageNone
		return c
	}
	slices.Sort(keys)
	minGap = max(minGap, MinGap)
	// around is the counts of the covered buckets within neighbourhood
	// before and after the stretch [a, b), empty ones included.
	span := int64(neighbourhood / m.bucket)
	around := func(a, b time.Time) (before, after []int) {
		ia, ib := a.UnixNano()/int64(m.bucket), (b.UnixNano()+int64(m.bucket)-1)/int64(m.bucket)
		for k := max(ia-span, keys[0]); k < ia; k++ {
			before = append(before, m.count(k))
		}
		for k := ib; k < min(ib+span, keys[len(keys)-1]+1); k++ {
			after = append(after, m.count(k))
		}
		return before, after
	}
	judge := func(a, b time.Time, kind string) {
		if b.Sub(a) < minGap {
			return
		}
		if rateFree {
			c.Uncovered = append(c.Uncovered, Stretch{From: a, To: b, Kind: kind})
			return
		}
		before, after := around(a, b)
		buckets := float64(b.Sub(a)) / float64(m.bucket)
		if p := silenceChance(before, after); p <= 0 || -math.Log(p)*buckets >= surprisingSilence {
			var sum int
			for _, k := range slices.Concat(before, after) {
				sum += k
			}
			c.Uncovered = append(c.Uncovered, Stretch{From: a, To: b, Kind: kind, Expected: float64(sum) / float64(len(before)+len(after)) * buckets})
		}
	}
	// First and Last are bucket bounds, not the exact times of the first and
	// last evidence: evidence that comes as per-bucket counts (a pushed-down
	// fetch's minutes) then covers exactly what the lines would.
	first := time.Unix(0, keys[0]*int64(m.bucket)).UTC()
	if first.Before(from) {
		first = from
	}
	last := time.Unix(0, (keys[len(keys)-1]+1)*int64(m.bucket)).UTC()
	if last.After(to) {
		last = to
	}
	c.First, c.Last = &first, &last
	judge(from, first, StretchHead)
	for i := 1; i < len(keys); i++ {
		judge(time.Unix(0, (keys[i-1]+1)*int64(m.bucket)).UTC(), time.Unix(0, keys[i]*int64(m.bucket)).UTC(), StretchGap)
	}
	judge(last, to, StretchTail)
	c.State = CoverageComplete
	if len(c.Uncovered) > 0 {
		c.State = CoverageIncomplete
	}
	return c
}

// Merge adds the evidence other counted; both must have the same bucket width.
func (m *CoverageMeter) Merge(other *CoverageMeter) {
	other.eachBucket(m.add)
}
