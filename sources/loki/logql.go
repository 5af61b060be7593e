package loki

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// splitQuery cuts a log query into its stream selector ("{...}") and the pipeline
// that follows it (" | json |= \"x\"", possibly empty). Quoted strings inside the
// selector may contain braces, so the scan honours "..." (with escapes) and `...`.
func splitQuery(q string) (selector, pipeline string, err error) {
	s := strings.TrimSpace(q)
	if !strings.HasPrefix(s, "{") {
		return "", "", malformedQuery(fmt.Sprintf("not a log query (it must start with a stream selector {...}): %q", q))
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '`':
			i++
			for ; i < len(s) && s[i] != '`'; i++ {
			}
		case '}':
			return s[:i+1], s[i+1:], nil
		}
	}
	return "", "", malformedQuery(fmt.Sprintf("unterminated stream selector in %q", q))
}

// malformedQuery is a query this client refuses before sending it, as Loki
// would refuse it with a parse error.
type malformedQuery string

func (e malformedQuery) Error() string { return string(e) }

// selectorInner returns the matchers of a selector without the braces.
func selectorInner(sel string) string {
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(sel), "{"), "}"))
}

// exactSelector builds a selector that matches one stream and no other among
// those the caller's selector can see: the caller's own matchers, an equality
// matcher for each of the stream's labels, and name="" for every other label name
// seen on a sibling stream. Without the name="" matchers {job="caddy"} would also
// match {job="caddy", host="b"}, and that stream's lines would be fetched twice.
// A stream with a label name no sibling has is impossible: the sibling list comes
// from /series for the caller's selector, and the caller's matchers are kept.
func exactSelector(userInner string, stream map[string]string, allNames []string) string {
	var b strings.Builder
	b.WriteByte('{')
	b.WriteString(userInner)
	names := make([]string, 0, len(stream))
	for n, v := range stream {
		if v != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		b.WriteString(", ")
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(stream[n]))
	}
	for _, n := range allNames {
		if stream[n] == "" {
			b.WriteString(", ")
			b.WriteString(n)
			b.WriteString(`=""`)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// labelNames returns the sorted union of label names of streams.
func labelNames(streams []map[string]string) []string {
	set := map[string]bool{}
	for _, s := range streams {
		for n, v := range s {
			if v != "" {
				set[n] = true
			}
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// countQuery is the pushdown query whose result the raw pull is checked against:
// lines per stream (grouped by the streams' own label names) over rng.
func countQuery(logQuery string, names []string, rng time.Duration) (string, error) {
	r, err := formatRange(rng)
	if err != nil {
		return "", err
	}
	return groupedCount(logQuery, names, "["+r+"]"), nil
}

// groupedCount is sum by (names) (count_over_time(logQuery rng)), rng a
// range with its modifiers.
func groupedCount(logQuery string, names []string, rng string) string {
	by := ""
	if len(names) > 0 {
		by = " by (" + strings.Join(names, ", ") + ")"
	}
	return fmt.Sprintf("sum%s (count_over_time(%s %s))", by, strings.TrimSpace(logQuery), rng)
}

// MinuteRange is the range of a per-minute metric query (MinuteValues): a
// minute, shifted back by a nanosecond. Loki evaluates a range over
// (t-1m, t] and puts the steps of a query_range on the minute grid (its
// frontend rounds start and end to the step): at the step t = m+1m the
// shifted range is (m-1ns, m+1m-1ns], that is the minute [m, m+1m) a raw
// pull of that minute reads, so a line logged on the minute's first
// nanosecond is counted in the same minute it is pulled in.
const MinuteRange = "[1m] offset 1ns"

// formatRange renders d as a LogQL range. Loki parses ranges with Prometheus'
// duration syntax (ms, s, m, h, d, w, y), which has no unit below a millisecond.
func formatRange(d time.Duration) (string, error) {
	switch {
	case d <= 0:
		return "", fmt.Errorf("range %v is not positive", d)
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h", nil
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m", nil
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s", nil
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms", nil
	}
	return "", errors.New("range " + d.String() + " is not a whole number of milliseconds")
}

// nanos renders t as Loki's preferred timestamp: a nanosecond Unix epoch.
func nanos(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }

// span is a half-open time range [from, to).
type span struct{ from, to time.Time }

// split cuts spans into sub-ranges at multiples of by (counted from the Unix
// epoch, as Loki's own query splitting does), so inner boundaries are round and
// the same window always splits the same way.
func split(spans []span, by time.Duration) []span {
	var out []span
	for _, s := range spans {
		from := s.from
		for from.Before(s.to) {
			next := time.Unix(0, (from.UnixNano()/int64(by)+1)*int64(by)).UTC()
			if from.UnixNano() < 0 {
				next = from.Add(by)
			}
			if next.After(s.to) {
				next = s.to
			}
			out = append(out, span{from, next})
			from = next
		}
	}
	return out
}

// mergeMinutes turns a set of minutes into sorted, de-duplicated spans, merging
// adjacent minutes: 10:01, 10:02, 10:03, 10:07 -> [10:01, 10:04), [10:07, 10:08).
func mergeMinutes(minutes []time.Time) []span {
	ms := make([]int64, 0, len(minutes))
	for _, m := range minutes {
		ms = append(ms, m.Truncate(time.Minute).UnixNano())
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i] < ms[j] })
	var out []span
	for i, m := range ms {
		if i > 0 && m == ms[i-1] {
			continue
		}
		t := time.Unix(0, m).UTC()
		if n := len(out); n > 0 && out[n-1].to.Equal(t) {
			out[n-1].to = t.Add(time.Minute)
			continue
		}
		out = append(out, span{t, t.Add(time.Minute)})
	}
	return out
}

// alignMillis widens [from, to) to whole milliseconds (from down, to up), so a
// LogQL range covering it exists and raw pull and count cover the same lines.
func alignMillis(from, to time.Time) (time.Time, time.Time) {
	f := from.Truncate(time.Millisecond)
	t := to.Truncate(time.Millisecond)
	if t.Before(to) {
		t = t.Add(time.Millisecond)
	}
	return f.UTC(), t.UTC()
}
