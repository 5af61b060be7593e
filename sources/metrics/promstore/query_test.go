package promstore

import (
	"bufio"
	"context"
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// labFile is the lab recording's Prometheus series (testenv ends the test
// when the shared data is absent).
func labFile(t *testing.T) string { return testenv.LabIncident(t, "metrics/prometheus.om.gz") }

func labelString(m map[string]string) string {
	return labels.FromMap(m).String()
}

// labScan reads the lab file without the package's code (standard library
// gzip, plain string splitting): per metric name, the largest value; the
// number of sample lines; the first and last timestamp.
type labScan struct {
	max      map[string]float64
	samples  int64
	min, end time.Time
}

func scanLab(t *testing.T) labScan {
	t.Helper()
	sc := bufio.NewScanner(testenv.OpenGzip(t, labFile(t)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	res := labScan{max: map[string]float64{}}
	minTS, maxTS := math.Inf(1), math.Inf(-1)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		fields := strings.Fields(line)
		v, err1 := strconv.ParseFloat(fields[len(fields)-2], 64)
		ts, err2 := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("lab line %q: %v %v", line, err1, err2)
		}
		if old, ok := res.max[name]; !ok || v > old {
			res.max[name] = v
		}
		res.samples++
		minTS, maxTS = math.Min(minTS, ts), math.Max(maxTS, ts)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	res.min = time.UnixMilli(int64(math.Round(minTS * 1000))).UTC()
	res.end = time.UnixMilli(int64(math.Round(maxTS * 1000))).UTC()
	return res
}

// TestLab loads the real recording and asks it what the postmortem needs.
func TestLab(t *testing.T) {
	scan := scanLab(t)
	s := openStore(t)
	var skips sources.Skips
	st, err := s.LoadFile(labFile(t), &skips)
	if err != nil {
		t.Fatal(err)
	}
	if st.Format != FormatOpenMetrics || st.Samples != scan.samples || skips.Count("") != 0 {
		t.Errorf("load: %s, %d samples (file has %d), skips:\n%s", st.Format, st.Samples, scan.samples, notes(&skips))
	}
	if !st.Min.Equal(scan.min) || !st.Max.Equal(scan.end) {
		t.Errorf("span %s .. %s, file %s .. %s", st.Min, st.Max, scan.min, scan.end)
	}
	t.Logf("lab: %d samples, %d series, %s .. %s", st.Samples, st.Series, st.Min, st.Max)

	ctx := context.Background()
	end := scan.end
	tests := []struct {
		name string
		q    string
		want float64
	}{
		// The queue's deepest scraped value. The data README's "peaked at
		// 361" is php-fpm's own high-water mark, phpfpm_max_listen_queue,
		// which saw a peak between two 5 s scrapes.
		{"queue peak as scraped", `max_over_time(phpfpm_listen_queue[15m])`, scan.max["phpfpm_listen_queue"]},
		{"queue high-water mark (documented 361)", `max_over_time(phpfpm_max_listen_queue[15m])`, 361},
		{"high-water mark as scanned", `max_over_time(phpfpm_max_listen_queue[15m])`, scan.max["phpfpm_max_listen_queue"]},
		{"backlog in force", `max_over_time(phpfpm_listen_queue_length[15m])`, 4096},
		{"backlog never other", `min_over_time(phpfpm_listen_queue_length[15m])`, 4096},
		{"workers", `max_over_time(phpfpm_total_processes[15m])`, scan.max["phpfpm_total_processes"]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := s.Query(ctx, tt.q, end)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 1 || len(res[0].Points) != 1 {
				t.Fatalf("%s = %+v, want one point", tt.q, res)
			}
			if got := res[0].Points[0].V; got != tt.want {
				t.Errorf("%s = %v, want %v", tt.q, got, tt.want)
			}
		})
	}

	t.Run("rate of accepted connections", func(t *testing.T) {
		min, max := s.Range()
		res, err := s.QueryRange(ctx, `rate(phpfpm_accepted_connections[1m])`, min, max, 15*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || len(res[0].Points) < 20 {
			t.Fatalf("got %d series, want 1 with points", len(res))
		}
		peak := 0.0
		for i, p := range res[0].Points {
			if p.V < 0 {
				t.Errorf("negative rate %v", p)
			}
			if i > 0 && p.T.Sub(res[0].Points[i-1].T)%(15*time.Second) != 0 {
				t.Errorf("point %v off the 15 s grid", p)
			}
			peak = math.Max(peak, p.V)
		}
		if peak <= 0 {
			t.Errorf("rate never above 0")
		}
		if _, ok := res[0].Labels["__name__"]; ok {
			t.Errorf("rate() kept __name__: %v", res[0].Labels)
		}
		t.Logf("%d points, peak %.1f/s", len(res[0].Points), peak)
	})

	t.Run("instant vector sorted by labels", func(t *testing.T) {
		res, err := s.Query(ctx, `count by (code) (caddy_http_requests_total)`, end)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(res); i++ {
			if labelString(res[i-1].Labels) >= labelString(res[i].Labels) {
				t.Errorf("not sorted: %v before %v", res[i-1].Labels, res[i].Labels)
			}
		}
	})
}

func TestQueryErrors(t *testing.T) {
	s := openStore(t)
	if _, err := s.LoadFile("testdata/span30h.om", nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(q string) error
		q    string
	}{
		{"range syntax", func(q string) error {
			_, err := s.QueryRange(ctx, q, t0, t0.Add(time.Hour), time.Minute)
			return err
		}, `rate(app_queue_depth[5m]`},
		{"instant syntax", func(q string) error { _, err := s.Query(ctx, q, t0); return err }, `sum by (instance app_up`},
		{"unknown function", func(q string) error { _, err := s.Query(ctx, q, t0); return err }, `nosuchfn(app_up)`},
		{"zero step", func(q string) error {
			_, err := s.QueryRange(ctx, q, t0, t0.Add(time.Hour), 0)
			return err
		}, `app_up`},
		{"end before start", func(q string) error {
			_, err := s.QueryRange(ctx, q, t0.Add(time.Hour), t0, time.Minute)
			return err
		}, `app_up`},
		{"string result", func(q string) error { _, err := s.Query(ctx, q, t0); return err }, `"text"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run(tt.q)
			if err == nil {
				t.Fatal("no error")
			}
			if want := "promql " + strconv.Quote(tt.q); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name the query (%s)", err, want)
			}
		})
	}
}

func TestQueryResultShapes(t *testing.T) {
	s := openStore(t)
	if _, err := s.LoadFile("testdata/span30h.om", nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := t0.Add(2 * time.Hour)

	res, err := s.Query(ctx, `scalar(sum(app_queue_depth))`, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(res[0].Labels) != 0 || res[0].Points[0].V != 6 || !res[0].Points[0].T.Equal(at) {
		t.Errorf("scalar = %+v", res)
	}

	// A range selector in an instant query returns the raw samples.
	res, err = s.Query(ctx, `app_queue_depth{instance="b"}[3h]`, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(res[0].Points) != 3 || res[0].Points[2].V != 4 || !res[0].Points[0].T.Equal(t0) {
		t.Errorf("matrix = %+v", res)
	}

	// A range query over the whole 30 h at 15 s: 7,201 steps.
	res, err = s.QueryRange(ctx, `app_queue_depth`, t0, t0.Add(30*time.Hour), 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || labelString(res[0].Labels) != `{__name__="app_queue_depth", instance="a"}` {
		t.Fatalf("range = %d series", len(res))
	}
	// Each hourly sample is seen for the 5 min lookback (left-open): 20
	// steps for each of the first 30 samples, 1 for the last.
	if n := len(res[0].Points); n != 30*20+1 {
		t.Errorf("%d points, want %d", n, 30*20+1)
	}
}

func TestClose(t *testing.T) {
	s, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadFile("testdata/span30h.om", nil); err != nil {
		t.Fatal(err)
	}
	dir := s.dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still there after Close: %v", dir, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Query(context.Background(), "app_up", t0); !errors.Is(err, errClosed) {
		t.Errorf("Query after Close: %v", err)
	}
	if _, err := s.LoadFile("testdata/span30h.om", nil); !errors.Is(err, errClosed) {
		t.Errorf("LoadFile after Close: %v", err)
	}
}
