package report

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/scan"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaURL is the schema's $id: the compiler is given the document under it,
// so nothing is ever fetched.
const schemaURL = "https://github.com/aftermath-forensics/aftermath/report/schema/report.v1.schema.json"

// validate checks data against report/schema/report.v1.schema.json, with
// formats (date-time) asserted.
func validate(t *testing.T, data []byte) {
	t.Helper()
	if err := schemaErr(t, data); err != nil {
		t.Errorf("report.json does not match its schema: %v", err)
	}
}

func TestReportJSONMatchesSchema(t *testing.T) {
	tests := map[string]func(testing.TB) *Report{
		"reference": referenceReport,
		"hostile":   injectionReport,
		"quiet":     quietReport,
		"empty": func(testing.TB) *Report {
			return &Report{Window: Window{From: at("02:00"), To: at("03:00"), TZ: "UTC"}}
		},
		"incomplete coverage": func(tb testing.TB) *Report {
			r := quietReport(tb)
			first, last := r.Window.From, r.Window.From.Add(20*time.Minute)
			r.Coverage = []sources.Coverage{
				{Source: "access", State: sources.CoverageIncomplete, First: &first, Last: &last, Truncated: []string{"access.log.gz (truncated gzip)"},
					Uncovered: []sources.Stretch{{From: last, To: r.Window.To, Kind: sources.StretchTail}}, Resolution: 60},
				{Source: "cpu", State: sources.CoverageNotGiven, Uncovered: []sources.Stretch{}},
			}
			return r
		},
	}
	for name, build := range tests {
		t.Run(name, func(t *testing.T) {
			data, err := Render(build(t), FormatJSON, LangEN)
			if err != nil {
				t.Fatal(err)
			}
			validate(t, data)
		})
	}
}

// The schema must reject what the contract forbids, or it checks nothing.
func TestSchemaRejects(t *testing.T) {
	good, err := Render(referenceReport(t), FormatJSON, LangEN)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]func(m map[string]any){
		"wrong schema id":  func(m map[string]any) { m["schema"] = "aftermath.report/v2" },
		"missing timeline": func(m map[string]any) { delete(m, "timeline") },
		"moment without link": func(m map[string]any) {
			m["timeline"].([]any)[0].(map[string]any)["finding"] = ""
		},
		"unknown kind":       func(m map[string]any) { m["findings"].([]any)[0].(map[string]any)["kind"] = "gremlins" },
		"time not RFC 3339":  func(m map[string]any) { m["window"].(map[string]any)["from"] = "yesterday" },
		"negative count":     func(m map[string]any) { m["impact"].(map[string]any)["requests"] = -1 },
		"symptom as a cause": func(m map[string]any) { m["causes"].([]any)[0].(map[string]any)["role"] = "culprit" },
		"missing coverage":   func(m map[string]any) { delete(m, "coverage") },
		"coverage state unknown": func(m map[string]any) {
			m["coverage"] = []any{map[string]any{"source": "access", "state": "mostly", "uncovered": []any{}}}
		},
	}
	for name, edit := range tests {
		t.Run(name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(good, &m); err != nil {
				t.Fatal(err)
			}
			edit(m)
			data, _ := json.Marshal(m)
			if schemaErr(t, data) == nil {
				t.Errorf("the schema accepted a report with %s", name)
			}
		})
	}
}

// schemaErr validates data and returns the validation error, if any.
func schemaErr(t *testing.T, data []byte) error {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
	if err != nil {
		t.Fatalf("schema: %v", err)
	}
	registeredKinds(doc)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(schemaURL, doc); err != nil {
		t.Fatalf("schema: %v", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		t.Fatalf("schema: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("report.json: %v", err)
	}
	return sch.Validate(inst)
}

// registeredKinds sets the schema's kind enum to the registry's kinds, so a
// report carrying a kind registered by a test validates as a real one would
// (TestSchemaKindsAreTheRegistry keeps the published file equal to them).
func registeredKinds(doc any) {
	kind := doc.(map[string]any)["$defs"].(map[string]any)["kind"].(map[string]any)
	var enum []any
	for _, k := range detect.Kinds() {
		enum = append(enum, string(k))
	}
	kind["enum"] = enum
}

// builtinKinds are the registry's kinds without those this package's tests
// register: what the published schemas list.
func builtinKinds() []detect.Kind {
	var out []detect.Kind
	for _, k := range detect.Kinds() {
		if k != teapotKind {
			out = append(out, k)
		}
	}
	return out
}

// The published schemas list exactly the registered kinds (scan.json also its
// own concerns); -update rewrites their lists from the registry.
func TestSchemaKindsAreTheRegistry(t *testing.T) {
	for _, tc := range []struct {
		file  string
		extra []detect.Kind
	}{
		{"schema/report.v1.schema.json", nil},
		{"schema/scan.v1.schema.json", scan.Concerns()},
	} {
		raw, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		want := append(builtinKinds(), tc.extra...)
		loc := kindEnum.FindSubmatchIndex(raw)
		if loc == nil {
			t.Fatalf("%s: no kind enum", tc.file)
		}
		var got []detect.Kind
		if err := json.Unmarshal(raw[loc[2]-1:loc[3]+1], &got); err != nil {
			t.Fatalf("%s: kind enum: %v", tc.file, err)
		}
		if slices.Equal(got, want) {
			continue
		}
		if !*update {
			t.Errorf("%s lists kinds %q, the registry %q (run go test ./report -run %s -update)", tc.file, got, want, t.Name())
			continue
		}
		quoted, _ := json.Marshal(want)
		fixed := append(append(append([]byte{}, raw[:loc[2]-1]...), bytes.ReplaceAll(quoted, []byte(`","`), []byte(`", "`))...), raw[loc[3]+1:]...)
		if err := os.WriteFile(tc.file, fixed, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// kindEnum finds the finding-kind enum in a schema file: `"kind": {` ending its
// line, then `"enum": [...]`. Other enums named kind (a coverage gap's head,
// gap or tail) are written on one line, so they do not match.
var kindEnum = regexp.MustCompile(`"kind": \{\n\s*"enum": \[([^\]]*)\]`)
