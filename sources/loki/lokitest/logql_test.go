package lokitest

import (
	"reflect"
	"testing"
)

// TestPipelineStages: the fake's | json expressions, | label_format and
// | drop behave as Loki documents them: a path of fields and indexes, an
// object or array kept as JSON text, "" for a path that leads nowhere;
// templates with Loki's functions (contains takes the substring first),
// dst=src renames; drop removes labels, __error__ included.
func TestPipelineStages(t *testing.T) {
	line := `{"status":503,"duration":30.25,"request":{"headers":{"User-Agent":["Mozilla/5.0 Chrome/121.0.0.0 Safari/537.36"],"Accept-Language":[" zh-CN,zh;q=0.9"]}}}`
	stream := map[string]string{"job": "caddy"}
	tests := []struct {
		query string
		want  map[string]string // nil: the line is filtered out
	}{
		{"{job=\"caddy\"} | json ua=`request.headers[\"User-Agent\"][0]`, st=\"status\", langs=`request.headers[\"Accept-Language\"]`, none=`request.headers[\"Cookie\"][0]`",
			map[string]string{"job": "caddy", "ua": "Mozilla/5.0 Chrome/121.0.0.0 Safari/537.36", "st": "503", "langs": `[" zh-CN,zh;q=0.9"]`, "none": ""}},
		{"{job=\"caddy\"} | json ua=`request.headers[\"User-Agent\"][0]`, lang=`request.headers[\"Accept-Language\"][0]` | label_format fam=`{{ if contains \"Chrome/\" .ua }}chrome{{ else }}other{{ end }}/{{ .lang | trim | trunc 2 | lower }}` | drop ua, lang",
			map[string]string{"job": "caddy", "fam": "chrome/zh"}},
		// The argument order matters: "does Chrome/ contain the agent" is false.
		{"{job=\"caddy\"} | json ua=`request.headers[\"User-Agent\"][0]` | label_format fam=`{{ if contains .ua \"Chrome/\" }}chrome{{ else }}other{{ end }}` | drop ua",
			map[string]string{"job": "caddy", "fam": "other"}},
		{"{job=\"caddy\"} | json st=\"status\" | label_format code=st", map[string]string{"job": "caddy", "code": "503"}},
		{"{job=\"caddy\"} | json ua=`request.headers[\"User-Agent\"][0]` | label_format fam=`{{ if contains \"Chrome/\" .ua }}chrome{{ end }}` | fam=\"chrome\" or fam=\"firefox\" | drop ua",
			map[string]string{"job": "caddy", "fam": "chrome"}},
		{"{job=\"caddy\"} | json ua=`request.headers[\"User-Agent\"][0]` | label_format fam=`{{ if contains \"Chrome/\" .ua }}chrome{{ end }}` | fam!=\"chrome\"", nil},
		// Loki's float functions (float64, subf, maxf, minf, ceil) make a
		// label of a comparison Loki's templates have no operator for: 1
		// when the duration is above a bound, else 0 (at it, or not a
		// number: float64 reads that as 0).
		{"{job=\"caddy\"} | json d=\"duration\" | label_format late=`{{ ceil (minf 1 (maxf 0 (subf (float64 .d) 30))) }}` | drop d",
			map[string]string{"job": "caddy", "late": "1"}},
		{"{job=\"caddy\"} | json d=\"duration\" | label_format late=`{{ ceil (minf 1 (maxf 0 (subf (float64 .d) 30.25))) }}` | drop d",
			map[string]string{"job": "caddy", "late": "0"}},
		{"{job=\"caddy\"} | json d=\"status_text\" | label_format late=`{{ ceil (minf 1 (maxf 0 (subf (float64 .d) 30))) }}` | drop d",
			map[string]string{"job": "caddy", "late": "0"}},
		// | regexp: each named sub-match of the leftmost match is a label, a
		// stream label's name gets "_extracted"; a line that does not match
		// is kept, its labels unchanged, and a label filter then sees "".
		{"{job=\"caddy\"} | regexp `\"status\":(?P<code>[0-9])(?P<job>[0-9]+)`", map[string]string{"job": "caddy", "code": "5", "job_extracted": "03"}},
		{"{job=\"caddy\"} | regexp `\"nothing\":(?P<code>[0-9]+)` | code=\"\"", map[string]string{"job": "caddy"}},
	}
	for _, tt := range tests {
		q, err := ParseQuery(tt.query)
		if err != nil {
			t.Fatalf("%s: %v", tt.query, err)
		}
		got, _, ok := q.apply(stream, line)
		if !ok {
			got = nil
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %v\nwant %v", tt.query, got, tt.want)
		}
	}
	// Loki refuses a regexp without a named sub-match.
	if _, err := ParseQuery("{job=\"caddy\"} | regexp `[0-9]+`"); err == nil {
		t.Error("| regexp without a named sub-match was accepted")
	}
	// A template calling a function Loki does not have is refused, as Loki
	// refuses it (text/template: function "gtf" not defined).
	if _, err := ParseQuery("{job=\"caddy\"} | label_format late=`{{ gtf 1 .d }}`"); err == nil {
		t.Error("a template with an unknown function was accepted")
	}
	// A line that is not JSON keeps its stream, with __error__ until dropped.
	q, err := ParseQuery("{job=\"caddy\"} | json ua=`request.headers[\"User-Agent\"][0]` | drop ua, __error__")
	if err != nil {
		t.Fatal(err)
	}
	if got, _, ok := q.apply(stream, "not json"); !ok || !reflect.DeepEqual(got, stream) {
		t.Errorf("not JSON, dropped: %v %v", got, ok)
	}
}
