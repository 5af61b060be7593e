package loki

import (
	"fmt"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

func TestSplitQuery(t *testing.T) {
	tests := []struct {
		q, sel, pipe string
		err          bool
	}{
		{`{job="caddy"}`, `{job="caddy"}`, ``, false},
		{` {job="caddy"} | json |= "x"`, `{job="caddy"}`, ` | json |= "x"`, false},
		{`{path="/a}b", x=~"\"}"} != "}"`, `{path="/a}b", x=~"\"}"}`, ` != "}"`, false},
		{"{q=`}`} |= `a`", "{q=`}`}", " |= `a`", false},
		{`count_over_time({job="caddy"}[1m])`, "", "", true},
		{`{job="caddy"`, "", "", true},
	}
	for _, tt := range tests {
		sel, pipe, err := splitQuery(tt.q)
		if (err != nil) != tt.err || sel != tt.sel || pipe != tt.pipe {
			t.Errorf("splitQuery(%q) = %q, %q, %v", tt.q, sel, pipe, err)
		}
	}
}

func TestExactSelectorMatchesOneStream(t *testing.T) {
	streams := []map[string]string{
		{"job": "caddy"},
		{"job": "caddy", "host": "a"},
		{"job": "caddy", "host": "a", "zone": "z1"},
		{"job": "caddy", "host": `we"ird}`},
	}
	names := labelNames(streams)
	for i, s := range streams {
		sel := exactSelector(`job="caddy"`, s, names)
		expr, err := lokitest.ParseQuery(sel)
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		for j, other := range streams {
			if expr.Matches(other) != (i == j) {
				t.Errorf("%s matches %v: %v", sel, other, expr.Matches(other))
			}
		}
	}
}

func TestSplitSpans(t *testing.T) {
	from := time.Date(2026, 10, 3, 10, 17, 0, 0, time.UTC)
	got := split([]span{{from, from.Add(2*time.Hour + 5*time.Minute)}}, time.Hour)
	want := "[10:17-11:00 11:00-12:00 12:00-12:22]"
	var s []string
	for _, sp := range got {
		s = append(s, sp.from.Format("15:04")+"-"+sp.to.Format("15:04"))
	}
	if fmt.Sprint(s) != want {
		t.Errorf("split = %v, want %s", s, want)
	}
}

func TestMergeMinutes(t *testing.T) {
	m := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	got := mergeMinutes([]time.Time{m(7), m(1), m(2).Add(59 * time.Second), m(3), m(1), m(9)})
	want := "[10:01-10:04 10:07-10:08 10:09-10:10]"
	var s []string
	for _, sp := range got {
		s = append(s, sp.from.Format("15:04")+"-"+sp.to.Format("15:04"))
	}
	if fmt.Sprint(s) != want {
		t.Errorf("mergeMinutes = %v, want %s", s, want)
	}
}

func TestFormatRangeAndCountQuery(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{time.Hour, "1h"}, {90 * time.Minute, "90m"}, {61 * time.Second, "61s"}, {1500 * time.Millisecond, "1500ms"},
		{time.Millisecond + time.Nanosecond, "error"}, {0, "error"},
	}
	for _, tt := range tests {
		got, err := formatRange(tt.d)
		if err != nil {
			got = "error"
		}
		if got != tt.want {
			t.Errorf("formatRange(%v) = %s, want %s", tt.d, got, tt.want)
		}
	}
	q, _ := countQuery(`{job="caddy"} |= "GET"`, []string{"host", "job"}, time.Hour)
	if q != `sum by (host, job) (count_over_time({job="caddy"} |= "GET" [1h]))` {
		t.Errorf("countQuery = %s", q)
	}
	if _, err := lokitest.ParseQuery(q); err != nil {
		t.Errorf("count query does not parse: %v", err)
	}
}

func TestErrorText(t *testing.T) {
	tests := map[string]string{
		"parse error at line 1, col 5: syntax error\n":                            "parse error at line 1, col 5: syntax error",
		`{"status":"error","errorType":"bad_data","error":"bad query"}`:           "bad query",
		`{"code":429,"status":"error","message":"too many outstanding requests"}`: "too many outstanding requests",
	}
	for body, want := range tests {
		if got := errorText([]byte(body)); got != want {
			t.Errorf("errorText(%q) = %q, want %q", body, got, want)
		}
	}
}
