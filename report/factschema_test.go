package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/scan"
)

// factsSchema is a schema whose $defs state each kind's facts: one
// if-kind-then-facts rule per kind, generated from the facts structs (go test
// ./report -run TestSchemaFactsAreTheTypes -update).
type factsSchema struct {
	file string
	// def opens the generated $defs entry.
	def         string
	description string
	kinds       []detect.Kind
	// names are the fact names (and numbered prefixes) of a kind.
	names func(detect.Kind) (names, numberedPrefixes []string)
}

// factsSchemas are report.json's finding facts (each kind's facts struct,
// detect.FactNames) and scan.json's anomaly facts (a concern's struct and
// those of the findings that join it, scan.FactNames).
func factsSchemas() []factsSchema {
	return []factsSchema{
		{file: "schema/report.v1.schema.json", def: `"finding_facts": `,
			description: "the facts each finding kind states: exactly the names of its facts struct, generated from the types",
			kinds:       builtinKinds(),
			names: func(kind detect.Kind) ([]string, []string) {
				spec, _ := detect.SpecOf(kind)
				return detect.FactNames(spec.NewFacts())
			}},
		{file: "schema/scan.v1.schema.json", def: `"anomaly_facts": `,
			description: "the facts each anomaly kind states: the names of its concern's facts struct and of the facts structs of the finding kinds that join it, generated from the types",
			kinds:       append(builtinKinds(), scan.Concerns()...),
			names:       scan.FactNames},
	}
}

// text renders the $defs entry, indented as the schema files are: for every
// kind, its facts object may carry exactly the names fs.names gives.
func (fs factsSchema) text() string {
	var b strings.Builder
	b.WriteString("{\n")
	fmt.Fprintf(&b, "      \"description\": %q,\n", fs.description)
	b.WriteString(`      "allOf": [` + "\n")
	for i, kind := range fs.kinds {
		names, prefixes := fs.names(kind)
		names = slices.Sorted(slices.Values(names))
		fmt.Fprintf(&b, "        {\n          \"if\": {\"properties\": {\"kind\": {\"const\": %q}}, \"required\": [\"kind\"]},\n", kind)
		b.WriteString("          \"then\": {\"properties\": {\"facts\": {\n            \"type\": \"object\",\n            \"additionalProperties\": false,\n")
		if len(prefixes) > 0 {
			b.WriteString("            \"patternProperties\": {")
			for j, p := range prefixes {
				if j > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%q: {\"type\": \"number\"}", "^"+regexp.QuoteMeta(p)+"[0-9]+$")
			}
			b.WriteString("},\n")
		}
		b.WriteString("            \"properties\": {")
		for j, n := range names {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n              %q: {\"type\": \"number\"}", n)
		}
		b.WriteString("\n            }\n          }}}\n        }")
		if i < len(fs.kinds)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("      ]\n    }")
	return b.String()
}

// The schemas' facts of every registered kind are the names its facts
// structs declare: a field added, renamed or dropped in a struct without the
// schema following (or a name in the schema no struct has) fails here.
func TestSchemaFactsAreTheTypes(t *testing.T) {
	for _, fs := range factsSchemas() {
		checkFactsSchema(t, fs)
	}
}

func checkFactsSchema(t *testing.T, fs factsSchema) {
	file := fs.file
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(raw, []byte(fs.def))
	if start < 0 {
		t.Fatalf("%s: no $defs.%s", file, strings.Trim(fs.def, `": `))
	}
	start += len(fs.def)
	dec := json.NewDecoder(bytes.NewReader(raw[start:]))
	var got any
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%s: %s %v", file, fs.def, err)
	}
	end := start + int(dec.InputOffset())
	text := fs.text()
	var want any
	if err := json.Unmarshal([]byte(text), &want); err != nil {
		t.Fatalf("generated %s %v", fs.def, err)
	}
	if reflect.DeepEqual(got, want) {
		return
	}
	if *update {
		fixed := append(append(append([]byte{}, raw[:start]...), text...), raw[end:]...)
		if err := os.WriteFile(file, fixed, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	gotNames, wantNames := schemaFactNames(got), schemaFactNames(want)
	for _, kind := range fs.kinds {
		g, w := gotNames[string(kind)], wantNames[string(kind)]
		for _, n := range w {
			if !slices.Contains(g, n) {
				t.Errorf("%s: the facts of %s lack %q, a name of its facts structs", file, kind, n)
			}
		}
		for _, n := range g {
			if !slices.Contains(w, n) {
				t.Errorf("%s: the facts of %s list %q, which no facts struct of it declares", file, kind, n)
			}
		}
	}
	t.Errorf("%s: %s differs from the facts structs (run go test ./report -run %s -update)", file, fs.def, t.Name())
}

// schemaFactNames reads finding_facts back as kind -> fact names (patterns
// included), for naming what differs.
func schemaFactNames(def any) map[string][]string {
	out := map[string][]string{}
	rules, _ := def.(map[string]any)["allOf"].([]any)
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		kind := dig(rule, "if", "properties", "kind", "const")
		facts, _ := dig(rule, "then", "properties", "facts").(map[string]any)
		k, _ := kind.(string)
		for _, group := range []string{"properties", "patternProperties"} {
			m, _ := facts[group].(map[string]any)
			for n := range m {
				out[k] = append(out[k], n)
			}
		}
	}
	return out
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// The schema refuses a fact a kind does not declare, and a declared fact that
// is not a number: the per-kind facts are enforced, not only listed.
func TestSchemaRejectsUndeclaredFacts(t *testing.T) {
	good, err := Render(referenceReport(t), FormatJSON, LangEN)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(facts map[string]any){
		"a name the kind does not declare": func(facts map[string]any) { facts["requestz"] = 1 },
		"a fact that is not a number":      func(facts map[string]any) { facts[firstKey(facts)] = "many" },
	} {
		t.Run(name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(good, &m); err != nil {
				t.Fatal(err)
			}
			f := m["findings"].([]any)[0].(map[string]any)
			facts := f["facts"].(map[string]any)
			if len(facts) == 0 {
				t.Fatalf("finding %v states no facts to edit", f["id"])
			}
			edit(facts)
			data, _ := json.Marshal(m)
			if schemaErr(t, data) == nil {
				t.Errorf("the schema accepted %s facts with %s", f["kind"], name)
			}
		})
	}
}

func firstKey(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys[0]
}
