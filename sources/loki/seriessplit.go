package loki

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Loki refuses a metric query whose answer holds more series than its
// max_query_series (the number of unique series a metric query returns).
// For a sum by labels, the series are the groups: splitting the query in
// time helps only when the groups come and go, and a day's families of
// clients are there all day. So a sum by labels is split by the values of
// its grouping labels instead: a label filter at the end of the pipeline,
// where the grouping reads the labels, keeps one part of the values, and the
// parts are exact complements (a value falls in exactly one), so each group
// is in exactly one part's answer, with every line of it. Values a stream
// label holds are listed by Loki's index (listedValueParts); values a
// parser sets are learned from the answers of shorter stretches
// (matrixByLearnedValues, learnedsplit.go). Where nothing can be learned
// (one step refused), the parts are ranges of the value space: the values
// starting with a prefix followed by a rune in a range, halved until the
// answer fits, the prefix growing by the one rune a range narrowed to. A
// part that still holds one exact value of every grouping label is one
// series and cannot be refused.

// groupedSum is a metric query `sum by (labels) (...)` over one range
// aggregation, cut where a label filter joins its pipeline: just before
// the range ("[1m]").
type groupedSum struct {
	before, after string
	labels        []string
}

// byRE finds a sum's grouping, before or after its argument.
var (
	byBeforeRE = regexp.MustCompile(`^\s*sum\s*by\s*\(([^()]*)\)`)
	byAfterRE  = regexp.MustCompile(`\)\s*by\s*\(([^()]*)\)\s*$`)
)

// splitGroupedSum cuts query when it is a sum by one or more labels of a
// range aggregation over one selector (splitSumQuery's test), with one
// range.
func splitGroupedSum(query string) (groupedSum, bool) {
	if _, ok := splitSumQuery(query); !ok {
		return groupedSum{}, false
	}
	blank := blankQuoted(query)
	m := byBeforeRE.FindStringSubmatch(blank)
	if m == nil {
		m = byAfterRE.FindStringSubmatch(blank)
	}
	if m == nil {
		return groupedSum{}, false
	}
	var labels []string
	for _, l := range strings.Split(m[1], ",") {
		if l = strings.TrimSpace(l); l != "" {
			labels = append(labels, l)
		}
	}
	r := rangeRE.FindAllStringIndex(blank, -1)
	if len(labels) == 0 || len(r) != 1 {
		return groupedSum{}, false
	}
	return groupedSum{before: strings.TrimRight(query[:r[0][0]], " "), after: " " + query[r[0][0]:], labels: labels}, true
}

// labelValues is a part of one label's values: either the exact values of
// set (when it is not nil), or prefix itself (exact) and every value that
// starts with prefix followed by a rune in [lo, hi] (none when lo > hi),
// less the values of exclude. An absent label has the value "".
type labelValues struct {
	prefix  string
	lo, hi  rune
	exact   bool
	set     []string
	exclude []string
}

// allValues is every value of a label.
var allValues = labelValues{lo: 0, hi: unicode.MaxRune, exact: true}

// isAll reports whether v is every value of its label.
func (v labelValues) isAll() bool {
	return v.set == nil && len(v.exclude) == 0 && v.prefix == "" && v.lo == 0 && v.hi == unicode.MaxRune && v.exact
}

// anyOf is the regular expression matching exactly the values of vs.
func anyOf(vs []string) string {
	qs := make([]string, len(vs))
	for i, v := range vs {
		qs[i] = regexp.QuoteMeta(v)
	}
	return strings.Join(qs, "|")
}

// filter is the label filter keeping the values, "" for every value.
func (v labelValues) filter(label string) string {
	if v.set != nil {
		return " | " + label + "=~" + strconv.Quote(anyOf(v.set))
	}
	var out string
	if len(v.exclude) > 0 {
		out = " | " + label + "!~" + strconv.Quote(anyOf(v.exclude))
		v.exclude = nil
	}
	switch {
	case v.isAll():
	case v.lo > v.hi:
		out += " | " + label + "=" + strconv.Quote(v.prefix)
	default:
		re := regexp.QuoteMeta(v.prefix) + fmt.Sprintf(`[\x{%x}-\x{%x}](?s:.*)`, v.lo, v.hi)
		if v.exact {
			re = regexp.QuoteMeta(v.prefix) + fmt.Sprintf(`(?:[\x{%x}-\x{%x}](?s:.*))?`, v.lo, v.hi)
		}
		out += " | " + label + "=~" + strconv.Quote(re)
	}
	return out
}

// split halves v: a set of values into two sets; else the runes after the
// prefix are halved (ASCII, where labels' values mostly are, apart from
// the rest first), a single rune joins the prefix, and both halves leave
// out what v leaves out. It reports false when v is one exact value.
func (v labelValues) split() (labelValues, labelValues, bool) {
	if v.set != nil {
		if len(v.set) < 2 {
			return v, v, false
		}
		h := len(v.set) / 2
		return labelValues{set: v.set[:h:h]}, labelValues{set: v.set[h:]}, true
	}
	if len(v.exclude) > 0 {
		inner := v
		inner.exclude = nil
		a, b, ok := inner.split()
		a.exclude, b.exclude = v.exclude, v.exclude
		return a, b, ok
	}
	switch {
	case v.lo < v.hi:
		mid := v.lo + (v.hi-v.lo)/2
		if v.lo <= unicode.MaxASCII && v.hi > unicode.MaxASCII {
			mid = unicode.MaxASCII
		}
		return labelValues{prefix: v.prefix, lo: v.lo, hi: mid, exact: v.exact}, labelValues{prefix: v.prefix, lo: mid + 1, hi: v.hi}, true
	case v.lo == v.hi:
		longer := labelValues{prefix: v.prefix + string(v.lo), lo: 0, hi: unicode.MaxRune, exact: true}
		if v.exact {
			return labelValues{prefix: v.prefix, lo: 1, hi: 0, exact: true}, longer, true
		}
		return longer.split()
	}
	return v, v, false
}

// valueGroup is a part of a grouping's values: one labelValues per label.
type valueGroup []labelValues

func (g valueGroup) filter(labels []string) string {
	var b strings.Builder
	for i, v := range g {
		b.WriteString(v.filter(labels[i]))
	}
	return b.String()
}

// known reports whether g's values are exact sets of values for some
// label: halving the set is then as good as learning values.
func (g valueGroup) known() bool {
	return slices.ContainsFunc(g, func(v labelValues) bool { return v.set != nil && len(v.set) > 1 })
}

// split halves the values of the first label (index i) whose values can
// be halved.
func (g valueGroup) split() (a, b valueGroup, i int, ok bool) {
	for i, v := range g {
		if va, vb, ok := v.split(); ok {
			a, b = append(valueGroup(nil), g...), append(valueGroup(nil), g...)
			a[i], b[i] = va, vb
			return a, b, i, true
		}
	}
	return nil, nil, 0, false
}

// maxValueSplits bounds the halvings of one stretch: a part of one exact
// value per label is one series, so a Loki that refuses it anyway (a
// prefix growing without end) gets its refusal back instead.
const maxValueSplits = 512

// matrixByValues answers the matrix of gs over [start, end] at step from
// the parts of its grouping's values: *parts (nil: every value, refused
// with refusal) are the parts to ask, and become the parts that were
// answered, so that the next stretch of the same query starts from them.
// The first parts are the values the index lists, else those the answers
// of shorter stretches name (matrixByLearnedValues), else two halves of
// the value space.
func (c *Client) matrixByValues(ctx context.Context, gs groupedSum, start, end time.Time, step time.Duration, m *meter, parts *[]valueGroup, refusal error) ([]matrixResult, error) {
	todo := *parts
	if todo == nil {
		todo = c.listedValueParts(ctx, gs, start, end, m, refusal)
	}
	if se := seriesLimitOf(refusal); todo == nil && se != nil && se.max > 0 {
		// The values are learned from the answers (matrixByLearnedValues).
		c.learnOnce(fmt.Sprintf("metric queries split by the values of label %s that their answers named, stretch by stretch from the end, where their answer held too many series",
			strings.Join(gs.labels, ", ")), refusal)
		res, answered, err := c.matrixByLearnedValues(ctx, gs, start, end, step, m, se.max)
		*parts = answered
		return res, err
	}
	if todo == nil {
		a, b, i, _ := everyValue(len(gs.labels)).split()
		todo = []valueGroup{a, b}
		c.noteSeriesSplit(gs.labels[i], refusal)
	}
	res, answered, err := c.askValueParts(ctx, gs, start, end, step, m, todo)
	*parts = answered
	return res, err
}

// askValueParts answers the matrix of gs over [start, end] at step from the
// parts todo of its grouping's values, and returns the parts that were
// answered (on an error, parts that still cover every value: the stretch
// is asked again from them once the caller has followed the error). A part
// refused for its series over more than one step has its values learned
// (matrixByLearnedValues, within the part) unless it is a set of values,
// which is halved, as is a part refused over one step; one refused for its
// bytes in one step is split by label shards (matrixSharded), and over a
// longer stretch the refusal is returned for the caller to split in time.
func (c *Client) askValueParts(ctx context.Context, gs groupedSum, start, end time.Time, step time.Duration, m *meter, todo []valueGroup) ([]matrixResult, []valueGroup, error) {
	sum := matrixSum{}
	var answered []valueGroup
	splits := 0
	for len(todo) > 0 {
		g := todo[0]
		todo = todo[1:]
		q := gs.before + g.filter(gs.labels) + gs.after
		res, err := c.matrixCall(ctx, q, start, end, step, m)
		if be := bytesLimitOf(err); be != nil && end.Sub(start) <= step {
			// One step of the part reads too much: fewer streams at a
			// time. A longer stretch is split in time first (matrix).
			res, err = c.matrixSharded(ctx, q, start, end, step, m, err)
		}
		if se := seriesLimitOf(err); se != nil && se.max > 0 && end.After(start) && !g.known() {
			// Values not named before: learned from shorter stretches.
			sub := groupedSum{before: gs.before + g.filter(gs.labels), after: gs.after, labels: gs.labels}
			if res, _, err = c.matrixByLearnedValues(ctx, sub, start, end, step, m, se.max); err != nil {
				// Not halved as well: the learning's one-step parts were
				// halved down to single values or maxValueSplits, and
				// halves of g would be learned again, each to the same
				// end.
				return nil, append(append(answered, g), todo...), err
			}
		}
		if se := seriesLimitOf(err); se != nil && splits < maxValueSplits {
			if a, b, i, ok := g.split(); ok {
				splits++
				c.noteSeriesSplit(gs.labels[i], err)
				todo = append([]valueGroup{a, b}, todo...)
				continue
			}
		}
		if err != nil {
			return nil, append(append(answered, g), todo...), err
		}
		answered = append(answered, g)
		sum.add(res)
	}
	return sum.results(), answered, nil
}

// noteSeriesSplit records, once per label, that metric queries were split
// by its values because their answers held too many series.
func (c *Client) noteSeriesSplit(label string, refusal error) {
	c.learnOnce(fmt.Sprintf("metric queries split by the values of label %s where their answer held too many series", label), refusal)
}

// listedValueParts are the first parts of gs's grouping values when Loki
// lists them without reading a line: a grouping label that is a stream
// label has its values in the index (/series over the stretch, as the
// bytes limit's shards read them). Its values are cut into sets of as many
// as fit in one answer (Loki's max_query_series, from its refusal, over
// the groups the other stream labels of the grouping make per value), and
// a last part keeps every other value (the streams without the label, and
// any a parser sets): exact complements, asked at once instead of halved
// refusal by refusal. nil when no grouping label is a stream label, or the
// streams cannot be listed: a label the lines' parsers set is known only
// from a pass with the parser, which the same limit refuses when its
// values alone exceed it, so those are halved as before.
func (c *Client) listedValueParts(ctx context.Context, gs groupedSum, start, end time.Time, m *meter, refusal error) []valueGroup {
	s, ok := splitSumQuery(gs.before + gs.after)
	se := seriesLimitOf(refusal)
	if !ok || se == nil || se.max <= 0 {
		return nil
	}
	streams, err := c.series(ctx, start.Add(-s.lookback), end.Add(time.Nanosecond), []string{s.sel}, m)
	if err != nil || len(streams) == 0 {
		return nil
	}
	values := make([]map[string]bool, len(gs.labels))
	for i, l := range gs.labels {
		values[i] = map[string]bool{}
		for _, st := range streams {
			if v := st[l]; v != "" {
				values[i][v] = true
			}
		}
	}
	first := slices.IndexFunc(values, func(vs map[string]bool) bool { return len(vs) > 1 })
	if first < 0 {
		return nil
	}
	// The other stream labels' groups per value of the first, at most.
	per := 1
	for i, vs := range values {
		if i != first && len(vs) > 0 {
			per *= len(vs)
		}
	}
	size := max(1, se.max/per)
	listed := slices.Sorted(maps.Keys(values[first]))
	var out []valueGroup
	part := func(v labelValues) valueGroup {
		g := make(valueGroup, len(gs.labels))
		for i := range g {
			g[i] = allValues
		}
		g[first] = v
		return g
	}
	for i := 0; i < len(listed); i += size {
		out = append(out, part(labelValues{set: listed[i:min(i+size, len(listed)):min(i+size, len(listed))]}))
	}
	rest := allValues
	rest.exclude = listed
	out = append(out, part(rest))
	c.learnOnce(fmt.Sprintf("metric queries split by the values of label %s, as Loki's index lists them, where their answer held too many series", gs.labels[first]), refusal)
	return out
}
