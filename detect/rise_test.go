package detect

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// A rise begins at the first of three minutes in a row at its level: a
// shorter burst before it is no onset, and the third minute may lie past the
// range searched (the rise is judged on its own minutes, not the window's).
func TestSustainedOnset(t *testing.T) {
	perMinute := map[int64]int{10: 9, 11: 9, 12: 2, 13: 8, 14: 8, 15: 8, 20: 8, 21: 8, 22: 8}
	for _, tc := range []struct {
		from, to int64
		want     int64
		ok       bool
	}{
		{0, 30, 13, true},  // 10-11 are two minutes only
		{14, 30, 20, true}, // from 14 only two of 13-15 remain
		{0, 21, 13, true},
		{16, 21, 20, true}, // 21 and 22 lie past to
		{16, 20, 0, false},
	} {
		got, ok := SustainedOnset(perMinute, RiseLevel(1, 3), tc.from, tc.to)
		if got != tc.want || ok != tc.ok {
			t.Errorf("[%d, %d): %d %v, want %d %v", tc.from, tc.to, got, ok, tc.want, tc.ok)
		}
	}
	if l := RiseLevel(1, 3); l <= 2 || l > 8 {
		t.Fatalf("level %v: the test's counts of 2 and 8 must lie either side", l)
	}
}

// A rise starts where the rate rose into its peak. A crawler that walked
// at a steady ~18 a minute for forty minutes (above a baseline of nothing)
// and then twenty-five times as fast rose, for the burst, at the step; its
// first requests are not the onset (wordpress-search-crawl seed 16 put the
// onset 19 minutes early so). A burst from nothing, a burst whose next
// stage came ten minutes after its first, a ramp that climbed
// from its first minute, a steady climb that doubles every twenty minutes
// and a walk that never multiplied keep their first minute; the fade is
// still the last minute above the baseline. A rise that stepped rose from
// the walk's count of the ten minutes before the step, one that kept its
// first minute from the baseline.
func TestSustainedRiseStepsIntoItsPeak(t *testing.T) {
	walk := []int{17, 19, 15, 21, 18, 27, 16, 13, 21, 25, 15, 21, 19, 22, 18, 20, 23, 17, 26, 14}
	burst := []int{96, 263, 401, 478, 460, 492, 470, 470, 501, 469, 627, 901, 1188, 1306, 1372, 1147}
	series := func(rate func(m int) int) map[int64]int {
		perMinute := map[int64]int{}
		for m := 60; m < 120; m++ {
			perMinute[int64(m)] = rate(m)
		}
		return perMinute
	}
	for _, tc := range []struct {
		name string
		rate func(m int) int
		want int64
	}{
		{"walk then burst", func(m int) int {
			if m < 100 {
				return walk[m%len(walk)]
			}
			return burst[min(m-100, len(burst)-1)]
		}, 100},
		{"two steps", func(m int) int { // 18, then ~55 from 80, then ~470 from 100
			switch {
			case m < 80:
				return walk[m%len(walk)]
			case m < 100:
				return 3 * walk[m%len(walk)]
			}
			return burst[min(m-100, len(burst)-1)]
		}, 100},
		{"burst from nothing", func(m int) int { return burst[min(m-60, len(burst)-1)] }, 60},
		{"burst in stages", func(m int) int { // ~470 for ten minutes, then ~1,500: one rise
			if m < 70 {
				return 450 + walk[m%len(walk)]
			}
			return 1450 + 2*walk[m%len(walk)]
		}, 60},
		{"ramp", func(m int) int { return min(10*(m-59), 600) }, 60},
		{"doubling", func(m int) int { return int(20 * math.Pow(2, float64(m-60)/20)) }, 60},
		{"walk only", func(m int) int { return walk[m%len(walk)] }, 60},
	} {
		onset, end, from10 := sustainedRise(series(tc.rate), 0, time.Unix(0, 0), time.Unix(120*60, 0))
		if got := onset.Unix() / 60; got != tc.want {
			t.Errorf("%s: onset at minute %d, want %d", tc.name, got, tc.want)
		}
		// It rose from the walk's ten minutes before the step, or from the
		// baseline (0) when it kept its first minute.
		walked := 0
		for m := tc.want - plateauMinutes; m < tc.want && tc.want > 60; m++ {
			walked += tc.rate(int(m))
		}
		if from10 != float64(walked) {
			t.Errorf("%s: rose from %v per 10 minutes, want %d", tc.name, from10, walked)
		}
		if end.Unix()/60 != 120 {
			t.Errorf("%s: end at minute %d, want 120", tc.name, end.Unix()/60)
		}
	}
}

// TestRiseFromTheWalk: wordpress-search-crawl seed 16's crawler walks the
// site at about 18 requests a minute from 21:00 (no request of it in the
// baseline: its usual rate is 0) and bursts from 21:40. Its rise starts at
// the burst (stepOnset), so it rose from the walk's level, the truth's count
// of the ten minutes before the burst; "rose from 0" would state a crawler
// that came from nothing, where it had walked the site for forty minutes.
// The summary, the explanation (en and ko) and the timeline's onset all give
// that level; the usual rate stays the baseline's.
func TestRiseFromTheWalk(t *testing.T) {
	t.Parallel()
	// Three hours of baseline: with one, the walk is most of it, and the
	// usual rate is the walk's own level.
	res, truth := simulateBundle(t, simulate.Options{Scenario: "wordpress-search-crawl", Seed: 16, BaselineHours: 3})
	f := first(res.Findings, KindCrawlerBurst)
	if f == nil || truth.Crawler == nil {
		t.Fatal("no crawler finding, or the truth names no crawler")
	}
	facts := FactsOf[CrawlerBurstFacts](f)
	var walk int64 = -1 // the truth's count of the ten minutes before the start
	for _, c := range truth.Crawler.Per10m {
		if !mustTime(t, c.From).After(f.Start.Add(-10 * time.Minute)) {
			walk = c.Count
		}
	}
	if walk <= 0 {
		t.Fatalf("the truth counts no walk before the crawler's start %v: the scenario changed", f.Start)
	}
	if !facts.RoseFromPer10m.OK || math.Abs(facts.RoseFromPer10m.V-float64(walk)) > 0.25*float64(walk) {
		t.Errorf("rose from %+v per 10 minutes, want the walk's level before its burst (the truth counts %d); baseline %+v",
			facts.RoseFromPer10m, walk, facts.BaselinePer10m)
	}
	if facts.BaselinePer10m.V == facts.RoseFromPer10m.V {
		t.Errorf("baseline %v is the walk's level: the scenario no longer has a walk above its baseline", facts.BaselinePer10m.V)
	}
	from := prose.Plain{}.N(facts.RoseFromPer10m.V)
	if want := "rose from " + from + " to "; !strings.Contains(f.Summary, want) {
		t.Errorf("summary does not say %q: %s", want, f.Summary)
	}
	for _, c := range []struct{ lang, want string }{
		{prose.EN, "rose from " + from + " to "},
		{prose.EN, "stepping up from the slower walk"},
		{"ko", "10분에 " + from + "건쯤에서"},
	} {
		if got := explainCrawler(plainPhraser(c.lang), f, plainStory{}); !strings.Contains(got, c.want) {
			t.Errorf("explanation (%s) does not say %q: %s", c.lang, c.want, got)
		}
	}
	for _, c := range []struct{ lang, want string }{
		{prose.EN, from + " per 10 minutes before"},
		{"ko", "직전 10분에 " + from + "건"},
	} {
		if got := crawlerMoments(f, plainStory{})[0].Text(plainPhraser(c.lang)); !strings.Contains(got, c.want) {
			t.Errorf("timeline's onset (%s) does not say %q: %s", c.lang, c.want, got)
		}
	}
}

// plainPhraser says detect's messages in a language with prose.Plain's
// numbers and times.
type plainPhraser string

func (lang plainPhraser) Say(name string, data any) string {
	s, err := Messages.Say(name, data).InPlain(string(lang))
	if err != nil {
		panic(fmt.Sprintf("%s (%s): %v", name, lang, err))
	}
	return s
}

// plainStory is a report with nothing besides the finding explained: the
// access log covers the whole window.
type plainStory struct{}

func (plainStory) Findings() []Finding          { return nil }
func (plainStory) Window() (from, to time.Time) { return time.Time{}, time.Time{} }
func (plainStory) Changes() []sources.Change    { return nil }
func (plainStory) QueueSeries() []SeriesPoint   { return nil }
func (plainStory) Minutes() []MinuteFailures    { return nil }
func (plainStory) Coverage() []sources.Coverage { return nil }
