package live

import (
	"reflect"
	"strings"
	"testing"
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
