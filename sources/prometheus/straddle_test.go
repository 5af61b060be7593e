package prometheus

import (
	"bytes"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// TestExportKeepsTheSampleInForceAtFrom: a raw export keeps, per series, the
// newest sample of the five minutes before the window (the one a gauge's
// value at from comes from: a 60 s CPU datapoint stamped 20 s before the
// window covers its first 40 s; a counter's first rate needs it too), and
// nothing older.
func TestExportKeepsTheSampleInForceAtFrom(t *testing.T) {
	from := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	to := from.Add(10 * time.Minute)
	tests := []struct {
		name    string
		offsets []time.Duration // sample times relative to from
		want    []time.Duration // the samples exported
	}{
		{name: "60 s datapoints straddling from",
			offsets: []time.Duration{-140 * time.Second, -80 * time.Second, -20 * time.Second, 40 * time.Second, 100 * time.Second},
			want:    []time.Duration{-20 * time.Second, 40 * time.Second, 100 * time.Second}},
		{name: "a sample at from: the one before still counts for a counter's first rate",
			offsets: []time.Duration{-2 * time.Minute, -60 * time.Second, 0, 60 * time.Second},
			want:    []time.Duration{-60 * time.Second, 0, 60 * time.Second}},
		{name: "older than the lookback: no longer in force",
			offsets: []time.Duration{-6 * time.Minute, 2 * time.Minute},
			want:    []time.Duration{2 * time.Minute}},
		{name: "a series that stopped before the window but is still in force",
			offsets: []time.Duration{-4 * time.Minute, -3 * time.Minute},
			want:    []time.Duration{-3 * time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := metrics.NewWriter(&buf)
			for i, off := range tt.offsets {
				w.Sample("aws_ec2_cpuutilization_average", map[string]string{"instance_id": "i-0abc"}, from.Add(off), float64(10+i))
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			src := offlineStore(t, "cpu.om", buf.Bytes())
			_, got, _, err := exportTo(t, src, []string{"aws_ec2_cpuutilization_average"}, from, to, 0)
			if err != nil {
				t.Fatal(err)
			}
			series := rawSamples(t, got, "aws_ec2_cpuutilization_average", from.Add(-time.Hour), to)
			var times []time.Duration
			if len(series) == 1 {
				for _, p := range series[0].Points {
					times = append(times, p.T.Sub(from))
				}
			}
			if len(times) != len(tt.want) {
				t.Fatalf("exported samples at %v, want %v", times, tt.want)
			}
			for i := range times {
				if times[i] != tt.want[i] {
					t.Errorf("exported samples at %v, want %v", times, tt.want)
					break
				}
			}
		})
	}
}
