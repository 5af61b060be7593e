package live

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/failure"
	"github.com/aftermath-forensics/aftermath/sources/loki"
)

// Client families (bundle.ClientFamily: a coarse agent and the first two
// letters of the primary Accept-Language tag) are what Loki can tell of a
// request's client without sending its lines. A family is coarser than the
// fingerprint the detectors group requests by (family without version,
// language, login, client hints), so the lines of one fingerprint fall in
// one family, and a family pulled whole holds every line of the
// fingerprints in it. There are a few dozen families on a real site, far
// below Loki's max_query_series.
const (
	familyLabel = "aftermath_family"
	familyUA    = "aftermath_ua"
	familyLang  = "aftermath_lang"
)

// familyStages adds the family label to every JSON line. Loki's JSON
// expressions read Caddy's header arrays (request.headers["User-Agent"][0]),
// and label_format computes the family from them as the detectors do
// (bundle.ClientFamilyTemplate).
var familyStages = " | json " + familyUA + "=`request.headers[\"User-Agent\"][0]`, " +
	familyLang + "=`request.headers[\"Accept-Language\"][0]`" +
	" | label_format " + familyLabel + "=`" + bundle.ClientFamilyTemplate(familyUA, familyLang) + "`"

// dropFamilyLabels removes what familyStages added (and a parse error's
// labels), so the lines come back in their own streams.
const dropFamilyLabels = " | drop " + familyUA + ", " + familyLang + ", " + familyLabel + ", __error__, __error_details__"

// familyCountQuery counts query's lines per minute, client family, status
// and the marks that place a line (phpStage, hitStage: the groups of the
// status counts) and, when the clients' timeout is known (timeoutS > 0),
// lateness (lateStage), every line: a line whose JSON does not parse keeps
// its count (drop, not a filter on __error__, which a metric query would
// otherwise fail on), with no status. One pass of Loki over the range
// gives the families' counts (summed over statuses), every line's (summed
// over all), the failed lines' (summed over the failed statuses and the
// late groups) and the status counts of the lines of any set of families
// (summed over them): before, the failed lines and the status counts of
// the families not pulled were passes of their own.
func familyCountQuery(query string, timeoutS float64) string {
	return "sum by (" + familyLabel + ", status, " + phpLabel + ", " + hitLabel + lateBy(timeoutS) + ") (count_over_time(" + query + familyStatusStages(timeoutS) +
		lateStage(timeoutS) + " " + phpStage + " " + hitStage + " | drop __error__, __error_details__ " + loki.MinuteRange + "))"
}

// familyStatusStages are familyStages that extract the status too, and the
// duration when the clients' timeout is known.
func familyStatusStages(timeoutS float64) string {
	duration := ""
	if timeoutS > 0 {
		duration = `, duration="duration"`
	}
	return " | json " + familyUA + "=`request.headers[\"User-Agent\"][0]`, " +
		familyLang + "=`request.headers[\"Accept-Language\"][0]`, status=\"status\"" + duration +
		" | label_format " + familyLabel + "=`" + bundle.ClientFamilyTemplate(familyUA, familyLang) + "`"
}

// failedStatusRE is failure.StatusPattern as LogQL's status=~ reads it:
// the whole value.
var failedStatusRE = regexp.MustCompile(`^(?:` + failure.StatusPattern + `)$`)

// failedGroup reports whether a series of familyCountQuery's answer counts
// failed lines as the detectors count them (failedFilter's test): a failed
// status, or late.
func failedGroup(metric map[string]string) bool {
	return failedStatusRE.MatchString(metric["status"]) || metric[lateLabel] == "1"
}

// familyFilter selects the lines of families (in: true) or every other line
// (in: false); the two are exact complements. Empty when families is.
func familyFilter(families []string, in bool) string {
	if len(families) == 0 {
		return ""
	}
	op, join := "=", " or "
	if !in {
		op, join = "!=", " and "
	}
	cmps := make([]string, len(families))
	for i, f := range families {
		cmps[i] = familyLabel + op + strconv.Quote(f)
	}
	narrow := ""
	if in {
		narrow = familyLineFilter(families)
	}
	return narrow + familyStages + " | " + strings.Join(cmps, join) + dropFamilyLabels
}

// familyLineFilter narrows a query for the lines of families with line
// filters on the raw JSON, before any parser: Loki's line filters are its
// cheapest stage, and a line they leave out is never parsed. A line of
// family agent/lang holds the agent's token (bundle.ClientFamilyAgent, in
// any case when the agent's test folds it) and the language's letters in
// some case, wherever in the line: the filters let through more than the
// families, and familyStages decide. A filter is left out when some family
// cannot be narrowed by it (the agent of no token, an empty language); ""
// when neither can.
func familyLineFilter(families []string) string {
	var agents, langs []string
	agentsOK, langsOK := true, true
	for _, f := range families {
		agent, lang, _ := strings.Cut(f, "/")
		token, fold, ok := bundle.ClientFamilyAgent(agent)
		if !ok || token == "" {
			agentsOK = false
		} else {
			re := regexp.QuoteMeta(token)
			if fold {
				re = "(?i:" + re + ")"
			}
			if !slices.Contains(agents, re) {
				agents = append(agents, re)
			}
		}
		if lang == "" {
			langsOK = false
		} else if re := "(?i:" + regexp.QuoteMeta(lang) + ")"; !slices.Contains(langs, re) {
			langs = append(langs, re)
		}
	}
	var out string
	if agentsOK && len(agents) > 0 {
		out += " |~ " + strconv.Quote(strings.Join(agents, "|"))
	}
	if langsOK && len(langs) > 0 {
		out += " |~ " + strconv.Quote(strings.Join(langs, "|"))
	}
	return out
}

// familyBucket is the stretch a family's count is judged over: longer than a
// minute, so that one reader's session (a page and its assets, a burst of a
// few dozen lines) does not stand out, short enough that a crawler's start
// is seen within minutes.
const familyBucket = 10 * time.Minute

// familyShare is the least share of all lines a family must have in a
// stretch where it stands out to be pulled: a rise of a few readers of a rare
// language stands out against its own quiet past, but is no crawl.
const familyShare = 0.2

// flagFamilies returns the families (sorted) whose lines are pulled across
// the whole window: those that, in some familyBucket of the window, stand out
// against their own unflagged buckets of the referenceSpan before (the same
// test as flagMinutes: standsOut against the median) and
// hold at least familyShare of that bucket's lines. counts[f][i] is family
// f's count in minute i, totals[i] every line's; minutes before windowStart
// are the baseline.
func flagFamilies(counts map[string][]float64, totals []int64, windowStart int, factor float64) []string {
	per := int(familyBucket / time.Minute)
	n := (len(totals) + per - 1) / per
	bucketTotals := make([]float64, n)
	for i, v := range totals {
		bucketTotals[i/per] += float64(v)
	}
	span := int(referenceSpan / familyBucket)
	var out []string
	for fam, vs := range counts {
		b := make([]int64, n)
		for i, v := range vs {
			b[i/per] += int64(math.Round(v))
		}
		global := median(b)
		flagged := make([]bool, n)
		hit := false
		ref := make([]int64, 0, span)
		for i := range n {
			ref = ref[:0]
			for j := max(0, i-span); j < i; j++ {
				if !flagged[j] {
					ref = append(ref, b[j])
				}
			}
			m := global
			if len(ref) >= span/2 {
				m = median(ref)
			}
			flagged[i] = standsOut(b[i], m, factor) && float64(b[i]) >= familyShare*bucketTotals[i]
			// A bucket reaching into the window counts for it.
			if flagged[i] && (i+1)*per > windowStart {
				hit = true
			}
		}
		if hit {
			out = append(out, fam)
		}
	}
	sort.Strings(out)
	return out
}

// FamiliesFile is where a pushed-down fetch writes the lines of the client
// families that stood out, in the minutes AccessFile does not hold (it holds
// every line of the minutes pulled whole): together they hold the families'
// lines across the whole range, and no line twice.
const FamiliesFile = "access/loki-families.log.gz"

// familyMinutes has Loki count query's lines per minute, client family
// and status group (familyCountQuery, one metric query with | json over the
// range) and returns them as counts per family, as status counts per family
// (familyStatus), summed as every line's per-minute counts, and summed
// over the failed groups as the failed lines' (failedGroup): the minutes
// are flagged by the sums, so neither the families nor the failed lines
// cost a pass over the range of their own. Lines whose JSON does not parse
// are counted too, in the family of a request without headers (the query
// drops the parse error rather than failing on it).
//
// Under a max_query_series below the families' status groups, the
// families are counted alone (familyOnlyQuery, split by Loki's refusal
// into parts of the families the answers name) and familyStatus and the
// failed counts are nil: the parts of the wider grouping would each be a
// pass over the range, and a status count of its own (minuteStatus) is one
// more. The wider grouping has about as many groups as families times
// their statuses: on the simulated day 113 against 26 families, so under
// max_query_series 8 at least 15 parts against 4 and the status count's
// one. On the simulated incident under max_query_series 8, the families
// alone took 15 requests and Loki read the range 2.90 times over
// (TestFamilyCountsUnderSeriesLimitReadTheRangeFewTimes logs both), to
// which the status count adds at most one pass; the wider grouping split
// the same way took 65 requests and 9.98 passes, measured once by hand (no
// test repeats it). The failed counts are the line filter's
// (failedLineFilter), which the fetch makes anyway.
func familyMinutes(ctx context.Context, c *loki.Client, query string, timeoutS float64, from, to time.Time) (loki.MinuteCounts, map[string][]float64, familyStatus, []int64, error) {
	q := familyCountQuery(query, timeoutS)
	mv, err := c.MinuteValuesWhole(ctx, q, from, to)
	requests, wire := mv.Requests, mv.WireBytes
	merged := true
	if loki.IsSeriesLimit(err) {
		q, merged = familyOnlyQuery(query), false
		mv, err = c.MinuteValues(ctx, q, from, to)
		requests, wire = requests+mv.Requests, wire+mv.WireBytes
	}
	mc := loki.MinuteCounts{Query: q, From: mv.From, To: mv.To, Requests: requests, WireBytes: wire}
	if err != nil {
		return mc, nil, nil, nil, err
	}
	counts := map[string][]float64{}
	status := familyStatus{}
	sm := loki.StreamMinutes{Counts: make([]int64, mc.Minutes())}
	failed := make([]float64, mc.Minutes())
	for _, s := range mv.Series {
		if len(s.Values) != len(sm.Counts) {
			return mc, nil, nil, nil, fmt.Errorf("%d minutes counted per family, %d expected", len(s.Values), len(sm.Counts))
		}
		fam := s.Metric[familyLabel]
		if counts[fam] == nil {
			counts[fam] = make([]float64, len(s.Values))
		}
		isFailed := failedGroup(s.Metric)
		for i, v := range s.Values {
			counts[fam][i] += v
			sm.Counts[i] += int64(math.Round(v))
			if isFailed {
				failed[i] += v
			}
		}
		if status[fam] == nil {
			status[fam] = newLineCounts()
		}
		status[fam].add(s.Metric, s.Values)
	}
	mc.Streams = []loki.StreamMinutes{sm}
	if !merged {
		return mc, counts, nil, nil, nil
	}
	failedLines := make([]int64, len(failed))
	for i, v := range failed {
		failedLines[i] = int64(math.Round(v))
	}
	return mc, counts, status, failedLines, nil
}

// familyOnlyQuery counts query's lines per minute and client family alone,
// every line.
func familyOnlyQuery(query string) string {
	return "sum by (" + familyLabel + ") (count_over_time(" + query + familyStages + " | drop __error__, __error_details__ " + loki.MinuteRange + "))"
}

// familyStatus is what familyCountQuery counted per family, status group
// and minute, and of them the late lines: status[family].
type familyStatus map[string]*lineCounts

// counts sums the status groups of the families in (in true) or of every
// other family (in false) per minute: the answer of the status count
// (minuteStatusParts[0]) over statusLines{query, familyFilter(families,
// in)}.
func (fs familyStatus) counts(families []string, in bool) *lineCounts {
	out := newLineCounts()
	sum := func(dst, src map[statusGroup][]float64) {
		for g, vs := range src {
			s := dst[g]
			if s == nil {
				s = make([]float64, len(vs))
				dst[g] = s
			}
			for i, v := range vs {
				s[i] += v
			}
		}
	}
	for fam, lc := range fs {
		if slices.Contains(families, fam) != in {
			continue
		}
		sum(out.all, lc.all)
		sum(out.late, lc.late)
	}
	return out
}

// families returns the families to pull across the range (flagFamilies) of
// counts (familyMinutes; nil when that failed, err saying why) with their
// summed lines per minute. totals are every line's per-minute counts over the
// same minutes. Failed counts leave pushdown to the minutes alone, with a
// warning: a client that rose slowly is then seen only in the minutes that
// stood out.
func (f *fetcher) families(counts map[string][]float64, err error, totals []int64, windowStart int, factor float64) ([]string, []float64, string) {
	if err != nil {
		f.note(loki.Source, sources.SeverityWarning, fmt.Sprintf(
			"per-family counts failed, so only the minutes that stood out were pulled: a client that rose slowly is seen only in those minutes, and its addresses and start may be short: %v", err))
		return nil, nil, ""
	}
	fams := flagFamilies(counts, totals, windowStart, factor)
	if len(fams) == 0 {
		return nil, nil, "no client family stood out"
	}
	perMinute := make([]float64, len(totals))
	for _, fam := range fams {
		for i, v := range counts[fam] {
			perMinute[i] += v
		}
	}
	return fams, perMinute, "client families pulled across the window: " + strings.Join(fams, ", ")
}

// familySpans cuts the minutes of [from, from+len(perMinute) minutes) that
// were not pulled whole (pulled(i) false; nil: none was) into spans holding
// about limit of the families' lines each (perMinute, as Loki counted them),
// so that the family pull costs a count and a page per span: a family that
// is sparse across a day is pulled in a few requests, not two per hour. The
// minutes pulled whole hold the families' lines already (their pull has no
// parser to leave them out): a run of them ends a span, unless the families
// have fewer lines there than a page, which costs less to pull again and
// drop (inPulledMinute) than the count and page of a new span. Spans in
// which Loki counted no line of the families are not asked for.
func familySpans(from time.Time, perMinute []float64, pulled func(i int) bool, limit int) []loki.Span {
	if pulled == nil {
		pulled = func(int) bool { return false }
	}
	var out []loki.Span
	at := func(i int) time.Time { return from.Add(time.Duration(i) * time.Minute) }
	start, end, sum := -1, -1, 0.0
	closeSpan := func() {
		if start >= 0 && sum > 0 {
			out = append(out, loki.Span{From: at(start), To: at(end)})
		}
		start, sum = -1, 0
	}
	n := len(perMinute)
	for i := 0; i < n; {
		if pulled(i) {
			j, gap := i, 0.0
			for j < n && pulled(j) {
				gap += perMinute[j]
				j++
			}
			if start >= 0 && j < n && gap < float64(limit) {
				sum += gap
			} else {
				closeSpan()
			}
			i = j
			continue
		}
		v := perMinute[i]
		i++
		if v <= 0 {
			continue // a span neither begins nor ends where Loki counted none
		}
		if start >= 0 && sum+v > float64(limit) {
			closeSpan()
		}
		if start < 0 {
			start = i - 1
		}
		sum += v
		end = i
	}
	closeSpan()
	return out
}

// familyOf is the client family of a Caddy access-log line as Loki's
// familyStages compute it and the detectors do (bundle.ClientFamily): from
// the first User-Agent and Accept-Language values of request.headers. A line
// that is not JSON has the family of a request without those headers, as
// in Loki, where the failed | json leaves both labels empty.
func familyOf(line string) string {
	var l struct {
		Request struct {
			Headers map[string][]string `json:"headers"`
		} `json:"request"`
	}
	_ = json.Unmarshal([]byte(line), &l)
	first := func(name string) string {
		if v := l.Request.Headers[name]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	return bundle.ClientFamily(first("User-Agent"), first("Accept-Language"))
}

// notFamilies wraps sink so that the lines of families are dropped and
// counted instead: the client decides a line's family (familyOf), so a pull
// of raw minutes runs no parser in Loki.
func notFamilies(families []string, dropped *droppedLines, sink func(loki.Entry) error) func(loki.Entry) error {
	if len(families) == 0 {
		return sink
	}
	in := map[string]bool{}
	for _, f := range families {
		in[f] = true
	}
	return func(e loki.Entry) error {
		if in[familyOf(e.Line)] {
			dropped.lines++
			dropped.bytes += int64(len(e.Line))
			return nil
		}
		return sink(e)
	}
}

// droppedLines counts the lines a pull received and did not keep.
type droppedLines struct{ lines, bytes int64 }

// inPulledMinute wraps sink so that the lines of minutes pulled whole
// (pulled holds Unix minutes) are dropped and counted instead: a family
// span bridging them pulled them again.
func inPulledMinute(pulled map[int64]bool, dropped *droppedLines, sink func(loki.Entry) error) func(loki.Entry) error {
	return func(e loki.Entry) error {
		if pulled[e.T.Unix()/60] {
			dropped.lines++
			dropped.bytes += int64(len(e.Line))
			return nil
		}
		return sink(e)
	}
}

// pullFamilies pulls the lines of plan's families in the minutes not
// pulled whole (familySpans, from the minutes as they stand after the
// access pull: a minute whose pull failed is counted, and its families'
// lines are pulled here) into FamiliesFile; the per-minute status counts
// leave them out (familyFilter), so no line is read or counted twice. A
// failed pull is replaced by the families' counts (countFailedFamilies).
func (f *fetcher) pullFamilies(ctx context.Context, c *loki.Client, query string, plan *pushdownPlan, phase func(string), finish func()) error {
	pulled := map[int64]bool{}
	for _, m := range plan.minutes {
		pulled[m.Unix()/60] = true
	}
	var from time.Time
	if len(plan.rows) > 0 {
		from = plan.rows[0].T
	}
	plan.familySpans = familySpans(from, plan.familyPerMinute, func(i int) bool { return i < len(plan.rows) && plan.rows[i].Pulled }, c.Limit())
	q := query + familyFilter(plan.families, true)
	phase("access log, client families")
	defer finish()
	note := fmt.Sprintf("; pushdown: the lines of the client families %s in the minutes not pulled whole, in %d spans of about %d lines", strings.Join(plan.families, ", "), len(plan.familySpans), c.Limit())
	var dropped droppedLines
	p, err := f.pullToFile(FamiliesFile, q, note, func(sink func(loki.Entry) error) (loki.Result, error) {
		// The families' lines per minute, as Loki counted them, check
		// the spans: no count of each span again.
		counted := countedPerMinute(from, len(plan.familyPerMinute), func(i int) int64 { return int64(math.Round(plan.familyPerMinute[i])) })
		return c.PullSpans(ctx, q, plan.familySpans, counted, inPulledMinute(pulled, &dropped, sink))
	})
	if err != nil {
		return err
	}
	if dropped.lines > 0 {
		p.rec.Lines -= dropped.lines
		p.rec.Bytes -= dropped.bytes
		p.rec.Note += fmt.Sprintf("; %d lines (%d bytes) of minutes pulled whole, which the spans bridged, were pulled again and dropped", dropped.lines, dropped.bytes)
	}
	f.record(p.rec)
	if p.err != nil || !p.res.Complete() {
		return f.countFailedFamilies(ctx, c, query, plan, p.err)
	}
	return nil
}
