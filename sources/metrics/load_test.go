package metrics

import (
	"time"
)

// t0 is the first timestamp of the testdata files: 2026-11-29T00:00:00Z.
var t0 = time.Unix(1795910400, 0).UTC()
