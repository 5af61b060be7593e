package live

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/live/livetest"
	"github.com/aftermath-forensics/aftermath/sources/loki"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// The family pull's line filters (familyLineFilter) let through every line
// of the families, whatever the case of the agent's token or the language,
// and the families' lines are those the client tells by familyOf: a
// "Chrome/" or "zh" elsewhere in a line (its path) passes the filters and
// is left out by the family stages.
func TestFamilyPullNarrowedLikeTheClient(t *testing.T) {
	clearEnv(t)
	lk := lokitest.New(t)
	t0 := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	cases := []struct{ ua, lang, path string }{
		{"Mozilla/5.0 (compatible; GoogleBOT/2.1)", "", "/"},
		{"Mozilla/5.0 (compatible; bingbot/2.0) Chrome/120.0", "zh-CN", "/"},
		{"Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 Chrome/121.0.0.0 Safari/537.36", "ZH-cn,zh;q=0.9", "/wiki"},
		{"Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 Chrome/121.0.0.0 Safari/537.36", "ko-KR", "/zh/Chrome/"},
		{"Mozilla/5.0 (X11; rv:131.0) Gecko/20100101 Firefox/131.0", "de", "/Chrome/zh"},
		{"curl/8.0", "ja", "/"},
		{"Mozilla/5.0 (iPhone) AppleWebKit/605.1.15 Mobile/15E148", "zh", "/"},
	}
	var lines []string
	for i, c := range cases {
		ts := t0.Add(time.Duration(i) * time.Second)
		line := livetest.CaddyLine(ts, "198.51.100.1", c.ua, c.lang, c.path, 200, 0.1, 100)
		lk.Push(accessStream, ts, line)
		lines = append(lines, line)
	}
	c, err := loki.New(loki.Config{Addr: lk.URL(), Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, fams := range [][]string{{"chrome/zh"}, {"bot/", "chrome/zh"}, {"other/zh", "other/ja"}, {"firefox/de", "safari/"}} {
		t.Run(strings.Join(fams, ","), func(t *testing.T) {
			narrow := familyLineFilter(fams)
			if fams[0] == "chrome/zh" && !strings.Contains(narrow, `|~ "Chrome/"`) {
				t.Errorf("no line filter for %v: %q", fams, narrow)
			}
			var want []string
			for _, l := range lines {
				if slices.Contains(fams, familyOf(l)) {
					want = append(want, l)
				}
			}
			var got []string
			if _, err := c.QueryRange(context.Background(), `{job="caddy"}`+familyFilter(fams, true), t0, t0.Add(time.Minute), func(e loki.Entry) error {
				got = append(got, e.Line)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 || !reflect.DeepEqual(got, want) {
				t.Errorf("Loki pulled %d lines:\n%s\nthe client's families hold %d:\n%s", len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
			}
		})
	}
}

// familyDay pushes 6.5 hours of a site's readers, a crawler that walks from
// the fourth hour (a client family no minute of everyone's lines shows) and
// a burst of everyone in its fifth, with a few 502s in the burst.
func familyDay(t *testing.T, lk *lokitest.Loki, from time.Time) {
	t.Helper()
	for m := 0; m < 390; m++ {
		base := from.Add(time.Duration(m) * time.Minute)
		n := 0
		push := func(ip, ua, lang string, status int) {
			ts := base.Add(time.Duration(n) * 50 * time.Millisecond)
			n++
			lk.Push(accessStream, ts, livetest.CaddyLine(ts, ip, ua, lang, fmt.Sprintf("/page/%d", n), status, 0.05, 900))
		}
		for i := range 12 {
			push(fmt.Sprintf("198.51.100.%d", i), "Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 Chrome/121.0.0.0 Safari/537.36", "ko-KR", 200)
		}
		if m >= 230 {
			for i := range 6 {
				push(fmt.Sprintf("203.0.113.%d", (m*6+i)%250), "Mozilla/5.0 (compatible; WalkerBot/1.0)", "", 200)
			}
		}
		if m >= 300 && m < 310 {
			for i := range 80 {
				status := 200
				if i%20 == 0 {
					status = 502
				}
				push(fmt.Sprintf("192.0.2.%d", i), "Mozilla/5.0 (X11; rv:131.0) Gecko/20100101 Firefox/131.0", "de", status)
			}
		}
	}
}

// A pushdown asks Loki for no parser in the raw minutes it pulls: the
// minutes are pulled with the stream selector alone and hold every line,
// the client family pulled across the range comes from its own pull only
// where the minutes did not hold it, and the two files hold each line of
// the range at most once, the family's everywhere. The failed lines are
// counted with a line filter alone (failedLineFilter), no parser, before the
// families. Before, every minute pull ran | json and label_format over its
// lines to leave the family out. Every line is counted once, with no
// parser, before the families (the cost model's count), and no pass
// measures the bytes: the index's mean line times the lines does.
func TestPushdownPullsMinutesWithoutAParser(t *testing.T) {
	clearEnv(t)
	lk := lokitest.New(t)
	from := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	familyDay(t, lk, from)
	var mu sync.Mutex
	var logQueries, metricQueries []string
	lk.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
		q := r.URL.Query().Get("query")
		mu.Lock()
		defer mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/index/stats") {
			return false
		}
		if strings.Contains(q, "_over_time(") {
			metricQueries = append(metricQueries, q)
		} else if q != "" {
			logQueries = append(logQueries, q)
		}
		return false
	})
	cfg := &Config{
		Baseline: D(3 * time.Hour),
		Site:     sources.Site{Workers: 16},
		Loki:     &Loki{Addr: lk.URL(), Selector: `{job="caddy"}`, Retries: -1},
	}
	pushDownAlways(cfg)
	out := filepath.Join(t.TempDir(), "bundle")
	m, notes, err := Fetch(context.Background(), cfg, from.Add(3*time.Hour), from.Add(390*time.Minute), out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := sources.Problems(notes); len(p) > 0 {
		t.Fatalf("notes: %v", p)
	}
	if m.Pushdown == nil || !slices.Contains(m.Pushdown.Families, "bot/") {
		t.Fatalf("the crawler's family was not pulled across the range: %+v", m.Pushdown)
	}
	fams := m.Pushdown.Families
	inFamilies := func(line string) bool { return slices.Contains(fams, familyOf(line)) }
	var minutePulls int
	for _, q := range logQueries {
		switch {
		case strings.Contains(q, familyLabel+`="bot/"`):
			if !strings.Contains(q, `} |~ "(?i:bot)|`) {
				t.Errorf("the family pull parses lines no line filter left out: %s", q)
			}
		case strings.Contains(q, "|"):
			t.Errorf("a raw pull runs a pipeline in Loki: %s", q)
		default:
			minutePulls++
		}
	}
	if minutePulls == 0 {
		t.Errorf("no raw minute pulled: %v", logQueries)
	}
	var failedCounts int
	for _, q := range metricQueries {
		if strings.Contains(q, failedLineFilter(0)) {
			failedCounts++
			if strings.Contains(q, "| json") {
				t.Errorf("the failed lines counted with a parser: %s", q)
			}
		}
	}
	if failedCounts != 1 {
		t.Errorf("%d counts of the failed lines with the line filter alone, want 1: %v", failedCounts, metricQueries)
	}
	// The client families are counted once, over the whole range (one
	// | json pass grouped by family), never per minute pulled.
	var familyCounts int
	for _, q := range metricQueries {
		if strings.Contains(q, "sum by ("+familyLabel) {
			familyCounts++
		}
	}
	if familyCounts != 1 {
		t.Errorf("%d counts per client family, want 1 over the range: %.300q", familyCounts, metricQueries)
	}

	minutes, err := ReadMinuteCounts(filepath.Join(out, MinuteCountsFile))
	if err != nil {
		t.Fatal(err)
	}
	pulled := map[int64]bool{}
	for _, mi := range minutes {
		if mi.Pulled {
			pulled[mi.T.Unix()/60] = true
		}
	}
	seen := map[string]int{}
	for _, file := range []string{AccessFile, FamiliesFile} {
		for _, l := range strings.Split(strings.TrimSpace(gunzip(t, filepath.Join(out, file))), "\n") {
			seen[l]++
			if file == FamiliesFile && !inFamilies(l) {
				t.Errorf("%s holds a line of another family: %s", file, l)
			}
		}
	}
	lk.Each(`{job="caddy"}`, minutes[0].T, from.Add(390*time.Minute), func(_ string, e lokitest.Entry) {
		want := 0
		if pulled[e.TS/int64(time.Minute)] || inFamilies(e.Line) {
			want = 1
		}
		if seen[e.Line] != want {
			t.Errorf("line held %d times, want %d: %s", seen[e.Line], want, e.Line)
		}
	})
	// Every line's per-minute count is the sum of the families' counts: no
	// count of its own over the range.
	// So is every failed line's: the 502s of the burst, in their minutes.
	var lines, inLoki int64
	failedAt, failedInLoki := map[int64]int64{}, map[int64]int64{}
	for _, mi := range minutes {
		lines += mi.Lines
		if mi.Failed != 0 {
			failedAt[mi.T.Unix()/60] = mi.Failed
		}
	}
	lk.Each(`{job="caddy"}`, minutes[0].T, from.Add(390*time.Minute), func(_ string, e lokitest.Entry) {
		inLoki++
		if strings.Contains(e.Line, `"status":502`) {
			failedInLoki[e.TS/int64(time.Minute)]++
		}
	})
	if lines != inLoki {
		t.Errorf("%s counts %d lines, Loki holds %d", MinuteCountsFile, lines, inLoki)
	}
	if len(failedInLoki) == 0 || !reflect.DeepEqual(failedAt, failedInLoki) {
		t.Errorf("%s counts failed lines per minute %v, Loki holds %v", MinuteCountsFile, failedAt, failedInLoki)
	}
	// Every line is counted once without a parser (the cost model's
	// count, which the pulls are checked against), and the bytes per
	// minute come from the index, not from a bytes_over_time pass.
	var plain int
	for _, q := range metricQueries {
		if strings.Contains(q, "count_over_time(") && strings.Contains(q, loki.MinuteRange) && !strings.Contains(q, "|") {
			plain++
		}
		if strings.Contains(q, "bytes_over_time(") {
			t.Errorf("the bytes of the range measured in a pass over it: %s", q)
		}
	}
	if plain != 1 {
		t.Errorf("every line counted per minute without a parser %d times, want once: %v", plain, metricQueries)
	}
	if t.Failed() {
		return
	}
	// The counts of the minutes not pulled leave the family's lines out.
	rows, err := bundle.ReadMinuteStatus(filepath.Join(out, bundle.MinuteStatusFile))
	if err != nil {
		t.Fatal(err)
	}
	var counted int64
	for _, r := range rows {
		counted += r.Requests
	}
	var want int64
	lk.Each(`{job="caddy"}`, minutes[0].T, from.Add(390*time.Minute), func(_ string, e lokitest.Entry) {
		if !pulled[e.TS/int64(time.Minute)] && !inFamilies(e.Line) {
			want++
		}
	})
	if counted != want {
		t.Errorf("%s counts %d requests, want %d", bundle.MinuteStatusFile, counted, want)
	}

	// A second pass pulls counted minutes with the selector alone and
	// drops, on the client, the families' lines the bundle holds.
	var edge time.Time
	for _, mi := range minutes {
		if !mi.Pulled && mi.T.After(from.Add(4*time.Hour)) {
			edge = mi.T.Add(time.Minute)
			break
		}
	}
	mu.Lock()
	logQueries = nil
	mu.Unlock()
	n, err := SecondPass(context.Background(), cfg, out, Edges{Starts: []time.Time{edge}})
	if err != nil || n == 0 {
		t.Fatalf("second pass: %d minutes, %v", n, err)
	}
	for _, q := range logQueries {
		if strings.Contains(q, "|") {
			t.Errorf("the second pass runs a pipeline in Loki: %s", q)
		}
	}
	var passLines int
	for _, l := range strings.Split(strings.TrimSpace(gunzip(t, filepath.Join(out, secondPassFile(0)))), "\n") {
		passLines++
		if inFamilies(l) {
			t.Errorf("the second pass kept a line of the families the bundle holds: %s", l)
		}
	}
	pm, err := bundle.ReadManifest(filepath.Join(out, bundle.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if rec := recordOf(pm, secondPassFile(0)); rec == nil || rec.Lines != int64(passLines) || pm.Pushdown.SecondPasses[0].Lines != int64(passLines) {
		t.Errorf("the second pass wrote %d lines, bundle.yaml says %+v and %+v", passLines, rec, pm.Pushdown.SecondPasses)
	}
}

// The family spans leave out the minutes pulled whole: a long run of them
// (the families' lines there above a page) ends a span, a short one is
// bridged (pulled again and dropped costs less than a new span's count and
// page), and a stretch where Loki counted none of the families' lines is
// not asked for.
func TestFamilySpansAroundPulledMinutes(t *testing.T) {
	t0 := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	per := make([]float64, 100)
	for i := range per {
		per[i] = 10
	}
	for i := 80; i < 90; i++ {
		per[i] = 0
	}
	pulledMinute := func(i int) bool { return (i >= 20 && i < 30) || (i >= 50 && i < 52) || i >= 85 }
	for i := 20; i < 30; i++ {
		per[i] = 100 // 1,000 lines: a page
	}
	got := familySpans(t0, per, pulledMinute, 1000)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	want := []loki.Span{{From: at(0), To: at(20)}, {From: at(30), To: at(80)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spans %v\nwant %v", got, want)
	}
}

// The late lines (slower than the clients' timeout) are counted in the
// same answers as every line: the per-minute count per family and status
// groups them by lateness (lateStage, from Loki's float template
// functions), so the failed lines per minute and the late requests of the
// minutes not pulled need no query of their own, and PHP's late seconds
// come with its seconds in one unwrap. Here two baseline minutes outside
// the sample hold late lines, the rest of the 6.5 hours none; their counts
// are exact. Before, the failed lines were a pass of Loki over the range
// with | json, and the late lines and their seconds two more over the
// stretch where lines failed.
func TestLateCountsComeWithEveryLine(t *testing.T) {
	clearEnv(t)
	lk := lokitest.New(t)
	from := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	late := map[int]bool{20: true, 30: true}
	for m := 0; m < 390; m++ {
		base := from.Add(time.Duration(m) * time.Minute)
		for i := range 12 {
			ts := base.Add(time.Duration(i) * time.Second)
			dur := 0.05
			if late[m] && i < 2 {
				dur = 3
			}
			if late[m] && i == 2 {
				dur = 1 // at the timeout: not late
			}
			lk.Push(accessStream, ts, livetest.CaddyLine(ts, fmt.Sprintf("198.51.100.%d", i), "Mozilla/5.0 Chrome/121.0 Safari/537.36", "ko", "/", 200, dur, 900))
		}
	}
	cfg := &Config{
		Baseline: D(3 * time.Hour),
		Site:     sources.Site{Workers: 16, ClientTimeoutS: 1},
		Loki:     &Loki{Addr: lk.URL(), Selector: `{job="caddy"}`, Retries: -1},
	}
	pushDownAlways(cfg)
	out := filepath.Join(t.TempDir(), "bundle")
	m, notes, err := Fetch(context.Background(), cfg, from.Add(3*time.Hour), from.Add(390*time.Minute), out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := sources.Problems(notes); len(p) > 0 {
		t.Fatalf("notes: %v", p)
	}
	var statusQueries int
	for _, q := range m.Queries {
		if strings.Contains(q.Query, "duration >") {
			t.Errorf("late lines counted in a query of their own: %s", q.Query)
		}
		if q.File == bundle.MinuteStatusFile {
			statusQueries++
			if !strings.Contains(q.Query, "sum_over_time(") {
				t.Errorf("a status count the per-family count answered: %s", q.Query)
			}
		}
	}
	if statusQueries != 1 {
		t.Errorf("%d status queries, want 1 (PHP's seconds)", statusQueries)
	}
	minutes, err := ReadMinuteCounts(filepath.Join(out, MinuteCountsFile))
	if err != nil {
		t.Fatal(err)
	}
	failed := map[int]int64{}
	for _, mi := range minutes {
		if mi.Failed != 0 {
			failed[int(mi.T.Sub(from)/time.Minute)] = mi.Failed
		}
	}
	if want := map[int]int64{20: 2, 30: 2}; !reflect.DeepEqual(failed, want) {
		t.Errorf("failed lines per minute %v, want %v", failed, want)
	}
	rows, err := bundle.ReadMinuteStatus(filepath.Join(out, bundle.MinuteStatusFile))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int64{}
	for _, r := range rows {
		if r.Late {
			got[int(r.Minute.Sub(from)/time.Minute)] += r.Requests
		}
	}
	if want := map[int]int64{20: 2, 30: 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("late requests per minute %v, want %v", got, want)
	}
}

// TestPHPSecondsReadOnlyMinutesNotPulled: PHP's seconds per minute are
// summed over the stretches of minutes not pulled, so Loki does not read the
// pulled minutes again for them (they hold their own lines). Before, the sum
// ran over the whole range: on the simulated day a quarter of its bytes,
// read once more. The seconds written are those a sum over the whole range
// gives for the minutes not pulled.
func TestPHPSecondsReadOnlyMinutesNotPulled(t *testing.T) {
	clearEnv(t)
	lk := lokitest.New(t)
	from := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	familyDay(t, lk, from)
	var mu sync.Mutex
	var ranges [][2]time.Time
	var secondsQuery string
	lk.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
		q := r.URL.Query()
		if strings.Contains(q.Get("query"), "sum_over_time(") {
			start, _ := strconv.ParseInt(q.Get("start"), 10, 64)
			end, _ := strconv.ParseInt(q.Get("end"), 10, 64)
			mu.Lock()
			ranges = append(ranges, [2]time.Time{time.Unix(0, start).UTC(), time.Unix(0, end).UTC()})
			secondsQuery = q.Get("query")
			mu.Unlock()
		}
		return false
	})
	cfg := &Config{
		Baseline: D(3 * time.Hour),
		Site:     sources.Site{Workers: 16},
		Loki:     &Loki{Addr: lk.URL(), Selector: `{job="caddy"}`, Retries: -1},
	}
	pushDownAlways(cfg)
	out := filepath.Join(t.TempDir(), "bundle")
	if _, notes, err := Fetch(context.Background(), cfg, from.Add(3*time.Hour), from.Add(390*time.Minute), out, nil); err != nil {
		t.Fatal(err)
	} else if p := sources.Problems(notes); len(p) > 0 {
		t.Fatalf("notes: %v", p)
	}
	minutes, err := ReadMinuteCounts(filepath.Join(out, MinuteCountsFile))
	if err != nil {
		t.Fatal(err)
	}
	var pulled int
	for _, m := range minutes {
		if !m.Pulled {
			continue
		}
		pulled++
		for _, r := range ranges {
			// A point of the answer at t sums the minute [t-1m, t).
			if !m.T.Before(r[0].Add(-time.Minute)) && m.T.Before(r[1]) {
				t.Errorf("PHP's seconds read pulled minute %s (asked over %s to %s)", m.T.Format("15:04"), r[0].Format("15:04"), r[1].Format("15:04"))
			}
		}
	}
	if pulled == 0 || len(ranges) == 0 {
		t.Fatalf("%d minutes pulled, %d sums of PHP's seconds: the test sees nothing", pulled, len(ranges))
	}
	// The seconds written, against one sum over the whole range.
	c, err := loki.New(loki.Config{Addr: lk.URL(), Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	mv, err := c.MinuteValues(context.Background(), secondsQuery, minutes[0].T, minutes[len(minutes)-1].T.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var want, got float64
	for _, s := range mv.Series {
		for i, v := range s.Values {
			if !minutes[i].Pulled {
				want += v
			}
		}
	}
	rows, err := bundle.ReadMinuteStatus(filepath.Join(out, bundle.MinuteStatusFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		got += r.PHPSeconds
	}
	if want == 0 || math.Abs(got-want) > 1e-3 {
		t.Errorf("PHP's seconds of the minutes not pulled: %.3f written, %.3f summed over the whole range", got, want)
	}
}
