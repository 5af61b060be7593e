package sources

import "time"

// Health event kinds, from the proxy's own log.
const (
	// HealthFailed: one active health check failed (Caddy logs "HTTP request failed").
	HealthFailed = "failed"
	// HealthUp: the upstream came back ("host is up").
	HealthUp = "up"
	// HealthDown: the upstream was marked unhealthy (logged by some proxies; Caddy
	// 2.11 does not, so it is inferred from health_fails consecutive failures).
	HealthDown = "down"
	// NoUpstream: the proxy answered a request itself because no upstream was
	// healthy (Caddy's error log: "no upstreams available").
	NoUpstream = "no_upstream"
)

// HealthEvent is one line of the proxy's health checker or error log.
type HealthEvent struct {
	Time     time.Time
	Upstream string
	Kind     string
	Error    string
}
