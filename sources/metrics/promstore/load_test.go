package promstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// t0 is the first timestamp of the testdata files: 2026-11-29T00:00:00Z.
var t0 = time.Unix(1795910400, 0).UTC()

func openStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// gzipFile writes a gzip copy of src into dir under name.
func gzipFile(t *testing.T, src, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, gzipBytes(t, data), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func gzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// notes renders the skips as one string, to look for file:line examples.
func notes(s *sources.Skips) string {
	var b strings.Builder
	for _, n := range s.Notes("metrics", "lines") {
		b.WriteString(n.Message)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestLoad(t *testing.T) {
	tmp := t.TempDir()
	spanGz := gzipFile(t, "testdata/span30h.om", tmp, "span30h.om.gz")
	// Compression is told by magic bytes, not by the name.
	spanGzNoExt := gzipFile(t, "testdata/span30h.prom", tmp, "span30h-gzip.prom")

	tests := []struct {
		name        string
		path        string
		format      string
		samples     int64
		series      int64
		outOfOrder  int64
		min, max    time.Time
		skips       map[string]int // reason -> count; every other reason 0
		locations   []string       // substrings of the skip notes
		errContains []string       // substrings of LoadStats.Errors
	}{
		{
			// Two families, each going back to the start of a 30 h window:
			// the head must accept the second family's old samples.
			name: "openmetrics spanning 30 h over two families", path: "testdata/span30h.om",
			format: FormatOpenMetrics, samples: 93, series: 3,
			min: t0, max: t0.Add(30*time.Hour + 250*time.Millisecond),
		},
		{
			name: "gzip openmetrics", path: spanGz,
			format: FormatOpenMetrics, samples: 93, series: 3,
			min: t0, max: t0.Add(30*time.Hour + 250*time.Millisecond),
		},
		{
			name: "prometheus text, ms timestamps, blank and comment lines", path: "testdata/span30h.prom",
			format: FormatPrometheus, samples: 93, series: 3,
			min: t0, max: t0.Add(30*time.Hour + 250*time.Millisecond),
		},
		{
			name: "gzip prometheus text without .gz", path: spanGzNoExt,
			format: FormatPrometheus, samples: 93, series: 3,
			min: t0, max: t0.Add(30*time.Hour + 250*time.Millisecond),
		},
		{
			// Lines 4, 6 and 13 are malformed, line 7 has no timestamp, line
			// 16 follows # EOF. The histogram's le="1" after the bad line
			// 13 must still read as le="1.0" (the TYPE line is carried over
			// the restart), so there are 5 series, not 6.
			name: "malformed lines", path: "testdata/malformed.om",
			format: FormatOpenMetrics, samples: 8, series: 5,
			min: t0, max: t0.Add(3 * time.Minute),
			skips: map[string]int{ReasonMalformed: 3, ReasonNoTimestamp: 1, ReasonAfterEOF: 1},
			locations: []string{
				"testdata/malformed.om:4, testdata/malformed.om:6, testdata/malformed.om:13",
				"testdata/malformed.om:7", "testdata/malformed.om:16",
			},
			errContains: []string{"testdata/malformed.om:4: ", "testdata/malformed.om:6: ", "testdata/malformed.om:13: "},
		},
		{
			name: "duplicates and out of order", path: "testdata/duplicates.om",
			format: FormatOpenMetrics, samples: 4, series: 1, outOfOrder: 1,
			min: t0.Add(-time.Minute), max: t0.Add(2 * time.Minute),
			skips:     map[string]int{ReasonDuplicate: 1, ReasonConflict: 1},
			locations: []string{"testdata/duplicates.om:3", "testdata/duplicates.om:4"},
		},
		{
			name: "openmetrics without # EOF", path: "testdata/no_eof.om",
			format: FormatOpenMetrics, samples: 2, series: 1,
			min: t0, max: t0.Add(15 * time.Second),
			skips:     map[string]int{ReasonNoEOF: 1},
			locations: []string{"testdata/no_eof.om:3"},
		},
		{
			name: "samples without timestamps", path: "testdata/no_timestamps.prom",
			format: FormatPrometheus, samples: 0, series: 0,
			skips:     map[string]int{ReasonNoTimestamp: 3},
			locations: []string{"testdata/no_timestamps.prom:2, testdata/no_timestamps.prom:3, testdata/no_timestamps.prom:4"},
		},
	}
	// Tiny segments put segment boundaries (and the TYPE line carried over
	// them) everywhere; the results must not change.
	for _, seg := range []int{1 << 20, 64, 1} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/segment=%d", tt.name, seg), func(t *testing.T) {
				defer func(old int) { segmentSize = old }(segmentSize)
				segmentSize = seg
				s := openStore(t)
				var skips sources.Skips
				st, err := s.LoadFile(tt.path, &skips)
				if err != nil {
					t.Fatal(err)
				}
				if st.Format != tt.format || st.Samples != tt.samples || st.Series != tt.series || st.OutOfOrder != tt.outOfOrder {
					t.Errorf("stats = %s %d samples %d series %d out of order, want %s %d %d %d",
						st.Format, st.Samples, st.Series, st.OutOfOrder, tt.format, tt.samples, tt.series, tt.outOfOrder)
				}
				if !st.Min.Equal(tt.min) || !st.Max.Equal(tt.max) {
					t.Errorf("span = %s .. %s, want %s .. %s", st.Min, st.Max, tt.min, tt.max)
				}
				if min, max := s.Range(); !min.Equal(tt.min) || !max.Equal(tt.max) {
					t.Errorf("Range() = %s .. %s, want %s .. %s", min, max, tt.min, tt.max)
				}
				want := 0
				for reason, n := range tt.skips {
					want += n
					if got := skips.Count(reason); got != n {
						t.Errorf("skips[%q] = %d, want %d", reason, got, n)
					}
				}
				if got := skips.Count(""); got != want {
					t.Errorf("all skips = %d, want %d:\n%s", got, want, notes(&skips))
				}
				n := notes(&skips)
				for _, loc := range tt.locations {
					if !strings.Contains(n, loc) {
						t.Errorf("skip notes lack %q:\n%s", loc, n)
					}
				}
				errs := strings.Join(st.Errors, "\n")
				for _, e := range tt.errContains {
					if !strings.Contains(errs, e) {
						t.Errorf("Errors lack %q:\n%s", e, errs)
					}
				}
			})
		}
	}
}

// TestLoadQueries checks what the fixtures hold, through PromQL.
func TestLoadQueries(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		path string
		q    string
		at   time.Time
		want map[string]float64 // label string -> value
	}{
		{"first family, start", "testdata/span30h.om", `app_queue_depth`, t0,
			map[string]float64{`{__name__="app_queue_depth", instance="a"}`: 0, `{__name__="app_queue_depth", instance="b"}`: 0}},
		{"first family, end", "testdata/span30h.om", `app_queue_depth`, t0.Add(30 * time.Hour),
			map[string]float64{`{__name__="app_queue_depth", instance="a"}`: 30, `{__name__="app_queue_depth", instance="b"}`: 60}},
		{"second family, all 30 h", "testdata/span30h.om", `count_over_time(app_up[31h])`, t0.Add(30*time.Hour + time.Second),
			map[string]float64{`{instance="a"}`: 31}},
		{"prometheus text, ms timestamps", "testdata/span30h.prom", `sum(app_queue_depth)`, t0.Add(10 * time.Hour),
			map[string]float64{`{}`: 30}},
		{"histogram le normalised across a restart", "testdata/malformed.om", `h_bucket{le="1.0"}`, t0.Add(time.Minute),
			map[string]float64{`{__name__="h_bucket", le="1.0"}`: 2}},
		{"first value of a conflicting duplicate kept", "testdata/duplicates.om", `d`, t0,
			map[string]float64{`{__name__="d"}`: 1}},
		{"out-of-order sample stored", "testdata/duplicates.om", `d`, t0.Add(-time.Minute),
			map[string]float64{`{__name__="d"}`: 0}},
		{"all samples in order", "testdata/duplicates.om", `count_over_time(d[10m])`, t0.Add(2 * time.Minute),
			map[string]float64{`{}`: 4}},
		{"timestamp before an exemplar", "testdata/exemplars.om", `timestamp(c_total)`, t0.Add(time.Second),
			map[string]float64{`{}`: 1795910400.5}},
		{"counter family", "testdata/exemplars.om", `c_total`, t0.Add(2 * time.Second),
			map[string]float64{`{__name__="c_total"}`: 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t)
			if _, err := s.LoadFile(tt.path, nil); err != nil {
				t.Fatal(err)
			}
			res, err := s.Query(ctx, tt.q, tt.at)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, ser := range res {
				if len(ser.Points) != 1 || !ser.Points[0].T.Equal(tt.at) {
					t.Errorf("%v: points %v, want one at %s", ser.Labels, ser.Points, tt.at)
					continue
				}
				got[labelString(ser.Labels)] = ser.Points[0].V
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("%s at %s = %v, want %v", tt.q, tt.at, got, tt.want)
			}
		})
	}
}

// TestLoadTwoFilesOneSeries loads one series split over two files given
// newest first: the older file's samples go out of order into the TSDB.
func TestLoadTwoFilesOneSeries(t *testing.T) {
	s := openStore(t)
	newer := "# TYPE x unknown\nx 3 1795914000.000\nx 4 1795917600.000\n# EOF\n"
	older := "# TYPE x unknown\nx 1 1795910400.000\nx 2 1795912200.000\n# EOF\n"
	var skips sources.Skips
	if _, err := s.LoadReader("newer.om", strings.NewReader(newer), &skips); err != nil {
		t.Fatal(err)
	}
	st, err := s.LoadReader("older.om", strings.NewReader(older), &skips)
	if err != nil {
		t.Fatal(err)
	}
	if st.Samples != 2 || st.OutOfOrder != 2 || skips.Count("") != 0 {
		t.Errorf("older file: %+v, skips %d", st, skips.Count(""))
	}
	res, err := s.Query(context.Background(), "x[3h]", t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(res[0].Points) != 4 {
		t.Fatalf("x[3h] = %+v, want 4 points", res)
	}
	for i, p := range res[0].Points {
		if p.V != float64(i+1) {
			t.Errorf("point %d = %v, want %d", i, p, i+1)
		}
	}
	if min, max := s.Range(); !min.Equal(t0) || !max.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("Range() = %s .. %s", min, max)
	}
}

func TestLoadTruncatedGzip(t *testing.T) {
	data, err := os.ReadFile("testdata/span30h.om")
	if err != nil {
		t.Fatal(err)
	}
	// Repeat the file's samples (as other series) so the cut lands well
	// inside the compressed stream.
	var big bytes.Buffer
	w := metrics.NewWriter(&big)
	for i := 0; i < 2000; i++ {
		if err := w.Sample("cut_test", map[string]string{"i": fmt.Sprint(i % 20)}, t0.Add(time.Duration(i)*time.Minute), float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"span30h", data}, {"2000 samples", big.Bytes()}} {
		t.Run(tc.name, func(t *testing.T) {
			gz := gzipBytes(t, tc.data)
			cut := gz[:len(gz)*2/3]
			s := openStore(t)
			var skips sources.Skips
			st, err := s.LoadReader("cut.om.gz", bytes.NewReader(cut), &skips)
			if err != nil {
				t.Fatal(err)
			}
			if skips.Count(ReasonTruncated) != 1 || skips.Count("") != 1 {
				t.Errorf("skips:\n%s", notes(&skips))
			}
			full := int64(bytes.Count(tc.data, []byte("\n")))
			if st.Samples == 0 || st.Samples >= full {
				t.Errorf("loaded %d samples of %d lines: want some, not all", st.Samples, full)
			}
			if !strings.Contains(notes(&skips), "cut.om.gz:") {
				t.Errorf("notes lack the location:\n%s", notes(&skips))
			}
		})
	}
	t.Run("corrupt header", func(t *testing.T) {
		s := openStore(t)
		_, err := s.LoadReader("bad.gz", bytes.NewReader([]byte{0x1f, 0x8b, 0, 0, 1, 2, 3}), nil)
		if err == nil || !strings.Contains(err.Error(), "bad.gz") {
			t.Errorf("err = %v, want one naming bad.gz", err)
		}
	})
}

// TestLoadGivesUp feeds a file that is not exposition text at all.
func TestLoadGivesUp(t *testing.T) {
	var b strings.Builder
	for i := 0; i < MaxMalformed+500; i++ {
		fmt.Fprintf(&b, "<html> line %d\n", i)
	}
	s := openStore(t)
	var skips sources.Skips
	st, err := s.LoadReader("page.html", strings.NewReader(b.String()), &skips)
	if err != nil {
		t.Fatal(err)
	}
	if st.Samples != 0 || skips.Count(ReasonMalformed) != MaxMalformed || skips.Count(ReasonGaveUp) != 500 {
		t.Errorf("stats %+v, skips:\n%s", st, notes(&skips))
	}
	if len(st.Errors) != maxErrors {
		t.Errorf("%d errors kept, want %d", len(st.Errors), maxErrors)
	}
}

func TestLoadLongLine(t *testing.T) {
	text := "# TYPE x unknown\nx 1 1795910400.000\nx{a=\"" + strings.Repeat("y", MaxLine+10) + "\"} 2 1795910401.000\nx 3 1795910402.000\n# EOF\n"
	s := openStore(t)
	var skips sources.Skips
	st, err := s.LoadReader("long.om", strings.NewReader(text), &skips)
	if err != nil {
		t.Fatal(err)
	}
	if st.Samples != 2 || skips.Count(ReasonMalformed) != 1 || skips.Count("") != 1 || !strings.Contains(notes(&skips), "long.om:3") {
		t.Errorf("stats %+v, skips:\n%s", st, notes(&skips))
	}
}

func TestParseMillis(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1795966445.054", 1795966445054, true},
		{"2154436079.707", 2154436079707, true}, // int64(f*1000) gives ...706
		{"1090543503.83", 1090543503830, true},
		{"1795966445", 1795966445000, true},
		{"-1.5", -1500, true},
		{"+2.001", 2001, true},
		{"1.0005", 1001, true}, // rounded
		{"1.7959664450540e9", 1795966445054, true},
		{"NaN", 0, false},
		{"x", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseMillis([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseMillis(%q) = %d, %v, want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"eof", "x 1 1\n# EOF\n", FormatOpenMetrics},
		{"unknown type", "# TYPE x unknown\nx 1 100\n", FormatOpenMetrics},
		{"unit", "# UNIT x_seconds seconds\nx_seconds 1 100\n", FormatOpenMetrics},
		{"untyped", "# TYPE x untyped\nx 1 1795910400\n", FormatPrometheus},
		{"float seconds", "x{a=\"b c\"} 1 1795910400.5\n", FormatOpenMetrics},
		{"integer seconds", "x 1 1795910400\n", FormatOpenMetrics},
		{"integer ms", "# TYPE x gauge\nx 1 1795910400000\n", FormatPrometheus},
		{"no timestamps", "x 1\n", FormatPrometheus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t)
			st, err := s.LoadReader(tt.name, strings.NewReader(tt.text), nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.Format != tt.want {
				t.Errorf("format %q, want %q", st.Format, tt.want)
			}
		})
	}
}

// BenchmarkLoad loads 200 series x 1,000 samples of OpenMetrics text (10
// families) into a fresh store; MB/s is of uncompressed text.
func BenchmarkLoad(b *testing.B) {
	var buf bytes.Buffer
	w := metrics.NewWriter(&buf)
	for f := 0; f < 10; f++ {
		for i := 0; i < 20; i++ {
			lbls := map[string]string{"instance": fmt.Sprintf("10.0.0.%d:9100", i), "job": "node"}
			for k := 0; k < 1000; k++ {
				v := float64(k*i) + 0.25
				if err := w.Sample(fmt.Sprintf("bench_metric_%d_total", f), lbls, t0.Add(time.Duration(k)*15*time.Second), v); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	for _, tc := range []struct {
		name string
		data []byte
	}{{"plain", data}, {"gzip", gzipBytes(b, data)}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				s, err := Open()
				if err != nil {
					b.Fatal(err)
				}
				st, err := s.LoadReader("bench.om", bytes.NewReader(tc.data), nil)
				if err != nil || st.Samples != 200_000 {
					b.Fatalf("%+v, %v", st, err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Prometheus text keeps timestamps in milliseconds; files people make end it
// with OpenMetrics' "# EOF", or mix in OpenMetrics-only lines. The samples'
// times must come out the same in every shape.
func TestMillisecondTimestampsInEveryShape(t *testing.T) {
	want := time.Date(2026, 10, 2, 17, 0, 0, 0, time.UTC)
	ms := want.UnixMilli()
	tests := map[string]string{
		"prometheus text":          fmt.Sprintf("# TYPE phpfpm_listen_queue gauge\nphpfpm_listen_queue 7 %d\nphpfpm_listen_queue 9 %d\n", ms, ms+15000),
		"prometheus text with EOF": fmt.Sprintf("# TYPE phpfpm_listen_queue gauge\nphpfpm_listen_queue 7 %d\nphpfpm_listen_queue 9 %d\n# EOF\n", ms, ms+15000),
		"openmetrics with ms":      fmt.Sprintf("# TYPE phpfpm_listen_queue unknown\nphpfpm_listen_queue 7 %d\nphpfpm_listen_queue 9 %d\n# EOF\n", ms, ms+15000),
		"openmetrics seconds":      fmt.Sprintf("# TYPE phpfpm_listen_queue gauge\nphpfpm_listen_queue 7 %d.000\nphpfpm_listen_queue 9 %d.000\n# EOF\n", ms/1000, ms/1000+15),
	}
	for name, text := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := Open()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var skips sources.Skips
			st, err := s.LoadReader(name, strings.NewReader(text), &skips)
			if err != nil {
				t.Fatal(err)
			}
			if st.Samples != 2 || !st.Min.Equal(want) || !st.Max.Equal(want.Add(15*time.Second)) || skips.Count("") != 0 {
				t.Errorf("samples %d from %s to %s, skips %v; want 2 from %s", st.Samples, st.Min, st.Max, skips.Notes("metrics", "lines"), want)
			}
			if iv := s.ScrapeInterval("phpfpm_listen_queue"); iv != 15*time.Second {
				t.Errorf("scrape interval %s, want 15s", iv)
			}
		})
	}
}
