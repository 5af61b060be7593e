package livetest

import (
	"testing"
	"time"
)

// CaddyTime reads "ts" where Caddy writes it without parsing the line, and
// parses any other line whole: both give the same time, to the
// microsecond; a line without a ts has none.
func TestCaddyTime(t *testing.T) {
	want := time.UnixMicro(1790848801515884).UTC()
	for _, line := range []string{
		`{"level":"info","ts":1790848801.515884,"logger":"http.log.access.log0","request":{"uri":"/?ts=1"}}`,
		`{"ts":1790848801.515884,"level":"info"}`,
		`{"level":"in\"fo","ts":1790848801.515884}`,
		`{"level":"info","msg":"x","ts":1790848801.515884}`,
		`{"level":"info","ts":1790848801.515884}`,
	} {
		if got, ok := CaddyTime(line); !ok || !got.Equal(want) {
			t.Errorf("%s: %v %v, want %v", line, got, ok, want)
		}
	}
	for _, line := range []string{`{"level":"info","msg":"no time"}`, `not json`, `{"level":"info","ts":"x"}`} {
		if got, ok := CaddyTime(line); ok {
			t.Errorf("%s: %v, want no time", line, got)
		}
	}
}
