package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/report"
)

// The reference crawl (crawler-backlog, seed 1) fails clients from 02:17 to
// 03:10 KST (17:17-18:10Z); its window runs to 03:30. These tests take its
// access log away where people lose it, and check that no sentence, in any
// language or format, tells the minutes without lines as a recovery.

// referenceBundle is crawler-backlog, seed 1, with two hours of baseline
// (scenarioBundle's, the one analyzedScenario analyzes), simulated once per
// test binary for the tests that lay its access log out as people have it
// (cut, holed, rotated, re-encoded). Tests must not write into it.
func referenceBundle(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("simulation in -short mode")
	}
	return scenarioBundle(t, "crawler-backlog")
}

// variantBundle copies the reference bundle with its access log rewritten:
// the lines keep(ts) accepts, then, with half, the first refused line cut in
// the middle (a log copied while it was written).
func variantBundle(t *testing.T, keep func(ts time.Time) bool, half bool) string {
	t.Helper()
	return keptLines(t, keep, half, time.Time{})
}

// rotatedBundle is variantBundle (without a half line) laid out as
// logrotate leaves it: the kept lines before at in access.log.1, the rest
// in access.log. It splits the lines it has in memory by the times it read
// with them, rather than reading back and decoding the file it wrote.
func rotatedBundle(t *testing.T, keep func(ts time.Time) bool, at time.Time) string {
	t.Helper()
	return keptLines(t, keep, false, at)
}

// keptLines writes variantBundle's access log, rotated at rotateAt unless
// it is zero.
func keptLines(t *testing.T, keep func(ts time.Time) bool, half bool, rotateAt time.Time) string {
	t.Helper()
	sim := simulateIncident(t)
	dst := sim.layout(t, nil)
	var older, kept [][]byte
	var cut []byte
	for i, line := range sim.lines {
		if keep(sim.times[i]) {
			if sim.times[i].Before(rotateAt) {
				older = append(older, line)
			} else {
				kept = append(kept, line)
			}
			continue
		}
		if half {
			cut = line[:len(line)/2]
			break
		}
	}
	p := filepath.Join(dst, "access", "access.log")
	if !rotateAt.IsZero() {
		if len(older) == 0 || len(kept) == 0 {
			t.Fatalf("rotating at %s leaves a file empty", rotateAt)
		}
		writeLines(t, p+".1", older, false)
	}
	writeLines(t, p, kept, false)
	if cut != nil {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Write(cut) // no newline: the line was being written
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// storyOf analyzes a bundle and renders every format a reader sees: the
// Markdown and HTML in English and Korean, and report.json. The report is
// the one before the rules (reportBeforeRules): the story (title, summary,
// timeline, checks, charts) is the detectors' and the report's, and the
// rules' sentences tell no recovery or onset; their passes were a third of
// each analysis.
func storyOf(t *testing.T, dir string) (map[string]string, *report.Report) {
	t.Helper()
	r := reportBeforeRules(t, dir)
	return renderStory(t, r), r
}

var referenceRendered once[map[string]string]

// referenceStory is storyOf the reference bundle, from its shared analysis,
// rendered once for the tests that read it (they must not change it).
func referenceStory(t *testing.T) (map[string]string, *report.Report) {
	t.Helper()
	referenceBundle(t) // skips in -short mode
	r := analyzedScenario(t, "crawler-backlog")
	out := referenceRendered.get(t, func() (map[string]string, error) {
		out := map[string]string{}
		for _, f := range storyFormats {
			data, err := report.Render(r, f.format, f.lang)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", f.format, f.lang, err)
			}
			out[f.format+" "+f.lang] = string(data)
		}
		return out, nil
	})
	return out, r
}

// storyFormats are the formats and languages a story is rendered in.
var storyFormats = []struct{ format, lang string }{
	{report.FormatMarkdown, report.LangEN}, {report.FormatMarkdown, report.LangKO},
	{report.FormatHTML, report.LangEN}, {report.FormatHTML, report.LangKO},
	{report.FormatJSON, report.LangEN},
}

// renderStory renders every format storyOf returns.
func renderStory(t *testing.T, r *report.Report) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range storyFormats {
		data, err := report.Render(r, f.format, f.lang)
		if err != nil {
			t.Fatalf("%s %s: %v", f.format, f.lang, err)
		}
		out[f.format+" "+f.lang] = string(data)
	}
	return out
}

// recoveryClaims are the sentences that tell a stretch as over or as usual,
// in each language, as the catalogs word them.
var recoveryClaims = []string{
	"then the site recovers", "fell back to the usual rate", "no more requests failed than usual", "the crawl dies down", "as the crawl died down",
	"이후 회복함", "평소 수준으로 돌아왔습니다", "크롤링이 잦아듦", "크롤링이 잦아들며", "실패가 평소보다 많지 않았습니다",
}

func kst(t *testing.T, clock string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, "2026-10-03T"+clock+":00+09:00")
	if err != nil {
		t.Fatal(err)
	}
	return at.UTC()
}

func TestStoryBoundedByAccessLogCoverage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		keep func(time.Time) bool
		half bool
		// rotated, when set, lays the kept lines out as logrotate does:
		// those before it in access.log.1, the rest in access.log.
		rotated string
		// stops is where the access log's lines stop inside the incident
		// (KST); gap names the hole in the summary when there is one.
		stops string
		gap   []string
	}{
		{name: "cut mid-incident with a half line", keep: func(ts time.Time) bool { return ts.Before(kst(t, "02:45")) }, half: true, stops: "02:45"},
		{name: "last hour missing, cut at the peak", keep: func(ts time.Time) bool { return ts.Before(kst(t, "02:30")) }, stops: "02:30"},
		{name: "holed inside the incident", keep: func(ts time.Time) bool { return ts.Before(kst(t, "02:35")) || !ts.Before(kst(t, "03:15")) }, stops: "02:35",
			gap: []string{"no lines from 02:35 to 03:15", "2시 35분부터 3시 15분까지(40분) 접근 로그가 한 줄도 없고"}},
		// The crawl is over by 03:10, when access.log begins: told as seen,
		// the timeline said "the crawl dies down" at 03:11.
		{name: "rotated, 35 minutes lost between the files", keep: func(ts time.Time) bool { return ts.Before(kst(t, "02:35")) || !ts.Before(kst(t, "03:10")) }, rotated: "02:35", stops: "02:35",
			gap: []string{"no lines from 02:35 to 03:10", "2시 35분부터 3시 10분까지(35분) 접근 로그가 한 줄도 없고"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var dir string
			if tc.rotated != "" {
				dir = rotatedBundle(t, tc.keep, kst(t, tc.rotated))
			} else {
				dir = variantBundle(t, tc.keep, tc.half)
			}
			out, r := storyOf(t, dir)
			for format, text := range out {
				for _, claim := range recoveryClaims {
					if strings.Contains(text, claim) {
						t.Errorf("%s says %q although the access log stops at %s", format, claim, tc.stops)
					}
				}
			}
			im := r.Impact
			if im.EndKnown == nil || *im.EndKnown || im.EndBound == nil {
				t.Fatalf("impact end_known %v, end_bound %+v: want the end unknown", im.EndKnown, im.EndBound)
			}
			if !im.End.Equal(kst(t, tc.stops)) {
				t.Errorf("impact end %s, want where the log stops (%s KST)", im.End.Format(time.RFC3339), tc.stops)
			}
			// The metrics cover the window: the pool stayed saturated
			// past the log's end, and the story says it is their bound.
			if im.EndBound.BoundedBy != "metrics" || !im.EndBound.At.After(im.End) {
				t.Fatalf("end bound %+v: want the php-fpm metrics' saturation, after %s", im.EndBound, im.End.Format(time.RFC3339))
			}
			until := im.EndBound.At.In(mustLoad(t, "Asia/Seoul")).Format("15:04")
			for format, want := range map[string]string{
				"md en": "the php-fpm metrics show the pool saturated until " + until,
				"md ko": "php-fpm 지표로는 " + koClock(until) + "까지 풀이 포화 상태였습니다",
			} {
				if !strings.Contains(out[format], want) {
					t.Errorf("%s does not say which source bounds the failing stretch (%q)", format, want)
				}
			}
			title := strings.SplitN(out["md en"], "\n", 2)[0]
			if strings.Contains(title, "–"+tc.stops+" ") {
				t.Errorf("title %q ends the outage where the access log stops", title)
			}
			if !strings.Contains(title, "–"+until+", end from the php-fpm metrics") {
				t.Errorf("title %q: want the metrics' end, said so", title)
			}
			// The access log's charts (statuses, goodput, the crawler) shade
			// the minutes without lines as no data, in both languages.
			for format, word := range map[string]string{"html en": "<title>no data</title>", "html ko": "<title>데이터 없음</title>"} {
				if n := strings.Count(out[format], `class="nodata"`); n < 3 || !strings.Contains(out[format], word) {
					t.Errorf("%s shades %d charts as no data (want the access log's three, titled %q)", format, n, word)
				}
			}
			for i, want := range tc.gap {
				format := []string{"md en", "md ko"}[i]
				if summary := section(out[format], 1); !strings.Contains(summary, want) {
					t.Errorf("%s summary does not name the gap (%q): %s", format, want, summary)
				}
			}
		})
	}
}

// The same incident with its whole access log tells the recovery the log
// shows: the sentences above are bounded by coverage, not removed.
func TestStoryCompleteLogStillRecovers(t *testing.T) {
	t.Parallel()
	out, r := referenceStory(t)
	if r.Impact.EndKnown != nil || r.Impact.EndBound != nil {
		t.Errorf("end_known %v, end_bound %+v on a complete log", r.Impact.EndKnown, r.Impact.EndBound)
	}
	if strings.Contains(out["html en"], `class="nodata"`) {
		t.Error("the complete log's charts shade minutes as no data")
	}
	if !strings.Contains(out["md en"], "Failures fell back to the usual rate at 03:10") {
		t.Errorf("the complete log's summary lost its recovery: %s", section(out["md en"], 1))
	}
}

// section returns the text after the n-th "## " heading of a Markdown
// document, up to the next one.
func section(md string, n int) string {
	parts := strings.Split(md, "\n## ")
	if n >= len(parts) {
		return ""
	}
	return parts[n]
}

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// koClock writes "03:10" as the Korean prose does ("3시 10분").
func koClock(hm string) string {
	at, _ := time.Parse("15:04", hm)
	if at.Minute() == 0 {
		return fmt.Sprintf("%d시", at.Hour())
	}
	return fmt.Sprintf("%d시 %d분", at.Hour(), at.Minute())
}

// A scan that could not see its window writes nothing that reads as a quiet
// site: over no data (exit 2, as before), and over a window whose last 30
// minutes have no lines while the pool saturates (a log pipeline lagging
// behind the outage), scan.json says judged false and scan.md why. Over a
// longer window with the same 30 minutes missing, and no metrics to see the
// outage, the minutes it saw are judged, and only they: exit 1, scan.md and
// the terminal say "in the minutes the access log covers" and name the
// missing end. --quiet changes none of it.
func TestScanUnjudgedWindows(t *testing.T) {
	t.Parallel()
	ref := referenceBundle(t)
	lagging := variantBundle(t, func(ts time.Time) bool { return ts.Before(kst(t, "02:15")) }, false)
	blind := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(blind, os.DirFS(lagging)); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"metrics", "logs"} {
		if err := os.RemoveAll(filepath.Join(blind, dir)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, bundle, now string
		args              []string
		code              int
		judged            bool
		unknown           string // the minutes scan.md names as unknown (KST)
	}{
		{name: "no data", bundle: ref, now: "2026-10-03T06:00:00Z", code: exitUsage, unknown: "No access-log lines from 14:00 to 15:00"},
		{name: "no data, --quiet", bundle: ref, now: "2026-10-03T06:00:00Z", args: []string{"--quiet"}, code: exitUsage, unknown: "No access-log lines from 14:00 to 15:00"},
		{name: "last 30 minutes missing", bundle: lagging, now: kst(t, "02:45").Format(time.RFC3339), code: exitIncomplete, unknown: "No access-log lines from 02:15 to 02:45"},
		{name: "last 30 minutes missing, --quiet", bundle: lagging, now: kst(t, "02:45").Format(time.RFC3339), args: []string{"--quiet"}, code: exitIncomplete, unknown: "No access-log lines from 02:15 to 02:45"},
		{name: "last 30 of 120 minutes missing, no metrics", bundle: blind, now: kst(t, "02:45").Format(time.RFC3339), args: []string{"--since", "2h", "--quiet"},
			code: exitIncomplete, judged: true, unknown: "No access-log lines from 02:15 to 02:45: unknown, not quiet."},
	}
	// Each case is its own scan into its own directory: the subtests overlap.
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "scan")
			code, stdout := runScanCLI(t, append([]string{"--bundle", tc.bundle, "--now", tc.now, "--out", out}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d: %s", code, tc.code, stdout)
			}
			js := readScanJSON(t, out)
			if judged, ok := js["judged"].(bool); !ok || judged != tc.judged {
				t.Errorf("scan.json judged %v, want %v", js["judged"], tc.judged)
			}
			if why, _ := js["not_judged"].(string); why == "" && !tc.judged {
				t.Error("scan.json does not say why the window was not judged")
			}
			us, _ := js["unknown"].([]any)
			if len(us) == 0 {
				t.Fatal("scan.json lists no unknown minutes")
			}
			md, err := os.ReadFile(filepath.Join(out, "scan.md"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(md), tc.unknown) {
				t.Errorf("scan.md does not name the unknown minutes (%q)", tc.unknown)
			}
			if tc.judged {
				// Only the covered minutes are judged, and said so.
				if u := us[len(us)-1].(map[string]any); u["kind"] != "tail" || u["from"] != kst(t, "02:15").Format(time.RFC3339) {
					t.Errorf("scan.json's last unknown stretch %v: want the tail from 02:15", u)
				}
				if strings.Contains(string(md), "Nothing anomalous.") || !strings.Contains(string(md), "Nothing anomalous in the minutes the access log covers.") {
					t.Errorf("scan.md does not bound its verdict by the access log's coverage:\n%s", md)
				}
				if !strings.Contains(stdout, "nothing anomalous in the minutes the access log covers (30m0s unknown)") {
					t.Errorf("the terminal does not bound its verdict: %s", stdout)
				}
				return
			}
			if strings.Contains(stdout, "nothing anomalous") {
				t.Errorf("the terminal reads as a quiet window: %s", stdout)
			}
			for _, quiet := range []string{"Nothing anomalous", "nothing anomalous"} {
				if strings.Contains(string(md), quiet) {
					t.Errorf("scan.md says %q of a window it could not see", quiet)
				}
			}
			if !strings.Contains(string(md), "could not be judged") && !strings.Contains(string(md), "Could not judge") {
				t.Error("scan.md does not say it could not judge the window")
			}
		})
	}
}

// onsetClaims are the sentences that tell a rise or a first call as seen,
// in each language, as the catalogs word them.
var onsetClaims = []string{
	"start to climb", "first request from the site to its own API",
	"늘기 시작함", "자신의 API를 부른 첫 기록",
}

// When the access log begins mid-incident (its head lost: a log rotated
// away, a collector started late), the crawl and the site's calls to
// itself are already going on in its first minute. Told as seen, the
// timeline said the crawl "start to climb" and placed the "first request
// from the site to its own API" at 02:22, where the evidence merely begins.
func TestStoryHeadMissing(t *testing.T) {
	t.Parallel()
	out, r := storyOf(t, variantBundle(t, func(ts time.Time) bool { return !ts.Before(kst(t, "02:22")) }, false))
	for format, text := range out {
		for _, claim := range onsetClaims {
			if strings.Contains(text, claim) {
				t.Errorf("%s says %q although the access log begins at 02:22 with it under way", format, claim)
			}
		}
	}
	for format, want := range map[string][]string{
		"md en": {"are already coming in when the access log begins; when they began is unknown",
			"the site is already calling its own API when the access log begins; when it began is unknown",
			"It was already under way when the access log began at 02:22; when it began is unknown."},
		"md ko": {"접근 로그가 시작할 때 이미 들어오고 있음. 언제 시작했는지는 알 수 없음",
			"접근 로그가 시작할 때 사이트가 이미 자신의 API를 부르고 있음",
			"접근 로그가 시작한 2시 22분에 이미 진행 중이었으며, 언제 시작했는지는 알 수 없습니다."},
	} {
		for _, w := range want {
			if !strings.Contains(out[format], w) {
				t.Errorf("%s does not say the start is unseen (%q)", format, w)
			}
		}
	}
	for _, f := range r.Findings {
		switch f.Kind {
		case "crawler_burst":
			if !strings.Contains(f.Summary, ", already under way when the access log begins at 02:22 (when it began is unknown)") {
				t.Errorf("%s summary places its start as seen: %s", f.ID, f.Summary)
			}
		case "self_amplification":
			if strings.Contains(f.Summary, " from 02:2") {
				t.Errorf("%s summary places its start as seen: %s", f.ID, f.Summary)
			}
		}
	}
}

// The same detectors on the complete log still tell the rise they see.
func TestStoryCompleteLogStillClimbs(t *testing.T) {
	t.Parallel()
	out, _ := referenceStory(t)
	for _, want := range []string{"start to climb", "first request from the site to its own API"} {
		if !strings.Contains(out["md en"], want) {
			t.Errorf("the complete log's timeline lost %q", want)
		}
	}
}

// A log that stops before the incident (02:05, the pool saturates from
// 02:18): the checks that find nothing beyond the usual in the lines they
// have must not judge the minutes no line covers. The obvious reasons
// ("as usual ... and none while every worker was busy") read as a quiet
// site over 85 minutes nobody saw.
func TestChecksDoNotJudgeUnloggedMinutes(t *testing.T) {
	t.Parallel()
	_, r := storyOf(t, variantBundle(t, func(ts time.Time) bool { return ts.Before(kst(t, "02:05")) }, false))
	reasons := map[string]string{}
	for _, c := range r.Checks {
		reasons[string(c.Name)] = c.Reason
	}
	for _, name := range []string{"self_amplification", "client_abandoned_work", "crawler_burst"} {
		reason, ok := reasons[name]
		if !ok {
			t.Errorf("no %s check", name)
			continue
		}
		if !strings.Contains(reason, "the access log has no lines for 1 h 25 min of the window: those minutes cannot be judged") {
			t.Errorf("%s judges minutes without lines: %q", name, reason)
		}
	}
	if reason := reasons["self_amplification"]; strings.Contains(reason, "and none while every worker was busy") {
		t.Errorf("self_amplification says no call came during a saturation the log does not cover: %q", reason)
	}
}

// A silence is judged against the site's own rate around it, not one rate
// for the whole log: ten minutes without a line at 02:02, in the middle of
// the night but on a site writing about 150 lines a minute then, a quarter
// of an hour before the crawl, are lines lost, as a 40-minute hole inside the
// incident is (TestStoryBoundedByAccessLogCoverage) and 35 minutes between
// rotated files (TestEvidenceLayouts); a quiet night's empty minutes are
// not (analysis's TestWeekCoverageHasNoFalseGap). The coverage is the
// loading's (report.json's is the same list): the copy is loaded as analyze
// loads it, not detected and proposed rules for.
func TestNightHoleOnABusySite(t *testing.T) {
	t.Parallel()
	from, to := kst(t, "02:02"), kst(t, "02:12")
	l := loadLayout(t, variantBundle(t, func(ts time.Time) bool { return ts.Before(from) || !ts.Before(to) }, false), "")
	for _, c := range l.Coverage {
		if c.Source != "access" {
			continue
		}
		gaps := c.Gaps()
		if len(gaps) != 1 || !gaps[0].From.Equal(from) || !gaps[0].To.Equal(to) {
			t.Fatalf("access-log gaps %+v: want one, 02:02 to 02:12 KST", gaps)
		}
		if gaps[0].Expected < 500 {
			t.Errorf("the hole would have held %.0f lines: want the site's rate around it, over a thousand", gaps[0].Expected)
		}
		return
	}
	t.Fatal("no access-log coverage")
}
