package accesslog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestDurationFormatGiven: a duration format given (the --duration-format
// flag) overrides the detection, and the notes say which was used. The
// first case is one where the detection is wrong: an outage whose every
// answer took over a second, logged with duration_format ms, has no value
// under 1,000 and reads as nanoseconds (1.5 s would become 1.5 µs).
func TestDurationFormatGiven(t *testing.T) {
	// durations in milliseconds as Caddy writes them with duration_format ms
	slowMS := []int64{1500, 2942, 10001, 3100, 1200, 5000, 2500, 1800, 9000, 4100, 1100, 2200}
	lines := func(dur func(ms int64) any) string {
		var b strings.Builder
		for i, ms := range slowMS {
			b.WriteString(caddyLine(t, func(m map[string]any) {
				m["ts"] = json.Number(fmt.Sprintf("1795966450.%06d", i*1000))
				m["duration"] = dur(ms)
				req(m)["remote_port"] = fmt.Sprint(40000 + i)
			}))
			b.WriteByte('\n')
		}
		return b.String()
	}
	asInt := func(ms int64) any { return json.Number(fmt.Sprint(ms)) }
	asSeconds := func(ms int64) any { return json.Number(fmt.Sprintf("%.3f", float64(ms)/1000)) }
	asString := func(ms int64) any { return fmt.Sprintf("%dms", ms) }
	tests := []struct {
		name, format string
		text         string
		scale        float64 // a request's duration in seconds is ms * scale
		unusable     string  // the read fails saying this
		note         string  // a note must say this
	}{
		{name: "ms given: right where detection is wrong", format: "ms", text: lines(asInt), scale: 1e-3,
			note: "whole-number durations read as milliseconds, the duration format given (ms), not detected"},
		{name: "detected: every value over 1,000 reads as ns", format: "", text: lines(asInt), scale: 1e-6 / 1e3,
			note: "read as nanoseconds, Caddy's duration_format ns, because none is under 1,000"},
		{name: "auto is the detection", format: "auto", text: lines(asInt), scale: 1e-6 / 1e3,
			note: "read as nanoseconds"},
		{name: "s given: fractions are seconds", format: "s", text: lines(asSeconds), scale: 1e-3},
		{name: "ns given", format: "ns", text: lines(asInt), scale: 1e-9,
			note: "whole-number durations read as nanoseconds, the duration format given (ns)"},
		{name: "string given, strings in the log", format: "string", text: lines(asString), scale: 1e-3,
			note: "durations are Go duration strings"},
		{name: "string given, numbers in the log", format: "string", text: lines(asInt),
			unusable: "durations are numbers, though the duration format given is string",
			note:     "12 durations are numbers though the duration format given is string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := readString(tt.text, Options{DurationFormat: tt.format})
			if tt.unusable != "" {
				var ue *UnusableError
				if !errors.As(res.err, &ue) || !strings.Contains(res.err.Error(), tt.unusable) {
					t.Fatalf("err %v, want an UnusableError saying %q", res.err, tt.unusable)
				}
			} else {
				if res.err != nil || len(res.reqs) != len(slowMS) {
					t.Fatalf("err %v, %d requests", res.err, len(res.reqs))
				}
				for i, r := range res.reqs {
					// The ms values scaled as the format says (ns: ms
					// values read as ns are ms*1e-9 s).
					want := float64(slowMS[i]) * tt.scale
					if tt.format == "" || tt.format == "auto" {
						want = float64(slowMS[i]) * 1e-9
					}
					if math.Abs(r.Duration-want) > 1e-12 {
						t.Errorf("request %d: duration %v s, want %v", i+1, r.Duration, want)
					}
				}
			}
			found := false
			for _, n := range res.stats.Notes {
				found = found || strings.Contains(n.Message, tt.note)
			}
			if tt.note != "" && !found {
				t.Errorf("no note says %q: %v", tt.note, res.stats.Notes)
			}
		})
	}
	if err := CheckDurationFormat("seconds"); err != nil {
		t.Errorf("Caddy's spelling seconds refused: %v", err)
	}
	if err := CheckDurationFormat("minutes"); err == nil || !strings.Contains(err.Error(), "want s, ms, ns or string") {
		t.Errorf("minutes accepted: %v", err)
	}
}
