package live

import (
	"sort"

	"go.yaml.in/yaml/v3"
)

// otherSourceKeys are keys one source's section does not have but the other
// source's has, with what the section calls it: Loki's address is addr and
// Prometheus' is url, and a key copied from one section to the other would
// otherwise be an unknown key ignored, leaving "url: required" as the only
// hint. Settings both sections share (credentials, TLS, proxy, headers) are
// the http: block's, the same in both.
var otherSourceKeys = map[string]map[string]string{
	"prometheus": {
		"addr":      "url",
		"address":   "url",
		"org_id":    "headers: {X-Scope-OrgID: ...}",
		"cert_file": "http: {tls_config: {cert_file: ...}}",
		"key_file":  "http: {tls_config: {key_file: ...}}",
		"selector":  "selectors (a list of series selectors)",
	},
	"loki": {
		"url":       "addr",
		"address":   "addr",
		"headers":   "org_id (X-Scope-OrgID), or http: {http_headers: ...}",
		"selectors": "selector (one LogQL stream selector)",
	},
}

// refuseOtherSourceKeys refuses, with "did you mean", a key of the other
// source written in a source's section (prometheus: addr: -> url).
func refuseOtherSourceKeys(file string, doc *yaml.Node) error {
	if doc.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		section, body := doc.Content[i].Value, doc.Content[i+1]
		keys := otherSourceKeys[section]
		if keys == nil || body.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(body.Content); j += 2 {
			k := body.Content[j]
			if meant, ok := keys[k.Value]; ok {
				return &Error{File: file, Line: k.Line, Key: section + "." + k.Value,
					Msg: "not a key of " + section + " (" + otherSection(section) + " has it): did you mean " + meant + "?"}
			}
		}
	}
	return nil
}

func otherSection(section string) string {
	names := make([]string, 0, len(otherSourceKeys))
	for s := range otherSourceKeys {
		if s != section {
			names = append(names, s)
		}
	}
	sort.Strings(names)
	return names[0]
}
