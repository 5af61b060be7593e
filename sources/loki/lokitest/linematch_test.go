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
// tail but not a start, expressions without a literal prefix, and
// expressions of texts only (each in any case or as written), on lines in
// ASCII and not (the Kelvin sign is a k in any case).
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
		`{"headers":{"User-Agent":["Mozilla/5.0 Chrome/121.0"],"Accept-Language":["ZH-cn,zh;q=0.9"]}}`,
		`{"headers":{"User-Agent":["Mozilla/5.0 CHROMIUM"],"Accept-Language":["kO-KR"]}}`,
		`{"headers":{"User-Agent":["Mozilla/5.0 Firefox/128.0"],"Accept-Language":["en"]}}`,
		"{\"headers\":{\"User-Agent\":[\"o\u212a browser\"],\"Accept-Language\":[\"\u00e9\"]}}",
		`zh`,
		`Z`,
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
		`(?i:chrome)`,
		`(?i:zh)`,
		`(?i:zh)|(?i:ko)|(?i:en-us)`,
		`(?i:firefox)|Chrome`,
		`Chrome|CHROMIUM`,
		`(?i:ok)`,
		`(?i:ko)|(?P<lang>en)`,
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
