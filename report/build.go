package report

import (
	"context"
	"sort"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

// Build assembles the report from loaded evidence (l: what was read and what
// it cost) and the detectors' result (res: their findings and detect's
// Summary of the window, whose numbers the evidence section states): the
// evidence summary, then (Assemble) impact, timeline and causes. Rules and
// Recommendations are left for the caller to set. tz names the zone local
// times are shown in. The texts (timeline, causes, caveats) are said in
// English, which report.json keeps, and in langs, the languages the report
// will be rendered in; none given, in every language (saying the sentences
// of a language the caller never renders was 3% of the allocations of a
// whole analysis). Build computes no number of the evidence and queries
// nothing itself.
func Build(_ context.Context, l *evidence.Loaded, res *detect.Result, tz string, langs ...string) (*Report, error) {
	sum := res.Summary
	said, err := saidIn(langs)
	if err != nil {
		return nil, err
	}
	r := &Report{Schema: Schema, Window: Window{From: sum.From, To: sum.To, TZ: tz}, saidIn: said}
	r.Evidence.AccessFiles = int(l.Access.Files)
	r.Evidence.Lines = l.Access.Lines
	r.Evidence.Requests = l.Access.Requests
	r.Evidence.Bytes = l.Access.Bytes
	r.Evidence.MetricSamples = l.MetricSamples
	r.Evidence.Pushdown = l.Pushdown
	r.DataQuality = append(r.DataQuality, l.DataQuality...)
	r.Coverage = append(r.Coverage, l.Coverage...)
	r.Evidence.SkippedLines = l.SkippedLines
	r.Evidence.MetricFiles = l.MetricFiles
	r.Evidence.fillFrom(sum)
	r.Findings = res.Findings
	r.Checks = res.Checks
	r.incidents = res.Incidents
	r.unread = res.Unread
	r.DataQuality = append(r.DataQuality, res.DataQuality...)
	r.Changes = append([]sources.Change(nil), l.Changes...)
	sort.SliceStable(r.Changes, func(i, j int) bool { return r.Changes[i].Time.Before(r.Changes[j].Time) })
	if err := r.Assemble(); err != nil {
		return nil, err
	}
	return r, nil
}
