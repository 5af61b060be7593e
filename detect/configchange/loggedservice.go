package configchange

import (
	"github.com/aftermath-forensics/aftermath/detect"
)

// loggedServiceTime is PHP's time per request of the requests the access log
// counts, read from a saturated pool. worker_saturation's service time is
// Little's law over every connection php-fpm accepted (every worker busy,
// over the rate it accepted them), and the proxy's active health checks
// reach php-fpm too, one per health_interval, without ever being in the
// access log. Averaged with those quick checks the time understates a
// logged request's, while the arrivals it is multiplied with (PeakPHPPerS,
// PHPArrivals) are the log's alone: a database stall whose logged requests
// ran 5.5 s each came out as 16 workers over 3.9 accepted a second, 4.1 s,
// 15.8 busy workers for a cut pool of 16 that the same load had filled, and
// the cut was ruled out. With every worker busy and a check's own time next
// to nothing, the logged requests' time is the workers over the accepted
// rate less the checks. 0 when it cannot be read so: no saturation rate, no
// active health check, or checks making up as much of the rate as
// healthChecksMostOfRate, where the correction would rest on the checks'
// own time, which is not known.
func loggedServiceTime(pool *detect.Pool, prior []detect.Finding, site healthCheckSite) float64 {
	f := detect.First(prior, detect.KindWorkerSaturation)
	if f == nil || pool == nil || site.URI == "" || site.IntervalS <= 0 {
		return 0
	}
	busy, accepted := detect.MeanBetween(pool.Active, f.Start, f.End), detect.MeanBetween(pool.Accepted, f.Start, f.End)
	checks := 1 / site.IntervalS
	if !(busy > 0) || !(accepted > 0) || checks >= healthChecksMostOfRate*accepted { // NaN: no samples
		return 0
	}
	return detect.LittleTime(busy, accepted-checks)
}

// healthCheckSite is the proxy's active health check as the site states it.
type healthCheckSite struct {
	URI       string
	IntervalS float64
}

// healthChecksMostOfRate: checks at half the accepted rate or more leave the
// logged requests' time to the checks' own, unknown, time.
const healthChecksMostOfRate = 0.5
