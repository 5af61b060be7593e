package live

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFlagMinutes(t *testing.T) {
	flat := func(n int, v int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	set := func(xs []int64, from, to int, v int64) []int64 {
		for i := from; i < to; i++ {
			xs[i] = v
		}
		return xs
	}
	pulled := func(reasons []string) (out []int) {
		for i, r := range reasons {
			if r != "" && r != ReasonBaseline {
				out = append(out, i)
			}
		}
		return out
	}
	span := func(from, to int) (out []int) {
		for i := from; i < to; i++ {
			out = append(out, i)
		}
		return out
	}
	tests := []struct {
		name          string
		lines, failed []int64
		windowStart   int
		margin        int
		want          []int // window minutes pulled
	}{
		{
			name:        "quiet day: nothing stands out",
			lines:       flat(600, 20),
			windowStart: 180,
			margin:      10,
		},
		{
			name:        "a burst and its margin",
			lines:       set(flat(600, 20), 300, 320, 800),
			windowStart: 180,
			margin:      10,
			want:        span(290, 330),
		},
		{
			name:        "a long incident stays flagged: flagged minutes leave the reference",
			lines:       set(flat(600, 20), 250, 450, 200),
			windowStart: 180,
			margin:      0,
			want:        span(250, 450),
		},
		{
			name:        "failures without more traffic",
			lines:       flat(600, 20),
			failed:      set(flat(600, 0), 400, 405, 15),
			windowStart: 180,
			margin:      2,
			want:        span(398, 407),
		},
		{
			name:        "a handful of failures on a quiet reference is noise",
			lines:       flat(600, 20),
			failed:      set(flat(600, 0), 400, 401, 3),
			windowStart: 180,
			margin:      2,
		},
		{
			name: "slow growth is followed by the rolling reference",
			lines: func() []int64 {
				xs := make([]int64, 600)
				for i := range xs {
					xs[i] = 10 + int64(i)/10
				}
				return xs
			}(),
			windowStart: 0,
			margin:      0,
		},
		{
			name:        "no baseline: the whole range's median stands in at first",
			lines:       set(flat(120, 20), 5, 8, 500),
			windowStart: 0,
			margin:      1,
			want:        span(4, 9),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sample := Pushdown{}.baselineSample()
			reasons := flagMinutes(tt.lines, tt.failed, tt.windowStart, sample, DefaultPushdownFactor, tt.margin)
			for i := 0; i < tt.windowStart; i++ {
				if want := sample.has(i, tt.windowStart); (reasons[i] == ReasonBaseline) != want {
					t.Fatalf("baseline minute %d: reason %q, in the sample: %t", i, reasons[i], want)
				}
			}
			if got := pulled(reasons); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("pulled %v, want %v", got, tt.want)
			}
		})
	}
}

// The baseline is sampled, not pulled whole: by default three blocks of ten
// minutes spread over it, the last right before the window, so that a longer
// baseline costs no more raw lines; a baseline no longer than the sample is
// pulled whole. pushdown.baseline_sample_blocks and baseline_sample_block
// change the sample.
func TestBaselineSample(t *testing.T) {
	sampled := func(s baselineSampling, windowStart int) []int {
		var got []int
		for i := range windowStart {
			if s.has(i, windowStart) {
				got = append(got, i)
			}
		}
		return got
	}
	def := Pushdown{}.baselineSample()
	if want := append(append(seq(50, 60), seq(110, 120)...), seq(170, 180)...); !reflect.DeepEqual(sampled(def, 180), want) {
		t.Errorf("3 h baseline: sampled minutes %v, want %v", sampled(def, 180), want)
	}
	if got := sampled(def, 30); !reflect.DeepEqual(got, seq(0, 30)) {
		t.Errorf("30 min baseline: sampled %v, want every minute", got)
	}
	two, five := 2, 5
	set := Pushdown{BaselineSampleBlocks: &two, BaselineSampleBlock: D(5 * time.Minute)}.baselineSample()
	if want := append(seq(85, 90), seq(175, 180)...); !reflect.DeepEqual(sampled(set, 180), want) {
		t.Errorf("2 blocks of 5m: sampled %v, want %v", sampled(set, 180), want)
	}
	one := Pushdown{BaselineSampleBlocks: &five, BaselineSampleBlock: D(time.Hour)}.baselineSample()
	if got := sampled(one, 180); !reflect.DeepEqual(got, seq(0, 180)) {
		t.Errorf("5 blocks of 1h over 3h: sampled %d minutes, want the whole baseline", len(got))
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func TestMinuteCountsRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	in := []Minute{
		{T: t0, Lines: 10, Failed: 0, Pulled: true, Reason: ReasonBaseline},
		{T: t0.Add(time.Minute), Lines: 900, Failed: 300, Pulled: true, Reason: ReasonBoth},
		{T: t0.Add(2 * time.Minute), Lines: 12, Failed: -1},
	}
	var buf bytes.Buffer
	if err := WriteMinuteCounts(&buf, in); err != nil {
		t.Fatal(err)
	}
	want := "minute,lines,failed,pulled,reason\n2026-10-03T00:00:00Z,10,0,1,baseline\n2026-10-03T00:01:00Z,900,300,1,volume+failed\n2026-10-03T00:02:00Z,12,,0,\n"
	if buf.String() != want {
		t.Fatalf("csv:\n%s\nwant:\n%s", buf.String(), want)
	}
	p := filepath.Join(t.TempDir(), "minute-counts.csv")
	os.WriteFile(p, buf.Bytes(), 0o644)
	out, err := ReadMinuteCounts(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("read back %+v", out)
	}
	pm, am, pl, al := PulledShare(out, t0.Add(time.Minute), t0.Add(3*time.Minute))
	if pm != 1 || am != 2 || pl != 900 || al != 912 {
		t.Errorf("share %d/%d minutes %d/%d lines", pm, am, pl, al)
	}
	os.WriteFile(p, []byte(want+"2026-10-03T00:03:00Z,x,,0,\n"), 0o644)
	if _, err := ReadMinuteCounts(p); err == nil || !strings.Contains(err.Error(), "minute-counts.csv:5: lines") {
		t.Errorf("bad row: %v", err)
	}
}
