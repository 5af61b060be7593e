package evidence

// Coverage sources, in the order the report shows them.
const (
	CoverageAccess  = "access"
	CoverageMetrics = "metrics"
	CoverageCPU     = "cpu"
	CoverageCaddy   = "caddy log"
	CoverageFPM     = "php-fpm log"
)
