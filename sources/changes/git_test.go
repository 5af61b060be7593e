package changes

import (
	"time"
)

var kst = time.FixedZone("KST", 9*3600)

// incident is the reference incident's onset; the lookback window is the 72 h before it.
var incident = time.Date(2026, 10, 3, 2, 26, 0, 0, kst)

func hoursBefore(h float64) time.Time {
	return incident.Add(-time.Duration(h * float64(time.Hour)))
}

const poolV1 = `; php-fpm pool serving the wiki
[www]
user = www-data
listen = 127.0.0.1:9000
; Size of the kernel accept queue
listen.backlog = 511
pm = static
pm.max_children = 16
pm.max_requests = 0
request_terminate_timeout = 30s
`
