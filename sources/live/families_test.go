package live

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/live/livetest"
	"github.com/aftermath-forensics/aftermath/sources/loki"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// TestFlagFamilies: a client that walks at a steady, modest rate from some
// hour on is pulled although no minute of everyone's lines stands out; a
// reader family of a rare language with a session's burst now and then
// stands out against its own quiet past but is too small a share to be a
// crawl; the main readers' slow daily rise is not a rise.
func TestFlagFamilies(t *testing.T) {
	const minutes = 8 * 60
	const windowStart = 3 * 60
	counts := map[string][]float64{
		"chrome/ko": make([]float64, minutes),
		"chrome/zh": make([]float64, minutes),
		"safari/de": make([]float64, minutes),
	}
	totals := make([]int64, minutes)
	for i := range minutes {
		counts["chrome/ko"][i] = float64(40 + i/12) // 40 -> 80 a minute over the day
		if i >= 5*60 {
			counts["chrome/zh"][i] = 30 // the slow walk: under half of everyone
		}
		if i%97 < 3 {
			counts["safari/de"][i] = 12 // a reader's session
		}
		for _, c := range counts {
			totals[i] += int64(c[i])
		}
	}
	for i := 5 * 60; i < minutes; i++ {
		if float64(totals[i]) > 3*float64(totals[5*60-1]) {
			t.Fatalf("minute %d of everyone's lines stands out: the case is not a slow walk", i)
		}
	}
	got := flagFamilies(counts, totals, windowStart, DefaultPushdownFactor)
	if want := []string{"chrome/zh"}; !reflect.DeepEqual(got, want) {
		t.Errorf("flagged %v, want %v", got, want)
	}
	// A family that was as busy in the baseline as in the window is no rise.
	for i := range minutes {
		counts["chrome/zh"][i] = 30
	}
	if got := flagFamilies(counts, totals, windowStart, DefaultPushdownFactor); len(got) != 0 {
		t.Errorf("steady families flagged: %v", got)
	}
}

// TestFamilyFilterComplements: the filter that pulls the families and the
// one the per-minute counts use are exact complements, in LogQL the fake
// (and Loki) parse.
func TestFamilyFilterComplements(t *testing.T) {
	in, out := familyFilter([]string{"chrome/zh", "bot/"}, true), familyFilter([]string{"chrome/zh", "bot/"}, false)
	for _, want := range []string{`aftermath_family="chrome/zh" or aftermath_family="bot/"`, "| drop aftermath_ua, aftermath_lang, aftermath_family, __error__"} {
		if !strings.Contains(in, want) {
			t.Errorf("pull filter %s lacks %s", in, want)
		}
	}
	if !strings.Contains(out, `aftermath_family!="chrome/zh" and aftermath_family!="bot/"`) {
		t.Errorf("count filter %s", out)
	}
	if familyFilter(nil, true) != "" || familyFilter(nil, false) != "" {
		t.Error("no family: a filter")
	}
}

// The family Loki computes (familyStages' label_format) is the family the
// detectors compute (bundle.ClientFamily), from the header or from the
// primary tag the access-log reader keeps: the detectors know a client of a
// family pulled whole by it. A mobile Safari that names "Mobile/" but no
// "Safari/" is "other"; a crawler calling itself a spider is not a bot.
func TestClientFamilyMatchesLoki(t *testing.T) {
	clearEnv(t)
	lk := lokitest.New(t)
	t0 := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	cases := []struct{ ua, header, primary string }{
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "", ""},
		{"Mozilla/5.0 (compatible; bingBot/2.0)", "en-US", "en-us"},
		{"Mozilla/5.0 (X11; Linux x86_64; rv:131.0) Gecko/20100101 Firefox/131.0", "de-DE,de;q=0.8", "de-de"},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36", "zh-CN,zh;q=0.9", "zh-cn"},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15", " ko-KR", "ko-kr"},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148", "ja", "ja"},
		{"MySpider/1.0", "FR", "fr"},
	}
	want := map[string]bool{}
	for i, c := range cases {
		ts := t0.Add(time.Duration(i) * time.Second)
		lk.Push(accessStream, ts, livetest.CaddyLine(ts, "198.51.100.1", c.ua, c.header, "/", 200, 0.1, 100))
		fromHeader, fromPrimary := bundle.ClientFamily(c.ua, c.header), bundle.ClientFamily(c.ua, c.primary)
		if fromHeader != fromPrimary {
			t.Errorf("%q: family %q from the header, %q from the primary tag", c.ua, fromHeader, fromPrimary)
		}
		want[fromHeader] = true
	}
	got := map[string]bool{}
	for family := range lokiFamilyCounts(t, lk.URL(), t0) {
		got[family] = true
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Loki's families %v, the detectors' %v", got, want)
	}
}

// lokiFamilyCounts is Loki's count of the access lines of each client family
// in the minute from t0, as a pushed-down fetch asks for it.
func lokiFamilyCounts(t *testing.T, addr string, t0 time.Time) map[string]int {
	t.Helper()
	c, err := loki.New(loki.Config{Addr: addr, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	mv, err := c.MinuteValues(context.Background(), familyCountQuery(`{job="caddy"}`, 0), t0, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, s := range mv.Series {
		for _, v := range s.Values {
			counts[s.Metric[familyLabel]] += int(v)
		}
	}
	return counts
}
