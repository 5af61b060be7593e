package replay

import (
	"strings"
	"testing"
)

const twoZones = `rate_limit {
	zone tools_chrome_zh_cn {
		match {
			path /w/Special:WhatLinksHere /w/Special:WhatLinksHere/*
			not header Cookie *wikiUserID=*
		}
		key tools_chrome_zh_cn
		window 5m
		events 10
	}
	zone heavy_client {
		match {
			path "/window 5m"
		}
		key {client_ip}
		window 1h
		events 600
	}
	log_key
}
`

func TestScaleRule(t *testing.T) {
	got, err := ScaleRule(twoZones, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\t\twindow 30s\n", "\t\twindow 6m\n", "events 10\n", "events 600\n", `path "/window 5m"`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Count(got, "window ") != 3 { // two windows and the path that only looks like one
		t.Errorf("%s", got)
	}
	if g, err := ScaleRule(twoZones, 7); err != nil || !strings.Contains(g, "window 42.857s") {
		t.Errorf("5m / 7: %v\n%s", err, g)
	}
	if _, err := ScaleRule("rate_limit {\n\tlog_key\n}\n", 10); err == nil {
		t.Errorf("a block without zones has nothing to scale")
	}
	if _, err := ScaleRule(twoZones, 1e12); err == nil {
		t.Errorf("a window under a millisecond must be refused")
	}
}
