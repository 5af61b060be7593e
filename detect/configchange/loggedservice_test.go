package configchange

import (
	"math"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// TestLoggedServiceTime: the proxy's health checks come off the saturated
// pool's accepted rate, and the workers php-fpm counted busy (not the whole
// pool: the proxy took it out for part of the span) go over what is left;
// without a health check, or with checks that make up most of the rate, it
// is not read that way.
func TestLoggedServiceTime(t *testing.T) {
	start := time.Date(2026, 11, 10, 5, 0, 0, 0, time.UTC)
	saturated := []detect.Finding{{Kind: detect.KindWorkerSaturation, Start: start, End: start.Add(4 * time.Minute)}}
	series := func(vs ...float64) []metrics.Point {
		var ps []metrics.Point
		for i, v := range vs {
			ps = append(ps, metrics.Point{T: start.Add(time.Duration(i) * time.Minute), V: v})
		}
		// After the span: never read.
		return append(ps, metrics.Point{T: start.Add(10 * time.Minute), V: 1000})
	}
	full := &detect.Pool{Active: series(16, 16, 16, 16, 16), Accepted: series(3.9, 3.9, 3.9, 3.9, 3.9)}
	// Three workers, all busy for two of the four samples, idle while the
	// proxy held the upstream down: 1.5 busy on average.
	outAndBack := &detect.Pool{Active: series(3, 0, 3, 0), Accepted: series(3.5, 1, 3, 2.5)}
	check := healthCheckSite{URI: "/healthz.php", IntervalS: 1}
	for _, c := range []struct {
		name  string
		pool  *detect.Pool
		prior []detect.Finding
		site  healthCheckSite
		want  float64
	}{
		{"one check a second off 3.9 accepted", full, saturated, check, 16 / 2.9},
		{"a check every 5 s", full, saturated, healthCheckSite{URI: "/healthz.php", IntervalS: 5}, 16 / 3.7},
		{"busy as counted, not the whole pool", outAndBack, saturated, check, 1.5 / 1.5},
		{"no active health check", full, saturated, healthCheckSite{IntervalS: 1}, 0},
		{"checks half the rate", &detect.Pool{Active: series(16), Accepted: series(2)}, saturated, check, 0},
		{"no saturation", full, nil, check, 0},
		{"no pool series", nil, saturated, check, 0},
	} {
		if got := loggedServiceTime(c.pool, c.prior, c.site); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
