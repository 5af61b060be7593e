package promstore

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

type wsampleIn struct {
	name   string
	labels map[string]string
	t      time.Time
	v      float64
}

// TestRoundTrip writes samples with Writer, loads them into a Store and reads
// them back exactly.
func TestRoundTrip(t *testing.T) {
	type key struct{ name, label string }
	want := map[key][]metrics.Point{}
	var in []wsampleIn
	add := func(name, label string, tm time.Time, v float64) {
		in = append(in, wsampleIn{name, map[string]string{"l": label, "job": "sim"}, tm, v})
		want[key{name, label}] = append(want[key{name, label}], metrics.Point{T: tm.UTC(), V: v})
	}
	// Two families interleaved, each spanning 36 h at 15 s... written
	// family by family they go back to t0 twice.
	for i := 0; i < 36*240; i++ {
		tm := t0.Add(time.Duration(i) * 15 * time.Second).Add(time.Duration(i%1000) * time.Millisecond)
		add("sim_queue", "a", tm, float64(i%400))
		add("sim_requests_total", "quote\"back\\slash\nnewline", tm, float64(i)*1.1)
	}
	add("sim_special", "nan", t0, math.NaN())
	add("sim_special", "inf", t0, math.Inf(1))

	var buf bytes.Buffer
	w := metrics.NewWriter(&buf)
	for i := len(in) - 1; i >= 0; i-- { // newest first: Writer sorts
		s := in[i]
		if err := w.Sample(s.name, s.labels, s.t, s.v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	s := openStore(t)
	var skips sources.Skips
	st, err := s.LoadReader("sim.om", &buf, &skips)
	if err != nil {
		t.Fatal(err)
	}
	if st.Samples != int64(len(in)) || st.Series != int64(len(want)) || skips.Count("") != 0 {
		t.Fatalf("loaded %+v, skips:\n%s", st, notes(&skips))
	}
	_, end := s.Range()
	for k, pts := range want {
		q := k.name + `{l="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(k.label) + `"}[100000d]`
		res, err := s.Query(context.Background(), q, end)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 {
			t.Fatalf("%s: %d series", q, len(res))
		}
		if res[0].Labels["l"] != k.label || res[0].Labels["job"] != "sim" || res[0].Labels["__name__"] != k.name {
			t.Errorf("%s: labels %v", q, res[0].Labels)
		}
		got := res[0].Points
		if len(got) != len(pts) {
			t.Fatalf("%s: %d points, want %d", q, len(got), len(pts))
		}
		for i := range pts {
			same := got[i].V == pts[i].V || (math.IsNaN(got[i].V) && math.IsNaN(pts[i].V))
			if !got[i].T.Equal(pts[i].T) || !same {
				t.Errorf("%s: point %d = %v, want %v", q, i, got[i], pts[i])
				break
			}
		}
	}
}

// TestRoundTripExactTimes uses timestamps that the OpenMetrics parser alone
// (int64(seconds*1000)) would read one millisecond early.
func TestRoundTripExactTimes(t *testing.T) {
	var buf bytes.Buffer
	w := metrics.NewWriter(&buf)
	times := []int64{1090543503830, 2154436079707, 2187268240015}
	for i, ms := range times {
		if err := w.Sample("odd_times", map[string]string{"i": string(rune('a' + i))}, time.UnixMilli(ms), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s := openStore(t)
	st, err := s.LoadReader("odd.om", &buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Min.UnixMilli() != times[0] || st.Max.UnixMilli() != times[2] {
		t.Errorf("span %d .. %d, want %d .. %d", st.Min.UnixMilli(), st.Max.UnixMilli(), times[0], times[2])
	}
	for i, ms := range times {
		res, err := s.Query(context.Background(), `odd_times{i="`+string(rune('a'+i))+`"}[1s]`, time.UnixMilli(ms))
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || len(res[0].Points) != 1 || res[0].Points[0].T.UnixMilli() != ms {
			t.Errorf("%d: got %+v", ms, res)
		}
	}
}
