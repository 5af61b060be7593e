package live

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/failure"
	"github.com/aftermath-forensics/aftermath/sources/loki"
)

// MinuteCountsFile is where a pushed-down fetch writes its per-minute counts,
// relative to the bundle. It is CSV, not JSON: access/*.json is read as an
// access log.
const MinuteCountsFile = "access/minute-counts.csv"

// Reasons a minute's raw lines were pulled (Minute.Reason).
const (
	ReasonBaseline = "baseline" // the minute is in the baseline's sample (baselineSampling)
	ReasonVolume   = "volume"   // its line count stood out
	ReasonFailed   = "failed"   // its count of failed lines stood out
	ReasonBoth     = "volume+failed"
	ReasonMargin   = "margin" // within the margin of a flagged minute
	// ReasonSecondPass: pulled by a second pass (SecondPass), because a
	// finding's start or a failing stretch's edge touched it.
	ReasonSecondPass = "second pass"
)

// referenceSpan is how far back a minute's reference reaches: the detectors'
// own baseline is the three hours before the window.
const referenceSpan = 3 * time.Hour

// minReference is the fewest unflagged minutes a rolling reference needs;
// with fewer (the first minutes of a range), the median of the whole range
// stands in.
const minReference = 30

// Minute is one row of access/minute-counts.csv: what Loki counted in one
// minute and whether its raw lines are in the bundle.
type Minute struct {
	// T is the minute's start (UTC); the minute is [T, T+1m).
	T time.Time
	// Lines is the number of access-log lines Loki counted.
	Lines int64
	// Failed is the number of those lines that failed: status 5xx, or a
	// duration at least the clients' timeout (site.client_timeout_s) when it
	// is known. -1 when it could not be counted.
	Failed int64
	// Pulled is true when the minute's raw lines were pulled.
	Pulled bool
	// Reason says why they were (Reason*), "" when they were not.
	Reason string
}

// The baseline is not pulled whole: Loki counts its lines per minute, status
// and client family like every other minute, and its raw lines are pulled for
// a sample (baselineSampling, set by pushdown.baseline_sample_blocks and
// baseline_sample_block). The sample gives the detectors what counts cannot
// (fingerprints, latencies, route costs), so the cost of a pushdown grows with
// what stood out, not with the baseline; ingest knows a sampled minute from a
// counted one (access/minute-status.csv), and the detectors mark the figures
// they estimate from the sample.
type baselineSampling struct {
	// blocks stretches of block minutes each.
	blocks, block int
}

// has reports whether baseline minute i (of windowStart) is in the sample:
// the blocks spread evenly, the last one ending at the window; a baseline no
// longer than the blocks is pulled whole.
func (s baselineSampling) has(i, windowStart int) bool {
	if windowStart <= s.blocks*s.block {
		return true
	}
	step := windowStart / s.blocks
	for b := 1; b <= s.blocks; b++ {
		end := b * step
		if b == s.blocks {
			end = windowStart
		}
		if i >= end-s.block && i < end {
			return true
		}
	}
	return false
}

// flagMinutes decides which minutes to pull. lines and failed (nil when
// unknown) are per-minute counts; minutes before windowStart are the
// baseline, of which the sample is pulled. A minute stands
// out (standsOut) against the median of the unflagged minutes in the
// referenceSpan before it; flagged minutes of the window bring margin minutes
// on each side with them.
func flagMinutes(lines, failed []int64, windowStart int, sample baselineSampling, factor float64, margin int) []string {
	n := len(lines)
	reasons := make([]string, n)
	flagged := make([]bool, n)
	globalLines := median(lines)
	var globalFailed float64
	if failed != nil {
		globalFailed = median(failed)
	}
	span := int(referenceSpan / time.Minute)
	refL := make([]int64, 0, span)
	refF := make([]int64, 0, span)
	for i := 0; i < n; i++ {
		refL, refF = refL[:0], refF[:0]
		for j := max(0, i-span); j < i; j++ {
			if !flagged[j] {
				refL = append(refL, lines[j])
				if failed != nil {
					refF = append(refF, failed[j])
				}
			}
		}
		ml, mf := globalLines, globalFailed
		if len(refL) >= minReference {
			ml = median(refL)
			if failed != nil {
				mf = median(refF)
			}
		}
		vol := standsOut(lines[i], ml, factor)
		fail := failed != nil && standsOut(failed[i], mf, factor)
		flagged[i] = vol || fail
		if i < windowStart {
			if sample.has(i, windowStart) {
				reasons[i] = ReasonBaseline
			}
			continue
		}
		switch {
		case vol && fail:
			reasons[i] = ReasonBoth
		case vol:
			reasons[i] = ReasonVolume
		case fail:
			reasons[i] = ReasonFailed
		}
	}
	for i := windowStart; i < n; i++ {
		if !flagged[i] {
			continue
		}
		for j := max(windowStart, i-margin); j <= min(n-1, i+margin); j++ {
			if reasons[j] == "" {
				reasons[j] = ReasonMargin
			}
		}
	}
	return reasons
}

// standsOut: x is at least factor times the usual m and more than 3 Poisson
// deviations above it (failure.Excess, the detectors' own test), so that a
// quiet reference does not flag a minute for a handful of lines.
func standsOut(x int64, m, factor float64) bool {
	return failure.Excess(float64(x), m, factor, 3)
}

func median(xs []int64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	k := len(s) / 2
	if len(s)%2 == 1 {
		return float64(s[k])
	}
	return float64(s[k-1]+s[k]) / 2
}

var csvHeader = []string{"minute", "lines", "failed", "pulled", "reason"}

// WriteMinuteCounts writes minutes as CSV: minute (RFC 3339, UTC), lines,
// failed (empty when unknown), pulled (1 or 0), reason.
func WriteMinuteCounts(w io.Writer, minutes []Minute) error {
	return bundle.WriteCSV(w, csvHeader, func(write func([]string) error) error {
		for _, m := range minutes {
			failed := ""
			if m.Failed >= 0 {
				failed = strconv.FormatInt(m.Failed, 10)
			}
			pulled := "0"
			if m.Pulled {
				pulled = "1"
			}
			if err := write([]string{m.T.UTC().Format(time.RFC3339), strconv.FormatInt(m.Lines, 10), failed, pulled, m.Reason}); err != nil {
				return err
			}
		}
		return nil
	})
}

// ReadMinuteCounts reads access/minute-counts.csv. Errors name file and line.
func ReadMinuteCounts(path string) ([]Minute, error) {
	var out []Minute
	err := bundle.ReadCSV(path, csvHeader, func(_ int, rec []string) error {
		bad := func(what string, err error) error { return fmt.Errorf("%s: %v", what, err) }
		var m Minute
		var err error
		if m.T, err = time.Parse(time.RFC3339, rec[0]); err != nil {
			return bad("minute", err)
		}
		if m.Lines, err = strconv.ParseInt(rec[1], 10, 64); err != nil {
			return bad("lines", err)
		}
		m.Failed = -1
		if rec[2] != "" {
			if m.Failed, err = strconv.ParseInt(rec[2], 10, 64); err != nil {
				return bad("failed", err)
			}
		}
		m.Pulled = rec[3] == "1"
		m.Reason = rec[4]
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PulledShare summarises minutes of [from, to): how many minutes and lines
// there are, and how many of them were pulled raw.
func PulledShare(minutes []Minute, from, to time.Time) (pulledMinutes, allMinutes int, pulledLines, allLines int64) {
	for _, m := range minutes {
		if m.T.Add(time.Minute).After(from) && m.T.Before(to) {
			allMinutes++
			allLines += m.Lines
			if m.Pulled {
				pulledMinutes++
				pulledLines += m.Lines
			}
		}
	}
	return
}

// countedMinutes is what minutes (consecutive, from minutes[0].T) say of
// the lines of query a pull asks for (loki.Counted): their Lines, as Loki
// counted them with the same selector and pipeline, so the pull is not
// counted again.
func countedMinutes(minutes []Minute) loki.Counted {
	if len(minutes) == 0 {
		return nil
	}
	return countedPerMinute(minutes[0].T, len(minutes), func(i int) int64 { return minutes[i].Lines })
}

// countedPerMinute is loki.Counted from n per-minute counts from from:
// perMinute(i) is minute i's. Known for a range on whole minutes within
// them.
func countedPerMinute(from time.Time, n int, perMinute func(i int) int64) loki.Counted {
	return func(a, b time.Time) (int64, bool) {
		if a.Before(from) || !a.Truncate(time.Minute).Equal(a) || !b.Truncate(time.Minute).Equal(b) {
			return 0, false
		}
		i, j := int(a.Sub(from)/time.Minute), int(b.Sub(from)/time.Minute)
		if i >= j || j > n {
			return 0, false
		}
		var sum int64
		for k := i; k < j; k++ {
			sum += perMinute(k)
		}
		return sum, true
	}
}
