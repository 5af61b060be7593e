package metrics

import (
	"bytes"
	"math"
	"testing"
	"time"
)

type wsampleIn struct {
	name   string
	labels map[string]string
	t      time.Time
	v      float64
}

func TestWriterText(t *testing.T) {
	ms := func(n int64) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name    string
		samples []wsampleIn
		want    string
	}{
		{"empty", nil, "# EOF\n"},
		{
			"families sorted, series by labels, samples by time",
			[]wsampleIn{
				{"phpfpm_listen_queue", map[string]string{"pool": "www"}, ms(5000), 3},
				{"caddy_http_requests_total", map[string]string{"code": "503", "server": "srv0"}, ms(0), 10},
				{"phpfpm_listen_queue", map[string]string{"pool": "www"}, ms(0), 1},
				{"caddy_http_requests_total", map[string]string{"server": "srv0", "code": "200"}, ms(0), 1e6},
				{"phpfpm_listen_queue", map[string]string{"pool": "api"}, ms(1), 0.5},
			},
			`# TYPE caddy_http_requests_total unknown
caddy_http_requests_total{code="200",server="srv0"} 1000000 1795910400.000
caddy_http_requests_total{code="503",server="srv0"} 10 1795910400.000
# TYPE phpfpm_listen_queue unknown
phpfpm_listen_queue{pool="api"} 0.5 1795910400.001
phpfpm_listen_queue{pool="www"} 1 1795910400.000
phpfpm_listen_queue{pool="www"} 3 1795910405.000
# EOF
`,
		},
		{
			"escaping, special values, no labels, negative time",
			[]wsampleIn{
				{"x", map[string]string{"path": "a\"b\\c\nd"}, ms(-1), math.NaN()},
				{"y", nil, time.UnixMilli(-500), math.Inf(1)},
				{"y", nil, time.UnixMilli(250), math.Inf(-1)},
				{"y", nil, time.UnixMilli(1500), 1.5e-7},
				{"y", nil, time.UnixMilli(2500), 1e20},
			},
			`# TYPE x unknown
x{path="a\"b\\c\nd"} NaN 1795910399.999
# TYPE y unknown
y +Inf -0.500
y -Inf 0.250
y 1.5e-07 1.500
y 1e+20 2.500
# EOF
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewWriter(&buf)
			for _, s := range tt.samples {
				if err := w.Sample(s.name, s.labels, s.t, s.v); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", buf.String(), tt.want)
			}
		})
	}
}

func TestWriterInvalid(t *testing.T) {
	tests := []struct {
		name   string
		metric string
		labels map[string]string
	}{
		{"empty name", "", nil},
		{"dash in name", "php-fpm_up", nil},
		{"digit first", "9lives", nil},
		{"label with colon", "x", map[string]string{"a:b": "1"}},
		{"__name__ label", "x", map[string]string{"__name__": "y"}},
		{"invalid utf-8 value", "x", map[string]string{"a": "\xff"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWriter(&bytes.Buffer{})
			if err := w.Sample(tt.metric, tt.labels, t0, 1); err == nil {
				t.Error("no error")
			}
		})
	}
	w := NewWriter(&bytes.Buffer{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Sample("x", nil, t0, 1); err == nil {
		t.Error("Sample after Close: no error")
	}
}
