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
