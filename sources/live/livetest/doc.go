// Package livetest holds what the live path's tests need besides the fake
// Loki (sources/loki/lokitest): a Prometheus HTTP API over a metrics.Store, a
// server on loopback (httptest) that the real client (client_golang) talks to
// over HTTP, and the Caddy and php-fpm line formats (CaddyLine, and CaddyTime
// and FPMTime to date lines as a log shipper would for Loki.PushFile), and
// the simulated crawl the end-to-end tests serve (Crawl).
package livetest
