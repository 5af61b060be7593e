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
// line read.
type minuteStatusPart struct {
	late    bool // only lines slower than the clients' timeout
	seconds bool // sum the durations of the lines with PHP's marks instead of counting every line
}

// minuteStatusParts lists the queries: every line counted, and PHP's
// durations summed, late and all.
var minuteStatusParts = []minuteStatusPart{{}, {late: true}, {seconds: true}, {late: true, seconds: true}}

// runs reports whether the part's query is made: without the clients'
// timeout nothing is late.
func (p minuteStatusPart) runs(timeoutS float64) bool { return !p.late || timeoutS > 0 }

// minuteStatusQueries is how many queries minuteStatus makes for minutes:
// none when every minute was pulled; counted is true when the first
// part's answer is known already (familyCountQuery's).
func minuteStatusQueries(minutes []Minute, timeoutS float64, counted bool) int {
	if !slices.ContainsFunc(minutes, func(m Minute) bool { return !m.Pulled }) {
		return 0
	}
	_, _, late := lateSpan(minutes)
	n := 0
	for i, p := range minuteStatusParts {
		if i == 0 && counted {
			continue
		}
		if p.runs(timeoutS) && (!p.late || late) {
			n++
		}
	}
	return n
}

// lateSpan is the stretch of minutes (indexes first to last) in which a line
// may be late: a late line is a failed one, so outside the minutes whose
// failed count (Loki's, of every line) is not 0, or unknown, none is. The
// late parts are asked for that stretch only, and not at all when there is
// none (ok false): each is a pass of Loki over its range.
func lateSpan(minutes []Minute) (first, last int, ok bool) {
	first, last = -1, -1
	for i, m := range minutes {
		if m.Failed != 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return first, last, first >= 0
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
	q += " " + hitStage + " " + statusFields
	if p.late {
		q += ` | duration > ` + strconv.FormatFloat(timeoutS, 'f', -1, 64) + ` | __error__=""`
	}
	by := `sum by (status, ` + phpLabel + `, ` + hitLabel + `) `
	if p.seconds {
		return by + `(sum_over_time(` + q + ` | unwrap duration | __error__="" ` + loki.MinuteRange + `))`
	}
	return by + `(count_over_time(` + q + ` ` + loki.MinuteRange + `))`
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
// of [from, from+n minutes): results[part][group][minute].
type statusCounts struct {
	from    time.Time
	results []map[statusGroup][]float64
	// offset is, per part, the minute (from from) its values begin at: a
	// late part covers only lateSpan.
	offset []int
}

// minuteStatus has Loki count, per minute and status, the access-log lines
// of the minutes that were not pulled (by origin and lateness, with PHP's
// time), and writes them to bundle.MinuteStatusFile: the analysis then counts
// the whole window's requests although it read only the minutes that stand
// out. Without the clients' timeout nothing is late. A failed query leaves
// the file out and the fetch partial (an error note, exit 1): the totals
// would undercount. The counts are of every minute and are kept (returned),
// so that a raw pull that fails later is replaced by them (countFailedPull).
func (f *fetcher) minuteStatus(ctx context.Context, c *loki.Client, lines statusLines, minutes []Minute, counted map[statusGroup][]float64, cost *Progress) *statusCounts {
	var notPulled []int
	for i, m := range minutes {
		if !m.Pulled {
			notPulled = append(notPulled, i)
		}
	}
	if len(notPulled) == 0 {
		return nil
	}
	sc, err := f.countStatus(ctx, c, lines, minutes, fmt.Sprintf("per-minute counts computed in Loki for the %d minutes whose lines were not pulled", len(notPulled)), counted, cost)
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
// counted, when not nil, is the first part's answer, already counted
// (familyStatus.counts): that query is not made.
func (f *fetcher) countStatus(ctx context.Context, c *loki.Client, lines statusLines, minutes []Minute, what string, counted map[statusGroup][]float64, cost *Progress) (*statusCounts, error) {
	from, to := minutes[0].T, minutes[len(minutes)-1].T.Add(time.Minute)
	timeoutS := f.cfg.Site.ClientTimeoutS
	sc := &statusCounts{from: from, results: make([]map[statusGroup][]float64, len(minuteStatusParts)), offset: make([]int, len(minuteStatusParts))}
	first, last, anyLate := lateSpan(minutes)
	for pi, part := range minuteStatusParts {
		if !part.runs(timeoutS) {
			continue
		}
		if pi == 0 && counted != nil {
			sc.results[0] = counted
			continue
		}
		pfrom, pto, pwhat := from, to, what
		if part.late {
			if !anyLate {
				continue // no failed line, so no late one: every count is 0
			}
			sc.offset[pi] = first
			pfrom, pto = minutes[first].T, minutes[last].T.Add(time.Minute)
			pwhat += "; late lines, only where Loki counted failed ones"
		}
		err := f.computeInLoki(ctx, c, part.query(lines, timeoutS), pfrom, pto, bundle.MinuteStatusFile, pwhat, cost,
			func(mv loki.MinuteValues) (string, error) {
				groups := map[statusGroup][]float64{}
				for _, s := range mv.Series {
					if g, ok := statusGroupOf(s.Metric); ok {
						groups[g] = s.Values
					}
				}
				sc.results[pi] = groups
				return "", nil
			})
		cost.Done++
		if err != nil {
			return nil, err
		}
	}
	return sc, nil
}

// rows are the bundle.MinuteStatus rows of minutes[i] for i in which.
func (sc *statusCounts) rows(minutes []Minute, which []int) []bundle.MinuteStatus {
	results := sc.results
	at := func(part int, g statusGroup, minute int) float64 {
		minute -= sc.offset[part]
		if v := results[part][g]; v != nil && minute >= 0 && minute < len(v) {
			return v[minute]
		}
		return 0
	}
	groups := slices.SortedFunc(maps.Keys(results[0]), func(a, b statusGroup) int {
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
				secs, secsLate = at(2, g, i), at(3, g, i)
			}
			all, late := at(0, g, i), at(1, g, i)
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
