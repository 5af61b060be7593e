package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/live"
)

// fetch's summary counts every access-log file pulled from Loki: the
// minutes pulled whole, the client families pulled across the range and the
// second passes, not the main file alone (before: 22,833 printed of 177,590
// pulled on the simulated day).
func TestFetchSummaryCountsEveryPulledAccessFile(t *testing.T) {
	from := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	m := &bundle.Manifest{Window: bundle.Window{From: from, To: from.Add(24 * time.Hour)}, Queries: []bundle.Query{
		{Source: "loki", File: live.AccessFile, Lines: 22833, Bytes: 1 << 20, Complete: true},
		{Source: "loki", File: live.FamiliesFile, Lines: 150000, Bytes: 5 << 20, Complete: true},
		{Source: "loki", File: "access/loki-pass1.log.gz", Lines: 4757, Bytes: 1 << 18, Complete: true},
		{Source: "loki", File: live.MinuteCountsFile, Complete: true},
	}}
	var out bytes.Buffer
	printFetchSummary(&out, "b", m)
	if !strings.Contains(out.String(), ": 177,590 access-log lines") {
		t.Errorf("summary %q: want the 177,590 lines of the three access files", out.String())
	}
}
