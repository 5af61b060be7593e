package failure

import (
	"regexp"
	"strconv"
	"testing"
)

// TestStatusPatternIsStatus: the pattern queries use selects exactly the
// statuses Status calls failed; 600 and 499 are neither, though a "5xx or
// 4xx" reading of "failed" would take one of them.
func TestStatusPatternIsStatus(t *testing.T) {
	re := regexp.MustCompile(`^(?:` + StatusPattern + `)$`)
	for code := 100; code <= 999; code++ {
		if re.MatchString(strconv.Itoa(code)) != Status(code) {
			t.Errorf("status %d: pattern %v, Status %v", code, re.MatchString(strconv.Itoa(code)), Status(code))
		}
	}
	for _, c := range []int{499, 600, 404} {
		if Status(c) {
			t.Errorf("%d counted failed", c)
		}
	}
}

func TestLateAndExcess(t *testing.T) {
	if Late(10, 10) || !Late(10.001, 10) || Late(500, 0) {
		t.Error("late: strictly above a known timeout only")
	}
	// An expected 0 needs more than 3 events; 3x a busy usual is not enough
	// when it is within the noise, and a small rise of a large count is not
	// 3x it.
	for _, c := range []struct {
		obs, exp, ratio float64
		want            bool
	}{{3, 0, 3, false}, {4, 0, 3, true}, {3, 1, 3, false}, {300, 100, 3, true}, {299, 100, 3, false}, {150, 100, 0, true}, {130, 100, 0, false}} {
		if got := Excess(c.obs, c.exp, c.ratio, 3); got != c.want {
			t.Errorf("Excess(%v, %v, %v, 3) = %v", c.obs, c.exp, c.ratio, got)
		}
	}
}

// TestFailedIsStatusOrLateAnswer: a request fails its client by its status
// or by an answer that came late; a late 4xx (a 404 after the timeout) is
// neither (it answered nothing the client wanted in time either way, and no
// minute counts it failed), a late 429 or 5xx is failed once, by its status.
func TestFailedIsStatusOrLateAnswer(t *testing.T) {
	for _, c := range []struct {
		code     int
		dur      float64
		answered bool
		late     bool
		failed   bool
	}{
		{200, 1, true, false, false},
		{200, 31, true, true, true},
		{304, 31, true, true, true},
		{302, 0, true, false, false},
		{404, 31, false, false, false},
		{199, 31, false, false, false},
		{429, 0, false, false, true},
		{504, 31, false, false, true},
		{0, 31, false, false, false},
	} {
		if got := Answered(c.code); got != c.answered {
			t.Errorf("Answered(%d) = %v", c.code, got)
		}
		if got := LateAnswer(c.code, c.dur, 30); got != c.late {
			t.Errorf("LateAnswer(%d, %v, 30) = %v", c.code, c.dur, got)
		}
		if got := Failed(c.code, c.dur, 30); got != c.failed {
			t.Errorf("Failed(%d, %v, 30) = %v", c.code, c.dur, got)
		}
		if LateAnswer(c.code, c.dur, 0) {
			t.Errorf("LateAnswer(%d) with no known timeout", c.code)
		}
	}
}
