package live

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/loki"
)

// statusFields extracts what the per-minute status counts need, dropping
// lines that are not JSON rather than failing the query.
const statusFields = `| json status="status", duration="duration" | __error__=""`

// minuteStatusPart is one of the metric queries whose per-minute results,
// combined, give the bundle.MinuteStatus rows. Each is grouped by status and
// by the marks that place a line (phpLabel, hitLabel: cachehit.go), so that
// accesslog.OriginOf decides who answered each group as it decides for a
// line read, and, when the clients' timeout is known, by lateness
// (lateLabel): the late lines' counts and seconds come in the same answer
// as every line's, not from a pass of Loki over the range of their own.
type minuteStatusPart struct {
	seconds bool // sum the durations of the lines with PHP's marks instead of counting every line
}

// minuteStatusParts lists the queries: every line counted, and PHP's
// durations summed (an unwrap needs a range aggregation of its own).
var minuteStatusParts = []minuteStatusPart{{}, {seconds: true}}

// minuteStatusQueries is how many queries minuteStatus makes for minutes:
// none when every minute was pulled; counted is true when the count's
// answer is known already (familyCountQuery's).
func minuteStatusQueries(minutes []Minute, counted bool) int {
	if !slices.ContainsFunc(minutes, func(m Minute) bool { return !m.Pulled }) {
		return 0
	}
	if counted {
		return len(minuteStatusParts) - 1
	}
	return len(minuteStatusParts)
}

// lateLabel marks, with "1", a line slower than the clients' timeout
// (failure.Late) and every other with "0" (lateStage).
const lateLabel = "aftermath_late"

// lateStage sets lateLabel from the duration label (extracted before it):
// LogQL's label filters can compare a duration with a number, but only to
// drop lines, and Loki's templates have no comparison documented for
// numbers; its float functions (float64, subf, maxf, minf, ceil: Loki's
// template functions page) make one: ceil(min(1, max(0, duration -
// timeout))) is 1 above the timeout and 0 at or below it, or when the
// duration is not a number (float64 reads it as 0). "" without the
// timeout: then nothing is late.
func lateStage(timeoutS float64) string {
	if timeoutS <= 0 {
		return ""
	}
	return " | label_format " + lateLabel + "=`{{ ceil (minf 1 (maxf 0 (subf (float64 .duration) " +
		strconv.FormatFloat(timeoutS, 'f', -1, 64) + "))) }}`"
}

// lateBy is the grouping label lateStage adds, ", " first; "" without the
// timeout.
func lateBy(timeoutS float64) string {
	if timeoutS <= 0 {
		return ""
	}
	return ", " + lateLabel
}

// statusLines are the lines a status count reads: query's (a selector and
// the configured pipeline), of the client families familyFilter chooses
// ("" for every line).
type statusLines struct {
	query, familyFilter string
}

func (p minuteStatusPart) query(lines statusLines, timeoutS float64) string {
	q := lines.query
	if p.seconds {
		// Only PHP's time is summed: the other lines are left out before
		// any parser runs (phpLineFilter), and for good by phpStage's mark.
		q += phpLineFilter
	}
	q += lines.familyFilter + " " + phpStage
	if p.seconds {
		q += ` | ` + phpLabel + `!=""`
	}
	q += " " + hitStage + " " + statusFields + lateStage(timeoutS)
	by := `sum by (status, ` + phpLabel + `, ` + hitLabel + lateBy(timeoutS) + `) `
	if p.seconds {
		return by + `(sum_over_time(` + q + ` | unwrap duration | __error__="" ` + loki.MinuteRange + `))`
	}
	return by + `(count_over_time(` + q + ` ` + loki.MinuteRange + `))`
}

// lineCounts is a minuteStatusPart's answer per status group and minute:
// every line's (or PHP's seconds), and the late lines' among them.
type lineCounts struct {
	all, late map[statusGroup][]float64
}

// add sums a series of the answer into the group its metric names (a
// status that is not one is skipped: statusGroupOf).
func (lc *lineCounts) add(metric map[string]string, values []float64) {
	g, ok := statusGroupOf(metric)
	if !ok {
		return
	}
	addTo := func(m map[statusGroup][]float64) {
		sum := m[g]
		if sum == nil {
			sum = make([]float64, len(values))
			m[g] = sum
		}
		for i, v := range values {
			sum[i] += v
		}
	}
	addTo(lc.all)
	if metric[lateLabel] == "1" {
		addTo(lc.late)
	}
}

func newLineCounts() *lineCounts {
	return &lineCounts{all: map[statusGroup][]float64{}, late: map[statusGroup][]float64{}}
}

// statusGroup is one group of a minuteStatusPart's answer: a status and the
// marks its lines carry.
type statusGroup struct {
	status   int
	php, hit bool
}

// statusGroupOf is the group of a series of a status count; false when its
// status is not one: a status that is not one cannot be placed, and the
// reader would have skipped the line too.
func statusGroupOf(metric map[string]string) (statusGroup, bool) {
	st, err := strconv.Atoi(metric["status"])
	if err != nil || st < 100 || st > 999 {
		return statusGroup{}, false
	}
	return statusGroup{status: st, php: metric[phpLabel] != "", hit: metric[hitLabel] != ""}, true
}

// origin is who answered the group's lines, as the readers decide.
func (g statusGroup) origin() sources.Origin {
	cache := sources.CacheUnknown
	if g.hit {
		cache = sources.CacheHit
	}
	return accesslog.OriginOf(g.php, g.status, cache)
}

// statusCounts is what the minuteStatusParts' queries answered, per minute
// of [from, from+n minutes): counts[part].
type statusCounts struct {
	from   time.Time
	counts [2]*lineCounts
	// secondsOf, when not nil, are the only minutes PHP's seconds were
	// asked for (countStatus's need): the others read 0.
	secondsOf func(i int) bool
}

// covers reports whether sc holds every count of minutes[i] for i in which.
func (sc *statusCounts) covers(which []int) bool {
	if sc.secondsOf == nil {
		return true
	}
	return !slices.ContainsFunc(which, func(i int) bool { return !sc.secondsOf(i) })
}

// minuteStatus has Loki count, per minute and status, the access-log lines
// of the minutes that were not pulled (by origin and lateness, with PHP's
// time), and writes them to bundle.MinuteStatusFile: the analysis then counts
// the whole window's requests although it read only the minutes that stand
// out. Without the clients' timeout nothing is late. A failed query leaves
// the file out and the fetch partial (an error note, exit 1): the totals
// would undercount. The counts are of every minute and are kept (returned),
// so that a raw pull that fails later is replaced by them (countFailedPull).
func (f *fetcher) minuteStatus(ctx context.Context, c *loki.Client, lines statusLines, minutes []Minute, counted *lineCounts, cost *Progress) *statusCounts {
	var notPulled []int
	for i, m := range minutes {
		if !m.Pulled {
			notPulled = append(notPulled, i)
		}
	}
	if len(notPulled) == 0 {
		return nil
	}
	// PHP's seconds are summed over the minutes not pulled alone: the
	// pulled minutes' lines give theirs, and Loki reads every line of a
	// range it is asked for, so a sum over the whole range read the pulled
	// minutes again (a quarter of the simulated day's bytes). A raw pull
	// that fails has its minutes' seconds asked then (countFailedPull).
	notPulledMinute := func(i int) bool { return !minutes[i].Pulled }
	sc, err := f.countStatus(ctx, c, lines, minutes, fmt.Sprintf("per-minute counts computed in Loki for the %d minutes whose lines were not pulled", len(notPulled)), counted, notPulledMinute, cost)
	if err != nil {
		f.note(loki.Source, sources.SeverityError, fmt.Sprintf(
			"per-minute status counts failed, so requests, statuses and PHP time cover only the pulled minutes: %v", err))
		return nil
	}
	if err := writeFileWith(filepath.Join(f.dir, bundle.MinuteStatusFile), func(w io.Writer) error { return bundle.WriteMinuteStatus(w, sc.rows(minutes, notPulled)) }); err != nil {
		f.note(SourceFetch, sources.SeverityError, err.Error())
	}
	return sc
}

// countStatus runs the minuteStatusParts' queries of lines over minutes' range.
//
// counted, when not nil, is the count's answer, already counted
// (familyStatus.counts): that query is not made. need, when not nil, are the
// minutes whose PHP seconds are wanted: the sum is asked over their
// stretches only (secondsStretches), and the others read 0.
func (f *fetcher) countStatus(ctx context.Context, c *loki.Client, lines statusLines, minutes []Minute, what string, counted *lineCounts, need func(i int) bool, cost *Progress) (*statusCounts, error) {
	from := minutes[0].T
	at := func(i int) time.Time { return from.Add(time.Duration(i) * time.Minute) }
	timeoutS := f.cfg.Site.ClientTimeoutS
	sc := &statusCounts{from: from}
	for pi, part := range minuteStatusParts {
		if pi == 0 && counted != nil {
			sc.counts[0] = counted
			continue
		}
		var stretches [][2]int // nil: the whole range
		note := what
		if part.seconds && need != nil {
			stretches, sc.secondsOf = secondsStretches(len(minutes), need), need
			note = fmt.Sprintf("%s (PHP's seconds of the minutes not pulled only, in %d stretches)", what, len(stretches))
		}
		// One record for the stretches: they are one count, and a failed
		// one loses the seconds of every minute not pulled.
		lc := newLineCounts()
		err := f.computeInLoki(ctx, c, part.query(lines, timeoutS), from, at(len(minutes)), bundle.MinuteStatusFile, note, cost,
			func(mv loki.MinuteValues) (string, error) {
				for _, s := range mv.Series {
					lc.add(s.Metric, s.Values)
				}
				return "", nil
			}, stretches...)
		cost.Done++
		if err != nil {
			return nil, err
		}
		sc.counts[pi] = lc
	}
	return sc, nil
}

// secondsBridge is the longest run of minutes not needed that a stretch of
// secondsStretches bridges: reading a few minutes again costs Loki less than
// the request, and the minute before its start, of a stretch of their own.
const secondsBridge = 5

// secondsStretches cuts the n minutes into the stretches [a, b) that hold
// every minute need reports, bridging runs of at most secondsBridge minutes
// not needed.
func secondsStretches(n int, need func(i int) bool) [][2]int {
	var out [][2]int
	for i := 0; i < n; i++ {
		if !need(i) {
			continue
		}
		if k := len(out) - 1; k >= 0 && i-out[k][1] <= secondsBridge {
			out[k][1] = i + 1
			continue
		}
		out = append(out, [2]int{i, i + 1})
	}
	return out
}

// rows are the bundle.MinuteStatus rows of minutes[i] for i in which.
func (sc *statusCounts) rows(minutes []Minute, which []int) []bundle.MinuteStatus {
	at := func(m map[statusGroup][]float64, g statusGroup, minute int) float64 {
		if v := m[g]; v != nil && minute >= 0 && minute < len(v) {
			return v[minute]
		}
		return 0
	}
	count, seconds := sc.counts[0], sc.counts[1]
	groups := slices.SortedFunc(maps.Keys(count.all), func(a, b statusGroup) int {
		return cmp.Or(cmp.Compare(a.status, b.status), boolOrder(a.php, b.php), boolOrder(a.hit, b.hit))
	})
	// One row per status, origin and lateness: groups whose lines the
	// readers place alike are summed.
	type rowKey struct {
		status int
		origin sources.Origin
		late   bool
	}
	var rows []bundle.MinuteStatus
	for _, mi := range which {
		i := int(minutes[mi].T.Sub(sc.from) / time.Minute)
		at0 := len(rows)
		index := map[rowKey]int{}
		add := func(k rowKey, requests, seconds float64) {
			j, ok := index[k]
			if !ok {
				j = len(rows)
				index[k] = j
				rows = append(rows, bundle.MinuteStatus{Minute: minutes[mi].T, Status: k.status, Origin: k.origin, Late: k.late})
			}
			rows[j].Requests += int64(math.Round(requests))
			rows[j].PHPSeconds += seconds
		}
		for _, g := range groups {
			o := g.origin()
			var secs, secsLate float64
			if o == sources.OriginUpstream {
				secs, secsLate = at(seconds.all, g, i), at(seconds.late, g, i)
			}
			all, late := at(count.all, g, i), at(count.late, g, i)
			add(rowKey{g.status, o, false}, all-late, secs-secsLate)
			add(rowKey{g.status, o, true}, late, secsLate)
		}
		kept := rows[:at0]
		for _, r := range rows[at0:] {
			if r.Requests <= 0 {
				continue
			}
			r.PHPSeconds = math.Max(0, math.Round(r.PHPSeconds*1e6)/1e6)
			kept = append(kept, r)
		}
		rows = kept
	}
	return rows
}

// boolOrder orders false before true.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
