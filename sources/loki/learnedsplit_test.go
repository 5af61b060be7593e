package loki

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// A sum by labels a parser sets (40 clients, two of them with four statuses,
// across two hours; a few clients only in the first minutes) under
// max_query_series 8 is answered from parts cut by the values the answers
// named, not halved blindly: Loki reads the range at most
// ceil(groups/limit)+1 times over (its statistics, summed), and the answer
// is the unlimited one. Before, the halvings read it 22 times over.
func TestSeriesLimitSplitsByNamedValues(t *testing.T) {
	f := lokitest.New(t)
	var n, groups int
	for c := range 40 {
		statuses := []string{"200"}
		if c%20 == 7 {
			statuses = []string{"200", "404", "500", "502"}
		}
		groups += len(statuses)
		for m := 0; m < 120; m++ {
			// Clients 30 to 39 are there in the first ten minutes only.
			if c >= 30 && m >= 10 || (m+c)%4 != 0 && m >= 10 {
				continue
			}
			for i, st := range statuses {
				line := fmt.Sprintf(`{"client":"c%d","status":%s}`, c, st)
				f.Push(map[string]string{"job": "caddy"}, t0.Add(time.Duration(m)*time.Minute+time.Duration(c)*time.Second+time.Duration(i)*time.Millisecond), line)
				n++
			}
		}
	}
	q := `sum by (client, status) (count_over_time({job="caddy"} | json client="client", status="status" ` + MinuteRange + `))`
	free, _ := newTestClient(t, f.URL(), nil)
	want, err := free.MinuteValues(context.Background(), q, t0, t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	whole := f.BytesProcessed()
	f.SetMaxQuerySeries(8)
	f.ResetStats()
	c, _ := newTestClient(t, f.URL(), nil)
	got, err := c.MinuteValues(context.Background(), q, t0, t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	sameSeriesUnderTheLimit(t, got, want, groups, n)
	passes := float64(f.BytesProcessed()) / float64(whole)
	if bound := float64((groups+7)/8 + 1); passes > bound {
		calls, _ := f.Stats()
		t.Errorf("Loki read the range %.1f times over in %d requests (%v), want at most %.0f", passes, got.Requests, calls, bound)
	}
	if l := strings.Join(c.LimitsLearned(), "\n"); !strings.Contains(l, "split by the values of label client, status that their answers named") {
		t.Errorf("limits learned: %q", l)
	}
}

// valuePlan's parts are exact complements: every combination of values,
// named or not (a value never named, the empty value, a prefix of a named
// value), falls in exactly one part, as Loki's label filters read them
// (checked with Go's regexp on the filters' own expressions), and no part
// holds more than the limit of the named ones; a value with more
// combinations than the limit is cut by the next label.
func TestValuePlanPartsAreExactComplements(t *testing.T) {
	var named [][]string
	for c := range 21 {
		named = append(named, []string{fmt.Sprint("c", c), "200"})
	}
	for s := range 11 {
		named = append(named, []string{"c7", fmt.Sprint(300 + s)})
	}
	named = append(named, []string{"", "200"})
	unnamed := [][]string{{"c99", "200"}, {"c7", "999"}, {"c", ""}, {"", ""}, {"c1", "404"}, {"한국", "200"}, {"c7", ""}}
	const limit = 8
	parts := valuePlan(slices.Clone(named), 2, limit)
	labels := []string{"client", "status"}
	holds := func(g valueGroup, tuple []string) bool {
		for _, f := range strings.Split(g.filter(labels), " | ")[1:] {
			label, value, op := labelFilterOf(t, f)
			v := tuple[slices.Index(labels, label)]
			switch op {
			case "=":
				if v != value {
					return false
				}
			case "=~", "!~":
				if regexp.MustCompile("^(?:"+value+")$").MatchString(v) != (op == "=~") {
					return false
				}
			}
		}
		return true
	}
	var c7Parts int
	for i, g := range parts {
		n := 0
		for _, tuple := range named {
			if holds(g, tuple) {
				n++
			}
		}
		if n > limit {
			t.Errorf("part %d (%s) holds %d named combinations, more than %d", i, g.filter(labels), n, limit)
		}
		if strings.Contains(g.filter(labels), `client=~"c7"`) {
			c7Parts++
		}
	}
	if c7Parts < 2 {
		t.Errorf("client c7 (12 statuses) is in %d parts of its own, want it cut by status: %d parts", c7Parts, len(parts))
	}
	for _, tuple := range append(named, unnamed...) {
		var in []int
		for i, g := range parts {
			if holds(g, tuple) {
				in = append(in, i)
			}
		}
		if len(in) != 1 {
			t.Errorf("%q is in parts %v, want exactly one", tuple, in)
		}
	}
}

// labelFilterOf reads a label filter valueGroup.filter writes: label, op
// and the unquoted value.
func labelFilterOf(t *testing.T, f string) (label, value, op string) {
	t.Helper()
	for _, op := range []string{"!~", "=~", "="} {
		if l, q, ok := strings.Cut(f, op); ok {
			v, err := strconv.Unquote(strings.TrimSpace(q))
			if err != nil {
				t.Fatalf("filter %q: %v", f, err)
			}
			return strings.TrimSpace(l), v, op
		}
	}
	t.Fatalf("filter %q: no operator", f)
	return "", "", ""
}
