package rules

import (
	"strings"
	"testing"
)

const goodSnippet = `rate_limit {
	zone page_tools {
		match {
			path /w/Special:WhatLinksHere /w/Special:WhatLinksHere/*
			not header Cookie *wikiUserID=*
		}
		match {
			query action=edit action=watch
			not header Cookie *wikiUserID=*
		}
		key page_tools
		window 10m
		events 150
	}
	zone per_client {
		key {remote_host}
		window 1m
		events 60
	}
	log_key
	jitter 0.2
}
`

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name, snippet, err string
	}{
		{"the reference page_tools zone and a per-client one", goodSnippet, ""},
		{"README example with distributed and sweep_interval", `rate_limit {
	distributed
	zone static_example {
		match {
			method GET
		}
		key    static
		events 100
		window 1m
	}
	sweep_interval 30s
}`, ""},
		{"not as a block", `rate_limit {
	zone z {
		match {
			path /x
			not {
				header Cookie *a=*
				header Authorization *
			}
		}
		key z
		window 1m
		events 5
	}
}`, ""},
		{"ipv4_prefix is silently ignored by v0.1.0", strings.Replace(goodSnippet, "events 150", "events 150\n\t\tipv4_prefix 24", 1),
			`subdirective "ipv4_prefix" is not known`},
		{"an unknown handler option", strings.Replace(goodSnippet, "log_key", "log_key\n\tipv6_prefix 64", 1),
			`subdirective "ipv6_prefix" is not known`},
		{"a typo in a zone", strings.Replace(goodSnippet, "window 1m", "windw 1m", 1), `"windw" is not known`},
		{"an unknown matcher", strings.Replace(goodSnippet, "path /w/", "pathh /w/", 1), "Caddy rejected"},
		{"an empty match block (it would match everything)", strings.Replace(goodSnippet, "key {remote_host}", "match {\n}\n\t\tkey {remote_host}", 1), "empty match block"},
		{"a zone without events", strings.Replace(goodSnippet, "events 60\n", "", 1), "Caddy rejected"},
		{"a zone defined twice", strings.Replace(goodSnippet, "zone per_client", "zone page_tools", 1), "defined twice"},
		{"a directive after the block", goodSnippet + "respond \"pwned\"\n", `"respond" after the rate_limit block`},
		{"a second site", goodSnippet + "http://evil.example {\n\trespond pwned\n}\n", "after the rate_limit block"},
		{"a brace that closes the site", strings.Replace(goodSnippet, "log_key", "}\n}\nhttp://evil.example {\nrespond x", 1), "after the rate_limit block"},
		{"an import", strings.Replace(goodSnippet, "log_key", "import /etc/passwd", 1), `"import" is not known`},
		{"another directive", "respond \"x\"\n", "must be one rate_limit block"},
		{"an argument to rate_limit", "rate_limit foo {\n}\n", "takes no argument"},
		{"a control character", strings.Replace(goodSnippet, "page_tools {", "page_tools\x1b[2J {", 1), "control character"},
		{"invalid UTF-8", strings.Replace(goodSnippet, "page_tools {", "page\xfftools {", 1), "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.snippet)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.err != "" && err == nil:
				t.Fatalf("Validate accepted:\n%s", tc.snippet)
			case tc.err != "" && !strings.Contains(err.Error(), tc.err):
				t.Fatalf("Validate: %v; want an error containing %q", err, tc.err)
			}
		})
	}
}

// TestSurvivesCatchesDroppedSubdirectives checks the JSON side of the check on
// its own: a snippet shape that promises more than the adapted handler holds.
func TestSurvivesCatchesDroppedSubdirectives(t *testing.T) {
	js, err := adapt(goodSnippet)
	if err != nil {
		t.Fatal(err)
	}
	h, err := rateLimitHandler(js)
	if err != nil {
		t.Fatal(err)
	}
	shape, err := readSnippet(goodSnippet)
	if err != nil {
		t.Fatal(err)
	}
	if err := shape.survives(h); err != nil {
		t.Fatal(err)
	}
	shape.zones["page_tools"].match[0] = append(shape.zones["page_tools"].match[0], "header_regexp")
	shape.zones["ghost"] = &zoneShape{}
	shape.sweep = true
	err = shape.survives(h)
	if err == nil {
		t.Fatal("survives accepted a shape the config does not hold")
	}
	for _, lost := range []string{"zone ghost", "header_regexp", "sweep_interval"} {
		if !strings.Contains(err.Error(), lost) {
			t.Errorf("%v does not name %s", err, lost)
		}
	}
}
