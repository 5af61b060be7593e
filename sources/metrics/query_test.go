package metrics

import (
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// labFile is the lab recording's Prometheus series (testenv ends the test
// when the shared data is absent).
func labFile(t *testing.T) string { return testenv.LabIncident(t, "metrics/prometheus.om.gz") }

// labScan reads the lab file without the package's code (standard library
// gzip, plain string splitting): per metric name, the largest value; the
// number of sample lines; the first and last timestamp.
type labScan struct {
	max      map[string]float64
	samples  int64
	min, end time.Time
}
