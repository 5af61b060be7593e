package live

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/loki"
)

// upstreamLine selects the lines PHP answered, as the access-log reader
// decides it: Caddy's proxy adds Via and PHP adds X-Powered-By to the
// response headers, which Caddy logs after the request's own (a client may
// send Via too). Caddy writes canonical header names.
const upstreamLine = "|~ `\"resp_headers\":\\s*\\{.*\"(Via|X-Powered-By)\"\\s*:`"

// statusFields extracts what the per-minute status counts need, dropping
// lines that are not JSON rather than failing the query.
const statusFields = `| json status="status", duration="duration" | __error__=""`

// minuteStatusPart is one of the metric queries whose per-minute results,
// combined, give the bundle.MinuteStatus rows.
type minuteStatusPart struct {
	upstream bool // only lines PHP answered
	late     bool // only lines slower than the clients' timeout
	seconds  bool // sum their durations instead of counting them
}

// minuteStatusParts lists the queries: every line, PHP's, and each of them
// late, counted; PHP's durations summed, late and all.
var minuteStatusParts = []minuteStatusPart{
	{}, {late: true}, {upstream: true}, {upstream: true, late: true},
	{upstream: true, seconds: true}, {upstream: true, late: true, seconds: true},
}

// runs reports whether the part's query is made: without the clients'
// timeout nothing is late.
func (p minuteStatusPart) runs(timeoutS float64) bool { return !p.late || timeoutS > 0 }

// minuteStatusQueries is how many queries minuteStatus makes for minutes:
// none when every minute was pulled.
func minuteStatusQueries(minutes []Minute, timeoutS float64) int {
	if !slices.ContainsFunc(minutes, func(m Minute) bool { return !m.Pulled }) {
		return 0
	}
	n := 0
	for _, p := range minuteStatusParts {
		if p.runs(timeoutS) {
			n++
		}
	}
	return n
}

func (p minuteStatusPart) query(logQuery string, timeoutS float64) string {
	q := logQuery
	if p.upstream {
		q += " " + upstreamLine
	}
	q += " " + statusFields
	if p.late {
		q += ` | duration > ` + strconv.FormatFloat(timeoutS, 'f', -1, 64) + ` | __error__=""`
	}
	if p.seconds {
		return `sum by (status) (sum_over_time(` + q + ` | unwrap duration | __error__="" [1m]))`
	}
	return `sum by (status) (count_over_time(` + q + ` [1m]))`
}

// minuteStatus has Loki count, per minute and status, the access-log lines
// of the minutes that were not pulled (by origin and lateness, with PHP's
// time), and writes them to bundle.MinuteStatusFile: the analysis then counts
// the whole window's requests although it read only the minutes that stand
// out. Without the clients' timeout nothing is late. A failed query leaves
// the file out and the fetch partial (an error note, exit 1): the totals
// would undercount.
func (f *fetcher) minuteStatus(ctx context.Context, c *loki.Client, query string, minutes []Minute, cost *Progress) {
	var notPulled []int
	for i, m := range minutes {
		if !m.Pulled {
			notPulled = append(notPulled, i)
		}
	}
	if len(notPulled) == 0 {
		return
	}
	from, to := minutes[0].T, minutes[len(minutes)-1].T.Add(time.Minute)
	timeoutS := f.cfg.Site.ClientTimeoutS
	// results[p][status][minute]
	results := make([]map[int][]float64, len(minuteStatusParts))
	for pi, part := range minuteStatusParts {
		if !part.runs(timeoutS) {
			continue
		}
		err := f.computeInLoki(ctx, c, part.query(query, timeoutS), from, to, bundle.MinuteStatusFile,
			fmt.Sprintf("per-minute counts computed in Loki for the %d minutes whose lines were not pulled", len(notPulled)), cost,
			func(mv loki.MinuteValues) (string, error) {
				byStatus := map[int][]float64{}
				for _, s := range mv.Series {
					st, err := strconv.Atoi(s.Metric["status"])
					if err != nil || st < 100 || st > 999 {
						// A status that is not one cannot be placed; the
						// reader would have skipped the line too.
						continue
					}
					byStatus[st] = s.Values
				}
				results[pi] = byStatus
				return "", nil
			})
		cost.Done++
		if err != nil {
			f.note(loki.Source, sources.SeverityError, fmt.Sprintf(
				"per-minute status counts failed, so requests, statuses and PHP time cover only the pulled minutes: %v", err))
			return
		}
	}
	at := func(part, status, minute int) float64 {
		if v := results[part][status]; v != nil {
			return v[minute]
		}
		return 0
	}
	var rows []bundle.MinuteStatus
	count := func(x float64) int64 { return int64(math.Round(x)) }
	statuses := make([]int, 0, len(results[0]))
	for st := range results[0] {
		statuses = append(statuses, st)
	}
	sort.Ints(statuses)
	for _, i := range notPulled {
		for _, st := range statuses {
			all, late, up, upLate := at(0, st, i), at(1, st, i), at(2, st, i), at(3, st, i)
			other := sources.OriginStatic
			if st >= 500 || st == 429 {
				other = sources.OriginProxy
			}
			for _, r := range []bundle.MinuteStatus{
				{Status: st, Origin: sources.OriginUpstream, Requests: count(up - upLate), PHPSeconds: at(4, st, i) - at(5, st, i)},
				{Status: st, Origin: sources.OriginUpstream, Late: true, Requests: count(upLate), PHPSeconds: at(5, st, i)},
				{Status: st, Origin: other, Requests: count(all - up - (late - upLate))},
				{Status: st, Origin: other, Late: true, Requests: count(late - upLate)},
			} {
				if r.Requests <= 0 {
					continue
				}
				r.Minute = minutes[i].T
				r.PHPSeconds = math.Max(0, math.Round(r.PHPSeconds*1e6)/1e6)
				rows = append(rows, r)
			}
		}
	}
	if err := writeFileWith(filepath.Join(f.dir, bundle.MinuteStatusFile), func(w io.Writer) error { return bundle.WriteMinuteStatus(w, rows) }); err != nil {
		f.note(SourceFetch, sources.SeverityError, err.Error())
	}
}
