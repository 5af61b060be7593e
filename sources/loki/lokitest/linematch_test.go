package lokitest

import (
	"reflect"
	"regexp"
	"testing"
)

// TestLineRegexpIsTheRegexp: what a stage's expression makes of a line is
// what regexp makes of it, whether the tail it keeps results by was seen
// before or not: with the prefix absent, twice in the line with the first
// occurrence not matching, an assertion right after it, lines sharing a
// tail but not a start, and expressions without a literal prefix.
func TestLineRegexpIsTheRegexp(t *testing.T) {
	lines := []string{
		``,
		`{"ts":1,"resp_headers":{"X-Powered-By":["PHP"]}}`,
		`{"ts":2,"resp_headers":{"X-Powered-By":["PHP"]}}`,
		`{"ts":3,"resp_headers":{"Server":["Caddy"]}}`,
		`{"ts":4,"uri":"/?resp_headers","resp_headers":{"Age":["12"]}}`,
		`{"ts":5,"resp_headers":x,"resp_headers":{"Age":["0"]}}`,
		`{"ts":6,"resp_headers":{"Age":["7"]},"resp_headers":{"Via":["1.1"]}}`,
		`{"ts":7}`,
		`resp_headersresp_headers":{"Via":["1"]}`,
		`{"ts":8,"resp_headers":{"Age":["12"]}}`,
		`{"ts":9,"uri":"/?resp_headers","resp_headers":{"Age":["12"]}}`,
	}
	exprs := []string{
		`"resp_headers":\s*\{.*(?P<php>")(?:X-Powered-By|Via)"`,
		`"resp_headers":\s*\{.*(?P<hit>")(?:Age"\s*:\s*\["0*[1-9][0-9]*")`,
		`resp_headers\b(?P<b>"):`,
		`resp_headers(?P<c>.)(?P<none>x)?`,
		`^resp_headers(?P<start>)`,
		`(?P<any>.*)`,
		`(?i)(?P<fold>RESP_headers")`,
		`\b(?P<word>Via)`,
		`"ts":(?P<ts>[0-9])}$`,
	}
	for _, expr := range exprs {
		re := regexp.MustCompile(expr)
		l := newLineRegexp(re)
		for pass := range 2 {
			for _, line := range lines {
				if got, want := l.FindStringSubmatch(line), re.FindStringSubmatch(line); !reflect.DeepEqual(got, want) {
					t.Errorf("pass %d, %s on %s: sub-matches %q, regexp's %q", pass, expr, line, got, want)
				}
				if got, want := l.MatchString(line), re.MatchString(line); got != want {
					t.Errorf("pass %d, %s on %s: match %v, regexp's %v", pass, expr, line, got, want)
				}
			}
		}
	}
}
