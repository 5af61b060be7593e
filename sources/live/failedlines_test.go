package live

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/failure"
	"github.com/aftermath-forensics/aftermath/sources/loki"
)

// TestAboveDecimal: the pattern matches a number as Caddy writes it
// exactly when it is above the threshold (failure.Late for a known timeout), at the threshold's own digits and
// around them (the places where a digit-wise pattern goes wrong).
func TestAboveDecimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, th := range []float64{0, 0.5, 0.95, 1, 2.5, 9, 9.99, 10, 10.25, 30, 99.9, 100, 120.075} {
		re := regexp.MustCompile(`^"duration":(?:` + aboveDecimal(th) + `)`)
		xs := []float64{0, th, th + 1e-6, th - 1e-6, th + 0.01, th - 0.01, th * 10, th / 10, th + 1, th - 1, 0.000179983, 1e-7}
		for range 300 {
			xs = append(xs, rng.Float64()*3*th+rng.Float64())
		}
		for _, x := range xs {
			if x < 0 {
				continue
			}
			for _, text := range []string{strconv.FormatFloat(x, 'f', -1, 64), strconv.FormatFloat(x, 'f', 6, 64)} {
				v, _ := strconv.ParseFloat(text, 64)
				if got, want := re.MatchString(`"duration":`+text+`,`), v > th; got != want {
					t.Errorf("threshold %v, duration %s: matched %v, above %v", th, text, got, want)
				}
			}
		}
	}
}

// TestFailedLineFilterCountsAsTheParser: on the simulated incident (its
// clients' timeout known, 5xx and late answers in the burst) Loki counts the
// same failed lines per minute with the raw line filter as with | json and
// the status and duration labels (failedFilter), minute by minute. A
// superset (the old narrowing filter alone) counts more.
func TestFailedLineFilterCountsAsTheParser(t *testing.T) {
	cfg, b, _ := sharedIncident(t)
	lc, err := cfg.Loki.clientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := loki.New(lc)
	if err != nil {
		t.Fatal(err)
	}
	query := joinQuery(cfg.Loki.Selector, cfg.Loki.Pipeline)
	from, to := b.Manifest.Window.From.Add(-referenceSpan), b.Manifest.Window.To
	timeout := cfg.Site.ClientTimeoutS
	if timeout <= 0 {
		t.Fatal("the simulated incident states no clients' timeout")
	}
	count := func(filter string) []int64 {
		t.Helper()
		mc, err := minuteTotals(context.Background(), c, joinQuery(query, filter), from, to)
		if err != nil {
			t.Fatal(err)
		}
		return mc.Totals()
	}
	raw := count(failedLineFilter(timeout))
	parsed := count(failedFilter(cfg.Site))
	if len(raw) != len(parsed) {
		t.Fatalf("%d minutes counted raw, %d parsed", len(raw), len(parsed))
	}
	var n, late int64
	for i := range raw {
		n += parsed[i]
		if raw[i] != parsed[i] {
			t.Errorf("minute %d: %d failed lines by the line filter, %d by the parser", i, raw[i], parsed[i])
		}
	}
	for _, v := range count(statusFields + ` | duration > ` + strconv.FormatFloat(timeout, 'f', -1, 64)) {
		late += v
	}
	if n == 0 || late == 0 {
		t.Fatalf("%d failed lines, %d late: the incident should have both", n, late)
	}
	if fmt.Sprint(count(failedLineFilter(0))) == fmt.Sprint(raw) {
		t.Errorf("the late lines changed no count")
	}
}

// failedFilter selects the lines that failed as the detectors count them,
// with | json: the parsed count the line filter (failedLineFilter) must equal
// (failure.Status and failure.Late): 429 and 5xx, or (when the clients'
// timeout is known) answers slower than it. Lines that are not JSON, or whose
// fields do not parse, are dropped rather than failing the whole metric query.
//
// Without the timeout only the status decides, and a line filter on the raw
// JSON keeps the lines holding a failed status before any parser runs (a
// superset: the status label decides); with it any line may be late, and
// every line is parsed.
func failedFilter(site sources.Site) string {
	cond := "status=~" + strconv.Quote(failure.StatusPattern)
	narrow := " " + failedStatusLineFilter
	if t := site.ClientTimeoutS; t > 0 {
		cond += " or duration > " + strconv.FormatFloat(t, 'f', -1, 64)
		narrow = ""
	}
	return strings.TrimSpace(narrow+" "+statusFields) + ` | ` + cond + ` | __error__=""`
}

// failedStatusLineFilter keeps the lines whose JSON holds a "status" key
// with a failed status (failure.StatusPattern), as a number or a string.
var failedStatusLineFilter = "|~ " + strconv.Quote(`"status"\s*:\s*"?(?:`+failure.StatusPattern+`)\b`)
