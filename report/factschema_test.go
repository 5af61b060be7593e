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
)

// factsDef is where report.v1.schema.json states each kind's facts: one
// if-kind-then-facts rule per registered kind, generated from the kinds' facts
// structs (go test ./report -run TestSchemaFactsAreTheTypes -update).
const factsDef = `"finding_facts": `

// factsSchemaText renders $defs.finding_facts from the registry, indented as
// the schema file is: for every built-in kind, its facts object may carry
// exactly the names its facts struct declares (detect.FactNames).
func factsSchemaText() string {
	var b strings.Builder
	b.WriteString("{\n")
	b.WriteString(`      "description": "the facts each finding kind states: exactly the names of its facts struct, generated from the types",` + "\n")
	b.WriteString(`      "allOf": [` + "\n")
	kinds := builtinKinds()
	for i, kind := range kinds {
		spec, _ := detect.SpecOf(kind)
		names, prefixes := detect.FactNames(spec.NewFacts())
		slices.Sort(names)
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
		if i < len(kinds)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("      ]\n    }")
	return b.String()
}

// The schema's facts of every registered kind are the names its facts struct
// declares: a field added, renamed or dropped in a struct without the schema
// following (or a name in the schema no struct has) fails here.
func TestSchemaFactsAreTheTypes(t *testing.T) {
	const file = "schema/report.v1.schema.json"
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(raw, []byte(factsDef))
	if start < 0 {
		t.Fatalf("%s: no $defs.finding_facts", file)
	}
	start += len(factsDef)
	dec := json.NewDecoder(bytes.NewReader(raw[start:]))
	var got any
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%s: finding_facts: %v", file, err)
	}
	end := start + int(dec.InputOffset())
	text := factsSchemaText()
	var want any
	if err := json.Unmarshal([]byte(text), &want); err != nil {
		t.Fatalf("generated finding_facts: %v", err)
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
	for _, kind := range builtinKinds() {
		g, w := gotNames[string(kind)], wantNames[string(kind)]
		for _, n := range w {
			if !slices.Contains(g, n) {
				t.Errorf("%s: the facts of %s lack %q, a name of its facts struct", file, kind, n)
			}
		}
		for _, n := range g {
			if !slices.Contains(w, n) {
				t.Errorf("%s: the facts of %s list %q, which its facts struct does not declare", file, kind, n)
			}
		}
	}
	t.Errorf("%s: finding_facts differs from the facts structs (run go test ./report -run %s -update)", file, t.Name())
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
