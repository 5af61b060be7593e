package report

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
)

// Every time in report.json is UTC, whatever offset its source wrote: a
// changes.yaml in +09:00 gives changes, the findings' copies of them and the
// timeline moments taken from them, which were written with +09:00 among the
// Z of everything else. The times still name the same instants, and the
// schema's date-time format still holds.
func TestReportJSONTimesAreUTC(t *testing.T) {
	r := referenceReport(t)
	for i := range r.Changes {
		r.Changes[i].Time = r.Changes[i].Time.In(kst)
	}
	for i := range r.Findings {
		if c := r.Findings[i].Change; c != nil {
			local := *c
			local.Time = c.Time.In(kst)
			r.Findings[i].Change = &local
		}
	}
	if len(r.Changes) == 0 && detect.First(r.Findings, "config_change") == nil {
		t.Fatal("the fixture has no change: the test could not fail")
	}
	if err := r.Assemble(); err != nil {
		t.Fatal(err)
	}
	local := 0
	for _, m := range r.Timeline {
		if m.Time.Location() != time.UTC {
			local++
		}
	}
	if local == 0 {
		t.Fatal("no timeline moment kept the change's offset before writing: the test could not fail")
	}
	data, err := Render(r, FormatJSON, LangEN)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, data)
	stamp := regexp.MustCompile(`"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(Z|[+-][0-9]{2}:[0-9]{2}))"`)
	all := stamp.FindAllSubmatch(data, -1)
	if len(all) < 10 {
		t.Fatalf("%d times in report.json, want the reference's many", len(all))
	}
	for _, m := range all {
		if string(m[2]) != "Z" {
			t.Errorf("time %s is not UTC", m[1])
		}
	}
	// The change's instant is kept: 23:48 KST on 2 October is 14:48 UTC.
	var got struct {
		Changes []struct {
			Time string `json:"time"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range got.Changes {
		found = found || c.Time == "2026-10-02T14:48:00Z"
	}
	if !found {
		t.Errorf("changes %v: want the 23:48 KST change at 2026-10-02T14:48:00Z", got.Changes)
	}
}
