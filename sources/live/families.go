package live

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
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

// familyCountQuery counts query's lines per minute and family.
func familyCountQuery(query string) string {
	return "sum by (" + familyLabel + ") (count_over_time(" + query + familyStages + " " + loki.MinuteRange + "))"
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
	return familyStages + " | " + strings.Join(cmps, join) + dropFamilyLabels
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
// families that stood out, across the whole range; AccessFile then holds the
// other lines of the minutes pulled whole: the two files hold no line twice.
const FamiliesFile = "access/loki-families.log.gz"

// families counts lines per minute and client family inside Loki and returns
// the families to pull across the range (flagFamilies) with their summed
// lines per minute. totals are every line's per-minute counts over the same
// minutes. A failed count leaves pushdown to the minutes alone, with a
// warning: a client that rose slowly is then seen only in the minutes that
// stood out.
func (f *fetcher) families(ctx context.Context, c *loki.Client, query string, totals []int64, windowStart int, factor float64, cost *Progress) ([]string, []float64) {
	var fams []string
	counts := map[string][]float64{}
	err := f.computeInLoki(ctx, c, familyCountQuery(query), f.start, f.to, "",
		"per-minute counts of each client family (agent/language), computed in Loki to choose the families to pull", cost,
		func(mv loki.MinuteValues) (string, error) {
			for _, s := range mv.Series {
				if len(s.Values) != len(totals) {
					return "", fmt.Errorf("%d minutes counted per family, %d expected", len(s.Values), len(totals))
				}
				counts[s.Metric[familyLabel]] = s.Values
			}
			fams = flagFamilies(counts, totals, windowStart, factor)
			if len(fams) == 0 {
				return "; no family stood out", nil
			}
			return "; pulled across the window: " + strings.Join(fams, ", "), nil
		})
	if err != nil {
		f.note(loki.Source, sources.SeverityWarning, fmt.Sprintf(
			"per-family counts failed, so only the minutes that stood out were pulled: a client that rose slowly is seen only in those minutes, and its addresses and start may be short: %v", err))
		return nil, nil
	}
	if len(fams) == 0 {
		return nil, nil
	}
	perMinute := make([]float64, len(totals))
	for _, fam := range fams {
		for i, v := range counts[fam] {
			perMinute[i] += v
		}
	}
	return fams, perMinute
}

// familySpans cuts [from, from+len(perMinute) minutes) into spans holding
// about limit of the families' lines each (perMinute, as Loki counted them),
// so that the family pull costs a count and a page per span: a family that is
// sparse across a day is pulled in a few requests, not two per hour.
func familySpans(from time.Time, perMinute []float64, limit int) []loki.Span {
	var out []loki.Span
	start, sum := 0, 0.0
	for i, v := range perMinute {
		if i > start && sum+v > float64(limit) {
			out = append(out, loki.Span{From: from.Add(time.Duration(start) * time.Minute), To: from.Add(time.Duration(i) * time.Minute)})
			start, sum = i, 0
		}
		sum += v
	}
	if len(perMinute) > start {
		out = append(out, loki.Span{From: from.Add(time.Duration(start) * time.Minute), To: from.Add(time.Duration(len(perMinute)) * time.Minute)})
	}
	return out
}

// pullFamilies pulls the lines of plan's families across the whole range into
// FamiliesFile; the minutes pulled whole leave them out (familyFilter), and
// the per-minute status counts too, so no line is read or counted twice. A
// failed pull is replaced by the families' counts (countFailedFamilies).
func (f *fetcher) pullFamilies(ctx context.Context, c *loki.Client, query string, plan *pushdownPlan, phase func(string), finish func()) error {
	q := query + familyFilter(plan.families, true)
	phase("access log, client families")
	defer finish()
	note := fmt.Sprintf("; pushdown: the lines of the client families %s across the range, in %d spans of about %d lines", strings.Join(plan.families, ", "), len(plan.familySpans), c.Limit())
	p, err := f.pullToFile(FamiliesFile, q, note, func(sink func(loki.Entry) error) (loki.Result, error) {
		return c.PullSpans(ctx, q, plan.familySpans, sink)
	})
	if err != nil {
		return err
	}
	f.record(p.rec)
	if p.err != nil || !p.res.Complete() {
		return f.countFailedFamilies(ctx, c, query, plan, p.err)
	}
	return nil
}
